"""Tests of what notebooks 01_embeddings and 02_similarity_matrix add to helpers.

pca_2d, the arrows / scatter / HTML heatmap pictures, the word and sentence explorers and their
pure compute functions, and the notebooks' exercises (solution, wrong answer, stub, crash).
"""

import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers import checks, plotting, softmax, widgets  # noqa: E402
from helpers.embeddings import cosine_similarity, pca_2d  # noqa: E402
from helpers.pretrained import WeightsNotFoundError  # noqa: E402


@pytest.fixture(scope="module")
def emb():
    from helpers.embeddings import load_token_embeddings

    try:
        return load_token_embeddings()
    except WeightsNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# --- pca_2d -------------------------------------------------------------------------------


def test_pca_2d_matches_the_covariance_eigenvectors():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 6)) @ np.diag([5.0, 3.0, 1.0, 0.5, 0.2, 0.1]) + 7.0  # clear main axes, off-centre
    P = pca_2d(X)
    Xc = X - X.mean(axis=0)
    eigenvalues, eigenvectors = np.linalg.eigh(Xc.T @ Xc)  # ascending
    expected = Xc @ eigenvectors[:, [-1, -2]]  # (30, 6) @ (6, 2) -> (30, 2)
    assert P.shape == (30, 2)
    for axis in range(2):
        assert np.allclose(P[:, axis], expected[:, axis]) or np.allclose(P[:, axis], -expected[:, axis])
    # the variance along each axis is the matching eigenvalue, widest first
    assert np.allclose((P**2).sum(axis=0), eigenvalues[[-1, -2]])
    assert np.isclose(P[:, 0] @ P[:, 1], 0, atol=1e-8)


def test_pca_2d_sign_is_fixed_and_dtype_kept():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 5)).astype(np.float32)
    P = pca_2d(X)
    assert P.dtype == np.float32
    for axis in range(2):
        assert P[np.argmax(np.abs(P[:, axis])), axis] > 0
    # flipping the data's sign gives the same picture: the sign rule removes SVD's arbitrary choice
    assert np.allclose(pca_2d(-X), P, atol=1e-5)


@pytest.mark.parametrize("bad", [np.ones(5), np.ones((1, 5)), np.ones((5, 1)), np.ones((2, 3, 4))])
def test_pca_2d_rejects_bad_shapes(bad):
    with pytest.raises(ValueError, match=r"X must (be 2-D|have at least 2)"):
        pca_2d(bad)


# --- pictures -----------------------------------------------------------------------------


def test_arrows_2d_draws_one_arrow_and_label_per_vector():
    vectors = np.array([[3.0, 1.0], [-1.0, 2.0], [0.5, -2.0]])
    ax = plotting.arrows_2d(vectors, ["a", "b", "c"], title="t")
    arrows = [child for child in ax.get_children() if isinstance(child, matplotlib.text.Annotation)]
    assert len(arrows) == 3
    assert sorted(text.get_text().strip() for text in ax.texts if text.get_text().strip()) == ["a", "b", "c"]
    left, right = ax.get_xlim()
    assert left < -1.0 and right > 3.0  # every tip is inside the axes


def test_arrows_2d_and_scatter_reject_bad_input():
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        plotting.arrows_2d(np.ones((3, 3)), ["a", "b", "c"])
    with pytest.raises(ValueError, match="labels has 2 entries"):
        plotting.arrows_2d(np.ones((3, 2)), ["a", "b"])
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        plotting.labelled_scatter(np.ones(4), ["a"] * 4)
    with pytest.raises(ValueError, match="one entry per point"):
        plotting.labelled_scatter(np.ones((4, 2)), ["a"] * 4, groups=["g"] * 3)


def test_labelled_scatter_colours_by_group_in_input_order():
    points = np.arange(10.0).reshape(5, 2)
    ax = plotting.labelled_scatter(points, list("abcde"), ["x", "y", "x", "z", "y"])
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["x", "y", "z"]
    assert sorted(t.get_text() for t in ax.texts) == list("abcde")
    assert sum(len(collection.get_offsets()) for collection in ax.collections) == 5


