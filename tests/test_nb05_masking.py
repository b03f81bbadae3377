"""What 05_masking adds: the mask explorer's numbers, and the exercises' answers against the helpers."""

import numpy as np
import pytest
from _answers import define, solution

import helpers
from helpers import widgets

TOKENS = ["The", "cat", "sat", "on", "the", "mat"]


def softmax_over_allowed(row, allowed):
    """One row by hand: softmax over the allowed entries, zeros elsewhere (all zeros if none allowed)."""
    out = np.zeros_like(row)
    if allowed.any():
        e = np.exp(row[allowed] - row[allowed].max())
        out[allowed] = e / e.sum()
    return out


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("padding", [True, False])
def test_masked_weights_equals_a_loop_over_queries_and_keys(causal, padding, rng):
    scores = rng.normal(size=(3, 5, 5)) * 3
    lengths = np.array([5, 2, 0])
    for b in range(3):
        mask, weights = widgets.masked_weights(scores, lengths, b, causal, padding)
        for i in range(5):
            allowed = np.array([(j <= i or not causal) and (j < lengths[b] or not padding) for j in range(5)])
            assert np.array_equal(mask[i], allowed)
            assert np.allclose(weights[i], softmax_over_allowed(scores[b, i], allowed))


def test_masked_weights_matches_batched_attention_with_the_combined_mask(rng):
    q, k, v = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3))
    lengths = np.array([4, 2])
    combined = helpers.padding_mask(lengths, 4)[:, None, :] & helpers.causal_mask(4)[None]  # (2, 4, 4)
    _, expected = helpers.scaled_dot_product_attention(q, k, v, mask=combined)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(3)
    for b in range(2):
        assert np.allclose(widgets.masked_weights(scores, lengths, b)[1], expected[b])


def test_masked_weights_gives_zeros_for_a_sentence_of_length_zero():
    _, weights = widgets.masked_weights(np.ones((1, 3, 3)), [0], 0, causal=True, padding=True)
    assert np.array_equal(weights, np.zeros((3, 3)))


def test_masked_weights_rejects_scores_that_are_not_square_per_sentence():
    with pytest.raises(ValueError, match=r"\(B, T, T\)"):
        widgets.masked_weights(np.ones((2, 3, 4)), [3, 3])


def test_mask_explorer_draws_the_chosen_query_row(shown, rng):
    scores = rng.normal(size=(2, 6, 6))
    tokens = [TOKENS, ["The", "dog", "sat", "[PAD]", "[PAD]", "[PAD]"]]
    box = widgets.mask_explorer(scores, tokens, [6, 3], query=2)
    assert "▶ sat" in shown[-1]
    assert shown[-1].count("−∞</td>") == 15  # the causal mask blocks the 15 cells above the diagonal
    box.controls["sentence"].value = 1
    box.controls["query"].value = 4
    _, expected = widgets.masked_weights(scores, [6, 3], 1, True, True)
    assert "▶ [PAD]" in shown[-1]
    assert f"{expected[4, 0]:.3f}" in shown[-1]  # the bars show the chosen row's numbers
    box.controls["causal"].value = False
    box.controls["padding"].value = False
    assert shown[-1].count("−∞</td>") == 0  # nothing is masked any more


@pytest.mark.parametrize(("T_q", "T_k"), [(1, 1), (3, 3), (1, 7), (4, 9), (6, 6)])
def test_build_causal_mask_solution_is_the_helpers_causal_mask(T_q, T_k):
    assert np.array_equal(solution("build_causal_mask")(T_q, T_k), helpers.causal_mask(T_q, T_k))


def test_masked_softmax_solution_is_the_helpers_attention_weights(rng):
    q, k, v = rng.normal(size=(3, 4, 2)), rng.normal(size=(3, 5, 2)), rng.normal(size=(3, 5, 2))
    mask = helpers.padding_mask([5, 1, 0], 5)[:, None, :] & helpers.causal_mask(4, 5)[None]  # (3, 4, 5)
    _, expected = helpers.scaled_dot_product_attention(q, k, v, mask=mask)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(2)
    assert np.allclose(solution("masked_softmax")(scores, mask), expected)
    assert np.array_equal(expected[2], np.zeros((4, 5)))  # sentence 2 is all padding


# --- the exercises' targeted messages, and the loophole of the workshop's own softmax ----------


def test_masked_softmax_with_the_workshops_softmax_does_not_pass():
    from helpers import checks, softmax

    def with_helpers_softmax(scores, mask):
        return softmax(np.where(mask, scores, -np.inf))  # the helper already makes a fully masked row zero

    def through_the_module(scores, mask):
        return helpers.softmax(np.where(mask, scores, -np.inf))

    for answer in (with_helpers_softmax, through_the_module):
        result = checks.masked_softmax(answer)
        assert result.status == checks.INCORRECT, result.message
        assert "`helpers.softmax`, which is the answer" in result.message


def test_masked_softmax_check_names_uniform_and_nan_rows():
    from helpers import checks

    result = checks.masked_softmax(define(checks.EXERCISES["masked_softmax"].wrong, "masked_softmax"))  # -1e9 fill
    assert result.status == checks.INCORRECT and "came out uniform (0.25 each)" in result.message

    def nan_rows(scores, mask):
        scores = np.where(mask, scores, -np.inf)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    result = checks.masked_softmax(nan_rows)
    assert result.status == checks.INCORRECT and "its rows are NaN" in result.message


def test_build_causal_mask_check_names_the_square_only_and_upper_masks():
    from helpers import checks

    square = checks.build_causal_mask(lambda T_q, T_k: np.tril(np.ones((T_q, T_k), dtype=bool)))
    assert "is right only for a square mask" in square.message
    upper = checks.build_causal_mask(lambda T_q, T_k: np.triu(np.ones((T_q, T_k), dtype=bool)))
    assert "is True above the diagonal" in upper.message
    helper = checks.build_causal_mask(lambda T_q, T_k: helpers.causal_mask(T_q, T_k))
    assert helper.status == checks.INCORRECT and "which is the answer" in helper.message
