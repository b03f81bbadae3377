"""The exercises of 03_queries_keys_values."""

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close
from helpers.checks._mistakes import broadcast_clash
from helpers.checks._reference import scores_divisor


def _same(got, candidate):
    return got.shape == np.shape(candidate) and np.allclose(got, candidate)


@exercise(
    notebook="03_queries_keys_values",
    hint="Project X three times, once by each matrix, to get Q, K and V: a token is a row, so X comes first in "
    "each product. The scores compare every query with every key: Q times the transpose of K, one row per "
    "query.",
    hint2=(
        "Write the shapes down before the products: X is (T, d_model) and each W has d_model rows, so each "
        "projection keeps the T rows and changes the width. The scores must be (T, T), row i for query i; a "
        "(d_k, d_k) result compares dimensions. Return the raw scores, with no softmax and no √d_k (notebook "
        "04's subject), after Q, K and V."
    ),
    solution="""
        def qkv_scores(X, W_q, W_k, W_v):
            Q = X @ W_q  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
            K = X @ W_k  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
            V = X @ W_v  # (T, d_model) @ (d_model, d_v) -> (T, d_v)
            scores = Q @ K.T  # (T, d_k) @ (d_k, T) -> (T, T)
            return Q, K, V, scores
    """,
    mistakes={
        "transposed": """
            def qkv_scores(X, W_q, W_k, W_v):
                Q, K, V = X @ W_q, X @ W_k, X @ W_v
                return Q, K, V, K @ Q.T
        """,
        "scaled": """
            def qkv_scores(X, W_q, W_k, W_v):
                Q, K, V = X @ W_q, X @ W_k, X @ W_v
                return Q, K, V, Q @ K.T / np.sqrt(K.shape[-1])
        """,
        "weights-not-scores": """
            def qkv_scores(X, W_q, W_k, W_v):
                Q, K, V = X @ W_q, X @ W_k, X @ W_v
                e = np.exp(Q @ K.T)
                return Q, K, V, e / e.sum(axis=-1, keepdims=True)
        """,
        "elementwise": """
            def qkv_scores(X, W_q, W_k, W_v):
                Q, K, V = X @ W_q, X @ W_k, X @ W_v
                return Q, K, V, Q * K
        """,
        "scores-of-x": """
            def qkv_scores(X, W_q, W_k, W_v):
                Q, K, V = X @ W_q, X @ W_k, X @ W_v
                return Q, K, V, X @ X.T
        """,
        "swapped-q-and-k": """
            def qkv_scores(X, W_q, W_k, W_v):
                Q, K, V = X @ W_k, X @ W_q, X @ W_v
                return Q, K, V, Q @ K.T
        """,
        "tokens-as-columns": """
            def qkv_scores(X, W_q, W_k, W_v):
                Q, K, V = W_q.T @ X.T, W_k.T @ X.T, W_v.T @ X.T
                return Q, K, V, Q.T @ K
        """,
        "not-four-things": """
            def qkv_scores(X, W_q, W_k, W_v):
                Q, K = X @ W_q, X @ W_k
                return Q @ K.T
        """,
    },
)
def qkv_scores(answer):
    rng = check_rng()
    T, d_model, d_k, d_v = 4, 5, 3, 2
    X = rng.normal(size=(T, d_model))
    W_q, W_k, W_v = rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_v))
    Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d_k), (T, d_k), (T, d_v)
    scores = Q @ K.T  # (T, d_k) @ (d_k, T) -> (T, T)
    shapes = f"X ({T}, {d_model}), W_q and W_k ({d_model}, {d_k}), W_v ({d_model}, {d_v})"
    what = f"qkv_scores(X, W_q, W_k, W_v) for {shapes}"
    got = call(answer, X, W_q, W_k, W_v)
    if not isinstance(got, (tuple, list)) or len(got) != 4:
        if isinstance(got, np.ndarray) and got.shape == (T, T):
            raise Mismatch(
                f"{what} returned one array of shape ({T}, {T}), the scores alone: return four things, "
                "in this order: Q, K, V and the scores",
                "not-four-things",
            )
        kind = f"{len(got)} things" if isinstance(got, (tuple, list)) else f"a {type(got).__name__}"
        raise Mismatch(
            f"{what} returned {kind}: return four things, in this order: Q, K, V and the scores", "not-four-things"
        )
    got_Q, got_K, got_V = (as_array(value, f"{name} of {what}") for name, value in zip("QKV", got[:3], strict=True))
    if _same(got_Q, K) and _same(got_K, Q):
        raise Mismatch(
            f"{what}: your Q is X times W_k and your K is X times W_q, swapped. The queries come from "
            "W_q and the keys from W_k; swapped, entry (i, j) of the scores would be query j's score for "
            "key i",
            "swapped-q-and-k",
        )
    for name, value, expected, W in zip("QKV", (got_Q, got_K, got_V), (Q, K, V), (W_q, W_k, W_v), strict=True):
        if _same(value, expected.T):
            raise Mismatch(
                f"{what}: your {name} has shape {value.shape}, one column per token. In this series "
                f"tokens are rows: {name} is X ({T}, {d_model}) times W_{name.lower()} {W.shape}, X first, "
                f"so {name} has shape {expected.shape}, row i for token i",
                "tokens-as-columns",
            )
        expect_close(value, expected, f"{name} of {what}")
    got_scores = as_array(got[3], f"the scores of {what}")
    if _same(got_scores, scores.T):
        raise Mismatch(
            f"{what}: your scores are transposed, keys times queries. Row i must hold query i's "
            "scores against every key, so the queries come first in the product",
            "transposed",
        )
    divisor = scores_divisor(got_scores, scores)
    if divisor is not None and not np.isclose(divisor, 1.0):
        which = (
            f"√d_k = √{d_k}"
            if np.isclose(divisor, np.sqrt(d_k))
            else f"√d_model = √{d_model}"
            if np.isclose(divisor, np.sqrt(d_model))
            else f"{divisor:.4g}"
        )
        raise Mismatch(
            f"{what}: your scores are divided by {which}. Scaling is notebook 04's subject; here "
            "return the plain dot products of the queries with the keys",
            "scaled",
        )
    if any(_same(got_scores, softmax(scores / scale)) for scale in (1.0, np.sqrt(d_k), np.sqrt(d_model))):
        raise Mismatch(
            f"{what}: your scores are already weights (each row sums to 1). Return the raw scores, the "
            "dot products of the queries with the keys, before any softmax",
            "weights-not-scores",
        )
    if _same(got_scores, X @ X.T):
        raise Mismatch(
            f"{what}: your scores compare X with itself, as notebook 02 did. Here they compare the "
            "queries with the keys: query i's dot product with key j",
            "scores-of-x",
        )
    if _same(got_scores, Q * K):
        raise Mismatch(
            f"{what}: your scores have shape ({T}, {d_k}): you multiplied Q and K entry by entry, which "
            f"pairs each token only with itself. The scores pair every query with every key: a ({T}, {T}) "
            "table of dot products",
            "elementwise",
        )
    expect_close(got_scores, scores, f"the scores of {what}")


