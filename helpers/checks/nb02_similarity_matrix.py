"""The exercises of 02_similarity_matrix."""

import numpy as np

from helpers.checks._core import Case, check_rng, exercise
from helpers.checks._families import softmax_slips


@exercise(
    hint="One matrix product compares every row of X with every row: entry (i, j) is the dot product of token "
    "i's vector with token j's. For the cosines, first divide each row by its own length (np.linalg.norm).",
    hint2="Check the shape first: for T tokens the answer is (T, T), whatever d is; a (d, d) result compares "
    "the dimensions, not the tokens. With cosine=True every entry on the diagonal must be exactly 1, a "
    "token against itself: if it is not, each row was divided by something other than its own length.",
    solution="""
        def similarity_matrix(X, cosine=False):
            if cosine:
                X = X / np.linalg.norm(X, axis=1, keepdims=True)  # (T, d) / (T, 1) -> unit rows
            return X @ X.T  # (T, d) @ (d, T) -> (T, T)
    """,
    mistakes=r"""
        transposed: `X @ X.T  #` → `X.T @ X  #`
            {what} has shape ({d}, {d}): you compared the {d} columns (the dimensions) with each other. The tokens are
            the rows: compare every row with every row, X times its transpose, (T, d) times (d, T), shape ({T}, {T})
        cosine-ignored: `if cosine:` → `if False:`
            {what} gave the plain dot products, the same as with cosine left False: when cosine is True, divide each row
            of X by its own length first, so that the diagonal is all 1
        always-cosine: `if cosine:` → `if True:`
            {what} gave the cosines (its diagonal is all 1), but cosine was left False: return the plain dot products
            then, and divide the rows by their lengths only when cosine is True
        lengths-as-a-row: `axis=1, keepdims=True` → `axis=1`
            {what}: the {T} row lengths, shape ({T},), could not divide X ({T}, {d}). numpy lines shapes up from the
            right, so the {T} lengths met the {d} columns. Keep the lengths as a column, shape ({T}, 1), so that each
            row is divided by its own length
        column-lengths: `axis=1` → `axis=0`
            {what}: you divided each of the {d} columns by its length. The cosine divides each row, a token's vector, by
            its own length, so that the diagonal is all 1
        one-length: `np.linalg.norm(X, axis=1, keepdims=True)` → `np.linalg.norm(X)`
            {what}: you divided X by one number, the length of the whole matrix, so the diagonal is not all 1. Each row
            needs its own length: {T} lengths, one per token
    """,
    forbid=("helpers.embeddings.similarity_matrix",),
)
def similarity_matrix():
    rng = check_rng()
    T, d = 5, 7
    X = rng.normal(size=(T, d)) * rng.uniform(0.5, 3.0, size=(T, 1))  # (T, d), rows of different lengths
    yield Case(f"similarity_matrix(X) for X of shape ({T}, {d})", (X,), facts={"T": T, "d": d})
    yield Case(f"similarity_matrix(X, cosine=True) for X of shape ({T}, {d})", (X,), {"cosine": True}, {"T": T, "d": d})


@exercise(
    hint="Do what softmax_loop does, to every row at once: subtract the row's largest score, take the exponential, and "
    "divide by the row's sum. np.exp works on every entry; a max or a sum can run along one axis only.",
    hint2="Test it on two rows that are very different, such as 1, 2, 3 and 1000, 1000, 1000: every row must sum to 1, "
    "and the second must be a third everywhere, with no overflow. If a row is divided by another row's sum, the T_q "
    "sums were lined up with the columns instead of the rows: they must stand as a column, one per row.",
    solution="""
        def row_softmax(S):
            e = np.exp(S - S.max(axis=-1, keepdims=True))  # (T_q, T_k) - (T_q, 1): each row's own max
            return e / e.sum(axis=-1, keepdims=True)  # (T_q, T_k) / (T_q, 1): each row sums to 1
    """,
    # a mistake with no message is named by the row softmax's family (_families.SOFTMAX_SAYS)
    mistakes=r"""
        wrong-axis: `axis=-1` → `axis=0`
        whole-matrix: `S.max(axis=-1, keepdims=True)` → `S.max()`, `e.sum(axis=-1, keepdims=True)` → `e.sum()`
        rows-not-normalised: ` / e.sum(axis=-1, keepdims=True)` → ``
        no-max-shift: `S - S.max(axis=-1, keepdims=True)` → `S`
            {what} has NaN in the first row: the exponential of 1000 overflows to infinity, and infinity divided by
            infinity is NaN. Subtract each row's maximum before the exponential (the weights do not change)
        global-max-shift: `S.max(axis=-1, keepdims=True)` → `S.max()`
            {what} has NaN in the second row: you subtracted the largest score of the whole matrix, 1002, so that row's
            exponentials are e^(−2000) and smaller, all 0, and 0 divided by 0 is NaN. Subtract each row's own maximum
        sums-as-a-row: `e.sum(axis=-1, keepdims=True)` → `e.sum(axis=-1)`
            {what}: a row maximum or row sum came out as shape ({T_q},), one number per row but with the row axis gone,
            so numpy lined those {T_q} numbers up with the {T_k} columns and could not combine them with S. Keep them as
            a column, shape ({T_q}, 1), so each acts on its own row
        no-exp: `e = np.exp(S - S.max(axis=-1, keepdims=True))` → `e = S`
            {what}: you divided the scores themselves by their row sums, without the exponential. The rows sum to 1, but
            negative scores give negative weights: take the exponential of each (shifted) score first, then divide by
            the row's sum
        column-sums: `e.sum(axis=-1, keepdims=True)` → `e.sum(axis=0, keepdims=True)`
        shift-mismatch: `return e / e.sum(axis=-1, keepdims=True)` → `return e / np.exp(S).sum(axis=-1, keepdims=True)`
        returned-in-loop:
            def row_softmax(S):
                weights = np.zeros(S.shape)
                for i in range(S.shape[0]):
                    e = np.exp(S[i] - S[i].max())
                    weights[i] = e / e.sum()
                    return weights
    """,
    families=lambda got, expected, case: softmax_slips(got, case.args[0], case.what),
    forbid=("helpers.softmax",),
)
def row_softmax():
    rng = check_rng()
    T_q, T_k = 4, 6
    S = rng.normal(size=(T_q, T_k))  # scores of order 1: exp() without a shift would not overflow here
    shapes = {"T_q": T_q, "T_k": T_k}
    yield Case(f"row_softmax(S) for S of shape ({T_q}, {T_k})", (S,), facts=shapes)
    big = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -999.0, -998.0]])  # (2, 3)
    shapes = {"T_q": 2, "T_k": 3}
    yield Case("row_softmax(S) for S with rows [1000, 1001, 1002] and [−1000, −999, −998]", (big,), facts=shapes)


