"""The parts of a one-block transformer, each with its backward pass written out by hand.

embedding + positions -> multi-head self-attention with the residual E' = E + delta_E
-> [feed-forward] -> [LayerNorm] -> linear read-out. The whole model is in tiny_model.py.
Taught in 08_training_a_tiny_transformer.
"""

import numpy as np

from helpers._validate import as_float_array, positive_int
from helpers.attention import attention_backward, scaled_dot_product_attention
from helpers.layers import erf, gelu, layer_norm
from helpers.losses import check_ids
from helpers.masking import padding_mask
from helpers.multihead import merge_heads, split_heads

__all__ = [
    "embed_backward",
    "linear_backward",
    "gelu",
    "gelu_backward",
    "layer_norm",
    "layer_norm_backward",
    "named_layer_norm",
    "named_layer_norm_backward",
    "self_attention",
    "self_attention_backward",
    "check_params",
    "LN_EPS",
]

LN_EPS = 1e-5  # LayerNorm's epsilon here (BERT's 1e-12 is for float32 weights trained elsewhere)


def embed_backward(d_X, ids, vocab_size):
    """Gradient w.r.t. the embedding table: each row collects the gradients of every place its word sits.

    Shapes: d_X (B, T, d_model), ids int (B, T) -> d_E (vocab_size, d_model).
    Math: X[b, t] = E[ids[b, t]]  =>  dE[v] = sum of dX[b, t] over all (b, t) with ids[b, t] = v.
    """
    d_X = as_float_array(d_X, "d_X", min_ndim=2)
    ids = check_ids(ids, "ids", positive_int(vocab_size, "vocab_size"))
    if ids.shape != d_X.shape[:-1]:
        raise ValueError(
            f"ids has shape {ids.shape} but d_X has shape {d_X.shape}: expected ids of shape {d_X.shape[:-1]}"
        )
    d_E = np.zeros((vocab_size, d_X.shape[-1]), dtype=d_X.dtype)
    np.add.at(d_E, ids, d_X)  # a plain d_E[ids] += d_X would count a repeated word only once
    return d_E


def linear_backward(d_out, x, W, *, flatten=False):
    """Gradients of y = x W + b w.r.t. x, W and b.

    flatten=False sums dW over one small product per leading index (per sentence); flatten=True stacks every
    row of the batch into one (N, d_in) matrix and takes one product. The same gradients, summed in another
    order (so their last bits may differ); the one big product is faster on one BLAS thread (11 runs so).
    Shapes: d_out (..., n, d_out), x (..., n, d_in), W (d_in, d_out) -> d_x like x, d_W (d_in, d_out), d_b (d_out,).
    Math: dx = dy W^T;  dW = x^T dy;  db = the sum of dy's rows (both summed over the batch axes).
    Taught in 08_training_a_tiny_transformer; used in 11_tiny_gpt (flatten=True).
    """
    d_out, x, W = (as_float_array(a, name, min_ndim=2) for a, name in ((d_out, "d_out"), (x, "x"), (W, "W")))
    if W.ndim != 2 or x.shape[-1] != W.shape[0] or d_out.shape != x.shape[:-1] + W.shape[1:]:
        raise ValueError(
            f"x {x.shape} (..., n, d_in), W {W.shape} (d_in, d_out) and d_out {d_out.shape} "
            "(..., n, d_out) do not fit together"
        )
    if flatten:
        rows_out, rows_in = d_out.reshape(-1, d_out.shape[-1]), x.reshape(-1, x.shape[-1])  # (N, d_out), (N, d_in)
        d_x, d_W, d_b = linear_backward(rows_out, rows_in, W)  # one (d_in, N) @ (N, d_out) product
        return d_x.reshape(x.shape), d_W, d_b
    d_x = d_out @ W.T  # (..., n, d_out) @ (d_out, d_in) -> (..., n, d_in)
    # one small product per sentence, then a sum: a single (B*T, d) product would be as many flops,
    # but OpenBLAS splits it over threads, which is many times slower when the cores are busy
    d_W = np.swapaxes(x, -1, -2) @ d_out  # (..., d_in, n) @ (..., n, d_out) -> (..., d_in, d_out)
    d_W = d_W.reshape(-1, *W.shape).sum(axis=0)  # (d_in, d_out)
    return d_x, d_W, d_out.reshape(-1, d_out.shape[-1]).sum(axis=0)


def _check_same_shape(d_out, x):
    d_out, x = as_float_array(d_out, "d_out"), as_float_array(x, "x")
    if d_out.shape != x.shape:
        raise ValueError(f"d_out has shape {d_out.shape} but x has shape {x.shape}; they must match")
    return d_out, x


