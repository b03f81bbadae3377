"""The reference answers the checks compare against, written once, as plainly as possible.

Where the helpers already hold the answer (helpers.softmax, helpers.causal_mask, ...), the
checks use the helper; what is here is written as loops, independent of the helpers, for the
exercises that teach those helpers (a check must not compare a helper with itself).
`scores_divisor` reads 03's and 04's scores: by which one number did the learner divide them?
11_tiny_gpt's checks have theirs at the end: the loss and the sample worked out in plain numpy, a
one-head toy model for the cached step, and readers of the learner's results (one number, one word id).
"""

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import Mismatch, as_array, call
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


def scores_divisor(got, scores):
    """The one number c with got = scores / c (least squares, then checked), or None when there is none.

    Shapes: got, scores (T_q, T_k). 03's and 04's checks name a wrong divisor of the scores with it.
    """
    if got.shape != scores.shape or np.iscomplexobj(got) or not np.all(np.isfinite(got)):
        return None
    overlap = float(np.sum(scores * got))
    if overlap <= 0:
        return None
    c = float(np.sum(scores * scores)) / overlap  # least squares
    return c if np.allclose(got, scores / c, rtol=1e-4, atol=1e-6) else None


# ---- 11_tiny_gpt: the next-word loss, sampling with a temperature, one cached step


def one_number(got, what):
    """The learner's result as a float, or the generic Mismatch (wrong shape, not numbers, complex)."""
    arr = as_array(got, what)
    if arr.size != 1 or arr.ndim > 1:
        raise Mismatch(
            f"{what} should be one number, the mean over every position that has a target; got an array "
            f"of shape {arr.shape}",
            "wrong-shape",
        )
    if np.iscomplexobj(arr) or arr.dtype == bool:
        raise Mismatch(f"{what} should be one real number, got {arr.dtype}", "not-an-array")
    return float(arr.reshape(()))


def same(got, value):
    """Equal numbers, or the same kind of non-number (both NaN, or the same infinity)."""
    return bool(np.isclose(got, value, rtol=1e-6, equal_nan=True)) or got == value


def log_probs(z, axis=-1, shift="row"):
    """log softmax over `axis`; shift: subtract each row's max ("row"), the whole array's ("all") or nothing."""
    with np.errstate(all="ignore"):
        z = z - (z.max(axis=axis, keepdims=True) if shift == "row" else z.max() if shift == "all" else 0)
        return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def picked(values, targets):
    """values (B, n, V) at the targets (B, n) -> (B, n)."""
    return np.take_along_axis(values, targets[..., None], axis=-1)[..., 0]


def loss(values, targets):
    """Minus the mean of values (B, n, V) at the targets (B, n): the cross-entropy, given log probabilities."""
    return float(-picked(values, targets).mean())


def cut_fits(answer, logits, ids):
    """Does the answer give the right loss when handed the logits of the first T − 1 positions only?"""
    try:
        got = float(np.asarray(call(answer, logits[:, :-1], ids)).reshape(()))
    except Exception:
        return False
    return bool(np.isclose(got, loss(log_probs(logits[:, :-1]), ids[:, 1:]), rtol=1e-6))


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
