"""What 02_similarity_matrix adds: the sentence explorer and its numbers, and the exercises."""

import numpy as np
import pytest
from _answers import mistake_cases, reads_as_meant, solution

from helpers import checks, softmax, widgets


def test_sentence_attention_against_loops(emb):
    tokens, S, weights = widgets.sentence_attention(emb, "The cat sat on the mat", temperature=0.7)
    X = emb.vectors("The cat sat on the mat").astype(np.float64)
    T = len(tokens)
    assert tokens == ["the", "cat", "sat", "on", "the", "mat"]
    for i in range(T):
        scores = [X[i] @ X[j] for j in range(T)]
        exps = [np.exp(s / 0.7) for s in scores]
        for j in range(T):
            assert np.isclose(S[i, j], scores[j], atol=1e-5)
            assert np.isclose(weights[i, j], exps[j] / sum(exps), atol=1e-6)


def test_sentence_attention_options(emb):
    _, S_cos, _ = widgets.sentence_attention(emb, "The cat sat on the mat", cosine=True)
    assert np.allclose(np.diag(S_cos), 1, atol=1e-6) and np.all(S_cos <= 1 + 1e-6)
    tokens, S, weights = widgets.sentence_attention(emb, "one two three four five", max_tokens=3)
    assert tokens == ["one", "two", "three"] and S.shape == weights.shape == (3, 3)
    tokens, S, weights = widgets.sentence_attention(emb, "   ")
    assert tokens == [] and S.shape == weights.shape == (0, 0)
    # low temperature: each row goes to its largest score; high: uniform
    _, S, cold = widgets.sentence_attention(emb, "The cat sat on the mat", temperature=1e-3)
    assert np.allclose(cold, softmax(S / 1e-3)) and np.allclose(np.diag(cold)[[1, 2, 3, 5]], 1, atol=1e-6)
    _, _, hot = widgets.sentence_attention(emb, "The cat sat on the mat", temperature=1e6)
    assert np.allclose(hot, 1 / 6, atol=1e-5)


@pytest.mark.parametrize("temperature", [0, -1.0, np.nan])
def test_sentence_attention_rejects_bad_temperature(emb, temperature):
    with pytest.raises(ValueError, match="temperature must be > 0"):
        widgets.sentence_attention(emb, "the cat", temperature=temperature)


def test_sentence_explorer_redraws_both_heatmaps(emb, shown):
    box = widgets.sentence_explorer(emb, "The cat sat on the mat")
    assert len(shown) == 1 and shown[0].count("<table") == 2 and shown[0].count("<td") == 2 * 36
    box.controls["sentence"].value = "The bat flew"
    box.controls["temperature"].value = 2.0
    box.controls["cosine"].value = True
    assert len(shown) == 4
    assert shown[-1].count("<td") == 2 * 9 and "softmax(S / 2.00)" in shown[-1] and "cosine" in shown[-1]
    box.controls["sentence"].value = ""
    assert "Type a sentence" in shown[-1]


def test_sentence_explorer_says_when_a_long_sentence_is_cut(emb, shown):
    long = "The bat flew out of the dark cave at night and the boy swung his baseball bat at a ball"
    n_tokens = len(emb.tokenize(long))
    assert n_tokens > widgets.MAX_TOKENS == 16
    box = widgets.sentence_explorer(emb, long)
    assert f"Only the first 16 of its {n_tokens} tokens are shown" in shown[-1]
    assert shown[-1].count("<td") == 2 * 16 * 16
    box.controls["sentence"].value = "The cat sat on the mat"
    assert "Only the first" not in shown[-1]


def test_side_by_side_wraps_instead_of_running_off_the_page():
    from helpers import html_plots

    markup = html_plots.side_by_side("<table>a</table>", "<table>b</table>")
    assert "flex-wrap:wrap" in markup and "overflow-x:auto" in markup


