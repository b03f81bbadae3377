"""Softmax, scaled dot-product attention and their backward passes.

Taught in 02_similarity_matrix (softmax), 03_queries_keys_values (attention and its
gradients) and 04_scaling (the 1/sqrt(d_k) scale).
"""

import numpy as np

from helpers._validate import as_bool_mask, as_float_array, check_axis


def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`; a row that is all -inf gives zeros.

    Shapes: x (...) -> (...), same shape and floating dtype.
    Math: softmax(x)_i = exp(x_i - max x) / sum_j exp(x_j - max x).
    Taught in 02_similarity_matrix.
    """
    x = as_float_array(x, "x")
    axis = check_axis(axis, x, "x")
    if x.size == 0:
        return x.copy()  # nothing to normalise (np.max would refuse an empty axis)
    row_max = np.max(x, axis=axis, keepdims=True)
    # an all -inf row (fully masked) would give -inf - -inf = nan: shift it by 0 instead.
    # Only -inf: a NaN or +inf logit must still show up as NaN, not be hidden as zeros.
    row_max = np.where(np.isneginf(row_max), 0, row_max).astype(x.dtype)
    # subtract the row max so exp() cannot overflow; the result is unchanged (shift invariance)
    with np.errstate(invalid="ignore"):  # inf - inf in a row holding +inf -> nan, on purpose
        e = np.exp(x - row_max)
    total = np.sum(e, axis=axis, keepdims=True)
    # total is 0 only for an all -inf row (elsewhere the max entry contributes exp(0) = 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total == 0, 0, e / np.where(total == 0, 1, total)).astype(x.dtype)


def entropy(weights, axis=-1):
    """Shannon entropy in nats of each distribution along `axis` (0 log 0 counts as 0).

    Shapes: weights (...) -> (...) without `axis`.
    Math: H(w) = -sum_j w_j ln w_j; 0 for a one-hot row, ln T for a uniform row of T entries.
    Taught in 04_scaling (used from 00_setup_check on).
    """
    weights = as_float_array(weights, "weights")
    axis = check_axis(axis, weights, "weights")
    logs = np.log(np.where(weights > 0, weights, 1))
    return -np.sum(weights * logs, axis=axis)


def softmax_backward(d_weights, weights, axis=-1):
    """Gradient of the loss w.r.t. the softmax's input, given the gradient w.r.t. its output.

    Shapes: d_weights (...), weights (...) -> d_scores (...).
    Math: dL/ds_i = w_i * (dL/dw_i - sum_j w_j dL/dw_j).
    Taught in 03_queries_keys_values.
    """
    d_weights = as_float_array(d_weights, "d_weights")
    weights = as_float_array(weights, "weights")
    if d_weights.shape != weights.shape:
        raise ValueError(
            f"d_weights has shape {d_weights.shape} but weights has shape {weights.shape}; they must match"
        )
    axis = check_axis(axis, weights, "weights")
    inner = np.sum(d_weights * weights, axis=axis, keepdims=True)
    return weights * (d_weights - inner)


def _prepare(q, k, v, scale):
    """Validate q, k, v and the scale; return them in one common float dtype, scale 1/sqrt(d_k) by default."""
    q, k, v = check_qkv(q, k, v)
    dtype = np.result_type(q, k, v)
    q, k, v = q.astype(dtype, copy=False), k.astype(dtype, copy=False), v.astype(dtype, copy=False)
    return q, k, v, _check_scale(scale, q.shape[-1], dtype)


def check_qkv(q, k, v):
    """Validate q, k, v for attention and return them as float arrays (each keeps its own dtype).

    Shapes: q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v), batch axes broadcastable;
            anything else raises a ValueError that names the shapes.
    Used in 03_queries_keys_values and 10_efficient_attention (every attention helper checks its inputs with it).
    """
    q = as_float_array(q, "q", min_ndim=2)
    k = as_float_array(k, "k", min_ndim=2)
    v = as_float_array(v, "v", min_ndim=2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share d_k (their last axis): q has shape {q.shape} (..., T_q, d_k), "
            f"k has shape {k.shape} (..., T_k, d_k)"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of keys T_k: k has shape {k.shape} "
            f"(..., T_k, d_k), v has shape {v.shape} (..., T_k, d_v)"
        )
    try:
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(f"the batch axes of q {q.shape}, k {k.shape} and v {v.shape} do not broadcast") from None
    return q, k, v


def _check_scale(scale, d_k, dtype):
    """Return the scale as a number of `dtype`: 1/sqrt(d_k) unless given."""
    if scale is None:
        return dtype.type(1.0 / np.sqrt(d_k))
    if isinstance(scale, bool) or not np.isscalar(scale) or not np.isreal(scale):
        raise TypeError(f"scale must be a real number, got {type(scale).__name__} {scale!r}")
    if not np.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale}")
    return dtype.type(scale)


def _attention_weights(q, k, v, mask, scale):
    """Masked, scaled scores -> softmax weights. Shapes: (..., T_q, d_k), (..., T_k, d_k) -> (..., T_q, T_k)."""
    scores = (q @ np.swapaxes(k, -1, -2)) * scale  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    # the mask may have any batch axes the output has (q's, k's or v's), but no others
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    mask = as_bool_mask(mask, "mask", batch + scores.shape[-2:])
    if mask is not None:
        # -inf, not a large negative number: exp(-inf) is exactly 0 in every dtype
        scores = np.where(mask, scores, -np.inf).astype(scores.dtype)
    return softmax(scores, axis=-1)


def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
    """softmax(q k^T * scale) v, with an optional boolean mask (True = may attend).

    Shapes: q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v),
            mask broadcastable to (..., T_q, T_k)
            -> out (..., T_q, d_v), weights (..., T_q, T_k).
    Math: out = softmax(Q K^T / sqrt(d_k)) V; a query that may attend to nothing gets zeros.
    Taught in 03_queries_keys_values and 04_scaling.
    """
    q, k, v, scale = _prepare(q, k, v, scale)
    weights = _attention_weights(q, k, v, mask, scale)
    out = weights @ v  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    return out, weights


def _sum_to_shape(grad, shape):
    """Sum `grad` over the axes that broadcasting added, so it has `shape` again."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra > 0 else grad
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


def attention_backward(d_out, q, k, v, mask=None, scale=None):
    """Gradients of the loss w.r.t. q, k and v, given the gradient w.r.t. the output.

    Shapes: d_out (..., T_q, d_v), q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v)
            -> dq like q, dk like k, dv like v.
    Math: dV = W^T dO; dW = dO V^T; dS = softmax_backward(dW, W); dQ = s dS K; dK = s dS^T Q.
    Taught in 03_queries_keys_values.
    """
    q, k, v, scale = _prepare(q, k, v, scale)
    weights = _attention_weights(q, k, v, mask, scale)
    # the output's batch axes also include v's (v may carry batch axes that q and k lack)
    out_shape = np.broadcast_shapes(weights.shape[:-2], v.shape[:-2]) + (weights.shape[-2], v.shape[-1])
    d_out = as_float_array(d_out, "d_out", min_ndim=2)
    if d_out.shape != out_shape:
        raise ValueError(
            f"d_out has shape {d_out.shape}, expected the output's shape {out_shape} (..., T_q, d_v) "
            f"for q {q.shape}, k {k.shape}, v {v.shape}"
        )
    d_weights = d_out @ np.swapaxes(v, -1, -2)  # (..., T_q, d_v) @ (..., d_v, T_k) -> (..., T_q, T_k)
    weights_full = np.broadcast_to(weights, d_weights.shape)  # the weights each output row used
    d_scores = softmax_backward(d_weights, weights_full) * scale
    dq = d_scores @ k  # (..., T_q, T_k) @ (..., T_k, d_k) -> (..., T_q, d_k)
    dk = np.swapaxes(d_scores, -1, -2) @ q  # (..., T_k, T_q) @ (..., T_q, d_k) -> (..., T_k, d_k)
    dv = np.swapaxes(weights, -1, -2) @ d_out  # (..., T_k, T_q) @ (..., T_q, d_v) -> (..., T_k, d_v)
    return (
        _sum_to_shape(dq, q.shape).astype(q.dtype),
        _sum_to_shape(dk, k.shape).astype(q.dtype),
        _sum_to_shape(dv, v.shape).astype(q.dtype),
    )
