"""Every exercise's check rejects every small change of its solution, unless the change is shown harmless.

The mutants are made by tools/check_mutants.py from each registered solution with `ast`: each numeric
constant changed, each axis argument changed, each slice bound shifted by one, each transpose dropped,
each arithmetic operator swapped, each argument or size read from another one. A mutant the check
accepts must agree with the solution on hundreds of random inputs of many sizes (RANDOM_INPUTS there)
and be listed below with the reason it is the same function; any other accepted mutant fails.
"""

import check_mutants  # tools/
import numpy as np
import pytest

from helpers import checks

SHIFT = "the softmax is the same whatever one number is taken from a row's scores before the exponential"
SCORES_OF_ORDER_1 = f"{SHIFT}; this exercise's scores are of order 1, where no shift overflows"
SAME_ORDER = "every cosine is divided by the same positive number, which changes no ranking"
LENGTH_ONE = "each sentence's pooled vector is scaled to length 1 after, which undoes any positive factor"
SAME_ROWS = "the arrays swapped have the same number of rows, by the shapes the exercise gives"
WIDTHS = "every weight matrix is (d_model, d_model), and x and context have d_model columns"
BLIND_ROW = "a row with no allowed key: any shift, and any divisor but 0, leave its zeros zero"

EQUIVALENT = {  # exercise -> {mutant: why it is the same function}
    "nearest_neighbours": {
        "operator swapped: np.linalg.norm(table, axis=1) * np.linalg.norm(v) → np.linalg.norm(table, axis=1) / "
        "np.linalg.norm(v), in `cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.no...`": SAME_ORDER,
        "argument swapped: v → table, in `cosines = table @ v / (np.linalg.norm(table, axis=1) * "
        "np.linalg.no...` (again)": SAME_ORDER,
        "argument swapped: v → k, in `cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.no...` "
        "(again)": SAME_ORDER,
    },
    "attention_without_weights": {
        "axis=-1 → axis=None, in `e = np.exp(S - S.max(axis=-1, keepdims=True))`": SCORES_OF_ORDER_1,
        "operator swapped: S - S.max(axis=-1, keepdims=True) → S + S.max(axis=-1, keepdims=True), in "
        "`e = np.exp(S - S.max(axis=-1, keepdims=True))`": SCORES_OF_ORDER_1,
    },
    "scaled_scores": {"argument swapped: Q → K, in `d_k = Q.shape[-1]`": "Q and K have the same width, d_k"},
    "masked_softmax": {
        "0 → 1, in `row_max = np.where(np.isfinite(row_max), row_max, 0)`": BLIND_ROW,
        "0 → -1, in `row_max = np.where(np.isfinite(row_max), row_max, 0)`": BLIND_ROW,
        "1 → 2, in `return e / np.where(total > 0, total, 1)`": BLIND_ROW,
        "0 → 1, in `return e / np.where(total > 0, total, 1)`": "the total is never negative, so > 0 and > 1 "
        "differ only for a total in (0, 1], which a row with an allowed key never has (its largest term is 1)",
    },
    "multi_head_cross_attention": {
        "axis=-1 → axis=None, in `weights = np.exp(scores - scores.max(axis=-1, keepdims=True))`": SCORES_OF_ORDER_1,
        "1 → 0, in `d_head = W_q.shape[1] // n_heads`": WIDTHS,
        "-1 → -2, in `return heads.transpose(1, 0, 2).reshape(x.shape[0], -1) @ W_o`": "numpy reads a negative size "
        "in a reshape as 'the rest', whatever the number",
        "operator swapped: scores - scores.max(axis=-1, keepdims=True) → scores + scores.max(axis=-1, "
        "keepdims=True), in `weights = np.exp(scores - scores.max(axis=-1, keepdims=True))`": SCORES_OF_ORDER_1,
        **{
            f"argument swapped: W_q → {other}, in `d_head = W_q.shape[1] // n_heads`": WIDTHS
            for other in ("x", "context", "W_k", "W_v", "W_o")
        },
    },
    "sinusoidal_table": {
        "upper bound of a slice: none → -1, in `table[:, 0::2] = np.sin(angles)` (again)": "d_model is even, so the "
        "last column is an odd one: stopping the even columns before it leaves them as they were"
    },
    "residual_attention_block": {
        "axis=-1 → axis=None, in `weights = np.exp(scores - scores.max(axis=-1, keepdims=True))`": SCORES_OF_ORDER_1,
        "operator swapped: scores - scores.max(axis=-1, keepdims=True) → scores + scores.max(axis=-1, "
        "keepdims=True), in `weights = np.exp(scores - scores.max(axis=-1, keepdims=True))`": SCORES_OF_ORDER_1,
    },
    "attention_row": {
        "operator swapped: X @ attention.W_k[:, cols] + attention.b_k[cols] → X @ attention.W_k[:, cols] - "
        "attention.b_k[cols], in `K = X @ attention.W_k[:, cols] + attention.b_k[cols]`": "the key bias adds "
        "q·b_k to every score of the row, one number, which the softmax ignores, whatever its sign",
        "operator swapped: scores - scores.max() → scores + scores.max(), in `e = np.exp(scores - scores.max())`": (
            SCORES_OF_ORDER_1
        ),
    },
    "sentence_embedding": {
        "axis=1 → axis=None, in `counts = real.sum(axis=1, keepdims=True)`": LENGTH_ONE,
        "operator swapped: (H * real[..., None]).sum(axis=1) / counts → (H * real[..., None]).sum(axis=1) * "
        "counts, in `pooled = (H * real[..., None]).sum(axis=1) / counts`": LENGTH_ONE,
    },
    "kv_cache_step": {
        "axis=1 → axis=None, in `weights = np.exp(scores - scores.max(axis=1, keepdims=True))`": SCORES_OF_ORDER_1,
        "operator swapped: scores - scores.max(axis=1, keepdims=True) → scores + scores.max(axis=1, "
        "keepdims=True), in `weights = np.exp(scores - scores.max(axis=1, keepdims=True))`": SCORES_OF_ORDER_1,
        **{
            f"argument swapped: {name} → {other}, in `visible = np.arange(len(K)) <= "
            "np.arange(len(q_new))[:, None] + len...`": SAME_ROWS
            for name, other in (("cache_K", "cache_V"), ("q_new", "k_new"), ("q_new", "v_new"))
        },
    },
    "next_word_loss": {
        "0 → -1, in `picked = np.take_along_axis(log_probs, targets[..., None], axis=-1)...`": "the axis it "
        "indexes has length 1 there"
    },
    "gqa_step": {
        "axis=-1 → axis=None, in `weights = np.exp(scores - scores.max(axis=-1, keepdims=True))`": SCORES_OF_ORDER_1,
        "operator swapped: scores - scores.max(axis=-1, keepdims=True) → scores + scores.max(axis=-1, "
        "keepdims=True), in `weights = np.exp(scores - scores.max(axis=-1, keepdims=True))`": SCORES_OF_ORDER_1,
        **{
            f'argument swapped: q → {other}, in `scores = np.einsum("hd,htd->ht", q, K_h) / '
            "np.sqrt(q.shape[-1])` (again)": "q, k, v and the caches all end in the same width, d"
            for other in ("k", "v", "cache_K", "cache_V")
        },
    },
    "cached_attention_step": {
        "operator swapped: scores - scores.max() → scores + scores.max(), in `weights = np.exp(scores - "
        "scores.max())`": SCORES_OF_ORDER_1
    },
}


