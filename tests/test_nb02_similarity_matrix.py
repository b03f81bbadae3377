"""What 02_similarity_matrix adds: the sentence explorer and its numbers, and the exercises."""

import numpy as np
import pytest
from _answers import solution

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


def test_attention_without_weights_check_catches_a_column_softmax():
    def column_softmax(X):
        S = X @ X.T
        e = np.exp(S - S.max(axis=0, keepdims=True))
        return (e / e.sum(axis=0, keepdims=True)) @ X

    assert checks.attention_without_weights(column_softmax).status == checks.INCORRECT


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


def test_row_softmax_check_names_the_common_mistakes():
    def columns(S):
        e = np.exp(S - S.max(axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)

    def whole_matrix(S):
        e = np.exp(S - S.max())
        return e / e.sum()

    def no_shift(S):
        e = np.exp(S)
        return e / e.sum(axis=-1, keepdims=True)

    def no_division(S):
        return np.exp(S - S.max(axis=-1, keepdims=True))

    for answer, words in ((columns, "you normalised each column"), (whole_matrix, "the sum of the whole matrix"),
                          (no_shift, "np.exp overflows to inf"), (no_division, "sums to")):
        result = checks.row_softmax(answer)
        assert result.status == checks.INCORRECT and words in result.message, (answer.__name__, result.message)


def test_row_softmax_check_refuses_the_workshops_softmax():
    import helpers as workshop

    for answer in (lambda S: softmax(S), lambda S: workshop.softmax(S, axis=-1)):
        result = checks.row_softmax(answer)
        assert result.status == checks.INCORRECT and "`helpers.softmax`, which is the answer" in result.message


def test_similarity_and_attention_checks_name_their_mistakes():
    assert "X.T @ X compares the 7 dimensions" in checks.similarity_matrix(lambda X, cosine=False: X.T @ X).message
    assert "gave the dot products" in checks.similarity_matrix(lambda X, cosine=False: X @ X.T).message
    assert "without the softmax" in checks.attention_without_weights(lambda X: (X @ X.T) @ X).message
    assert "return weights @ X" in checks.attention_without_weights(lambda X: softmax(X @ X.T)).message
