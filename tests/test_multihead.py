"""MultiHeadAttention against a per-head loop, single-head attention and per-item runs."""

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import MultiHeadAttention, _validate, causal_mask, merge_heads, scaled_dot_product_attention, split_heads

FAST = settings(max_examples=40, deadline=None)


def with_random_biases(mha, rng):
    """Non-zero biases, so a test also catches a bias added in the wrong place (or not at all)."""
    for name in ("b_q", "b_k", "b_v", "b_o"):
        setattr(mha, name, rng.normal(size=mha.d_model))
    return mha


def heads_loop(mha, x, context=None, mask=None):
    """Multi-head attention one head at a time, for an unbatched x (T_q, d_model).

    Returns the list of head outputs (each (T_q, d_head)), the list of weights (each (T_q, T_k)) and the output.
    """
    context = x if context is None else context
    Q = x @ mha.W_q + mha.b_q  # (T_q, d_model)
    K = context @ mha.W_k + mha.b_k  # (T_k, d_model)
    V = context @ mha.W_v + mha.b_v  # (T_k, d_model)
    heads, weights = [], []
    for i in range(mha.n_heads):
        cols = slice(i * mha.d_head, (i + 1) * mha.d_head)  # head i's columns
        head_mask = None if mask is None else np.broadcast_to(mask, (mha.n_heads,) + mask.shape[-2:])[i]
        head, w = scaled_dot_product_attention(Q[:, cols], K[:, cols], V[:, cols], mask=head_mask)
        heads.append(head)
        weights.append(w)
    out = np.concatenate(heads, axis=-1) @ mha.W_o + mha.b_o  # (T_q, d_model) @ (d_model, d_model)
    return heads, weights, out


@st.composite
def configs(draw):
    n_heads, d_head = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    T_q, T_k = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    return n_heads, d_head, T_q, T_k, draw(st.integers(0, 2**32 - 1))


def test_one_head_with_identity_output_equals_attention_of_the_projections(rng):
    d_model, T = 6, 5
    mha = MultiHeadAttention(d_model, 1, rng=rng)
    mha.W_o = np.eye(d_model)
    for name in ("b_q", "b_k", "b_v", "b_o"):
        assert np.array_equal(getattr(mha, name), np.zeros(d_model))  # biases start at zero
    x = rng.normal(size=(T, d_model))
    out, weights = mha(x)
    expected, expected_weights = scaled_dot_product_attention(x @ mha.W_q, x @ mha.W_k, x @ mha.W_v)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(weights[0], expected_weights, rtol=1e-12, atol=1e-14)
    assert weights.shape == (1, T, T)


@FAST
@given(configs(), st.booleans())
def test_per_head_loop_equals_vectorised(config, masked):
    n_heads, d_head, T_q, T_k, seed = config
    rng = np.random.default_rng(seed)
    mha = with_random_biases(MultiHeadAttention(n_heads * d_head, n_heads, rng=rng), rng)
    x, context = rng.normal(size=(T_q, mha.d_model)), rng.normal(size=(T_k, mha.d_model))
    mask = rng.random((n_heads, T_q, T_k)) < 0.7 if masked else None  # a different mask per head
    out, weights = mha(x, context=context, mask=mask)
    heads, expected_weights, expected = heads_loop(mha, x, context, mask)
    assert out.shape == (T_q, mha.d_model) and weights.shape == (n_heads, T_q, T_k)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, np.stack(expected_weights), rtol=1e-10, atol=1e-13)


@FAST
@given(configs())
def test_concat_times_W_o_is_the_sum_of_per_head_products(config):
    n_heads, d_head, T_q, _, seed = config
    rng = np.random.default_rng(seed)
    mha = with_random_biases(MultiHeadAttention(n_heads * d_head, n_heads, rng=rng), rng)
    x = rng.normal(size=(T_q, mha.d_model))
    heads, _, _ = heads_loop(mha, x)
    concat = np.concatenate(heads, axis=-1)  # (T_q, h * d_head)
    per_head = sum(head @ mha.W_o[i * d_head : (i + 1) * d_head] for i, head in enumerate(heads))
    np.testing.assert_allclose(concat @ mha.W_o, per_head, rtol=1e-10, atol=1e-12)
    out, _ = mha(x)
    np.testing.assert_allclose(out, per_head + mha.b_o, rtol=1e-10, atol=1e-12)


