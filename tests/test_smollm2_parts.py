"""helpers.pretrained.llama: the decoder's parts against loops and the series' own helpers, on small inputs."""

import numpy as np
import pytest

from helpers import scaled_dot_product_attention
from helpers.kv_cache import KVCache
from helpers.masking import causal_mask
from helpers.positional import apply_rotary
from helpers.pretrained.llama import (
    Config,
    Layer,
    attention_block,
    decoder_layer,
    grouped_query_attention,
    rms_norm,
    silu,
    swiglu,
)

rng = np.random.default_rng(0)
SMALL = Config(
    n_layers=1,
    d_model=8,
    n_heads=4,
    n_kv_heads=2,
    d_head=2,
    d_ff=12,
    vocab_size=5,
    context=16,
    rope_theta=100.0,
    eps=1e-5,
)


def small_layer(seed=0):
    r = np.random.default_rng(seed)
    d, kv, ff = SMALL.d_model, SMALL.n_kv_heads * SMALL.d_head, SMALL.d_ff
    shapes = [(d,), (d, d), (d, kv), (d, kv), (d, d), (d,), (d, ff), (d, ff), (ff, d)]
    return Layer(*(r.normal(size=s).astype(np.float32) for s in shapes))


def test_rms_norm_matches_a_loop_and_keeps_float32():
    x = rng.normal(size=(3, 5)).astype(np.float32) * 4
    weight = rng.normal(size=5).astype(np.float32)
    y = rms_norm(x, weight, 1e-5)
    assert y.dtype == np.float32 and y.shape == (3, 5)
    for t in range(3):
        rms = np.sqrt(sum(float(v) ** 2 for v in x[t]) / 5 + 1e-5)
        np.testing.assert_allclose(y[t], x[t] / rms * weight, rtol=1e-5)
    # no mean is taken away: a constant vector keeps its sign (LayerNorm would give zeros)
    assert np.all(rms_norm(np.full((1, 4), 3.0), np.ones(4)) > 0.99)


def test_silu_is_x_times_its_sigmoid_and_never_overflows():
    x = np.linspace(-30, 30, 61)
    np.testing.assert_allclose(silu(x), x / (1 + np.exp(-x)), rtol=1e-12, atol=1e-300)
    with np.errstate(over="raise"):
        assert silu(np.float32([-1000.0, 1000.0])).tolist() == [-0.0, 1000.0]


def test_swiglu_gates_one_projection_with_the_silu_of_another():
    x = rng.normal(size=(2, 4))
    W_gate, W_up, W_down = rng.normal(size=(4, 6)), rng.normal(size=(4, 6)), rng.normal(size=(6, 4))
    out = swiglu(x, W_gate, W_up, W_down)
    loop = np.zeros((2, 4))
    for t in range(2):
        for j in range(6):
            g = x[t] @ W_gate[:, j]
            loop[t] += g / (1 + np.exp(-g)) * (x[t] @ W_up[:, j]) * W_down[j]
    np.testing.assert_allclose(out, loop, rtol=1e-10)


def test_grouped_query_attention_equals_every_query_head_with_its_shared_key_head():
    q = rng.normal(size=(6, 3, 4))  # 6 query heads
    k, v = rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 4))  # 2 key/value heads: 3 query heads each
    mask = causal_mask(3, 5)
    out, weights = grouped_query_attention(q, k, v, mask)
    assert out.shape == (6, 3, 4) and weights.shape == (6, 3, 5)
    for head in range(6):
        o, w = scaled_dot_product_attention(q[head], k[head // 3], v[head // 3], mask=mask)
        np.testing.assert_allclose(out[head], o, rtol=1e-12)
        np.testing.assert_allclose(weights[head], w, rtol=1e-12)
    # the same as full multi-head attention with each key/value head repeated 3 times
    repeated = scaled_dot_product_attention(q, np.repeat(k, 3, axis=0), np.repeat(v, 3, axis=0), mask=mask)[0]
    np.testing.assert_allclose(out, repeated, rtol=1e-12)


def test_grouped_query_attention_refuses_heads_that_do_not_divide():
    with pytest.raises(ValueError, match=r"n_heads 4 .* must be a multiple of n_kv_heads 3"):
        grouped_query_attention(np.ones((4, 2, 2)), np.ones((3, 2, 2)), np.ones((3, 2, 2)))


def test_rope_on_adjacent_pairs_equals_rope_on_halves_after_the_files_reordering():
    """The file's q and k rows are reordered so that rotating adjacent pairs (07's apply_rotary) equals what
    the original model does: rotate dimension i with dimension i + d/2 ("rotate half")."""
    d, T = 8, 5
    x_halves = rng.normal(size=(T, d))  # a head's queries in the original order
    to_pairs = np.arange(d).reshape(2, d // 2).T.ravel()  # [0, 4, 1, 5, 2, 6, 3, 7]: i and i + d/2 side by side
    angles = np.arange(T)[:, None] * 100.0 ** (-np.arange(0, d, 2) / d)  # (T, d/2)
    cos, sin = np.cos(np.tile(angles, 2)), np.sin(np.tile(angles, 2))
    rotate_half = np.concatenate([-x_halves[:, d // 2 :], x_halves[:, : d // 2]], axis=1)
    halves_rotated = x_halves * cos + rotate_half * sin
    np.testing.assert_allclose(apply_rotary(x_halves[:, to_pairs], base=100.0), halves_rotated[:, to_pairs], rtol=1e-12)


def test_the_attention_block_with_a_cache_equals_the_block_on_every_token():
    layer, x = small_layer(), rng.normal(size=(6, SMALL.d_model)).astype(np.float32)
    full, full_weights = attention_block(x, layer, SMALL)
    assert full.shape == (6, 8) and full_weights.shape == (4, 6, 6)
    assert np.all(np.triu(full_weights[0], 1) == 0)  # causal: nothing above the diagonal
    cache = KVCache()
    first, _ = attention_block(x[:4], layer, SMALL, start=0, kv_cache=cache)
    rest, weights = attention_block(x[4:], layer, SMALL, start=4, kv_cache=cache)
    assert len(cache) == 6 and cache.keys.shape == (2, 6, 2)  # the 2 key/value heads only
    np.testing.assert_allclose(np.concatenate([first, rest]), full, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(weights, full_weights[:, 4:], rtol=1e-5, atol=1e-7)


def test_a_decoder_layer_adds_the_attention_then_the_feed_forward_layer_to_x():
    layer, x = small_layer(1), rng.normal(size=(3, SMALL.d_model)).astype(np.float32)
    out, _ = decoder_layer(x, layer, SMALL)
    after_attention, _ = attention_block(x, layer, SMALL)
    h = rms_norm(after_attention, layer.ffn_norm, SMALL.eps)
    np.testing.assert_allclose(out, after_attention + swiglu(h, layer.W_gate, layer.W_up, layer.W_down), rtol=1e-6)
    assert out.dtype == np.float32
