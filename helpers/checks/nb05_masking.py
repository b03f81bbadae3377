"""The exercises of 05_masking."""

import numpy as np

from helpers.checks._core import call, check_rng, exercise, expect_close, expect_equal
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
)
def build_causal_mask(answer):
    for T_q, T_k in ((1, 1), (4, 4), (6, 6), (2, 5), (1, 6), (3, 4)):
        expect_equal(call(answer, T_q, T_k), causal_mask_loop(T_q, T_k), f"build_causal_mask({T_q}, {T_k})")


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
)
def masked_softmax(answer):
    rng = check_rng()
    scores = rng.normal(size=(4, 4)) * 2
    causal = np.tril(np.ones((4, 4), dtype=bool))
    expect_close(call(answer, scores, causal), masked_softmax_loop(scores, causal),
                 "masked_softmax(scores, causal mask) for 4 tokens")
    expect_close(call(answer, scores * 500, causal), masked_softmax_loop(scores * 500, causal),
                 "masked_softmax on scores near ±1000 (overflow?)")
    batch = rng.normal(size=(2, 3, 4))
    keys = (np.arange(4)[None, :] < np.array([3, 0])[:, None])[:, None, :]  # (2, 1, 4): sentence 1 is all padding
    expect_close(call(answer, batch, keys), masked_softmax_loop(batch, keys),
                 "masked_softmax with a (2, 1, 4) padding mask (sentence 1 has no real token: its rows must be 0)")
