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
