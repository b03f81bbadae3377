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


def mistake(name, code):
    from helpers import checks

    return define(checks.EXERCISES[name].mistakes[code], name)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("hides-diagonal", "is False where the key sits at the query's own position, so no query may see itself"),
        ("future-visible", "is True on and above the diagonal: each query may see the keys after it (the future)"),
        ("true-means-blocked", "is True exactly where the key comes after the query, where attention must be blocked"),
        (
            "square-only",
            "build_causal_mask(2, 5) is right only for a square mask: here the 2 queries are the last 2 of 5 "
            "positions, so query i sits at position i + 3",
        ),
        ("int-mask", "has its 1s and 0s in the right places, but as numbers (dtype int64)"),
    ],
)
def test_build_causal_mask_names_each_mistake(code, words):
    from helpers import checks

    result = checks.build_causal_mask(mistake("build_causal_mask", code))
    assert result.mistake == code and words in result.message, result.message


def test_build_causal_mask_names_a_mask_that_hides_the_diagonal_in_any_spelling():
    """`key < query` (a query that cannot see itself) has its own message, square or not."""
    from helpers import checks

    answers = [
        lambda T_q, T_k: np.tril(np.ones((T_q, T_k), dtype=bool), k=T_k - T_q - 1),
        lambda T_q, T_k: np.arange(T_k)[None, :] < np.arange(T_q)[:, None] + T_k - T_q,
    ]
    for answer in answers:
        result = checks.build_causal_mask(answer)
        assert result.mistake == "hides-diagonal", result.message
        assert "up to and including its own position (key i for query i)" in result.message


def test_build_causal_mask_names_the_square_only_mask_with_the_shift_and_the_helper():
    from helpers import checks

    square = checks.build_causal_mask(lambda T_q, T_k: np.arange(T_k)[None, :] <= np.arange(T_q)[:, None])
    assert square.mistake == "square-only" and "i + 3" in square.message
    upper = checks.build_causal_mask(lambda T_q, T_k: np.arange(T_k)[None, :] >= np.arange(T_q)[:, None] + T_k - T_q)
    assert upper.mistake == "future-visible" and "(key i for query i)" in upper.message
    floats = checks.build_causal_mask(lambda T_q, T_k: np.tril(np.ones((T_q, T_k)), k=T_k - T_q))
    assert floats.mistake == "int-mask" and "(dtype float64)" in floats.message
    helper = checks.build_causal_mask(lambda T_q, T_k: helpers.causal_mask(T_q, T_k))
    assert helper.status == checks.INCORRECT and "which is the answer" in helper.message


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (
            "finite-fill",
            "the rows of sentence 1, whose keys are all masked, came out uniform, 0.25 on each of the 4 keys",
        ),
        ("all-masked-nan", "the rows of sentence 1, whose keys are all masked, are NaN. Their max is −∞"),
        (
            "after-softmax",
            "the blocked keys got 0, but the rows no longer sum to 1 (row 0 sums to 0.00583): you masked the "
            "weights after the softmax",
        ),
        ("zero-fill", "the blocked keys got weights up to 0.329: you set their scores to 0"),
        (
            "masked-keys-weighted",
            "a blocked key got weight 0.856. Every key where the mask is False must get exactly 0",
        ),
        ("wrong-axis", "you normalised each column (axis -2)"),
        (
            "max-over-blocked",
            "on scores of size about 1000: rows 0 and 2 came out all zeros. Your row max included the blocked keys",
        ),
        ("true-means-blocked", "your weights fall on exactly the keys the mask blocks"),
        ("max-as-a-row", "your row maxima, shape (4,), were lined up with the columns"),
    ],
)
def test_masked_softmax_names_each_mistake(code, words):
    from helpers import checks

    result = checks.masked_softmax(mistake("masked_softmax", code))
    assert result.mistake == code and words in result.message, result.message


def test_masked_softmax_names_a_mask_multiplied_into_the_scores_as_a_zero_fill():
    from helpers import checks

    def multiplied(scores, mask):
        e = np.exp(scores * mask - (scores * mask).max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    result = checks.masked_softmax(multiplied)
    assert result.mistake == "zero-fill" and "multiplying the scores by the mask does the same" in result.message


def test_masked_softmax_names_the_inverted_mask_and_the_sums_lined_up_with_the_columns():
    """These were once told "row 3 sums to 0" and "row 1 sums to 1, not 1"."""
    from helpers import checks

    def inverted(scores, mask):
        s = np.where(mask, -np.inf, scores)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return np.nan_to_num(e / e.sum(axis=-1, keepdims=True))  # the last row is all blocked: NaN, then 0

    result = checks.masked_softmax(inverted)
    assert result.mistake == "true-means-blocked" and "True means 'may attend'" in result.message

    def sums_as_a_row(scores, mask):
        s = np.where(mask, scores, -np.inf)
        m = s.max(axis=-1, keepdims=True)
        e = np.exp(s - np.where(np.isfinite(m), m, 0))
        total = e.sum(axis=-1)  # (4,): lined up with the columns of the square (4, 4) scores
        return e / np.where(total > 0, total, 1)

    result = checks.masked_softmax(sums_as_a_row)
    assert result.mistake == "sums-as-a-row" and "your row sums, shape (4,), were lined up" in result.message


def test_masked_softmax_returning_the_masked_scores_is_told_the_exponential_is_missing():
    from helpers import checks

    result = checks.masked_softmax(lambda scores, mask: np.where(mask, scores, -np.inf))
    assert result.mistake == "no-exp" and "some weights are negative" in result.message


def test_masked_softmax_with_the_max_over_allowed_keys_then_masked_exponentials_is_right():
    """Masking the exponentials is fine when the max is taken over the allowed keys only."""
    from helpers import checks

    def masked_exponentials(scores, mask):
        m = np.where(mask, scores, -np.inf).max(axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        e = np.exp(np.minimum(scores - m, 700)) * mask
        total = e.sum(axis=-1, keepdims=True)
        return e / np.where(total > 0, total, 1)

    assert checks.masked_softmax(masked_exponentials).status == checks.CORRECT