@pytest.mark.parametrize("name", sorted(checks.EXERCISES))
def test_the_check_rejects_every_mutant_of_the_solution_that_is_not_the_same_function(name):
    rows = check_mutants.judge(name)
    accepted = [label for label, status, _ in rows if status == "accepted"]
    assert not accepted, f"{name}'s check accepts mutants that differ from the solution on random inputs: {accepted}"
    equivalent = {label for label, status, _ in rows if status == "equivalent"}
    listed = EQUIVALENT.get(name, {})
    unlisted = equivalent - set(listed)
    assert not unlisted, (
        f"{name}: mutants equal to the solution on random inputs; list each with its reason: {unlisted}"
    )
    assert set(listed) <= {label for label, _, _ in rows}, f"{name}: a listed mutant is no longer made"


def test_every_listed_equivalent_mutant_has_a_reason():
    for name, mutants in EQUIVALENT.items():
        assert name in checks.EXERCISES
        assert all(len(reason) > 20 for reason in mutants.values()), name


def test_the_mutants_are_each_kind_of_small_change():
    source = "def f(x, w):\n    y = x.T[1:] @ w / np.sqrt(x.shape[-1])\n    return y.sum(axis=-1) + 2\n"
    made = dict(check_mutants.mutants(source))
    expected = [
        "axis=-1 → axis=-2",  # an axis changed
        "axis=-1 → axis=None",
        "2 → 3",  # a constant changed
        "lower bound 1 → 1 + 1",  # a slice bound shifted
        "upper bound of a slice: none → -1",
        "transpose dropped: x.T → x",
        "operator swapped: x.T[1:] @ w → x.T[1:] * w",
        "size from elsewhere: x.shape[-1] → w",
        "argument swapped: x → w",
    ]
    for label in expected:
        assert any(name.startswith(label) for name in made), (label, sorted(made))
    assert all(source != changed for changed in made.values())
    assert len(set(made.values())) == len(made)  # no mutant twice


def test_a_mutant_that_differs_on_random_inputs_is_not_called_equivalent():
    name = "cached_attention_step"
    wrong = check_mutants.define(
        checks.EXERCISES[name].solution.replace("np.sqrt(len(q))", "np.sqrt(window)"), name
    )  # what the check accepted while its window was d
    right = check_mutants.define(checks.EXERCISES[name].solution, name)
    assert not check_mutants.equivalent(name, wrong) and check_mutants.equivalent(name, right)
    assert check_mutants.verdict(name, wrong).mistake == "scores-scaled-wrongly"


def test_the_random_inputs_cover_every_exercise_and_the_solution_runs_on_them():
    assert set(check_mutants.RANDOM_INPUTS) == set(checks.EXERCISES)
    rng = np.random.default_rng(1)
    for name in checks.EXERCISES:
        solution = check_mutants.define(checks.EXERCISES[name].solution, name)
        for _ in range(20):
            args, kwargs = check_mutants.RANDOM_INPUTS[name](rng)
            assert not isinstance(check_mutants._outcome(solution, args, kwargs), Exception), name
