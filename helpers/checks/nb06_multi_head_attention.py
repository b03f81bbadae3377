"""The exercises of 06_multi_head_attention."""

import numpy as np

from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close
from helpers.checks._mistakes import same_numbers_other_order
from helpers.checks._reference import multihead_loop


@exercise(
    notebook="06_multi_head_attention",
    hint="Head i owns columns i*d_head:(i+1)*d_head. Reshape the last axis into (n_heads, d_head), giving "
         "(..., T, h, d_head), then swap the T and h axes with np.swapaxes(X, -3, -2). A reshape alone mixes tokens.",
    solution="""
        def split_heads_batched(X, n_heads):
            *batch, T, d_model = X.shape
            X = X.reshape(*batch, T, n_heads, d_model // n_heads)  # (..., T, h, d_head)
            return np.swapaxes(X, -3, -2)  # (..., h, T, d_head)
    """,
    wrong="""
        def split_heads_batched(X, n_heads):
            *batch, T, d_model = X.shape
            return X.reshape(*batch, n_heads, T, d_model // n_heads)  # the right shape, the wrong numbers
    """,
    forbid=("helpers.split_heads", "helpers.multihead.split_heads"),
)
def split_heads_batched(answer):
    rng = check_rng()
    for shape, n_heads in (((6, 4), 2), ((2, 5, 12), 3), ((2, 3, 4, 8), 4), ((3, 6), 1)):
        X = rng.normal(size=shape)
        d_head = shape[-1] // n_heads
        expected = np.stack([X[..., i * d_head:(i + 1) * d_head] for i in range(n_heads)], axis=-3)
        what = f"split_heads_batched(X of shape {shape}, n_heads={n_heads})"
        got = as_array(call(answer, X, n_heads), what)
        same_numbers_other_order(got, expected, what, "a reshape straight to (..., h, T, d_head) mixes tokens "
                                 "into heads; reshape to (..., T, h, d_head) first, then swap axes -3 and -2")
        expect_close(got, expected, what)


@exercise(
    notebook="06_multi_head_attention",
    hint="Undo the split in reverse order: swap the heads and tokens axes back with np.swapaxes(H, -3, -2), "
         "giving (..., T, h, d_head), then reshape the last two axes into one of width h * d_head.",
    solution="""
        def merge_heads_batched(H):
            *batch, n_heads, T, d_head = H.shape
            H = np.swapaxes(H, -3, -2)  # (..., T, h, d_head)
            return H.reshape(*batch, T, n_heads * d_head)  # (..., T, d_model)
    """,
    wrong="""
        def merge_heads_batched(H):
            *batch, n_heads, T, d_head = H.shape
            return H.reshape(*batch, T, n_heads * d_head)  # the right shape, the wrong numbers
    """,
    forbid=("helpers.merge_heads", "helpers.multihead.merge_heads"),
)
def merge_heads_batched(answer):
    rng = check_rng()
    for shape in ((2, 6, 2), (2, 3, 5, 4), (3, 4, 2, 2, 3), (1, 3, 6)):
        H = rng.normal(size=shape)
        expected = np.concatenate([H[..., i, :, :] for i in range(shape[-3])], axis=-1)
        what = f"merge_heads_batched(H of shape {shape})"
        got = as_array(call(answer, H), what)
        same_numbers_other_order(got, expected, what, "a reshape alone puts one head's tokens side by side; "
                                 "swap axes -3 and -2 back to (..., T, h, d_head) first, then reshape")
        expect_close(got, expected, what)


@exercise(
    notebook="06_multi_head_attention",
    hint="Queries come from x, keys and values from context. Split Q, K, V into heads, scale each head's scores "
         "by 1/sqrt(d_head) (not d_model), mask with -inf, softmax over the keys, mix V, merge the heads, then @ W_o.",
    solution="""
        def multi_head_cross_attention(x, context, W_q, W_k, W_v, W_o, n_heads, mask=None):
            d_head = W_q.shape[1] // n_heads

            def split(M):  # (T, d_model) -> (h, T, d_head)
                return M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2)

            Q, K, V = split(x @ W_q), split(context @ W_k), split(context @ W_v)
            scores = np.einsum("hqd,hkd->hqk", Q, K) / np.sqrt(d_head)  # (h, T_q, T_k)
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
            weights = weights / weights.sum(axis=-1, keepdims=True)
            heads = np.einsum("hqk,hkd->hqd", weights, V)  # (h, T_q, d_head)
            return heads.transpose(1, 0, 2).reshape(x.shape[0], -1) @ W_o  # (T_q, d_model) @ (d_model, d_model)
    """,
    wrong="""
        def multi_head_cross_attention(x, context, W_q, W_k, W_v, W_o, n_heads, mask=None):
            d_model = W_q.shape[1]
            d_head = d_model // n_heads

            def split(M):
                return M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2)

            Q, K, V = split(x @ W_q), split(context @ W_k), split(context @ W_v)
            scores = np.einsum("hqd,hkd->hqk", Q, K) / np.sqrt(d_model)  # the full width, not d_head
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
            weights = weights / weights.sum(axis=-1, keepdims=True)
            heads = np.einsum("hqk,hkd->hqd", weights, V)
            return heads.transpose(1, 0, 2).reshape(x.shape[0], -1) @ W_o
    """,
    forbid=("helpers.MultiHeadAttention", "helpers.multihead.MultiHeadAttention"),
)
def multi_head_cross_attention(answer):
    rng = check_rng()
    causal = np.arange(5)[None, :] <= np.arange(3)[:, None] + 2  # (3, 5): the last 3 of 5 positions
    for d_model, n_heads, mask in ((8, 2, None), (8, 2, causal), (12, 4, causal), (6, 1, None)):
        x, context = rng.normal(size=(3, d_model)), rng.normal(size=(5, d_model))
        W_q, W_k, W_v, W_o = (rng.normal(size=(d_model, d_model)) for _ in range(4))
        weights = (x, context, W_q, W_k, W_v, W_o, n_heads)
        masked = "a (3, 5) causal mask" if mask is not None else "no mask"
        what = f"multi_head_cross_attention with d_model={d_model}, n_heads={n_heads}, {masked}"
        got = as_array(call(answer, *weights, mask), what)
        mistakes = [
            (multihead_loop(x, x, *weights[2:]), "the keys and values come from x: in cross-attention only the "
             "queries come from x; keys and values come from context"),
            (multihead_loop(*weights, mask, project=False), "the heads are merged but W_o is not applied: "
             "finish with concat @ W_o"),
            (multihead_loop(*weights, mask, scale=1 / np.sqrt(d_model)), "each head's scores are divided by "
             "sqrt(d_model); a head's queries and keys have d_head entries, so divide by sqrt(d_head)"),
        ]
        if mask is not None:
            mistakes.append((multihead_loop(*weights), "the mask is not applied: set the scores where the mask "
                             "is False to -np.inf before the softmax"))
        expected = multihead_loop(*weights, mask)
        for candidate, advice in mistakes:  # (a mistake that gives the right numbers here, e.g. h = 1, is no mistake)
            if got.shape == candidate.shape and np.allclose(got, candidate) and not np.allclose(candidate, expected):
                raise Mismatch(f"{what}: {advice}")
        expect_close(got, expected, what)