def _attention_families(got, expected, case):
    """The weights inside the answer, when it returned them or when it is a weighting of the rows of X."""
    X = case.args[0]
    S = X @ X.T  # (T, T)
    if got.shape == S.shape:
        softmax_slips(got, S, f"the weights your {case.what} returned")
        return "returned-weights"
    if got.shape == X.shape and np.all(np.isfinite(got)):
        weights = got @ np.linalg.pinv(X)  # (T, d) @ (d, T) -> (T, T): the weights that mixed the rows, if any did
        if np.allclose(weights @ X, got):
            softmax_slips(weights, S, f"the weights by which your {case.what} averaged the rows of X")


@exercise(
    hint="Three steps, each one vectorised: the scores are the dot products of every row of X with every row "
    "(Exercise 1), the softmax of each row turns them into weights (Exercise 2), and one more matrix product "
    "averages the rows of X with those weights.",
    hint2="Follow the shapes: X (T, d) gives scores (T, T), weights (T, T) whose rows each sum to 1, and an "
    "output (T, d) like X. Row i of the output is an average of the rows of X, so if every row of X is "
    "the same, the output is X itself. No scaling here: notebook 04 adds it.",
    solution="""
        def attention_without_weights(X):
            S = X @ X.T  # (T, d) @ (d, T) -> (T, T)
            e = np.exp(S - S.max(axis=-1, keepdims=True))
            weights = e / e.sum(axis=-1, keepdims=True)  # each row sums to 1
            return weights @ X  # (T, T) @ (T, d) -> (T, d)
    """,
    # a mistake with no message is named by the row softmax's family (_families.SOFTMAX_SAYS)
    mistakes=r"""
        no-softmax: `return weights @ X` → `return S @ X`
            {what} is the scores times X, without the softmax: each row of scores must first become weights that sum to
            1, or each output row is a sum instead of an average, and the vectors grow or shrink
        returned-weights: `return weights @ X` → `return weights`
            {what} returned a ({T}, {T}) matrix: those are the weights. Use them to average the rows of X and return the
            result, one row per token, shape (T, d) = ({T}, {d})
        wrong-axis: `axis=-1` → `axis=0`
        whole-matrix: `S.max(axis=-1, keepdims=True)` → `S.max()`, `e.sum(axis=-1, keepdims=True)` → `e.sum()`
        scaled: `S = X @ X.T` → `S = X @ X.T / np.sqrt(X.shape[-1])`
            {what}: you divided the scores by √d = √{d} before the softmax. That scaling is notebook 04's subject; here
            the weights are the softmax of the plain dot products
        sums-as-a-row: `e.sum(axis=-1, keepdims=True)` → `e.sum(axis=-1)`
        residual: `return weights @ X` → `return X + weights @ X`
            {what} is X plus the attention output: you added X back, a residual connection (its weights, the softmax
            plus the identity, sum to 2 along each row). Return the weighted average of the rows of X alone; notebook 08
            adds the residual
    """,
    families=_attention_families,
    forbid=("helpers.scaled_dot_product_attention",),
)
def attention_without_weights():
    rng = check_rng()
    T, d = 4, 6
    X = rng.normal(size=(T, d)) * rng.uniform(0.3, 1.5, size=(T, 1))  # (T, d)
    facts = {"T": T, "d": d}
    yield Case(f"attention_without_weights(X) for X of shape ({T}, {d})", (X,), facts=facts)
