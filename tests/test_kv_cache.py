"""The KV cache: token-by-token attention and generation equal to recomputing everything."""

import numpy as np
import pytest

from helpers import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from helpers.kv_cache import KVCache, cached_self_attention, causal_attention
from helpers.masking import window_mask


def random_qkv(rng, T, d_k, d_v, heads=2):
    q, k = rng.standard_normal((heads, T, d_k)), rng.standard_normal((heads, T, d_k))
    return q.astype(np.float32), k.astype(np.float32), rng.standard_normal((heads, T, d_v)).astype(np.float32)


def test_kv_cache_one_token_at_a_time_equals_full_causal_attention(rng):
    q, k, v = random_qkv(rng, 12, 4, 3)
    cache = KVCache()
    rows = []
    for t in range(12):
        cache.append(k[:, t : t + 1], v[:, t : t + 1])
        rows.append(cache.attend(q[:, t : t + 1]))
    assert len(cache) == 12 and cache.keys.shape == (2, 12, 4) and cache.nbytes == k.nbytes + v.nbytes
    expected = scaled_dot_product_attention(q, k, v, mask=causal_mask(12))[0]
    np.testing.assert_allclose(np.concatenate(rows, axis=1), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("window", [None, 1, 3, 20])
def test_causal_attention_is_attention_with_the_causal_mask_of_the_newest_queries(rng, window):
    q, k, v = random_qkv(rng, 7, 4, 3)
    out, weights, mask = causal_attention(q[:, -3:], k, v, window)  # the last 3 of 7 positions ask
    assert np.array_equal(mask, causal_mask(3, 7) if window is None else window_mask(7, window, T_q=3))
    expected, expected_weights = scaled_dot_product_attention(q[:, -3:], k, v, mask=mask)
    assert np.array_equal(out, expected) and np.array_equal(weights, expected_weights)
    whole = causal_mask(7) if window is None else window_mask(7, window)  # (7, 7): every position asks
    full = scaled_dot_product_attention(q, k, v, mask=whole)[0]
    np.testing.assert_allclose(out, full[:, -3:], rtol=1e-5, atol=1e-6)  # the last rows of the whole text's


def test_kv_cache_appends_several_tokens_and_grows(rng):
    cache = KVCache()
    for t in (3, 20, 1, 40):
        cache.append(rng.normal(size=(t, 2)), rng.normal(size=(t, 5)))
    assert len(cache) == 64 and cache.values.shape == (64, 5)


def test_kv_cache_bad_input():
    cache = KVCache()
    with pytest.raises(ValueError, match="empty"):
        cache.attend(np.ones((1, 2)))
    with pytest.raises(ValueError, match=r"k \(3, 2\).*v \(4, 2\)"):
        cache.append(np.ones((3, 2)), np.ones((4, 2)))
    cache.append(np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="do not match the cached keys"):
        cache.append(np.ones((1, 3)), np.ones((1, 2)))


def tiny_model(rng, vocab=11, d_model=8, n_heads=2, n_layers=2):
    E = rng.normal(size=(vocab, d_model))  # token embeddings, also the output layer
    layers = [MultiHeadAttention(d_model, n_heads, rng=rng) for _ in range(n_layers)]
    return E, layers


def generate(E, layers, prompt, n_new, use_cache):
    """Greedy generation; returns the tokens and the logits of every step."""
    tokens, all_logits = list(prompt), []
    caches = [KVCache() for _ in layers]
    new = list(prompt)  # the tokens not yet run through the model
    for _ in range(n_new):
        x = E[tokens] if not use_cache else E[new]  # (T, d_model) or (t, d_model)
        for layer, cache in zip(layers, caches, strict=True):
            if use_cache:
                x = x + cached_self_attention(layer, x, cache)
            else:
                x = x + layer(x, mask=causal_mask(len(tokens)))[0]
        logits = x[-1] @ E.T  # (vocab,): only the last position predicts the next token
        tokens.append(int(np.argmax(logits)))
        all_logits.append(logits)
        new = tokens[-1:]
    return tokens, np.array(all_logits)


def test_generation_with_kv_cache_equals_recomputation(rng):
    E, layers = tiny_model(rng)
    tokens_full, logits_full = generate(E, layers, [1, 5, 2], 12, use_cache=False)
    tokens_cached, logits_cached = generate(E, layers, [1, 5, 2], 12, use_cache=True)
    assert tokens_full == tokens_cached
    np.testing.assert_allclose(logits_cached, logits_full, rtol=1e-10, atol=1e-12)


def test_cached_self_attention_keeps_float32(rng):
    layer = MultiHeadAttention(8, 2, rng=rng)
    x = rng.standard_normal((5, 8)).astype(np.float32)
    out = cached_self_attention(layer, x, KVCache())
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, layer(x, mask=causal_mask(5))[0], rtol=1e-5, atol=1e-6)