def test_cross_attention_uses_context_for_keys_and_values(rng):
    mha = with_random_biases(MultiHeadAttention(8, 2, rng=rng), rng)
    x, context = rng.normal(size=(3, 8)), rng.normal(size=(7, 8))  # T_q = 3, T_k = 7
    out, weights = mha(x, context=context)
    assert out.shape == (3, 8) and weights.shape == (2, 3, 7)
    _, expected_weights, expected = heads_loop(mha, x, context)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, np.stack(expected_weights), rtol=1e-10)
    # a different context changes the output (its order does not: keys form a set); the default context is x
    np.testing.assert_allclose(mha(x, context=context[::-1])[0], out, rtol=1e-12, atol=1e-14)
    assert not np.allclose(mha(x, context=2 * context)[0], out)
    np.testing.assert_array_equal(mha(x)[0], mha(x, context=x)[0])


def test_mask_that_differs_per_batch_item(rng):
    B, T, d_model, h = 3, 4, 8, 2
    mha = with_random_biases(MultiHeadAttention(d_model, h, rng=rng), rng)
    x = rng.normal(size=(B, T, d_model))
    lengths = [4, 2, 1]
    mask = (np.arange(T)[None, :] < np.array(lengths)[:, None])[:, None, None, :] & causal_mask(T)  # (B, 1, T, T)
    out, weights = mha(x, mask=mask)
    assert out.shape == (B, T, d_model) and weights.shape == (B, h, T, T)
    for b in range(B):
        alone, alone_weights = mha(x[b], mask=mask[b])  # this item by itself, with its own (1, T, T) mask
        np.testing.assert_allclose(out[b], alone, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(weights[b], alone_weights, rtol=1e-12, atol=1e-14)
        assert np.all(weights[b][:, ~mask[b, 0]] == 0)
    assert not np.allclose(out[1], mha(x[1], mask=mask[0])[0])  # the items really got different masks


@pytest.mark.parametrize("lead", [(), (2,), (2, 3)])
def test_weights_shape_and_batch_equals_per_item(lead, rng):
    h, T_q, T_k, d_model = 4, 3, 5, 8
    mha = MultiHeadAttention(d_model, h, rng=rng)
    x, context = rng.normal(size=lead + (T_q, d_model)), rng.normal(size=lead + (T_k, d_model))
    out, weights = mha(x, context=context)
    assert out.shape == lead + (T_q, d_model)
    assert weights.shape == lead + (h, T_q, T_k)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-12)
    for index in np.ndindex(lead):
        alone, alone_weights = mha(x[index], context=context[index])
        np.testing.assert_allclose(out[index], alone, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(weights[index], alone_weights, rtol=1e-12, atol=1e-14)


def test_without_bias(rng):
    mha = MultiHeadAttention(6, 3, bias=False, rng=rng)
    assert mha.b_q is None and mha.b_k is None and mha.b_v is None and mha.b_o is None
    x = rng.normal(size=(4, 6))
    Q, K, V = (split_heads(x @ W, 3) for W in (mha.W_q, mha.W_k, mha.W_v))  # (h, T, d_head) each
    heads, _ = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(mha(x)[0], merge_heads(heads) @ mha.W_o, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(mha(np.zeros((4, 6)))[0], np.zeros((4, 6)))  # nothing added anywhere


def test_weights_come_from_the_rng(rng):
    a = MultiHeadAttention(8, 2, rng=np.random.default_rng(1))
    b = MultiHeadAttention(8, 2, rng=np.random.default_rng(1))
    c = MultiHeadAttention(8, 2, rng=np.random.default_rng(2))
    for name in ("W_q", "W_k", "W_v", "W_o"):
        assert getattr(a, name).shape == (8, 8)
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert not np.allclose(getattr(a, name), getattr(c, name))
    assert not np.allclose(a.W_q, a.W_k)  # four independent matrices


def test_split_and_merge_heads_by_hand():
    x = np.arange(2 * 6, dtype=float).reshape(2, 6)  # (T=2, d_model=6)
    heads = split_heads(x, 3)  # (3, 2, 2)
    assert heads.shape == (3, 2, 2)
    np.testing.assert_array_equal(heads[1], x[:, 2:4])  # head 1 gets columns 2:4
    np.testing.assert_array_equal(merge_heads(heads), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_in_equals_dtype_out(dtype, rng):
    mha = MultiHeadAttention(8, 2, rng=rng)
    x = rng.normal(size=(3, 8)).astype(dtype)
    out, weights = mha(x, mask=causal_mask(3))
    assert out.dtype == dtype and weights.dtype == dtype
    expected, _ = mha(x.astype(np.float64), mask=causal_mask(3))
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


# --- the mask rule: a per-sentence mask applies to every head, a per-head mask has one more axis ---


def test_per_sentence_padding_mask_when_the_batch_size_equals_the_number_of_heads(rng):
    B = h = 2  # the case a shape-based guess gets wrong: (B, T, T) looks like (h, T, T)
    T, d_model = 4, 8
    mha = with_random_biases(MultiHeadAttention(d_model, h, rng=rng), rng)
    x = rng.normal(size=(B, T, d_model))
    keys = np.arange(T)[None, :] < np.array([4, 2])[:, None]  # (B, T): sentence 1 has two padding tokens
    mask = np.broadcast_to(keys[:, None, :], (B, T, T))  # (B, T_q, T_k), the shape 05 teaches
    out, weights = mha(x, mask=mask)
    assert np.all(weights[1, :, :, 2:] == 0)  # every head of sentence 1 gives its padding keys zero weight
    for b in range(B):
        alone, alone_weights = mha(x[b], mask=mask[b])  # (T, T) for one sentence: the same for every head
        np.testing.assert_allclose(weights[b], alone_weights, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(out[b], alone, rtol=1e-12, atol=1e-14)


def test_per_head_mask_has_one_more_axis(rng):
    B = h = 2
    T, d_model = 4, 8
    mha = MultiHeadAttention(d_model, h, rng=rng)
    x = rng.normal(size=(B, T, d_model))
    per_head = np.stack([causal_mask(T), np.ones((T, T), bool)])  # (h, T, T): head 0 causal, head 1 sees all
    _, weights = mha(x, mask=np.broadcast_to(per_head, (B, h, T, T)))  # (B, h, T_q, T_k)
    assert np.all(weights[:, 0][:, ~causal_mask(T)] == 0)  # head 0 of every sentence is causal
    assert np.all(weights[:, 1] > 0)  # head 1 sees every key
    _, unbatched = mha(x[0], mask=per_head)  # x (T, d_model): a 3-axis mask is per head
    np.testing.assert_allclose(unbatched, weights[0], rtol=1e-12, atol=1e-14)


def test_a_call_checks_its_mask_once_and_names_the_shape_it_was_given(rng, monkeypatch):
    checked = []

    def counted(mask, name):  # every boolean check of a mask goes through _validate.bool_array
        checked.append(name)
        return real(mask, name)

    real = _validate.bool_array
    for module in [m for name, m in sys.modules.items() if name.startswith("helpers")]:
        if getattr(module, "bool_array", None) is real:  # _validate's own, and any module's imported copy
            monkeypatch.setattr(module, "bool_array", counted)
    mha = MultiHeadAttention(8, 2, rng=rng)
    x = rng.normal(size=(3, 4, 8))
    for mask in (causal_mask(4), np.ones((3, 4, 4), bool), np.ones((3, 2, 4, 4), bool)):
        checked.clear()
        mha(x, mask=mask)
        assert checked == ["mask"]
    with pytest.raises(TypeError, match=r"mask must be a boolean array.*float64 with shape \(4, 4\)"):
        mha(x, mask=np.ones((4, 4)))
    with pytest.raises(ValueError, match="mask must be a rectangular boolean array"):
        mha(x[0], mask=[[True], [True, False]])


# --- the steps of a call, as public methods (the KV cache runs them itself) ----------------------


def test_project_attend_output_is_the_call(rng):
    mha = with_random_biases(MultiHeadAttention(8, 2, rng=rng), rng)
    x, context = rng.normal(size=(3, 4, 8)), rng.normal(size=(3, 6, 8))
    mask = rng.random((3, 2, 4, 6)) > 0.3  # (B, h, T_q, T_k): one per head
    Q, K, V = mha.project(x, context)
    assert Q.shape == (3, 2, 4, 4) and K.shape == V.shape == (3, 2, 6, 4)  # (B, h, T, d_head)
    np.testing.assert_array_equal(Q, split_heads(x @ mha.W_q + mha.b_q, 2))
    np.testing.assert_array_equal(K, split_heads(context @ mha.W_k + mha.b_k, 2))
    heads, weights = scaled_dot_product_attention(Q, K, V, mask=mask)
    out = mha.output(heads)
    np.testing.assert_allclose(out, merge_heads(heads) @ mha.W_o + mha.b_o, rtol=1e-12, atol=1e-12)
    expected, expected_weights = mha(x, context, mask)
    assert np.array_equal(out, expected) and np.array_equal(weights, expected_weights)
    np.testing.assert_array_equal(mha.project(x)[1], mha.project(x, x)[1])  # no context: self-attention


def test_project_and_output_name_what_is_wrong():
    mha = MultiHeadAttention(8, 2, rng=0)
    with pytest.raises(ValueError, match=r"x_new must have shape \(\.\.\., T, d_model=8\), got \(3, 6\)"):
        mha.project(np.ones((3, 6)), name="x_new")
    with pytest.raises(ValueError, match=r"context must have shape \(\.\.\., T, d_model=8\), got \(5, 7\)"):
        mha.project(np.ones((3, 8)), np.ones((5, 7)))
    with pytest.raises(ValueError, match=r"heads must have shape \(\.\.\., n_heads=2, T, d_head=4\), got \(4, 3, 2\)"):
        mha.output(np.ones((4, 3, 2)))


# --- from_weights and the rng rule ---------------------------------------------------------------


def test_from_weights_keeps_the_given_weights_and_biases(rng):
    d_model, h = 6, 3
    Ws = [rng.normal(size=(d_model, d_model)) for _ in range(4)]
    bs = [rng.normal(size=d_model) for _ in range(4)]
    layer = MultiHeadAttention.from_weights(*Ws, h, biases=bs)
    for W, got in zip(Ws, (layer.W_q, layer.W_k, layer.W_v, layer.W_o), strict=True):
        assert got is W
    assert layer.b_o is bs[3] and (layer.d_model, layer.n_heads, layer.d_head) == (6, 3, 2)
    x = rng.normal(size=(5, d_model))
    expected = heads_loop(layer, x)[2]
    np.testing.assert_allclose(layer(x)[0], expected, rtol=1e-12, atol=1e-12)
    assert MultiHeadAttention.from_weights(*Ws, h).b_q is None  # no biases given: no bias


def test_rng_none_is_the_fixed_default_seed_everywhere():
    from helpers import training

    assert np.array_equal(MultiHeadAttention(8, 2).W_q, MultiHeadAttention(8, 2, rng=0).W_q)
    assert np.array_equal(MultiHeadAttention(8, 2).W_q, MultiHeadAttention(8, 2, rng=np.random.default_rng(0)).W_q)
    assert not np.array_equal(MultiHeadAttention(8, 2).W_q, MultiHeadAttention(8, 2, rng=1).W_q)
    params = training.init_attention_params(4, 3, 2)
    assert np.array_equal(params["W_q"], training.init_attention_params(4, 3, 2, rng=0)["W_q"])
    assert np.array_equal(training.previous_token_task(5)[1], training.previous_token_task(5, rng=0)[1])
