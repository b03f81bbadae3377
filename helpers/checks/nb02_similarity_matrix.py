"""The exercises of 02_similarity_matrix."""

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close
from helpers.checks._mistakes import broadcast_clash, row_softmax_mistakes


def _same(got, candidate):
    return got.shape == np.shape(candidate) and np.allclose(got, candidate)


@exercise(
    notebook="02_similarity_matrix",
    hint="One matrix product compares every row of X with every row: entry (i, j) is the dot product of token "
    "i's vector with token j's. For the cosines, first divide each row by its own length (np.linalg.norm).",
    hint2=(
        "Check the shape first: for T tokens the answer is (T, T), whatever d is; a (d, d) result compares "
        "the dimensions, not the tokens. With cosine=True every entry on the diagonal must be exactly 1, a "
        "token against itself: if it is not, each row was divided by something other than its own length."
    ),
    solution="""
        def similarity_matrix(X, cosine=False):
            if cosine:
                X = X / np.linalg.norm(X, axis=1, keepdims=True)  # (T, d) / (T, 1) -> unit rows
            return X @ X.T  # (T, d) @ (d, T) -> (T, T)
    """,
    mistakes={
        "transposed": """
            def similarity_matrix(X, cosine=False):
                if cosine:
                    X = X / np.linalg.norm(X, axis=1, keepdims=True)
                return X.T @ X
        """,
        "cosine-ignored": """
            def similarity_matrix(X, cosine=False):
                return X @ X.T
        """,
        "always-cosine": """
            def similarity_matrix(X, cosine=False):
                X = X / np.linalg.norm(X, axis=1, keepdims=True)
                return X @ X.T
        """,
        "lengths-as-a-row": """
            def similarity_matrix(X, cosine=False):
                if cosine:
                    X = X / np.linalg.norm(X, axis=1)
                return X @ X.T
        """,
        "column-lengths": """
            def similarity_matrix(X, cosine=False):
                if cosine:
                    X = X / np.linalg.norm(X, axis=0, keepdims=True)
                return X @ X.T
        """,
        "one-length": """
            def similarity_matrix(X, cosine=False):
                if cosine:
                    X = X / np.linalg.norm(X)
                return X @ X.T
        """,
    },
    forbid=("helpers.embeddings.similarity_matrix",),
)
def similarity_matrix(answer):
    rng = check_rng()
    T, d = 5, 7
    X = rng.normal(size=(T, d)) * rng.uniform(0.5, 3.0, size=(T, 1))  # (T, d), rows of different lengths
    lengths = np.linalg.norm(X, axis=1, keepdims=True)  # (T, 1)
    U = X / lengths  # (T, d): unit rows
    what = f"similarity_matrix(X) for X of shape ({T}, {d})"
    got = as_array(call(answer, X), what)
    if got.shape == (d, d):
        raise Mismatch(
            f"{what} has shape ({d}, {d}): you compared the {d} columns (the dimensions) with each other. "
            f"The tokens are the rows: compare every row with every row, X times its transpose, "
            f"(T, d) times (d, T), shape ({T}, {T})",
            "transposed",
        )
    if _same(got, U @ U.T):
        raise Mismatch(
            f"{what} gave the cosines (its diagonal is all 1), but cosine was left False: return the "
            "plain dot products then, and divide the rows by their lengths only when cosine is True",
            "always-cosine",
        )
    expect_close(got, X @ X.T, what)

    what = f"similarity_matrix(X, cosine=True) for X of shape ({T}, {d})"
    try:
        got = as_array(call(answer, X, cosine=True), what)
    except ValueError as exc:
        if broadcast_clash(exc) == {(T, d), (T,)}:
            raise Mismatch(
                f"{what}: the {T} row lengths, shape ({T},), could not divide X ({T}, {d}). numpy lines "
                f"shapes up from the right, so the {T} lengths met the {d} columns. Keep the lengths as "
                f"a column, shape ({T}, 1), so that each row is divided by its own length",
                "lengths-as-a-row",
            ) from None
        raise
    if _same(got, X @ X.T):
        raise Mismatch(
            f"{what} gave the plain dot products, the same as with cosine left False: when cosine is True, "
            "divide each row of X by its own length first, so that the diagonal is all 1",
            "cosine-ignored",
        )
    columns = X / np.linalg.norm(X, axis=0, keepdims=True)  # (T, d): unit columns, the mistake
    if _same(got, columns @ columns.T):
        raise Mismatch(
            f"{what}: you divided each of the {d} columns by its length. The cosine divides each row, "
            "a token's vector, by its own length, so that the diagonal is all 1",
            "column-lengths",
        )
    if _same(got, X @ X.T / np.sum(X * X)):
        raise Mismatch(
            f"{what}: you divided X by one number, the length of the whole matrix, so the diagonal is "
            f"not all 1. Each row needs its own length: {T} lengths, one per token",
            "one-length",
        )
    expect_close(got, U @ U.T, what)


