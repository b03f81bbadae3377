"""The reference answers the checks compare against, written once, as plainly as possible.

Where the helpers already hold the answer (helpers.softmax, helpers.causal_mask, ...), the
checks use the helper; what is here is written as loops, independent of the helpers, for the
exercises that teach those helpers (a check must not compare a helper with itself).
"""

import numpy as np


def causal_mask_loop(T_q, T_k):
    """Brute force: query i sits at absolute position i + (T_k - T_q) and sees keys up to it.

    Shapes: -> (T_q, T_k) bool.
    """
    mask = np.zeros((T_q, T_k), dtype=bool)
    for i in range(T_q):
        for j in range(T_k):
            mask[i, j] = j <= i + (T_k - T_q)
    return mask


def masked_softmax_loop(scores, mask):
    """Row by row: softmax over the allowed keys only; a row with no allowed key stays zero.

    Shapes: scores (..., T_q, T_k), mask broadcastable to it -> (..., T_q, T_k).
    """
    allowed = np.broadcast_to(mask, scores.shape)
    out = np.zeros(scores.shape)
    for row in np.ndindex(scores.shape[:-1]):
        keep = allowed[row]
        if keep.any():
            e = np.exp(scores[row][keep] - scores[row][keep].max())
            out[row][keep] = e / e.sum()
    return out


def multihead_loop(x, context, W_q, W_k, W_v, W_o, n_heads, mask=None, scale=None, project=True, weights_of=None):
    """A loop over heads on column slices: the definition of multi-head attention.

    scale: each head's score scale, 1/sqrt(d_head) unless given; project=False leaves out W_o;
    weights_of(scores, allowed) -> weights replaces the masked softmax over the keys (the checks use
    these three to recognise common mistakes).
    Shapes: x (T_q, d_model), context (T_k, d_model), W_* (d_model, d_model), mask (T_q, T_k)
            -> (T_q, d_model).
    """
    Q, K, V = x @ W_q, context @ W_k, context @ W_v
    d_head = Q.shape[-1] // n_heads
    scale = 1 / np.sqrt(d_head) if scale is None else scale
    if mask is None:
        mask = np.ones((x.shape[0], context.shape[0]), dtype=bool)
    heads = []
    for i in range(n_heads):
        cols = slice(i * d_head, (i + 1) * d_head)
        scores = Q[:, cols] @ K[:, cols].T * scale  # (T_q, T_k)
        weights = (weights_of or masked_softmax_loop)(scores, mask)  # (T_q, T_k)
        heads.append(weights @ V[:, cols])  # (T_q, d_head)
    concat = np.concatenate(heads, axis=-1)  # (T_q, d_model)
    return concat @ W_o if project else concat
