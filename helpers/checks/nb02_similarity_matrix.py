"""The exercises of 02_similarity_matrix."""

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import call, check_rng, exercise, expect_close


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
)
def row_softmax(answer):
    rng = check_rng()
    S = rng.normal(size=(4, 6)) * 3
    expect_close(call(answer, S), softmax(S), "row_softmax(S) for S of shape (4, 6)")
    big = np.array([[1000.0, 1001.0, 1002.0]])
    expect_close(call(answer, big), softmax(big), "row_softmax on scores near 1000 (overflow?)")


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
)
def similarity_matrix(answer):
    rng = check_rng()
    X = rng.normal(size=(5, 7)) * rng.uniform(0.5, 3.0, size=(5, 1))
    expect_close(call(answer, X), X @ X.T, "similarity_matrix(X) for X of shape (5, 7)")
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    expect_close(call(answer, X, cosine=True), U @ U.T, "similarity_matrix(X, cosine=True)")


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
)
def attention_without_weights(answer):
    rng = check_rng()
    X = rng.normal(size=(4, 6)) * rng.uniform(0.3, 1.5, size=(4, 1))
    expected = softmax(X @ X.T) @ X  # (T, T) @ (T, d) -> (T, d)
    expect_close(call(answer, X), expected, "attention_without_weights(X) for X of shape (4, 6)")
