"""The exercises of 05_masking."""

import numpy as np

from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close, expect_equal
from helpers.checks._mistakes import row_softmax_mistakes
from helpers.checks._reference import causal_mask_loop, masked_softmax_loop


@exercise(
    notebook="05_masking",
    hint="Compare positions: query i sits at position i + (T_k - T_q) and may see key j when j is at most "
         "that position. np.arange(T_k)[None, :] <= (np.arange(T_q) + T_k - T_q)[:, None] is a bool (T_q, T_k) array.",
    solution="""
        def build_causal_mask(T_q, T_k):
            query_pos = np.arange(T_q)[:, None] + (T_k - T_q)  # (T_q, 1): the queries are the last T_q positions
            key_pos = np.arange(T_k)[None, :]  # (1, T_k)
            return key_pos <= query_pos  # (T_q, T_k)
    """,
    wrong="""
        def build_causal_mask(T_q, T_k):
            return np.tril(np.ones((T_q, T_k), dtype=bool))  # right only when T_q == T_k
    """,
    forbid=("helpers.causal_mask", "helpers.masking.causal_mask"),
)
def build_causal_mask(answer):
    for T_q, T_k in ((1, 1), (4, 4), (6, 6), (2, 5), (1, 6), (3, 4)):
        what = f"build_causal_mask({T_q}, {T_k})"
        got = as_array(call(answer, T_q, T_k), what)
        expected = causal_mask_loop(T_q, T_k)
        upper = np.triu(np.ones((T_q, T_k), bool))  # the future instead of the past
        if got.shape == upper.shape and np.array_equal(got.astype(bool), upper) and not np.array_equal(upper, expected):
            raise Mismatch(f"{what} is True above the diagonal: query i may see the keys up to its own position "
                           "(on and below the diagonal), never the later ones")
        if T_q != T_k and got.shape == expected.shape and np.array_equal(got.astype(bool),
                                                                          np.tril(np.ones((T_q, T_k), bool))):
            raise Mismatch(f"{what} is right only for a square mask: here the {T_q} queries are the last {T_q} of "
                           f"{T_k} positions, so query i sits at position i + {T_k - T_q} and sees up to there")
        expect_equal(got, expected, what)


@exercise(
    notebook="05_masking",
    hint="np.where(mask, scores, -np.inf), then a stable softmax over the last axis. A row where every key is "
         "masked has max -inf: shift it by 0 instead, and divide by 1 where the row sum is 0, so the row is zeros.",
    solution="""
        def masked_softmax(scores, mask):
            scores = np.where(mask, scores, -np.inf)
            row_max = scores.max(axis=-1, keepdims=True)
            row_max = np.where(np.isfinite(row_max), row_max, 0)  # a fully masked row: shift by 0, not -inf
            e = np.exp(scores - row_max)  # exp(-inf) = 0: masked keys get exactly 0
            total = e.sum(axis=-1, keepdims=True)
            return e / np.where(total > 0, total, 1)  # a fully masked row: 0 / 1 = 0, not 0 / 0
    """,
    wrong="""
        def masked_softmax(scores, mask):
            scores = np.where(mask, scores, -1e9)  # a finite fill: a fully masked row becomes uniform
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
    """,
    # the workshop's softmax already turns an all -inf row into zeros: that is the lesson, so write it
    forbid=("helpers.softmax", "helpers.attention.softmax", "helpers.scaled_dot_product_attention",
            "helpers.attention.scaled_dot_product_attention"),
)
def masked_softmax(answer):
    rng = check_rng()
    scores = rng.normal(size=(4, 4)) * 2
    causal = np.tril(np.ones((4, 4), dtype=bool))
    for scale, what in ((1, "masked_softmax(scores, causal mask) for 4 tokens"),
                        (500, "masked_softmax on scores near ±1000")):
        got = as_array(call(answer, scores * scale, causal), what)
        row_softmax_mistakes(got, scores * scale, what, mask=causal)
        if got.shape == scores.shape and np.any(got[~causal] != 0):
            raise Mismatch(f"{what}: a masked key got weight {float(np.abs(got[~causal]).max()):.3g}; set masked "
                           "scores to -np.inf before the softmax, so their weights are exactly 0")
        expect_close(got, masked_softmax_loop(scores * scale, causal), what)
    batch = rng.normal(size=(2, 3, 4))
    keys = (np.arange(4)[None, :] < np.array([3, 0])[:, None])[:, None, :]  # (2, 1, 4): sentence 1 is all padding
    what = "masked_softmax with a (2, 1, 4) padding mask where sentence 1 has no real token"
    got = as_array(call(answer, batch, keys), what)
    if got.shape == batch.shape and np.all(np.isnan(got[1])):
        raise Mismatch(f"{what}: its rows are NaN. With every key masked the row max is -inf, and "
                       "exp(-inf - (-inf)) is NaN: shift such a row by 0 and divide by 1, so it stays all zeros")
    if got.shape == batch.shape and np.allclose(got[1], 0.25):
        raise Mismatch(f"{what}: its rows came out uniform (0.25 each), which is what a finite fill such as -1e9 "
                       "gives; a query that may see nothing must get all zeros (use -np.inf)")
    expect_close(got, masked_softmax_loop(batch, keys), f"{what} (its rows must be all zeros)")
