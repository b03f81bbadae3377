"""The exercises of 03_queries_keys_values."""

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close


@exercise(
    notebook="03_queries_keys_values",
    hint="Project X three times (Q = X @ W_q, K = X @ W_k, V = X @ W_v). The scores compare every "
         "query with every key, rows = queries: Q @ K.T.",
    solution="""
        def qkv_scores(X, W_q, W_k, W_v):
            Q = X @ W_q  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
            K = X @ W_k  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
            V = X @ W_v  # (T, d_model) @ (d_model, d_v) -> (T, d_v)
            scores = Q @ K.T  # (T, d_k) @ (d_k, T) -> (T, T)
            return Q, K, V, scores
    """,
    wrong="""
        def qkv_scores(X, W_q, W_k, W_v):
            Q = X @ W_q
            K = X @ W_k
            V = X @ W_v
            return Q, K, V, K @ Q.T
    """,
)
def qkv_scores(answer):
    rng = check_rng()
    X = rng.normal(size=(4, 5))
    W_q, W_k, W_v = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    got = call(answer, X, W_q, W_k, W_v)
    if not isinstance(got, (tuple, list)) or len(got) != 4:
        raise Mismatch("return four things, in this order: Q, K, V, scores")
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    shapes = "X (4, 5), W_q and W_k (5, 3), W_v (5, 2)"
    for name, value, expected in zip(("Q", "K", "V"), got[:3], (Q, K, V), strict=True):
        expect_close(value, expected, f"{name} for {shapes}")
    scores = as_array(got[3], "scores")
    if scores.shape == (4, 4) and np.allclose(scores, (Q @ K.T).T):
        raise Mismatch("scores is transposed: row i must hold query i's scores against every key (Q @ K.T)")
    if scores.shape == (4, 4) and np.allclose(scores, Q @ K.T / np.sqrt(3)):
        raise Mismatch("scores is divided by sqrt(d_k): that scaling is 04's subject; here return Q @ K.T as it is")
    expect_close(scores, Q @ K.T, f"scores for {shapes}")


@exercise(
    notebook="03_queries_keys_values",
    hint="Row by row: d_scores = weights * (d_weights - s), where s = sum(weights * d_weights) over the "
         "last axis. Use keepdims=True so s broadcasts back over the row.",
    solution="""
        def softmax_backward(d_weights, weights):
            inner = np.sum(d_weights * weights, axis=-1, keepdims=True)  # (..., T, 1)
            return weights * (d_weights - inner)  # (..., T, T)
    """,
    wrong="""
        def softmax_backward(d_weights, weights):
            return weights * d_weights
    """,
    forbid=("helpers.softmax_backward", "helpers.attention.softmax_backward"),
)
def softmax_backward(answer):
    rng = check_rng()
    for shape in ((3, 4), (2, 3, 5)):
        weights = softmax(rng.normal(size=shape) * 2)
        d_weights = rng.normal(size=shape)
        expected = weights * (d_weights - np.sum(d_weights * weights, axis=-1, keepdims=True))
        what = f"d_scores for weights of shape {shape}"
        got = as_array(call(answer, d_weights, weights), what)
        if got.shape == expected.shape and np.allclose(got, weights * d_weights):
            raise Mismatch(f"{what} is weights * d_weights, only the first term: every weight of a row also "
                           "moves when one score moves (they sum to 1), so subtract the row's sum of "
                           "weights * d_weights from d_weights first")
        wrong_axis = weights * (d_weights - np.sum(d_weights * weights, axis=-2, keepdims=True))
        if got.shape == expected.shape and np.allclose(got, wrong_axis):
            raise Mismatch(f"{what}: you summed over axis -2; each row is its own softmax, so sum over the last axis")
        expect_close(got, expected, what)
