"""What 01_embeddings adds: the word explorer and its numbers, and the exercises' targeted messages."""

import numpy as np
import pytest
from _answers import mistake_cases, reads_as_meant, solution

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


# --- the exercises' targeted messages ---------------------------------------------------------


def verdict(check, answer):
    result = check(answer)
    return result.status, result.message


# each registered mistake, and words its message must contain: what the learner did, and what it should be
MESSAGES = {
    "cosine_similarity": {
        "dot-product": ["you returned the dot product", "divides it by both lengths"],
        "one-length": ["by the length of a only", "divides it by both lengths"],
        "no-brackets": ["then multiplied by the length of b", "from left to right", "in brackets"],
        "elementwise": ["has shape (2,), one number per dimension", "adds those products up into one number"],
        "squared-lengths": ["divided by the squared lengths", "square root of its dot product with itself"],
        "sum-of-lengths": ["by the sum of the two lengths, |a| + |b|", "by their product, |a| times |b|"],
        "absolute-value": ["you returned 0.9706, the size of the cosine without its sign", "keep the sign"],
        "distance": ["1 minus the cosine, the cosine distance (1.971)", "the cosine itself"],
        "angle": ["the angle between a and b, 2.898 radians", "asks for its cosine"],
    },
    "nearest_neighbours": {
        "dot-product": ["ranks the rows as their dot products with v do", "long rows win", "own length"],
        "least-similar": ["gave the least similar rows", "from smallest to largest"],
        "wrong-order": ["the right rows in the wrong order", "most similar first"],
        "values-not-rows": ["returned the 5 largest cosines themselves", "numbers of their rows"],
        "lengths-as-a-column": [
            "has shape (5, 60)",
            "kept as a column of shape (60, 1)",
            "a (60, 60) table",
            "60 lengths of the same shape, (60,)",
        ],
        "column-lengths": ["met 8 lengths, shape (8,)", "the table's 8 columns", "60 of them, measured along the rows"],
        "rows-not-numbers": ["returned the 5 most similar rows themselves, shape (5, 8)", "5 row indices"],
    },
}


@pytest.mark.parametrize("name, code", mistake_cases(MESSAGES))
def test_each_mistake_reads_as_meant(name, code):
    reads_as_meant(MESSAGES, name, code)


def test_cosine_check_refuses_the_workshops_own_cosine():
    from helpers.embeddings import cosine_similarity as workshop_cosine

    status, message = verdict(checks.cosine_similarity, lambda a, b: workshop_cosine(a, b))
    assert status == checks.INCORRECT and "calls the workshop's own `helpers.embeddings.cosine_similarity`" in message


def test_nearest_neighbours_check_names_a_single_length_as_a_dot_product_ranking():
    def one_length(v, table, k):  # the length of the whole table: one number, so the ranking is the dot product's
        cosines = table @ v / (np.linalg.norm(table) * np.linalg.norm(v))
        return np.argsort(-cosines)[:k]

    result = checks.nearest_neighbours(one_length)
    assert result.mistake == "dot-product" and "one length for the whole table" in result.message


def test_nearest_neighbours_check_passes_other_crashes_on_to_the_learner():
    def product_the_wrong_way(v, table, k):
        return np.argsort(-(v @ table))[:k]  # (8,) @ (60, 8): numpy's matmul error, not a broadcast

    result = checks.nearest_neighbours(product_the_wrong_way)
    assert result.mistake == "crash" and "in your line: return np.argsort(-(v @ table))[:k]" in result.message


def test_nearest_neighbours_solution_finds_the_notebooks_neighbours(emb):
    top = solution("nearest_neighbours")(emb.vector("cat"), emb.table, 3)
    assert [emb.vocab[i] for i in top] == ["cat", "cats", "kitten"]


def test_cosine_check_refuses_the_workshops_cosine_imported_inside_the_function():
    def cosine_similarity(a, b):
        from helpers.embeddings import cosine_similarity as workshop_cosine

        return workshop_cosine(a, b)

    assert checks.cosine_similarity(cosine_similarity).mistake == "forbidden"


def test_cosine_check_names_the_angle_in_degrees_too():
    result = checks.cosine_similarity(
        lambda a, b: np.degrees(np.arccos(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))))
    )
    assert result.mistake == "angle" and "166.1 degrees" in result.message


def test_nearest_neighbours_reports_the_shape_it_was_given():
    """The shape named is the one returned, not the one after flattening; a column of k is fine."""

    def cosines(v, table):
        return table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))

    result = checks.nearest_neighbours(
        lambda v, table, k: (np.argsort(-cosines(v, table))[:k], np.sort(-cosines(v, table))[:k])
    )
    assert result.mistake == "not-an-array" and "returned 2 things (a tuple); return only the one" in result.message
    result = checks.nearest_neighbours(lambda v, table, k: np.argmax(cosines(v, table)))
    assert result.mistake == "wrong-shape" and "has shape (), expected (5,)" in result.message
    result = checks.nearest_neighbours(lambda v, table, k: np.argsort(-cosines(v, table))[:k].astype(float))
    assert result.mistake == "not-an-array" and "the right numbers, but as floats" in result.message
    assert checks.nearest_neighbours(lambda v, table, k: np.argsort(-cosines(v, table))[:k, None])
    assert checks.nearest_neighbours(lambda v, table, k: np.argsort(-cosines(v, table))[None, :k])


def test_nearest_neighbours_names_column_lengths_kept_as_a_row_too():
    def column_lengths_kept(v, table, k):
        cosines = table @ v / np.linalg.norm(table, axis=0, keepdims=True)  # (60,) / (1, 8): numpy refuses
        return np.argsort(-cosines)[:k]

    assert checks.nearest_neighbours(column_lengths_kept).mistake == "column-lengths"