def gelu_backward(d_out, x):
    """Gradient of gelu(x) = x Phi(x) w.r.t. x.

    Shapes: d_out (...), x (...) -> d_x (...).
    Math: d/dx [x Phi(x)] = Phi(x) + x phi(x), with phi(x) = exp(-x^2/2) / sqrt(2 pi).
    """
    d_out, x = _check_same_shape(d_out, x)
    Phi = 0.5 * (1 + erf(x / np.sqrt(2.0)))  # the normal distribution's CDF
    phi = np.exp(-0.5 * x**2) / np.sqrt(2 * np.pi)  # and its density
    return d_out * (Phi + x * phi)


def layer_norm_backward(d_out, x, gamma, eps=LN_EPS):
    """Gradients of layer_norm(x, gamma, beta) w.r.t. x, gamma and beta.

    Shapes: d_out (..., d), x (..., d), gamma (d,) -> d_x (..., d), d_gamma (d,), d_beta (d,).
    Math: x_hat = (x - mean) / sigma;  dx = (g - mean(g) - x_hat mean(g x_hat)) / sigma with g = dy gamma.
    """
    d_out, x = _check_same_shape(d_out, x)
    if np.shape(gamma) != x.shape[-1:]:
        raise ValueError(f"gamma has shape {np.shape(gamma)}, expected ({x.shape[-1]},) for x of shape {x.shape}")
    sigma = np.sqrt(x.var(axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = (x - x.mean(axis=-1, keepdims=True)) / sigma  # (..., d)
    g = d_out * gamma  # (..., d): the gradient w.r.t. x_hat
    d_x = (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) / sigma
    rows = tuple(range(d_out.ndim - 1))
    return d_x, (d_out * x_hat).sum(axis=rows), d_out.sum(axis=rows)


def check_params(params, shapes, config):
    """Raise naming every parameter that is missing or has another shape than `shapes` gives it.

    Shapes: params dict name -> array, shapes dict name -> shape (a model's parameter_shapes(config)).
    Used in 08_training_a_tiny_transformer (tiny_model) and 11_tiny_gpt (every forward pass checks its params).
    """
    wrong = {
        n: np.shape(params[n]) if n in params else "missing"
        for n, shape in shapes.items()
        if n not in params or np.shape(params[n]) != shape
    }
    if wrong:
        raise ValueError(f"params do not fit {config}: {wrong} (expected parameter_shapes(config))")


def named_layer_norm(params, name, x):
    """The LayerNorm whose gamma and beta are params[name + "_gamma"] and params[name + "_beta"].

    Shapes: x (..., d), the gamma and beta (d,) -> (..., d).
    Used in 08_training_a_tiny_transformer (tiny_model) and 11_tiny_gpt (gpt_block, tiny_gpt).
    """
    return layer_norm(x, params[f"{name}_gamma"], params[f"{name}_beta"], LN_EPS)


def named_layer_norm_backward(d_out, params, name, x, grads):
    """Back through named_layer_norm: d_x, with the gamma and beta gradients stored in `grads` under their names.

    Shapes: d_out (..., d), x (..., d) -> d_x (..., d); grads[name + "_gamma"], grads[name + "_beta"] (d,).
    Used in 08_training_a_tiny_transformer (tiny_model) and 11_tiny_gpt (gpt_block, tiny_gpt).
    """
    d_x, grads[f"{name}_gamma"], grads[f"{name}_beta"] = layer_norm_backward(d_out, x, params[f"{name}_gamma"])
    return d_x


def _check_attention_input(params, X, lengths, n_heads, rows):
    """Validate self-attention's arguments; give back X, lengths and rows as arrays."""
    X = as_float_array(X, "X", min_ndim=3)
    if X.ndim != 3:
        raise ValueError(f"X must have shape (B, T, d_model), got {X.shape}")
    B, T, d = X.shape
    bad = {n: np.shape(params[n]) for n in ("W_q", "W_k", "W_v", "W_o") if np.shape(params[n]) != (d, d)}
    if bad:
        raise ValueError(f"X has shape {X.shape} (B, T, d_model), so W_q, W_k, W_v, W_o must be ({d}, {d}); got {bad}")
    if d % positive_int(n_heads, "n_heads"):
        raise ValueError(f"d_model={d} (X has shape {X.shape}) is not divisible by n_heads={n_heads}")
    lengths = np.asarray(lengths)
    if (
        lengths.shape != (B,)
        or not np.issubdtype(lengths.dtype, np.integer)
        or not (1 <= lengths).all()
        or not (lengths <= T).all()
    ):
        raise ValueError(f"lengths must be {B} ints in [1, T={T}], one per sentence of X {X.shape}; got {lengths!r}")
    if rows is not None:
        rows = np.asarray(rows)
        if (
            rows.shape != (B,)
            or not np.issubdtype(rows.dtype, np.integer)
            or not (0 <= rows).all()
            or not (rows < lengths).all()
        ):
            raise ValueError(
                f"rows must be {B} ints, each a real word of its sentence (0 <= row < length); got {rows!r}"
            )
    return X, lengths, rows


def _key_mask(lengths, T):
    """True at each sentence's real words, shared by every head and query. Shapes: (B,) -> (B, 1, 1, T)."""
    return padding_mask(lengths, T)[:, None, None, :]  # (B, T) -> (B, 1, 1, T)


def _queries_from(X, rows):
    """The words that ask: all of X, or one row per sentence. Shapes: (B, T, d) -> (B, T_q, d), T_q = T or 1."""
    return X if rows is None else X[np.arange(len(X)), rows][:, None, :]  # (B, d) -> (B, 1, d)


def self_attention(params, X, lengths, n_heads, rows=None):
    """Multi-head self-attention over each sentence's real words: the change delta_E the block proposes.

    Shapes: X (B, T, d_model), lengths int (B,), W_q, W_k, W_v, W_o (d_model, d_model),
            rows None (every word asks) or int (B,) (only that word of each sentence asks)
            -> delta_E (B, T_q, d_model), weights (B, n_heads, T_q, T) with T_q = T or 1.
    Math: head_i = softmax(Q_i K_i^T / sqrt(d_head)) V_i;  delta_E = [head_1 ... head_h] W_o.
    Taught in 06_multi_head_attention (the heads) and 08_training_a_tiny_transformer (masks, rows).
    """
    X, lengths, rows = _check_attention_input(params, X, lengths, n_heads, rows)
    Q = split_heads(_queries_from(X, rows) @ params["W_q"], n_heads)  # (B, T_q, d) -> (B, h, T_q, d_head)
    K = split_heads(X @ params["W_k"], n_heads)  # (B, T, d) @ (d, d) -> (B, T, d) -> (B, h, T, d_head)
    V = split_heads(X @ params["W_v"], n_heads)  # (B, h, T, d_head)
    heads, weights = scaled_dot_product_attention(Q, K, V, mask=_key_mask(lengths, X.shape[1]))
    return merge_heads(heads) @ params["W_o"], weights  # (B, T_q, d) @ (d, d) -> (B, T_q, d); (B, h, T_q, T)


def self_attention_backward(d_delta_E, params, X, lengths, n_heads, rows=None):
    """Gradients of self_attention's output delta_E w.r.t. X and W_q, W_k, W_v, W_o.

    Shapes: d_delta_E (B, T_q, d_model), X (B, T, d_model), lengths int (B,), rows as in self_attention
            -> d_X (B, T, d_model), grads {W_q, W_k, W_v, W_o: (d_model, d_model)}.
    Math: back through W_o, merge_heads (whose backward is split_heads), attention_backward,
          split_heads (backward: merge_heads) and the three projections; X feeds all three.
    """
    X, lengths, rows = _check_attention_input(params, X, lengths, n_heads, rows)
    X_q = _queries_from(X, rows)  # (B, T_q, d)
    Q = split_heads(X_q @ params["W_q"], n_heads)  # (B, h, T_q, d_head): recomputed, not cached
    K = split_heads(X @ params["W_k"], n_heads)  # (B, h, T, d_head)
    V = split_heads(X @ params["W_v"], n_heads)  # (B, h, T, d_head)
    mask = _key_mask(lengths, X.shape[1])  # (B, 1, 1, T)
    heads, _ = scaled_dot_product_attention(Q, K, V, mask=mask)  # (B, h, T_q, d_head)
    d_merged, d_W_o, _ = linear_backward(d_delta_E, merge_heads(heads), params["W_o"])  # (B, T_q, d)
    dQ, dK, dV = attention_backward(split_heads(d_merged, n_heads), Q, K, V, mask=mask)
    grads = {"W_o": d_W_o}
    d_X_q, grads["W_q"], _ = linear_backward(merge_heads(dQ), X_q, params["W_q"])  # (B, T_q, d)
    d_X_k, grads["W_k"], _ = linear_backward(merge_heads(dK), X, params["W_k"])  # (B, T, d)
    d_X_v, grads["W_v"], _ = linear_backward(merge_heads(dV), X, params["W_v"])  # (B, T, d)
    d_X = d_X_k + d_X_v  # X feeds K and V (and Q): its gradient is the sum of the paths
    if rows is None:
        d_X += d_X_q
    else:
        d_X[np.arange(len(X)), rows] += d_X_q[:, 0]  # only the asking rows fed Q
    return d_X, grads
