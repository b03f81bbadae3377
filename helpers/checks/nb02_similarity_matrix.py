"""The exercises of 02_similarity_matrix."""

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close
from helpers.checks._mistakes import row_softmax_mistakes


@exercise(
    notebook="02_similarity_matrix",
    hint="Subtract each row's maximum (keepdims=True) before np.exp, then divide each row by its sum.",
    solution="""
        def row_softmax(S):
            e = np.exp(S - S.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
    """,
    wrong="""
        def row_softmax(S):
            e = np.exp(S)
            return e / e.sum()
    """,
    forbid=("helpers.softmax", "helpers.attention.softmax"),
)
def row_softmax(answer):
    rng = check_rng()
    S = rng.normal(size=(4, 6)) * 3
    got = as_array(call(answer, S), "row_softmax(S)")
    row_softmax_mistakes(got, S, "row_softmax(S) for S of shape (4, 6)")
    expect_close(got, softmax(S), "row_softmax(S) for S of shape (4, 6)")
    big = np.array([[1000.0, 1001.0, 1002.0]])
    got = as_array(call(answer, big), "row_softmax(S)")
    if got.shape == big.shape and np.any(np.isnan(got)):
        raise Mismatch("on scores near 1000, np.exp overflows to inf and inf / inf is NaN: subtract each row's "
                       "max before np.exp (the weights do not change)")
    expect_close(got, softmax(big), "row_softmax on scores near 1000")


@exercise(
    notebook="02_similarity_matrix",
    hint="X @ X.T holds every dot product at once. For cosine=True, first divide each row by its length: "
         "X / np.linalg.norm(X, axis=1, keepdims=True).",
    solution="""
        def similarity_matrix(X, cosine=False):
            if cosine:
                X = X / np.linalg.norm(X, axis=1, keepdims=True)  # (T, d) / (T, 1) -> unit rows
            return X @ X.T  # (T, d) @ (d, T) -> (T, T)
    """,
    wrong="""
        def similarity_matrix(X, cosine=False):
            return X @ X.T
    """,
    forbid=("helpers.embeddings.similarity_matrix",),
)
def similarity_matrix(answer):
    rng = check_rng()
    X = rng.normal(size=(5, 7)) * rng.uniform(0.5, 3.0, size=(5, 1))
    got = as_array(call(answer, X), "similarity_matrix(X)")
    if got.shape == (7, 7):
        raise Mismatch("similarity_matrix(X) for X of shape (5, 7) has shape (7, 7): X.T @ X compares the 7 "
                       "dimensions; X @ X.T compares the 5 tokens, (T, d) @ (d, T) -> (T, T)")
    expect_close(got, X @ X.T, "similarity_matrix(X) for X of shape (5, 7)")
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    got = as_array(call(answer, X, cosine=True), "similarity_matrix(X, cosine=True)")
    if got.shape == (5, 5) and np.allclose(got, X @ X.T):
        raise Mismatch("similarity_matrix(X, cosine=True) gave the dot products: with cosine=True divide each "
                       "row by its length first, so the diagonal is all 1")
    expect_close(got, U @ U.T, "similarity_matrix(X, cosine=True)")


@exercise(
    notebook="02_similarity_matrix",
    hint="Three steps: scores S = X @ X.T (T, T); weights = softmax of each row of S (subtract the row max, "
         "np.exp, divide by the row sum); return weights @ X, shape (T, d).",
    solution="""
        def attention_without_weights(X):
            S = X @ X.T  # (T, d) @ (d, T) -> (T, T)
            e = np.exp(S - S.max(axis=-1, keepdims=True))
            weights = e / e.sum(axis=-1, keepdims=True)  # each row sums to 1
            return weights @ X  # (T, T) @ (T, d) -> (T, d)
    """,
    wrong="""
        def attention_without_weights(X):
            return (X @ X.T) @ X
    """,
    forbid=("helpers.scaled_dot_product_attention", "helpers.attention.scaled_dot_product_attention"),
)
def attention_without_weights(answer):
    rng = check_rng()
    X = rng.normal(size=(4, 6)) * rng.uniform(0.3, 1.5, size=(4, 1))
    expected = softmax(X @ X.T) @ X  # (T, T) @ (T, d) -> (T, d)
    what = "attention_without_weights(X) for X of shape (4, 6)"
    got = as_array(call(answer, X), what)
    if got.shape == (4, 4):
        row_softmax_mistakes(got, X @ X.T, f"the weights your {what} returned")
        raise Mismatch(f"{what} returned a (4, 4) matrix, the weights: return weights @ X, shape (T, d) = (4, 6)")
    if got.shape == expected.shape and np.allclose(got, (X @ X.T) @ X):
        raise Mismatch(f"{what} is (X Xᵀ) X, without the softmax: turn each row of scores into weights that sum "
                       "to 1 first, or the rows grow")
    if got.shape == expected.shape and np.allclose(got, softmax(X @ X.T, axis=0) @ X):
        raise Mismatch(f"{what}: your softmax normalised columns (axis=0); each row of weights must sum to 1")
    expect_close(got, expected, what)
