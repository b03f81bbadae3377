"""What 01_embeddings adds: the word explorer and its numbers, and the exercises' targeted messages."""

import numpy as np

from helpers import checks, widgets
from helpers.embeddings import cosine_similarity


def test_word_pair_summary_numbers(emb):
    summary = widgets.word_pair_summary(emb, " cat ", "dog", k=5)
    a, b = emb.vector("cat"), emb.vector("dog")
    assert summary["word_a"] == "cat" and summary["tokens_a"] == ["cat"]
    assert np.isclose(summary["cosine"], a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), atol=1e-6)
    assert np.isclose(summary["dot"], float(np.dot(a.astype(float), b.astype(float))), atol=1e-5)
    assert summary["neighbours_a"] == emb.nearest("cat", 5) and len(summary["neighbours_b"]) == 5
    # the neighbours really are the best cosines over the whole vocabulary (brute force)
    unit = emb.table / np.linalg.norm(emb.table, axis=1, keepdims=True)
    cosines = unit @ (a / np.linalg.norm(a))
    visible = [
        i
        for i, token in enumerate(emb.vocab)
        if token not in emb.SPECIAL and not token.startswith("[unused") and token != "cat"
    ]
    best = sorted(visible, key=lambda i: -cosines[i])[:5]
    assert [token for token, _ in summary["neighbours_a"]] == [emb.vocab[i] for i in best]


def test_word_pair_summary_blank_word_and_split_word(emb):
    blank = widgets.word_pair_summary(emb, "cat", "   ")
    assert blank["tokens_b"] == [] and blank["neighbours_b"] == [] and blank["cosine"] is None and blank["dot"] is None
    assert "Type a word" in widgets.word_pair_html(blank)
    split = widgets.word_pair_summary(emb, "embeddings", "cat")
    assert split["tokens_a"] == ["em", "##bed", "##ding", "##s"]
    expected = cosine_similarity(emb.table[emb.ids("embeddings")].mean(axis=0), emb.vector("cat"))
    assert np.isclose(split["cosine"], expected, atol=1e-6)


def test_word_pair_summary_uses_the_cache(emb):
    cache = {"cat": [("sentinel", 1.0)]}
    summary = widgets.word_pair_summary(emb, "cat", "dog", k=3, cache=cache)
    assert summary["neighbours_a"] == [("sentinel", 1.0)]
    assert cache["dog"] == emb.nearest("dog", 3)


def test_word_explorer_redraws_when_a_word_changes(emb, shown):
    box = widgets.word_explorer(emb, ["cat", "dog", "king"], word_a="cat", word_b="dog")
    assert len(shown) == 1 and "cos(cat, dog)" in shown[0]
    box.controls["word_a"].value = "king"
    box.controls["word_b"].value = "queen"
    assert len(shown) == 3
    assert f"{widgets.word_pair_summary(emb, 'king', 'queen')['cosine']:.3f}" in shown[-1]
    assert "kings" in shown[-1] and "cos(king, queen)" in shown[-1]


def test_nearest_neighbours_check_explains_the_order():
    def ascending(v, table, k):
        cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))
        return np.argsort(cosines)[-k:]

    result = checks.nearest_neighbours(ascending)
    assert result.status == checks.INCORRECT and "wrong order" in result.message


# --- the exercises' targeted messages ---------------------------------------------------------


def verdict(check, answer):
    result = check(answer)
    return result.status, result.message


def test_cosine_check_names_the_dot_product_and_a_single_length():
    status, message = verdict(checks.cosine_similarity, lambda a, b: a @ b)
    assert status == checks.INCORRECT and "you returned the dot product" in message
    status, message = verdict(checks.cosine_similarity, lambda a, b: a @ b / np.linalg.norm(a))
    assert status == checks.INCORRECT and "divided by the length of a only" in message


def test_cosine_check_refuses_the_workshops_own_cosine():
    from helpers.embeddings import cosine_similarity as workshop_cosine

    status, message = verdict(checks.cosine_similarity, lambda a, b: workshop_cosine(a, b))
    assert status == checks.INCORRECT and "calls the workshop's own `helpers.embeddings.cosine_similarity`" in message


def test_nearest_neighbours_check_names_dot_product_ranking_and_ascending_order():
    def by_dot(v, table, k):
        return np.argsort(-(table @ v))[:k]

    def least_similar(v, table, k):
        cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))
        return np.argsort(cosines)[:k]

    assert "ranks by the dot product" in verdict(checks.nearest_neighbours, by_dot)[1]
    assert "gave the least similar rows" in verdict(checks.nearest_neighbours, least_similar)[1]