def test_temperature_sliders_show_their_whole_label(emb):
    from helpers.widgets._explorer import ipw

    for box in (widgets.softmax_explorer([1.0, 2.0]), widgets.sentence_explorer(emb), widgets.scaling_explorer()):
        slider = box.controls["temperature"]
        assert isinstance(slider, ipw.FloatLogSlider) and slider.style.description_width == "initial"


def test_exercise_solutions_agree_with_the_helpers(emb):
    X = emb.vectors("The cat sat on the mat").astype(np.float64)
    from helpers import scaled_dot_product_attention
    from helpers.embeddings import similarity_matrix

    assert np.allclose(solution("similarity_matrix")(X, cosine=True), similarity_matrix(X, cosine=True))
    assert np.allclose(solution("row_softmax")(X @ X.T), softmax(X @ X.T))
    assert np.allclose(solution("attention_without_weights")(X), scaled_dot_product_attention(X, X, X, scale=1.0)[0])
    v = emb.vector("cat")
    top = solution("nearest_neighbours")(v, emb.table, 2)
    assert [emb.vocab[i] for i in top] == ["cat", "cats"]


# --- the exercises' targeted messages ---------------------------------------------------------


# each registered mistake, and words its message must contain: what the learner did, and what it should be
MESSAGES = {
    "similarity_matrix": {
        "transposed": ["has shape (7, 7)", "compared the 7 columns (the dimensions)", "(T, d) times (d, T)"],
        "cosine-ignored": ["cosine=True) for X of shape (5, 7) gave the plain dot products", "diagonal is all 1"],
        "always-cosine": ["gave the cosines", "cosine was left False", "plain dot products"],
        "lengths-as-a-row": ["the 5 row lengths, shape (5,)", "met the 7 columns", "as a column, shape (5, 1)"],
        "column-lengths": ["divided each of the 7 columns by its length", "each row, a token's vector"],
        "one-length": ["by one number, the length of the whole matrix", "5 lengths, one per token"],
    },
    "row_softmax": {
        "wrong-axis": ["you normalised each column", "runs along each row"],
        "whole-matrix": ["the sum of the whole matrix", "each row by its own sum"],
        "rows-not-normalised": ["each row's largest entry is exactly 1", "not yet divided by their row's sum"],
        "no-max-shift": ["NaN in the first row", "overflows to infinity", "Subtract each row's maximum"],
        "global-max-shift": ["NaN in the second row", "largest score of the whole matrix", "each row's own maximum"],
        "sums-as-a-row": ["came out as shape (4,)", "with the 6 columns", "as a column, shape (4, 1)"],
        "no-exp": ["without the exponential", "negative weights"],
        "column-sums": ["each column sums to 1, the rows do not", "divided by the column sums"],
        "shift-mismatch": ["in the numerator but not from those summed in the denominator", "e^(± its max)"],
        "returned-in-loop": ["the first row is right but every other row is all 0", "after its first row"],
    },
    "attention_without_weights": {
        "no-softmax": ["the scores times X, without the softmax", "weights that sum to 1"],
        "returned-weights": ["returned a (4, 4) matrix: those are the weights", "shape (T, d) = (4, 6)"],
        "wrong-axis": ["the weights by which your", "you normalised each column", "runs along each row"],
        "whole-matrix": ["the weights by which your", "the sum of the whole matrix"],
        "scaled": ["divided the scores by √d = √6", "notebook 04's subject"],
        "sums-as-a-row": [
            "the weights by which your",
            "your row sums, shape (4,), were lined up with the columns",
            "The matrix is square, so numpy did not complain",
            "shape (4, 1)",
        ],
        "residual": ["is X plus the attention output: you added X back", "notebook 08 adds the residual"],
    },
}


@pytest.mark.parametrize("name, code", mistake_cases(MESSAGES))
def test_each_mistake_reads_as_meant(name, code):
    reads_as_meant(MESSAGES, name, code)


