"""scaled_dot_product_attention against an explicit double loop, and the properties it must keep."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import causal_mask, scaled_dot_product_attention, softmax

FAST = settings(max_examples=60, deadline=None)


def attention_loop(q, k, v, mask=None, scale=None):
    """Attention for one sequence in plain Python: one query at a time, one key at a time.

    Shapes: q (T_q, d_k), k (T_k, d_k), v (T_k, d_v), mask (T_q, T_k) -> out (T_q, d_v), weights (T_q, T_k).
    """
    T_q, d_k = q.shape
    T_k, d_v = v.shape
    scale = 1 / math.sqrt(d_k) if scale is None else scale
    out = np.zeros((T_q, d_v))
    weights = np.zeros((T_q, T_k))
    for i in range(T_q):
        allowed = [j for j in range(T_k) if mask is None or mask[i, j]]
        if not allowed:
            continue  # a query that may see nothing: zero weights, zero output
        scores = {j: scale * sum(q[i, c] * k[j, c] for c in range(d_k)) for j in allowed}
        top = max(scores.values())
        exps = {j: math.exp(s - top) for j, s in scores.items()}
        total = sum(exps.values())
        for j in allowed:
            weights[i, j] = exps[j] / total
        for c in range(d_v):
            out[i, c] = sum(weights[i, j] * v[j, c] for j in range(T_k))
    return out, weights


@st.composite
def problems(draw, batch=False, masked=None):
    """Random (q, k, v, mask): sizes from hypothesis, values from a seeded generator (fast to draw)."""
    T_q, T_k = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    d_k, d_v = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    lead = (draw(st.integers(1, 3)),) if batch else ()
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    q = rng.normal(size=lead + (T_q, d_k)) * draw(st.sampled_from([0.1, 1.0, 5.0]))
    k = rng.normal(size=lead + (T_k, d_k))
    v = rng.normal(size=lead + (T_k, d_v))
    use_mask = draw(st.booleans()) if masked is None else masked
    mask = rng.random(lead + (T_q, T_k)) < draw(st.sampled_from([0.3, 0.7, 1.0])) if use_mask else None
    return q, k, v, mask


@FAST
@given(problems())
def test_equals_double_loop(problem):
    q, k, v, mask = problem
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    expected_out, expected_weights = attention_loop(q, k, v, mask=mask)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(out, expected_out, rtol=1e-10, atol=1e-12)


@FAST
@given(problems(batch=True), st.floats(0.05, 3.0))
def test_batched_equals_loop_per_item_with_explicit_scale(problem, scale):
    q, k, v, mask = problem
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)
    assert out.shape == q.shape[:-1] + (v.shape[-1],)
    assert weights.shape == q.shape[:-1] + (k.shape[-2],)
    for b in range(q.shape[0]):
        item_mask = None if mask is None else mask[b]
        expected_out, expected_weights = attention_loop(q[b], k[b], v[b], mask=item_mask, scale=scale)
        np.testing.assert_allclose(weights[b], expected_weights, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(out[b], expected_out, rtol=1e-10, atol=1e-12)


@FAST
@given(problems(masked=True))
def test_weights_sum_to_one_over_allowed_keys_and_are_zero_at_masked_keys(problem):
    q, k, v, mask = problem
    _, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert np.all(weights[~mask] == 0.0)  # exactly zero, not merely small
    assert np.all(weights >= 0)
    has_key = mask.any(axis=-1)
    np.testing.assert_allclose(weights.sum(axis=-1), has_key.astype(float), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.where(mask, weights, 0).sum(axis=-1)[has_key], 1.0, atol=1e-12)


@FAST
@given(problems(masked=True), st.floats(1e3, 1e6))
def test_values_at_masked_keys_do_not_matter(problem, huge):
    # exact zeros at masked keys mean even enormous values there leave the output unchanged
    q, k, v, mask = problem
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    key_never_seen = ~mask.any(axis=0)  # (T_k,)
    v_changed = np.where(key_never_seen[:, None], huge, v)
    k_changed = np.where(key_never_seen[:, None], -huge, k)
    out_changed, _ = scaled_dot_product_attention(q, k_changed, v_changed, mask=mask)
    np.testing.assert_array_equal(out_changed, out)


@FAST
@given(problems())
def test_output_lies_in_convex_hull_of_allowed_values(problem):
    q, k, v, mask = problem
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    allowed = np.ones(weights.shape, bool) if mask is None else mask
    for i in range(q.shape[0]):
        keys = np.flatnonzero(allowed[i])
        if keys.size == 0:
            continue
        # a proper convex combination of the allowed value rows that reproduces the output row
        w = weights[i, keys]
        assert np.all(w >= 0)
        assert abs(w.sum() - 1) < 1e-12
        np.testing.assert_allclose(w @ v[keys], out[i], rtol=1e-12, atol=1e-12)
        # hence every coordinate lies between the smallest and largest allowed value in its column
        tol = 1e-12 * (1 + np.abs(v[keys]).max())
        assert np.all(out[i] >= v[keys].min(axis=0) - tol)
        assert np.all(out[i] <= v[keys].max(axis=0) + tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fully_masked_row_gives_zero_output_and_no_nan(dtype, rng, strict_numpy):
    q, k, v = (rng.normal(size=shape).astype(dtype) for shape in [(3, 4), (5, 4), (5, 2)])
    mask = np.ones((3, 5), bool)
    mask[1] = False  # query 1 may attend to nothing
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert not np.any(np.isnan(out)) and not np.any(np.isnan(weights))
    assert np.array_equal(out[1], np.zeros(2)) and np.array_equal(weights[1], np.zeros(5))
    # the other rows are what they would be without row 1
    rest, rest_weights = scaled_dot_product_attention(q[[0, 2]], k, v)
    np.testing.assert_allclose(out[[0, 2]], rest, rtol=1e-6)
    np.testing.assert_allclose(weights[[0, 2]], rest_weights, rtol=1e-6)


def test_every_row_fully_masked(rng, strict_numpy):
    q, k, v = rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 5))
    out, weights = scaled_dot_product_attention(q, k, v, mask=np.zeros((2, 4), bool))
    assert np.array_equal(out, np.zeros((2, 5))) and np.array_equal(weights, np.zeros((2, 4)))


def test_true_means_may_attend(rng):
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 2))
    only = np.eye(3, dtype=bool)[[2, 0, 1]]  # query 0 may see only key 2, query 1 key 0, query 2 key 1
    out, weights = scaled_dot_product_attention(q, k, v, mask=only)
    assert np.array_equal(weights, only.astype(float))
    assert np.array_equal(out, v[[2, 0, 1]])
    # the inverted mask must not give the same answer: True is "may attend", not "is masked"
    _, inverted = scaled_dot_product_attention(q, k, v, mask=~only)
    assert np.all(inverted[only] == 0)


def test_causal_mask_hides_the_future(rng):
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    out, weights = scaled_dot_product_attention(q, k, v, mask=causal_mask(4))
    assert np.all(np.triu(weights, 1) == 0)
    np.testing.assert_array_equal(out[0], v[0])  # the first token sees only itself
    # the output at position t does not change when the future (keys/values after t) changes
    k2, v2 = k.copy(), v.copy()
    k2[2:], v2[2:] = 100.0, -100.0
    out2, _ = scaled_dot_product_attention(q, k2, v2, mask=causal_mask(4))
    np.testing.assert_array_equal(out2[:2], out[:2])


@FAST
@given(problems())
def test_default_scale_is_one_over_sqrt_d_k(problem):
    q, k, v, mask = problem
    d_k = q.shape[-1]
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    out_explicit, weights_explicit = scaled_dot_product_attention(q, k, v, mask=mask, scale=1 / np.sqrt(d_k))
    np.testing.assert_allclose(out, out_explicit, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(weights, weights_explicit, rtol=1e-12, atol=1e-14)
    # by hand: softmax of q k^T / sqrt(d_k), with masked scores at -inf
    scores = q @ k.T / np.sqrt(d_k)  # (T_q, d_k) @ (d_k, T_k) -> (T_q, T_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    manual = softmax(scores)
    np.testing.assert_allclose(weights, manual, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out, manual @ v, rtol=1e-12, atol=1e-12)


def test_default_scale_is_not_one(rng):
    # with d_k = 16 the default must differ from scale=1 (the test above alone would pass for any default)
    q, k, v = rng.normal(size=(3, 16)) * 2, rng.normal(size=(4, 16)), rng.normal(size=(4, 2))
    _, weights = scaled_dot_product_attention(q, k, v)
    _, unscaled = scaled_dot_product_attention(q, k, v, scale=1.0)
    _, quarter = scaled_dot_product_attention(q, k, v, scale=0.25)
    assert not np.allclose(weights, unscaled)
    np.testing.assert_allclose(weights, quarter, rtol=1e-12)


def test_scale_zero_gives_uniform_weights_over_allowed_keys(rng):
    q, k, v = rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    mask = np.array([[True, True, False, False], [True, True, True, True]])
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask, scale=0.0)
    np.testing.assert_allclose(weights, [[0.5, 0.5, 0, 0], [0.25] * 4])
    np.testing.assert_allclose(out, [v[:2].mean(axis=0), v.mean(axis=0)])


def test_broadcast_k_v_and_mask_over_batch(rng):
    # one set of keys/values shared by every batch item; a padding-style mask (B, 1, T_k)
    q = rng.normal(size=(3, 2, 4))
    k, v = rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], bool)[:, None, :]  # (B, 1, T_k)
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert out.shape == (3, 2, 3) and weights.shape == (3, 2, 5)
    for b in range(3):
        expected, expected_weights = attention_loop(q[b], k, v, mask=np.broadcast_to(mask[b], (2, 5)))
        np.testing.assert_allclose(out[b], expected, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(weights[b], expected_weights, rtol=1e-10, atol=1e-13)


def test_batch_only_in_v(rng):
    # the weights are shared, each value batch item gets its own output
    q, k, v = rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=(5, 4, 2))
    out, weights = scaled_dot_product_attention(q, k, v)
    assert out.shape == (5, 2, 2) and weights.shape == (2, 4)
    for b in range(5):
        np.testing.assert_allclose(out[b], attention_loop(q, k, v[b])[0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [None, 0.5])
def test_dtype_in_equals_dtype_out(dtype, scale, rng):
    q, k, v = (rng.normal(size=s).astype(dtype) for s in [(3, 4), (5, 4), (5, 2)])
    out, weights = scaled_dot_product_attention(q, k, v, mask=causal_mask(3, 5), scale=scale)
    assert out.dtype == dtype and weights.dtype == dtype
    expected, expected_weights = attention_loop(*(a.astype(np.float64) for a in (q, k, v)), causal_mask(3, 5), scale)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, expected, rtol=tol, atol=tol)


def test_lists_and_integers_are_accepted(rng):
    out, weights = scaled_dot_product_attention([[1, 0]], [[1, 0], [0, 1]], [[2, 0], [0, 2]])
    e = 1 / (1 + math.exp(-1 / math.sqrt(2)))
    np.testing.assert_allclose(weights, [[e, 1 - e]])
    np.testing.assert_allclose(out, [[2 * e, 2 * (1 - e)]])
    assert out.dtype == np.float64


def test_inputs_are_not_modified(rng):
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    mask = causal_mask(3, 5)
    copies = [a.copy() for a in (q, k, v, mask)]
    scaled_dot_product_attention(q, k, v, mask=mask)
    for original, copy in zip((q, k, v, mask), copies, strict=True):
        assert np.array_equal(original, copy)


@pytest.mark.parametrize(
    "shapes, words",
    [
        (((2, 4), (3, 5), (3, 2)), r"share d_k.*\(2, 4\).*\(3, 5\)"),
        (((2, 4), (3, 4), (4, 2)), r"same number of keys T_k.*\(3, 4\).*\(4, 2\)"),
        (((2, 2, 4), (3, 3, 4), (3, 3, 2)), r"batch axes .* do not broadcast"),
    ],
)
def test_check_qkv_is_the_one_checker_every_attention_helper_shares(shapes, words):
    from helpers.attention import check_qkv
    from helpers.efficient import attention_in_place, tiled_attention_fast, tiled_attention_simple

    q, k, v = (np.ones(shape) for shape in shapes)
    helpers_that_check = (
        check_qkv,
        scaled_dot_product_attention,
        attention_in_place,
        tiled_attention_simple,
        tiled_attention_fast,
    )
    for f in helpers_that_check:
        with pytest.raises(ValueError, match=words):
            f(q, k, v)
    good = check_qkv(np.ones((2, 4), np.float32), np.ones((3, 4)), np.ones((3, 2), np.float32))
    assert [x.dtype for x in good] == [np.float32, np.float64, np.float32]  # each keeps its own dtype
