"""softmax_backward and attention_backward against central finite differences in float64 (the helpers' own
gradients.numerical_gradient, itself tested against closed forms in test_gradients.py)."""

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import attention_backward, causal_mask, scaled_dot_product_attention, softmax, softmax_backward
from helpers.gradients import numerical_gradient, relative_error

FAST = settings(max_examples=50, deadline=None)
# central differences: truncation error ~ EPS^2 |f'''|, rounding ~ 1e-16 |f| / EPS; 1e-5 balances the two (~1e-11)
EPS = 1e-5


def error_against_finite_differences(analytic, loss, x):
    """Relative error of an analytic gradient against central differences of loss(x') around x' = x."""
    return relative_error(analytic, numerical_gradient(loss, x, eps=EPS))


# --- softmax_backward -------------------------------------------------------------------


@FAST
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.integers(0, 2**32 - 1), st.data())
def test_softmax_backward_matches_finite_differences(shape, seed, data):
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = rng.normal(size=shape)  # logits of order 1: a saturated softmax has vanishing gradients
    G = rng.normal(size=shape)  # the loss is sum(G * softmax(x)), so dL/dweights = G

    def loss(logits):
        return np.sum(G * softmax(logits, axis=axis))

    analytic = softmax_backward(G, softmax(x, axis=axis), axis=axis)
    assert analytic.shape == x.shape
    assert error_against_finite_differences(analytic, loss, x) < 1e-6


def test_softmax_backward_formula_by_hand():
    # Jacobian of softmax: diag(w) - w w^T; the backward pass is its product with the upstream gradient
    w = softmax(np.array([0.3, -1.2, 2.0, 0.1]))
    d_w = np.array([1.0, -2.0, 0.5, 3.0])
    jacobian = np.diag(w) - np.outer(w, w)
    np.testing.assert_allclose(softmax_backward(d_w, w), jacobian @ d_w, rtol=1e-12, atol=1e-15)


def test_softmax_backward_of_a_constant_gradient_is_zero(rng):
    # adding c to every dL/dw_i changes nothing: the weights always sum to 1
    w = softmax(rng.normal(size=(3, 5)))
    np.testing.assert_allclose(softmax_backward(np.full((3, 5), 7.0), w), 0.0, atol=1e-14)


# --- attention_backward -----------------------------------------------------------------


@st.composite
def attention_problems(draw):
    """q, k, v (with batch axes, possibly broadcast), a mask or None, a scale or None, and d_out."""
    T_q, T_k = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    d_k, d_v = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    B = draw(st.integers(1, 3))
    # each of q, k, v: no batch axis, a batch axis of 1 (broadcast) or of B
    lead_q, lead_k, lead_v = (draw(st.sampled_from([(), (1,), (B,)])) for _ in range(3))
    if draw(st.booleans()):
        lead_k = lead_v = ()  # the common case: one set of keys/values for every query batch item
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    # scores of order 1: a saturated softmax has vanishing gradients that finite differences cannot resolve
    q = rng.normal(size=lead_q + (T_q, d_k)) * 0.5
    k = rng.normal(size=lead_k + (T_k, d_k)) * 0.5
    v = rng.normal(size=lead_v + (T_k, d_v))
    batch = np.broadcast_shapes(lead_q, lead_k, lead_v)
    kind = draw(st.sampled_from(["none", "random", "causal", "per-item"]))
    if kind == "random":  # may fully mask some rows
        mask = rng.random((T_q, T_k)) < 0.6
    elif kind == "causal":
        mask = causal_mask(T_q, max(T_q, T_k)) if T_k >= T_q else causal_mask(T_q)[:, :T_k]
    elif kind == "per-item":
        mask = rng.random(batch + (T_q, T_k)) < 0.6
    else:
        mask = None
    scale = draw(st.sampled_from([None, 0.7, 2.0]))
    d_out = rng.normal(size=batch + (T_q, d_v))
    return q, k, v, mask, scale, d_out