def test_attention_without_weights_names_the_weights_it_mixed_with():
    def transposed_weights(X):  # the weights' columns sum to 1: for symmetric scores, a softmax down the columns
        return softmax(X @ X.T).T @ X

    def unnormalised(X):
        S = X @ X.T
        return np.exp(S - S.max(axis=-1, keepdims=True)) @ X

    assert checks.attention_without_weights(transposed_weights).mistake == "wrong-axis"
    result = checks.attention_without_weights(unnormalised)
    assert result.mistake == "rows-not-normalised" and "the weights by which your" in result.message


def test_row_softmax_names_a_dropped_axis_in_the_max_too():
    def max_as_a_row(S):
        e = np.exp(S - S.max(axis=-1))  # (4, 6) - (4,): cannot broadcast
        return e / e.sum(axis=-1, keepdims=True)

    assert checks.row_softmax(max_as_a_row).mistake == "sums-as-a-row"


def test_row_softmax_check_refuses_the_workshops_softmax():
    import helpers as workshop

    for answer in (lambda S: softmax(S), lambda S: workshop.softmax(S, axis=-1)):
        result = checks.row_softmax(answer)
        assert result.status == checks.INCORRECT and "`helpers.softmax`, which is the answer" in result.message


def test_row_softmax_names_the_row_farthest_from_1_with_digits_enough():
    """A message "row 1 sums to 1, not 1" once came from printing 1.00027 at 4 digits."""

    def nearly(S):
        e = np.exp(S - S.max(axis=-1, keepdims=True))
        weights = e / e.sum(axis=-1, keepdims=True)
        weights[2] *= 1.00027  # row 2 is off by 2.7e-4, row 0 by less
        weights[0] *= 1.00001
        return weights

    result = checks.row_softmax(nearly)
    assert result.mistake == "rows-not-normalised" and "row 2 sums to 1.0003, not 1" in result.message


def test_row_softmax_catch_all_is_neutral_and_other_mistakes_are_named():
    result = checks.row_softmax(lambda S: np.exp(S) / (1 + np.exp(S)))  # a sigmoid: nothing more specific fits
    assert result.mistake == "rows-not-normalised", result.message
    assert "Each row of weights is that row's exponentials divided by their own sum" in result.message
    result = checks.row_softmax(lambda S: S)  # the scores unchanged
    assert result.mistake == "no-exp" and "some weights are negative" in result.message

    def log_softmax(S):  # the final exponential forgotten
        m = S.max(axis=-1, keepdims=True)
        return S - m - np.log(np.exp(S - m).sum(axis=-1, keepdims=True))

    assert checks.row_softmax(log_softmax).mistake == "no-exp"


def test_row_softmax_names_the_max_after_the_exponential_and_floor_division():
    def max_after_exp(S):
        e = np.exp(S) - np.exp(S).max(axis=-1, keepdims=True)
        return e / e.sum(axis=-1, keepdims=True)

    def floor_division(S):
        e = np.exp(S - S.max(axis=-1, keepdims=True))
        return e // e.sum(axis=-1, keepdims=True)

    result = checks.row_softmax(max_after_exp)
    assert result.mistake == "max-after-exp" and "subtracted each row's max after the exponential" in result.message
    result = checks.row_softmax(floor_division)
    assert result.mistake == "floor-division" and "floor division, written with two slashes" in result.message


def test_attention_without_weights_names_a_row_max_lined_up_with_the_columns():
    def max_as_a_row(X):
        S = X @ X.T
        e = np.exp(S - S.max(axis=-1))  # (4, 4) - (4,): square, so numpy does not complain
        return (e / e.sum(axis=-1, keepdims=True)) @ X

    result = checks.attention_without_weights(max_as_a_row)
    assert result.mistake == "max-as-a-row", result.message
    assert "your row maxima, shape (4,), were lined up with the columns" in result.message


def test_attention_without_weights_names_a_tuple():
    result = checks.attention_without_weights(lambda X: (softmax(X @ X.T) @ X, softmax(X @ X.T)))
    assert result.mistake == "not-an-array" and "returned 2 things (a tuple)" in result.message