def test_cached_self_attention_on_a_batch_with_a_prompt_then_single_tokens(rng):
    layer = MultiHeadAttention(8, 2, rng=rng)
    x = rng.standard_normal((3, 7, 8))  # (B, T, d_model)
    cache = KVCache()
    parts = [cached_self_attention(layer, x[:, :4], cache)] + [
        cached_self_attention(layer, x[:, t : t + 1], cache) for t in range(4, 7)
    ]
    assert cache.keys.shape == (3, 2, 7, 4)  # (B, h, T, d_head)
    np.testing.assert_allclose(np.concatenate(parts, axis=1), layer(x, mask=causal_mask(7))[0], rtol=1e-10, atol=1e-12)


def test_cached_self_attention_names_x_new_when_its_width_is_wrong():
    layer = MultiHeadAttention(6, 2, rng=0)
    with pytest.raises(ValueError, match=r"x_new must have shape \(\.\.\., T, d_model=6\), got \(3, 8\)"):
        cached_self_attention(layer, np.ones((3, 8)), KVCache())


def test_cached_self_attention_needs_only_the_layers_public_steps(rng):
    layer = MultiHeadAttention(8, 2, rng=rng)

    class PublicSteps:  # a layer seen from outside: project and output, nothing private
        project, output = layer.project, layer.output

    x = rng.standard_normal((6, 8))
    np.testing.assert_array_equal(
        cached_self_attention(PublicSteps(), x, KVCache()), cached_self_attention(layer, x, KVCache())
    )


def test_keep_last_forgets_the_oldest_tokens_and_keeps_appending(rng):
    cache = KVCache()
    k, v = rng.normal(size=(2, 9, 4)), rng.normal(size=(2, 9, 3))  # (batch, T, d_k), (batch, T, d_v)
    cache.append(k[:, :6], v[:, :6])
    cache.keep_last(4)
    assert len(cache) == 4 and np.array_equal(cache.keys, k[:, 2:6]) and np.array_equal(cache.values, v[:, 2:6])
    assert cache.capacity == 5  # room for the kept tokens and the next one, not more
    cache.append(k[:, 6:], v[:, 6:])  # appending after a cut writes after the kept rows
    assert len(cache) == 7 and np.array_equal(cache.keys, k[:, 2:]) and np.array_equal(cache.values, v[:, 2:])
    assert cache.nbytes == k[:, 2:].nbytes + v[:, 2:].nbytes
    cache.keep_last(10)  # more than it holds: nothing changes
    assert len(cache) == 7
    cache.keep_last(0)
    assert len(cache) == 0 and cache.keys.shape == (2, 0, 4)
    with pytest.raises(ValueError, match="n must be an int >= 0, got -1"):
        cache.keep_last(-1)
    for not_a_count in (2.0, True, "2"):
        with pytest.raises(TypeError, match="n must be an int >= 0, got "):
            cache.keep_last(not_a_count)


def test_keep_last_lets_a_long_prompts_storage_go(rng):
    cache = KVCache()
    k, v = rng.normal(size=(40, 4)), rng.normal(size=(40, 3))  # a long prompt, appended at once
    cache.append(k, v)
    assert cache.capacity >= 40
    cache.keep_last(7)  # a sliding window of 8: the 7 latest, and room for the next token
    assert cache.capacity == 8 and np.array_equal(cache.keys, k[-7:]) and np.array_equal(cache.values, v[-7:])
    cache.append(k[:1], v[:1])
    assert cache.capacity == 8 and len(cache) == 8 and np.array_equal(cache.keys[-1], k[0])