@FAST
@given(attention_problems())
def test_attention_backward_matches_finite_differences(problem):
    q, k, v, mask, scale, d_out = problem

    def loss(name, x):  # linear in the output, so dL/dout = d_out
        out, _ = scaled_dot_product_attention(**{"q": q, "k": k, "v": v, name: x}, mask=mask, scale=scale)
        return np.sum(d_out * out)

    dq, dk, dv = attention_backward(d_out, q, k, v, mask=mask, scale=scale)
    for name, analytic, x in (("q", dq, q), ("k", dk, k), ("v", dv, v)):
        assert analytic.shape == x.shape, name
        error = error_against_finite_differences(analytic, functools.partial(loss, name), x)
        assert error < 1e-6, f"d{name}: relative error {error:.2e}"


LEADS = [(), (1,), (3,)]  # no batch axis, a broadcast batch axis of 1, a real batch of 3


@pytest.mark.parametrize("mask_kind", ["none", "causal", "random", "per-item"])
@pytest.mark.parametrize("lead_q", LEADS, ids=["q:-", "q:1", "q:B"])
@pytest.mark.parametrize("lead_k", LEADS, ids=["k:-", "k:1", "k:B"])
@pytest.mark.parametrize("lead_v", LEADS, ids=["v:-", "v:1", "v:B"])
def test_attention_backward_every_broadcast_combination(lead_q, lead_k, lead_v, mask_kind):
    # the seeded sweep guarantees what random draws cover only sometimes: every way q, k, v can broadcast
    rng = np.random.default_rng(len(lead_q) + 3 * len(lead_k) + 9 * len(lead_v))
    T_q, T_k, d_k, d_v = 3, 4, 2, 2
    q = rng.normal(size=lead_q + (T_q, d_k)) * 0.5
    k = rng.normal(size=lead_k + (T_k, d_k)) * 0.5
    v = rng.normal(size=lead_v + (T_k, d_v))
    batch = np.broadcast_shapes(lead_q, lead_k, lead_v)
    mask = {
        "none": None,
        "causal": causal_mask(T_q, T_k),
        "random": rng.random((T_q, T_k)) < 0.6,
        "per-item": rng.random(batch + (T_q, T_k)) < 0.6,
    }[mask_kind]
    d_out = rng.normal(size=batch + (T_q, d_v))

    def loss(name, x):
        return np.sum(d_out * scaled_dot_product_attention(**{"q": q, "k": k, "v": v, name: x}, mask=mask)[0])

    for name, analytic, x in zip("qkv", attention_backward(d_out, q, k, v, mask=mask), (q, k, v), strict=True):
        assert analytic.shape == x.shape, name
        error = error_against_finite_differences(analytic, functools.partial(loss, name), x)
        assert error < 1e-6, f"d{name}: relative error {error:.2e}"


def test_attention_backward_with_a_fully_masked_row_is_zero_there(rng):
    q, k, v = rng.normal(size=(3, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 3))
    mask = np.ones((3, 4), bool)
    mask[1] = False
    dq, dk, dv = attention_backward(np.ones((3, 3)), q, k, v, mask=mask)
    assert np.array_equal(dq[1], np.zeros(2))
    assert not any(np.any(np.isnan(g)) for g in (dq, dk, dv))
    # keys that no query may see get no gradient
    mask[:, 2] = False
    _, dk, dv = attention_backward(np.ones((3, 3)), q, k, v, mask=mask)
    assert np.array_equal(dk[2], np.zeros(2)) and np.array_equal(dv[2], np.zeros(3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_backward_keeps_the_dtype(dtype, rng):
    q, k, v = (rng.normal(size=s).astype(dtype) for s in [(2, 3), (4, 3), (4, 2)])
    grads = attention_backward(np.ones((2, 2), dtype), q, k, v)
    assert [g.dtype for g in grads] == [dtype] * 3
    # float32 agrees with float64 to float32 precision
    grads64 = attention_backward(np.ones((2, 2)), *(a.astype(np.float64) for a in (q, k, v)))
    for g, g64 in zip(grads, grads64, strict=True):
        np.testing.assert_allclose(g, g64, rtol=1e-4, atol=1e-5)