@exercise(
    notebook="03_queries_keys_values",
    hint="Follow the formula above the exercise: each entry of the result is its weight times (its own d_weight "
    "minus the row's average of the d_weights, weighted by that row's weights). That is one sum per row, "
    "over the last axis.",
    hint2=(
        "Check it on a row whose answer you know: if every d_weight in the row is the same number, the result"
        " is all zeros (adding one constant to every score changes no weight). The weighted average of a "
        "row's d_weights is one number per row, and it belongs to its own row only: for weights of shape "
        "(..., T) it needs the shape (..., 1)."
    ),
    solution="""
        def softmax_backward(d_weights, weights):
            inner = np.sum(d_weights * weights, axis=-1, keepdims=True)  # (..., T, 1)
            return weights * (d_weights - inner)  # (..., T, T)
    """,
    mistakes={
        "first-term-only": """
            def softmax_backward(d_weights, weights):
                return weights * d_weights
        """,
        "wrong-axis": """
            def softmax_backward(d_weights, weights):
                inner = np.sum(d_weights * weights, axis=-2, keepdims=True)
                return weights * (d_weights - inner)
        """,
        "diagonal-only": """
            def softmax_backward(d_weights, weights):
                return weights * (1 - weights) * d_weights
        """,
        "unweighted-sum": """
            def softmax_backward(d_weights, weights):
                inner = np.sum(d_weights, axis=-1, keepdims=True)
                return weights * (d_weights - inner)
        """,
        "sums-as-a-row": """
            def softmax_backward(d_weights, weights):
                inner = np.sum(d_weights * weights, axis=-1)
                return weights * (d_weights - inner)
        """,
        "sign-flipped": """
            def softmax_backward(d_weights, weights):
                inner = np.sum(d_weights * weights, axis=-1, keepdims=True)
                return weights * (inner - d_weights)
        """,
        "roles-swapped": """
            def softmax_backward(d_weights, weights):
                inner = np.sum(d_weights * weights, axis=-1, keepdims=True)
                return d_weights * (weights - inner)
        """,
        "weights-factor-missing": """
            def softmax_backward(d_weights, weights):
                return d_weights - np.sum(d_weights * weights, axis=-1, keepdims=True)
        """,
    },
    forbid=("helpers.softmax_backward", "helpers.attention.softmax_backward"),
)
def softmax_backward(answer):
    rng = check_rng()
    for shape in ((3, 4), (2, 3, 5)):
        weights = softmax(rng.normal(size=shape) * 2)  # (..., T), each row sums to 1
        d_weights = rng.normal(size=shape)
        expected = weights * (d_weights - np.sum(d_weights * weights, axis=-1, keepdims=True))
        what = f"softmax_backward(d_weights, weights) for weights of shape {shape}"
        try:
            got = as_array(call(answer, d_weights, weights), what)
        except ValueError as exc:
            if broadcast_clash(exc) == {shape, shape[:-1]}:
                raise Mismatch(
                    f"{what}: the row sums came out with shape {shape[:-1]}, the summed axis gone, so "
                    f"numpy, lining shapes up from the right, could not subtract them from the d_weights, "
                    f"shape {shape}. Keep the summed axis, shape {shape[:-1] + (1,)}, so that each row's "
                    "sum is subtracted along its own row",
                    "sums-as-a-row",
                ) from None
            raise
        if got.shape != expected.shape or np.iscomplexobj(got):
            expect_close(got, expected, what)
        if np.allclose(got, weights * d_weights):
            raise Mismatch(
                f"{what} is the weights times the d_weights, entry by entry: only the first term. Every "
                "weight of a row also moves when one score moves (the row sums to 1), so subtract the "
                "row's weighted average of the d_weights from each d_weight first",
                "first-term-only",
            )
        if np.allclose(got, weights * (1 - weights) * d_weights):
            raise Mismatch(
                f"{what}: you used w·(1 − w) times the d_weight, the diagonal of the softmax's Jacobian "
                "only (the sigmoid's derivative). Moving score i also changes every other weight j of the "
                "row, by −w_i·w_j, so the row's sum of w_j·g_j enters every entry",
                "diagonal-only",
            )
        if np.allclose(got, weights * (d_weights - d_weights.sum(axis=-1, keepdims=True))):
            raise Mismatch(
                f"{what}: the sum you subtract adds up the d_weights alone; weigh each by its weight, "
                "Σ_j w_j·g_j, the row's weighted average of the d_weights",
                "unweighted-sum",
            )
        inner = np.sum(d_weights * weights, axis=-1, keepdims=True)  # (..., T, 1)
        if np.allclose(got, -expected):
            raise Mismatch(
                f"{what} is the right answer with its sign flipped: each entry is w·(g − Σ_j w_j·g_j), "
                "the d_weight minus the row's weighted average, not the other way round",
                "sign-flipped",
            )
        if np.allclose(got, d_weights * (weights - inner)):
            raise Mismatch(
                f"{what}: the weights and the d_weights have swapped roles: each entry is the weight "
                "times (its d_weight minus the row's weighted average of the d_weights), "
                "w·(g − Σ_j w_j·g_j)",
                "roles-swapped",
            )
        if np.allclose(got, d_weights - inner):
            raise Mismatch(
                f"{what} is each d_weight minus the row's weighted average, without the factor in front: "
                "multiply that by the weight itself, w·(g − Σ_j w_j·g_j)",
                "weights-factor-missing",
            )
        wrong_axis = weights * (d_weights - np.sum(d_weights * weights, axis=-2, keepdims=True))
        if np.allclose(got, wrong_axis):
            raise Mismatch(
                f"{what}: you summed down each column (over the second-to-last axis). Each row is its "
                "own softmax, so sum along each row, over the last axis",
                "wrong-axis",
            )
        expect_close(got, expected, what)