@exercise(
    notebook="02_similarity_matrix",
    hint="Do what softmax_loop does, to every row at once: subtract the row's largest score, take the "
    "exponential, and divide by the row's sum. np.exp works on every entry; a max or a sum can run along "
    "one axis only.",
    hint2=(
        "Test it on two rows that are very different, such as 1, 2, 3 and 1000, 1000, 1000: every row must "
        "sum to 1, and the second must be a third everywhere, with no overflow. If a row is divided by "
        "another row's sum, the T_q sums were lined up with the columns instead of the rows: they must stand "
        "as a column, one per row."
    ),
    solution="""
        def row_softmax(S):
            e = np.exp(S - S.max(axis=-1, keepdims=True))  # (T_q, T_k) - (T_q, 1): each row's own max
            return e / e.sum(axis=-1, keepdims=True)  # (T_q, T_k) / (T_q, 1): each row sums to 1
    """,
    mistakes={
        "wrong-axis": """
            def row_softmax(S):
                e = np.exp(S - S.max(axis=0, keepdims=True))
                return e / e.sum(axis=0, keepdims=True)
        """,
        "whole-matrix": """
            def row_softmax(S):
                e = np.exp(S - S.max())
                return e / e.sum()
        """,
        "rows-not-normalised": """
            def row_softmax(S):
                return np.exp(S - S.max(axis=-1, keepdims=True))
        """,
        "no-max-shift": """
            def row_softmax(S):
                e = np.exp(S)
                return e / e.sum(axis=-1, keepdims=True)
        """,
        "global-max-shift": """
            def row_softmax(S):
                e = np.exp(S - S.max())
                return e / e.sum(axis=-1, keepdims=True)
        """,
        "sums-as-a-row": """
            def row_softmax(S):
                e = np.exp(S - S.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1)
        """,
        "no-exp": """
            def row_softmax(S):
                return S / S.sum(axis=-1, keepdims=True)
        """,
        "column-sums": """
            def row_softmax(S):
                e = np.exp(S - S.max(axis=-1, keepdims=True))
                return e / e.sum(axis=0, keepdims=True)
        """,
        "shift-mismatch": """
            def row_softmax(S):
                return np.exp(S - S.max(axis=-1, keepdims=True)) / np.exp(S).sum(axis=-1, keepdims=True)
        """,
        "returned-in-loop": """
            def row_softmax(S):
                weights = np.zeros(S.shape)
                for i in range(S.shape[0]):
                    e = np.exp(S[i] - S[i].max())
                    weights[i] = e / e.sum()
                    return weights
        """,
    },
    forbid=("helpers.softmax", "helpers.attention.softmax"),
)
def row_softmax(answer):
    rng = check_rng()
    T_q, T_k = 4, 6
    S = rng.normal(size=(T_q, T_k))  # scores of order 1: exp() without a shift would not overflow here
    what = f"row_softmax(S) for S of shape ({T_q}, {T_k})"
    try:
        got = as_array(call(answer, S), what)
    except ValueError as exc:
        if broadcast_clash(exc) == {(T_q, T_k), (T_q,)}:
            raise Mismatch(
                f"{what}: a row maximum or row sum came out as shape ({T_q},), one number per row but "
                f"with the row axis gone, so numpy lined those {T_q} numbers up with the {T_k} columns "
                f"and could not combine them with S. Keep them as a column, shape ({T_q}, 1), so each "
                "acts on its own row",
                "sums-as-a-row",
            ) from None
        raise
    if _same(got, S / S.sum(axis=-1, keepdims=True)):
        raise Mismatch(
            f"{what}: you divided the scores themselves by their row sums, without the exponential. The "
            "rows sum to 1, but negative scores give negative weights: take the exponential of each "
            "(shifted) score first, then divide by the row's sum",
            "no-exp",
        )
    if not np.iscomplexobj(got):
        row_softmax_mistakes(got, S, what)
    expect_close(got, softmax(S), what)

    big = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -999.0, -998.0]])  # (2, 3)
    what = "row_softmax(S) for S with rows [1000, 1001, 1002] and [−1000, −999, −998]"
    got = as_array(call(answer, big), what)
    if got.shape == big.shape and np.any(np.isnan(got[0])):
        raise Mismatch(
            f"{what} has NaN in the first row: the exponential of 1000 overflows to infinity, and "
            "infinity divided by infinity is NaN. Subtract each row's maximum before the exponential "
            "(the weights do not change)",
            "no-max-shift",
        )
    if got.shape == big.shape and np.any(np.isnan(got[1])):
        raise Mismatch(
            f"{what} has NaN in the second row: you subtracted the largest score of the whole matrix, "
            "1002, so that row's exponentials are e^(−2000) and smaller, all 0, and 0 divided by 0 is NaN. "
            "Subtract each row's own maximum",
            "global-max-shift",
        )
    expect_close(got, softmax(big), what)


