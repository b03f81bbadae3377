"""What 03_queries_keys_values adds: the training-step explorer, and the exercises' targeted messages."""

import numpy as np
import pytest
from _answers import mistake_cases, reads_as_meant, solution

from helpers import softmax


def test_explorers_follow_their_controls():
    widgets = pytest.importorskip("helpers.widgets")
    box = widgets.scaling_explorer()
    snapshots = softmax(np.random.default_rng(0).normal(size=(3, 6, 6)))
    steps_box = widgets.attention_steps_explorer(snapshots, [0, 10, 20], list("ABCDEF"), losses=[2.0, 1.0, 0.5])
    for control, values in (
        (box.controls["d_k"], [1, 1024, 64]),
        (box.controls["temperature"], [0.1, 10.0]),
        (box.controls["scaled"], [True, False]),
        (steps_box.controls["step"], [20, 0, 10]),
    ):
        for value in values:
            control.value = value  # each change redraws through the explorer's observer
            assert control.value == value  # (how fast: benchmarks/widget_times.py)
    weights, loss = widgets.snapshot_at(snapshots, [0, 10, 20], 10, [2.0, 1.0, 0.5])
    np.testing.assert_array_equal(weights, snapshots[1])
    assert loss == 1.0
    with pytest.raises(ValueError, match="recorded"):
        widgets.snapshot_at(snapshots, [0, 10, 20], 5)


# each registered mistake, and words its message must contain: what the learner did, and what it should be
MESSAGES = {
    "qkv_scores": {
        "transposed": ["your scores are transposed, keys times queries", "queries come first"],
        "scaled": ["divided by √d_k = √3", "notebook 04's subject"],
        "weights-not-scores": ["already weights (each row sums to 1)", "before any softmax"],
        "elementwise": ["have shape (4, 3)", "entry by entry", "a (4, 4) table of dot products"],
        "scores-of-x": ["compare X with itself, as notebook 02 did", "the queries with the keys"],
        "swapped-q-and-k": ["your Q is X times W_k and your K is X times W_q", "queries come from W_q"],
        "tokens-as-columns": ["your Q has shape (3, 4), one column per token", "Q has shape (4, 3)"],
        "not-four-things": ["returned one array of shape (4, 4), the scores alone", "Q, K, V and the scores"],
    },
    "softmax_backward": {
        "first-term-only": ["only the first term", "weighted average of the d_weights"],
        "wrong-axis": ["summed down each column", "over the last axis"],
        "diagonal-only": ["w·(1 − w)", "diagonal of the softmax's Jacobian", "−w_i·w_j"],
        "unweighted-sum": ["adds up the d_weights alone", "Σ_j w_j·g_j"],
        "sums-as-a-row": ["shape (3,), the summed axis gone", "Keep the summed axis, shape (3, 1)"],
        "sign-flipped": ["the right answer with its sign flipped", "w·(g − Σ_j w_j·g_j)"],
        "roles-swapped": ["the weights and the d_weights have swapped roles"],
        "weights-factor-missing": ["without the factor in front", "multiply that by the weight itself"],
    },
}


@pytest.mark.parametrize("name, code", mistake_cases(MESSAGES))
def test_each_mistake_reads_as_meant(name, code):
    reads_as_meant(MESSAGES, name, code)


def test_qkv_check_counts_what_came_back():
    from helpers import checks

    result = checks.qkv_scores(lambda X, W_q, W_k, W_v: (X @ W_q, X @ W_k, X @ W_v))
    assert result.mistake == "wrong-shape" and "should return 4 things, (Q, K, V, the scores)" in result.message
    assert "returned 3 things" in result.message


def test_softmax_backward_names_a_dropped_axis_in_a_batch():
    from helpers import checks

    def sums_as_a_row(d_weights, weights):
        if weights.ndim == 2:  # right for one matrix, so the check reaches its (2, 3, 5) case
            return weights * (d_weights - np.sum(d_weights * weights, axis=-1, keepdims=True))
        return weights * (d_weights - np.sum(d_weights * weights, axis=-1))

    result = checks.softmax_backward(sums_as_a_row)
    assert result.mistake == "sums-as-a-row" and "shape (2, 3), the summed axis gone" in result.message


def test_exercise_solutions_agree_with_the_helpers(rng):
    from helpers import scaled_dot_product_attention
    from helpers.attention import softmax_backward

    X = rng.normal(size=(6, 5))  # (T, d_model)
    W_q, W_k, W_v = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 4))
    Q, K, V, scores = solution("qkv_scores")(X, W_q, W_k, W_v)
    out, weights = scaled_dot_product_attention(Q, K, V, scale=1.0)
    assert np.allclose(softmax(scores) @ V, out) and np.allclose(softmax(scores), weights)
    d_weights = rng.normal(size=(2, 6, 6))
    batch_weights = softmax(rng.normal(size=(2, 6, 6)))
    expected = softmax_backward(d_weights, batch_weights)  # the helper that attention_backward uses
    assert np.allclose(solution("softmax_backward")(d_weights, batch_weights), expected)


def test_qkv_check_names_any_scaling_and_a_scaled_softmax():
    from helpers import checks

    def scaled_by_d_model(X, W_q, W_k, W_v):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        return Q, K, V, Q @ K.T / np.sqrt(X.shape[1])

    result = checks.qkv_scores(scaled_by_d_model)
    assert result.mistake == "scaled" and "your scores are divided by √d_model = √5" in result.message

    def scaled_weights(X, W_q, W_k, W_v):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        return Q, K, V, softmax(Q @ K.T / np.sqrt(K.shape[1]))

    assert checks.qkv_scores(scaled_weights).mistake == "weights-not-scores"
