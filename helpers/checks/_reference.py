"""The reference answers the checks compare against, written once, as plainly as possible.

Where the helpers already hold the answer (helpers.softmax, helpers.causal_mask, ...), the
checks use the helper; what is here is written as loops, independent of the helpers, for the
exercises that teach those helpers (a check must not compare a helper with itself).
11_tiny_gpt's checks have theirs at the end: the sample worked out in plain numpy, a one-head toy model for
the cached step, and a reader of one word id (the loss is helpers.losses.softmax_cross_entropy's).
"""

import numpy as np

from helpers.attention import softmax
from helpers.checks._expect import Mismatch, as_array
from helpers.positional import apply_rotary


def causal_mask_loop(T_q, T_k):
    """Brute force: query i sits at absolute position i + (T_k - T_q) and sees keys up to it.

    Shapes: -> (T_q, T_k) bool.
    """
    mask = np.zeros((T_q, T_k), dtype=bool)
    for i in range(T_q):
        for j in range(T_k):
            mask[i, j] = j <= i + (T_k - T_q)
    return mask


def sinusoidal_loop(positions, d_model):
    """Entry by entry: pair i of position p is sin and cos of p · 10000^(−2i/d_model). Shapes: (T,) -> (T, d_model)."""
    table = np.zeros((len(positions), d_model))
    for t, p in enumerate(positions):
        for i in range(d_model // 2):
            angle = p / 10000 ** (2 * i / d_model)
            table[t, 2 * i], table[t, 2 * i + 1] = np.sin(angle), np.cos(angle)
    return table


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


def multihead_loop(x, context, W_q, W_k, W_v, W_o, n_heads, mask=None, scale=None):
    """A loop over heads on column slices: the definition of multi-head attention.

    scale: each head's score scale, 1/sqrt(d_head) unless given (the families try others).
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
        heads.append(masked_softmax_loop(scores, mask) @ V[:, cols])  # (T_q, T_k) @ (T_k, d_head)
    return np.concatenate(heads, axis=-1) @ W_o  # (T_q, d_model)


# ---- 11_tiny_gpt: sampling with a temperature, one cached step


def pick(probs, u):
    """The first word whose running sum of probabilities exceeds u."""
    return int(np.searchsorted(np.cumsum(probs), u, side="right"))


def word(got, what):
    """The learner's word id as an int, or the generic Mismatch."""
    arr = as_array(got, what)
    if arr.size != 1 or arr.ndim > 1 or np.iscomplexobj(arr) or arr.dtype == bool:
        raise Mismatch(f"{what} should return one word id, an int; got an array of shape {arr.shape}", "wrong-shape")
    if not np.isfinite(value := float(arr.reshape(()))) or value != round(value):
        raise Mismatch(f"{what} should return a word id, a whole number, got {value}", "wrong-values")
    return int(value)


def toy_projection(d=4, vocab=9, seed=7):
    """A one-head model's projection of one word at a position: (q, k, v), q and k rotated (RoPE) to it."""
    rng = np.random.default_rng(seed)
    E, W_q, W_k, W_v = rng.normal(size=(vocab, d)), *(rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(3))

    def project(word_id, position):
        turned = apply_rotary(np.stack([E[word_id] @ W_q, E[word_id] @ W_k]), [position, position])  # (2, d)
        return turned[0], turned[1], E[word_id] @ W_v  # q and k turned by the position's angles (07), v

    return project


def attend_one(q, K, V, scale=None):
    """One query over the rows of K and V (no mask), scores over √d. Shapes: (d,), (n, d), (n, d) -> (d,)."""
    return softmax(K @ q / (np.sqrt(len(q)) if scale is None else scale)) @ V