@exercise(
    notebook="02_similarity_matrix",
    hint="Three steps, each one vectorised: the scores are the dot products of every row of X with every row "
    "(Exercise 1), the softmax of each row turns them into weights (Exercise 2), and one more matrix product "
    "averages the rows of X with those weights.",
    hint2=(
        "Follow the shapes: X (T, d) gives scores (T, T), weights (T, T) whose rows each sum to 1, and an "
        "output (T, d) like X. Row i of the output is an average of the rows of X, so if every row of X is "
        "the same, the output is X itself. No scaling here: notebook 04 adds it."
    ),
    solution="""
        def attention_without_weights(X):
            S = X @ X.T  # (T, d) @ (d, T) -> (T, T)
            e = np.exp(S - S.max(axis=-1, keepdims=True))
            weights = e / e.sum(axis=-1, keepdims=True)  # each row sums to 1
            return weights @ X  # (T, T) @ (T, d) -> (T, d)
    """,
    mistakes={
        "no-softmax": """
            def attention_without_weights(X):
                return (X @ X.T) @ X
        """,
        "returned-weights": """
            def attention_without_weights(X):
                S = X @ X.T
                e = np.exp(S - S.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
        """,
        "wrong-axis": """
            def attention_without_weights(X):
                S = X @ X.T
                e = np.exp(S - S.max(axis=0, keepdims=True))
                return (e / e.sum(axis=0, keepdims=True)) @ X
        """,
        "whole-matrix": """
            def attention_without_weights(X):
                e = np.exp(X @ X.T)
                return (e / e.sum()) @ X
        """,
        "scaled": """
            def attention_without_weights(X):
                S = X @ X.T / np.sqrt(X.shape[-1])
                e = np.exp(S - S.max(axis=-1, keepdims=True))
                return (e / e.sum(axis=-1, keepdims=True)) @ X
        """,
        "sums-as-a-row": """
            def attention_without_weights(X):
                S = X @ X.T
                e = np.exp(S - S.max(axis=-1, keepdims=True))
                return (e / e.sum(axis=-1)) @ X  # (T, T) / (T,): numpy lines the T sums up with the columns
        """,
        "residual": """
            def attention_without_weights(X):
                S = X @ X.T
                e = np.exp(S - S.max(axis=-1, keepdims=True))
                return X + (e / e.sum(axis=-1, keepdims=True)) @ X
        """,
    },
    forbid=("helpers.scaled_dot_product_attention", "helpers.attention.scaled_dot_product_attention"),
)
def attention_without_weights(answer):
    rng = check_rng()
    T, d = 4, 6
    X = rng.normal(size=(T, d)) * rng.uniform(0.3, 1.5, size=(T, 1))  # (T, d)
    S = X @ X.T  # (T, d) @ (d, T) -> (T, T)
    expected = softmax(S) @ X  # (T, T) @ (T, d) -> (T, d)
    what = f"attention_without_weights(X) for X of shape ({T}, {d})"
    got = as_array(call(answer, X), what)
    if got.shape == (T, T):
        if not np.iscomplexobj(got):
            row_softmax_mistakes(got, S, f"the weights your {what} returned")
        raise Mismatch(
            f"{what} returned a ({T}, {T}) matrix: those are the weights. Use them to average the rows "
            f"of X and return the result, one row per token, shape (T, d) = ({T}, {d})",
            "returned-weights",
        )
    if got.shape != expected.shape or np.iscomplexobj(got) or not np.all(np.isfinite(got)):
        expect_close(got, expected, what)
    if np.allclose(got, X + expected):
        raise Mismatch(
            f"{what} is X plus the attention output: you added X back, a residual connection (its "
            "weights, the softmax plus the identity, sum to 2 along each row). Return the weighted "
            "average of the rows of X alone; notebook 08 adds the residual",
            "residual",
        )
    if np.allclose(got, S @ X):
        raise Mismatch(
            f"{what} is the scores times X, without the softmax: each row of scores must first become "
            "weights that sum to 1, or each output row is a sum instead of an average, and the vectors "
            "grow or shrink",
            "no-softmax",
        )
    if np.allclose(got, softmax(S / np.sqrt(d)) @ X):
        raise Mismatch(
            f"{what}: you divided the scores by √d = √{d} before the softmax. That scaling is notebook "
            "04's subject; here the weights are the softmax of the plain dot products",
            "scaled",
        )
    weights = got @ np.linalg.pinv(X)  # (T, d) @ (d, T) -> (T, T): the weights that mixed the rows, if any did
    if np.allclose(weights @ X, got):
        row_softmax_mistakes(weights, S, f"the weights by which your {what} averaged the rows of X")
    expect_close(got, expected, what)