def test_html_heatmap_has_one_cell_per_entry_and_escapes_labels():
    matrix = np.array([[0.0, 1.0, -np.inf], [0.5, 0.25, 2.0]])
    markup = plotting.html_heatmap(matrix, ["<b>", "q"], ["k1", "k2", "&"], title="T<1>")
    assert markup.count("<td") == 6
    assert "&lt;b&gt;" in markup and "&amp;" in markup and "T&lt;1&gt;" in markup and "<b>" not in markup
    assert "−∞" in markup and "2.00" in markup and "0.25" in markup
    # the largest value gets the colour map's top colour, the smallest its bottom colour
    top, bottom = (matplotlib.colors.to_hex(plt.get_cmap("viridis")(x)) for x in (1.0, 0.0))
    assert re.search(rf"background:{top};color:\w+\">2\.00", markup)
    assert re.search(rf"background:{bottom};color:\w+\">0\.00", markup)


def test_html_heatmap_rejects_a_shape_mismatch():
    with pytest.raises(ValueError, match=r"\(2, 2\)"):
        plotting.html_heatmap(np.ones((2, 3)), ["a", "b"], ["c", "d"])


# --- the 01 word explorer ------------------------------------------------------------------


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
    visible = [i for i, token in enumerate(emb.vocab) if token not in emb.SPECIAL and not token.startswith("[unused")
               and token != "cat"]
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


def test_word_explorer_redraws_when_a_word_changes(emb, monkeypatch):
    shown = []
    monkeypatch.setattr(widgets, "_show_html", shown.append)
    box = widgets.word_explorer(emb, ["cat", "dog", "king"], word_a="cat", word_b="dog")
    assert len(shown) == 1 and "cos(cat, dog)" in shown[0]
    box.controls["word_a"].value = "king"
    box.controls["word_b"].value = "queen"
    assert len(shown) == 3
    assert f"{widgets.word_pair_summary(emb, 'king', 'queen')['cosine']:.3f}" in shown[-1]
    assert "kings" in shown[-1] and "cos(king, queen)" in shown[-1]


# --- the 02 sentence explorer --------------------------------------------------------------


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


def test_sentence_explorer_redraws_both_heatmaps(emb, monkeypatch):
    shown = []
    monkeypatch.setattr(widgets, "_show_html", shown.append)
    box = widgets.sentence_explorer(emb, "The cat sat on the mat")
    assert len(shown) == 1 and shown[0].count("<table") == 2 and shown[0].count("<td") == 2 * 36
    box.controls["sentence"].value = "The bat flew"
    box.controls["temperature"].value = 2.0
    box.controls["cosine"].value = True
    assert len(shown) == 4
    assert shown[-1].count("<td") == 2 * 9 and "softmax(S / 2.00)" in shown[-1] and "cosine" in shown[-1]
    box.controls["sentence"].value = ""
    assert "Type a sentence" in shown[-1]


# --- the exercises of 01 and 02 -------------------------------------------------------------

MINE = ["cosine_similarity", "nearest_neighbours", "similarity_matrix", "row_softmax", "attention_without_weights"]


def _define(source, name):
    namespace = {"np": np}
    exec(source, namespace)  # noqa: S102 - the exercises' own solution / wrong text
    return namespace[name]


@pytest.mark.parametrize("name", MINE)
def test_exercise_verdicts(name, capsys):
    exercise = checks.EXERCISES[name]
    assert exercise.notebook in ("01_embeddings", "02_similarity_matrix")
    check = getattr(checks, name)
    assert check(_define(exercise.solution, name)).status == checks.CORRECT
    assert check(_define(exercise.wrong, name)).status == checks.INCORRECT

    def stub(*args, **kwargs):
        raise NotImplementedError

    def crash(*args, **kwargs):
        return 1 / 0

    assert check(stub).status == checks.NOT_ATTEMPTED
    assert check(crash).status == checks.INCORRECT
    assert "✗" in capsys.readouterr().out


def test_nearest_neighbours_check_explains_the_order():
    def ascending(v, table, k):
        cosines = table @ v / (np.linalg.norm(table, axis=1) * np.linalg.norm(v))
        return np.argsort(cosines)[-k:]

    result = checks.nearest_neighbours(ascending)
    assert result.status == checks.INCORRECT and "wrong order" in result.message


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

    assert np.allclose(checks.reference("similarity_matrix")(X, cosine=True), similarity_matrix(X, cosine=True))
    assert np.allclose(checks.reference("row_softmax")(X @ X.T), softmax(X @ X.T))
    assert np.allclose(checks.reference("attention_without_weights")(X),
                       scaled_dot_product_attention(X, X, X, scale=1.0)[0])
    v = emb.vector("cat")
    top = checks.reference("nearest_neighbours")(v, emb.table, 2)
    assert [emb.vocab[i] for i in top] == ["cat", "cats"]
