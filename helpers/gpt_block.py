"""One block of the tiny GPT: causal multi-head self-attention with rotary positions, then a feed-forward
layer, each with its residual and LayerNorm (before it, "pre-LN", or after the residual, "post-LN"),
every part with its backward pass by hand.

Built from 08's parts (transformer.py), 05's causal mask and 07's rotary positions.
Taught in 11_tiny_gpt.
"""

import numpy as np

from helpers._validate import as_float_array, positive_int
from helpers.attention import attention_backward
from helpers.kv_cache import causal_attention
from helpers.masking import window_mask
from helpers.multihead import merge_heads, split_heads
from helpers.positional import apply_rotary
from helpers.transformer import linear_backward, named_layer_norm, named_layer_norm_backward

__all__ = [
    "NORMS",
    "window_mask",
    "causal_self_attention",
    "causal_self_attention_backward",
    "relu",
    "feed_forward",
    "feed_forward_backward",
    "block",
    "block_backward",
]

NORMS = ("pre", "post")


def _check_attention(params, X, n_heads):
    X = as_float_array(X, "X", min_ndim=3)
    d = X.shape[-1]
    bad = {n: np.shape(params[n]) for n in ("W_q", "W_k", "W_v", "W_o") if np.shape(params[n]) != (d, d)}
    if bad:
        raise ValueError(f"X has shape {X.shape} (B, T, d_model), so W_q, W_k, W_v, W_o must be ({d}, {d}); got {bad}")
    if d % positive_int(n_heads, "n_heads") or (d // n_heads) % 2:
        raise ValueError(f"d_model={d} must split into n_heads={n_heads} heads of even width (rotary pairs)")
    return X


def _rotated_qkv(params, X, n_heads, positions):
    """Queries and keys turned by their positions (07's RoPE), and the values.

    Shapes: X (B, T, d) -> Q, K, V (B, h, T, d_head) each.
    """
    Q = apply_rotary(split_heads(X @ params["W_q"], n_heads), positions)  # (B, T, d) -> (B, h, T, d_head)
    K = apply_rotary(split_heads(X @ params["W_k"], n_heads), positions)  # (B, h, T, d_head)
    V = split_heads(X @ params["W_v"], n_heads)  # (B, h, T, d_head)
    return Q, K, V


def causal_self_attention(params, X, n_heads, *, window, start=0, kv_cache=None):
    """Each word attends to itself and the words before it (at most `window` of them), queries and keys
    rotated by their absolute positions start, start+1, ...

    kv_cache: a KVCache (10) holding the rotated keys and values of the words before X; X's are appended,
    the new words attend over it, and only the newest window - 1 are kept (what the next word will look back
    over), so the cache never holds more than `window`. None: X is the whole text.
    Shapes: X (B, T, d_model), W_q, W_k, W_v, W_o (d_model, d_model)
            -> delta (B, T, d_model), weights (B, n_heads, T, T_k), T_k = T or the words in the cache.
    Math: head_i = softmax(R(Q_i) R(K_i)^T / sqrt(d_head) + causal mask) V_i;  delta = [head_1 ... head_h] W_o.
    """
    saved = _attend(params, X, n_heads, window, start, kv_cache)
    return saved["delta"], saved["weights"]


def _attend(params, X, n_heads, window, start, kv_cache=None):
    """causal_self_attention, keeping what its backward pass needs."""
    X = _check_attention(params, X, n_heads)
    T = X.shape[1]
    Q, K, V = _rotated_qkv(params, X, n_heads, start + np.arange(T))
    if kv_cache is not None:
        kv_cache.append(K, V)  # (B, h, T_k, d_head): the past words' keys and values, then these
        K, V = kv_cache.keys, kv_cache.values
    heads, weights, mask = causal_attention(Q, K, V, window)  # (B, h, T, d_head): the new words are the last T
    if kv_cache is not None:
        kv_cache.keep_last(window - 1)  # all the next word needs: it looks back over window - 1 words, and itself
    delta = merge_heads(heads) @ params["W_o"]  # (B, T, d) @ (d, d) -> (B, T, d)
    return {"X": X, "Q": Q, "K": K, "V": V, "mask": mask, "heads": heads, "weights": weights, "delta": delta}


def causal_self_attention_backward(d_delta, params, X, n_heads, *, window, start=0, saved=None):
    """Gradients of causal_self_attention's output w.r.t. X and W_q, W_k, W_v, W_o.

    saved: what the forward pass kept (block passes it); None recomputes it from X.
    Shapes: d_delta (B, T, d_model), X (B, T, d_model) -> d_X (B, T, d_model), grads {W_*: (d_model, d_model)}.
    Math: as 08's self_attention_backward, plus the rotation's backward: turning back by -angle (R^T = R^-1).
    """
    saved = _attend(params, X, n_heads, window, start) if saved is None else saved
    X, Q, K, V, mask = (saved[name] for name in ("X", "Q", "K", "V", "mask"))
    positions = start + np.arange(X.shape[1])
    grads = {}
    merged = merge_heads(saved["heads"])  # (B, h, T, d_head) -> (B, T, d)
    d_merged, grads["W_o"], _ = linear_backward(d_delta, merged, params["W_o"], flatten=True)  # (B, T, d)
    dQ, dK, dV = attention_backward(split_heads(d_merged, n_heads), Q, K, V, mask=mask)  # (B, h, T, d_head)
    dQ, dK = apply_rotary(dQ, -positions), apply_rotary(dK, -positions)  # back through the rotation
    d_X = np.zeros_like(X)
    for name, d_head_out in (("W_q", dQ), ("W_k", dK), ("W_v", dV)):
        d_X_part, grads[name], _ = linear_backward(merge_heads(d_head_out), X, params[name], flatten=True)  # (B, T, d)
        d_X += d_X_part  # X feeds Q, K and V: its gradient is the sum of the three paths
    return d_X, grads


def relu(x):
    """max(x, 0), element by element. Shapes: (...) -> (...)."""
    return np.maximum(x, 0)


def feed_forward(params, x):
    """Two layers with a ReLU between, applied to every word alone.

    The original Transformer's ReLU, the cheapest: GPT-2 and BERT use GELU (08, 09), a smooth ReLU whose exact
    form needs erf, which numpy lacks (09 computes it with a fitted approximation).
    Shapes: x (B, T, d) -> (B, T, d), and the hidden pre-activation a (B, T, d_ff).
    """
    a = x @ params["W_1"] + params["b_1"]  # (B, T, d) @ (d, d_ff) -> (B, T, d_ff)
    return relu(a) @ params["W_2"] + params["b_2"], a  # (B, T, d_ff) @ (d_ff, d) -> (B, T, d)


def feed_forward_backward(d_out, params, x, a):
    """Gradients of feed_forward w.r.t. x, W_1, b_1, W_2, b_2.

    Shapes: d_out (B, T, d), x (B, T, d), a (B, T, d_ff) -> d_x (B, T, d), grads.
    Math: ReLU passes the gradient where a > 0 and stops it elsewhere.
    """
    grads = {}
    d_h, grads["W_2"], grads["b_2"] = linear_backward(d_out, relu(a), params["W_2"], flatten=True)  # (B, T, d_ff)
    d_x, grads["W_1"], grads["b_1"] = linear_backward(d_h * (a > 0), x, params["W_1"], flatten=True)  # (B, T, d)
    return d_x, grads


def block(params, x, n_heads, *, window, start=0, norm="pre", residual=True, kv_cache=None):
    """One transformer block on the words x: attention, then the feed-forward layer.

    pre-LN (GPT-2):  x1 = x + attn(LN1(x));   x2 = x1 + ff(LN2(x1))
    post-LN (BERT):  x1 = LN1(x + attn(x));   x2 = LN2(x1 + ff(x1))
    residual=False drops the "x +" and "x1 +" (the branch's output replaces what was there).
    kv_cache: the layer's KVCache when x holds only the newest words (generation); see causal_self_attention.
    Shapes: x (B, T, d_model) -> x2 (B, T, d_model), saved (what block_backward needs: the sublayers' inputs
            and outputs, x, x1, ...; saved["weights"] (B, n_heads, T, T_k)).
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    keep = 1.0 if residual else 0.0
    saved = {"x": x}
    h = named_layer_norm(params, "ln1", x) if norm == "pre" else x  # what the attention reads
    saved["attention"] = _attend(params, h, n_heads, window, start, kv_cache)
    delta, saved["weights"] = saved["attention"]["delta"], saved["attention"]["weights"]
    s1 = keep * x + delta  # (B, T, d)
    x1 = s1 if norm == "pre" else named_layer_norm(params, "ln1", s1)
    u = named_layer_norm(params, "ln2", x1) if norm == "pre" else x1  # what the feed-forward reads
    f, saved["a"] = feed_forward(params, u)
    s2 = keep * x1 + f
    saved.update(h=h, s1=s1, x1=x1, u=u, s2=s2)
    return (s2 if norm == "pre" else named_layer_norm(params, "ln2", s2)), saved


def block_backward(d_out, params, saved, n_heads, *, window, start=0, norm="pre", residual=True):
    """Gradients of block's output w.r.t. its input x and its parameters, in reverse order of block.

    saved: what block kept on the way forward. Shapes: d_out (B, T, d_model) -> d_x (B, T, d_model),
    grads {name: like params[name]}.
    """
    keep, grads = (1.0 if residual else 0.0), {}
    d_s2 = d_out if norm == "pre" else named_layer_norm_backward(d_out, params, "ln2", saved["s2"], grads)
    d_u, ff_grads = feed_forward_backward(d_s2, params, saved["u"], saved["a"])
    grads.update(ff_grads)
    d_x1 = keep * d_s2 + (named_layer_norm_backward(d_u, params, "ln2", saved["x1"], grads) if norm == "pre" else d_u)
    d_s1 = d_x1 if norm == "pre" else named_layer_norm_backward(d_x1, params, "ln1", saved["s1"], grads)
    d_h, attention_grads = causal_self_attention_backward(
        d_s1, params, saved["h"], n_heads, window=window, start=start, saved=saved["attention"]
    )
    grads.update(attention_grads)
    d_x = keep * d_s1 + (named_layer_norm_backward(d_h, params, "ln1", saved["x"], grads) if norm == "pre" else d_h)
    return d_x, grads
