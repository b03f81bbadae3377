"""The parts of a Llama-style decoder (SmolLM2), each a few lines of numpy on the series' own helpers.

What is new against notebook 11's block: RMSNorm instead of LayerNorm, a SwiGLU feed-forward layer instead of
ReLU, grouped-query attention (several query heads share one key/value head), no biases anywhere; RoPE is 07's
apply_rotary on adjacent pairs (x0, x1), (x2, x3), ... at base (theta) 100,000, and the causal mask is 05's.
One sequence at a time: a token is a row, x (T, d_model).

Taught in 12_a_real_language_model.
"""

from typing import NamedTuple

import numpy as np

from helpers.attention import scaled_dot_product_attention
from helpers.masking import causal_mask
from helpers.multihead import merge_heads, split_heads
from helpers.positional import apply_rotary

__all__ = [
    "Config",
    "Layer",
    "rms_norm",
    "silu",
    "swiglu",
    "grouped_query_attention",
    "attention_block",
    "decoder_layer",
]


class Config(NamedTuple):
    """The model's sizes, as plain Python numbers (a numpy float64 eps would turn every activation into float64)."""

    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    d_ff: int
    vocab_size: int
    context: int
    rope_theta: float
    eps: float


class Layer(NamedTuple):
    """One decoder layer's weights, float32; every projection is x @ W with W (d_in, d_out)."""

    attn_norm: np.ndarray  # (d_model,)
    W_q: np.ndarray  # (d_model, n_heads * d_head)
    W_k: np.ndarray  # (d_model, n_kv_heads * d_head)
    W_v: np.ndarray  # (d_model, n_kv_heads * d_head)
    W_o: np.ndarray  # (n_heads * d_head, d_model)
    ffn_norm: np.ndarray  # (d_model,)
    W_gate: np.ndarray  # (d_model, d_ff)
    W_up: np.ndarray  # (d_model, d_ff)
    W_down: np.ndarray  # (d_ff, d_model)


def rms_norm(x, weight, eps=1e-5):
    """Scale each token vector to a root mean square of 1, then each dimension by its learned weight.

    Unlike LayerNorm it subtracts no mean and adds no bias.
    Shapes: x (..., d), weight (d,) -> (..., d).
    Math: y = x / sqrt(mean(x^2) + eps) * weight.
    """
    mean_square = np.mean(x * x, axis=-1, keepdims=True)  # (..., 1)
    return x / np.sqrt(mean_square + eps) * weight


def silu(x):
    """x times its sigmoid (also called swish): near 0 for large negative x, near x for large positive x.

    Shapes: like x. Math: silu(x) = x * sigmoid(x) = x / (1 + exp(-x)).
    """
    e = np.exp(-np.abs(x))  # in (0, 1]: exp of a large positive number would overflow
    return x * np.where(x >= 0, 1, e) / (1 + e)  # sigmoid(x) = 1 / (1 + e) for x >= 0, e / (1 + e) below


def swiglu(x, W_gate, W_up, W_down):
    """The feed-forward layer: a gate (silu of one projection) times a second projection, then back down.

    Shapes: x (..., d_model), W_gate and W_up (d_model, d_ff), W_down (d_ff, d_model) -> (..., d_model).
    Math: (silu(x W_gate) * (x W_up)) W_down.
    """
    hidden = silu(x @ W_gate) * (x @ W_up)  # (..., d_model) @ (d_model, d_ff) -> (..., d_ff)
    return hidden @ W_down  # (..., d_ff) @ (d_ff, d_model) -> (..., d_model)


def grouped_query_attention(q, k, v, mask=None):
    """Attention where each key/value head serves a group of query heads (n_heads / n_kv_heads of them).

    Query head i uses key/value head i // group, as if k and v were repeated group times, without copying them.
    Shapes: q (..., n_heads, T_q, d), k and v (..., n_kv_heads, T_k, d), mask (T_q, T_k) bool
            -> out (..., n_heads, T_q, d), weights (..., n_heads, T_q, T_k).
    """
    *batch, n_heads, T_q, d = q.shape
    n_kv_heads, T_k = k.shape[-3], k.shape[-2]
    if n_heads % n_kv_heads:
        raise ValueError(f"n_heads {n_heads} (q {q.shape}) must be a multiple of n_kv_heads {n_kv_heads} (k {k.shape})")
    grouped = q.reshape(*batch, n_kv_heads, n_heads // n_kv_heads, T_q, d)  # (..., n_kv, group, T_q, d)
    k, v = k[..., :, None, :, :], v[..., :, None, :, :]  # (..., n_kv, 1, T_k, d): shared by the group
    out, weights = scaled_dot_product_attention(grouped, k, v, mask=mask)  # (..., n_kv, group, T_q, d)
    return out.reshape(*batch, n_heads, T_q, d), weights.reshape(*batch, n_heads, T_q, T_k)


def attention_block(x, layer, config, start=0, kv_cache=None):
    """RMSNorm, then grouped-query attention with RoPE over the tokens so far; its output added to x.

    start: the position of x's first token. kv_cache: a helpers.kv_cache.KVCache holding the earlier tokens'
    keys and values (rotated), which this call extends; None: x is the whole sequence.
    Shapes: x (T, d_model) -> x (T, d_model), weights (n_heads, T, T_k), T_k = start + T with a cache.
    """
    h = rms_norm(x, layer.attn_norm, config.eps)  # (T, d_model)
    positions = np.arange(start, start + len(x))  # (T,)
    q = apply_rotary(split_heads(h @ layer.W_q, config.n_heads), positions, config.rope_theta)  # (9, T, 64)
    k = apply_rotary(split_heads(h @ layer.W_k, config.n_kv_heads), positions, config.rope_theta)  # (3, T, 64)
    v = split_heads(h @ layer.W_v, config.n_kv_heads)  # (3, T, 64)
    if kv_cache is not None:
        kv_cache.append(k, v)
        k, v = kv_cache.keys, kv_cache.values  # (3, T_k, 64): every token so far
    mask = causal_mask(len(x), k.shape[-2])  # (T, T_k): the queries are the last T positions
    out, weights = grouped_query_attention(q, k, v, mask)  # (9, T, 64), (9, T, T_k)
    return x + merge_heads(out) @ layer.W_o, weights  # (T, 576) @ (576, 576) -> (T, 576)


def decoder_layer(x, layer, config, start=0, kv_cache=None):
    """One decoder layer: the attention block, then RMSNorm and SwiGLU, each added to the residual stream.

    Shapes: x (T, d_model) -> x (T, d_model), attention weights (n_heads, T, T_k).
    """
    x, weights = attention_block(x, layer, config, start, kv_cache)
    h = rms_norm(x, layer.ffn_norm, config.eps)
    return x + swiglu(h, layer.W_gate, layer.W_up, layer.W_down), weights
