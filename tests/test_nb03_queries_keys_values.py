"""What 03_queries_keys_values adds: the training-step explorer."""

import numpy as np
import pytest

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


def test_softmax_backward_check_names_the_missing_term_and_the_wrong_axis():
    from helpers import checks

    first_term = checks.softmax_backward(lambda d_weights, weights: weights * d_weights)
    assert first_term.status == checks.INCORRECT and "only the first term" in first_term.message

    def wrong_axis(d_weights, weights):
        return weights * (d_weights - np.sum(d_weights * weights, axis=-2, keepdims=True))

    assert "you summed over axis -2" in checks.softmax_backward(wrong_axis).message


def test_qkv_check_says_scaling_belongs_to_04():
    from helpers import checks

    def scaled(X, W_q, W_k, W_v):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        return Q, K, V, Q @ K.T / np.sqrt(K.shape[-1])

    assert "that scaling is 04's subject" in checks.qkv_scores(scaled).message
