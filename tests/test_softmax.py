"""softmax: a probability distribution per row, stable for huge logits, zeros for an all -inf row."""

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import softmax

FAST = settings(max_examples=40, deadline=None)


def logits(low=-50.0, high=50.0, dtype=np.float64, max_dims=3):
    """Arrays of 1-3 axes with finite entries in [low, high]."""
    return hnp.arrays(
        dtype,
        hnp.array_shapes(min_dims=1, max_dims=max_dims, min_side=1, max_side=6),
        elements=st.floats(low, high, allow_nan=False, width=np.dtype(dtype).itemsize * 8),
    )


def softmax_loop(row):
    """The textbook formula, one row at a time, in plain Python (no shift: only for modest logits)."""
    exps = [math.exp(value) for value in row]
    total = sum(exps)
    return [e / total for e in exps]


@FAST
@given(logits())
def test_rows_sum_to_one_and_are_probabilities(x):
    p = softmax(x)
    assert p.shape == x.shape
    assert np.all(p >= 0) and np.all(p <= 1)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=0, atol=1e-12)


@FAST
@given(logits(), st.data())
def test_any_axis_sums_to_one(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    np.testing.assert_allclose(softmax(x, axis=axis).sum(axis=axis), 1.0, rtol=0, atol=1e-12)


@FAST
@given(logits(max_dims=2))
def test_equals_the_formula_row_by_row(x):
    rows = x.reshape(-1, x.shape[-1])  # (n_rows, T)
    expected = np.array([softmax_loop(row) for row in rows]).reshape(x.shape)
    np.testing.assert_allclose(softmax(x), expected, rtol=1e-12, atol=1e-15)


@FAST
@given(logits(), st.data())
def test_shift_invariance(x, data):
    # adding any constant to a whole row changes nothing (a different constant per row)
    shift = data.draw(hnp.arrays(np.float64, x.shape[:-1] + (1,), elements=st.floats(-1e3, 1e3)))
    np.testing.assert_allclose(softmax(x + shift), softmax(x), rtol=1e-9, atol=1e-12)


@FAST
@given(logits(-1e4, 1e4))
def test_huge_logits_neither_overflow_nor_nan(x):
    with np.errstate(over="raise", invalid="raise"):
        p = softmax(x)
    assert np.all(np.isfinite(p))
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_plus_minus_1e4_exact_values(dtype, strict_numpy):
    x = np.array([[1e4, -1e4, 0.0], [1e4, 1e4 - 1, -1e4], [-1e4, -1e4, -1e4]], dtype=dtype)
    p = softmax(x)
    e = 1 / (1 + math.exp(-1))
    expected = np.array([[1, 0, 0], [e, 1 - e, 0], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(p, expected, rtol=1e-6, atol=1e-7)
    assert p.dtype == dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_all_minus_inf_row_gives_zeros(dtype, strict_numpy):
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, 1.0, 2.0], [-np.inf, 3.0, -np.inf]], dtype=dtype)
    p = softmax(x)
    assert not np.any(np.isnan(p))
    assert np.array_equal(p[0], np.zeros(3))
    np.testing.assert_allclose(p[1], softmax_loop([0.0, 1.0, 2.0]), rtol=1e-6)
    assert np.array_equal(p[2], [0, 1, 0])  # -inf gives exactly 0, the one finite logit exactly 1


def test_all_minus_inf_along_axis_0(strict_numpy):
    x = np.array([[-np.inf, 1.0], [-np.inf, 1.0]])
    p = softmax(x, axis=0)
    assert np.array_equal(p[:, 0], [0, 0])
    np.testing.assert_allclose(p[:, 1], [0.5, 0.5])


@FAST
@given(logits(), st.data())
def test_minus_inf_entries_get_exactly_zero(x, data):
    masked = data.draw(hnp.arrays(bool, x.shape))
    x = np.where(masked, -np.inf, x)
    p = softmax(x)
    assert np.all(p[masked] == 0)
    assert not np.any(np.isnan(p))
    row_alive = ~masked.all(axis=-1)  # rows with at least one finite logit sum to 1, the others to 0
    np.testing.assert_allclose(p.sum(axis=-1), row_alive.astype(float), atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_dtype_in_equals_dtype_out(dtype):
    x = np.linspace(-3, 3, 12, dtype=dtype).reshape(3, 4)
    assert softmax(x).dtype == dtype


@FAST
@given(logits(-1e4, 1e4, dtype=np.float32))
def test_float32_stays_float32_and_sums_to_one(x):
    p = softmax(x)
    assert p.dtype == np.float32
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-5)


def test_integers_become_float64():
    p = softmax(np.array([[0, 1], [2, 2]]))
    assert p.dtype == np.float64
    np.testing.assert_allclose(p[1], [0.5, 0.5])


def test_nan_is_not_hidden():
    # a NaN logit is a bug upstream: it must show up as NaN, never be silently turned into zeros
    p = softmax(np.array([[np.nan, 1.0], [0.0, 0.0]]))
    assert np.all(np.isnan(p[0]))
    np.testing.assert_allclose(p[1], [0.5, 0.5])


def test_input_is_not_modified(rng):
    x = rng.normal(size=(3, 5))
    before = x.copy()
    softmax(x)
    assert np.array_equal(x, before)


def test_order_is_preserved(rng):
    x = rng.normal(size=(4, 7))
    p = softmax(x)
    assert np.array_equal(np.argsort(p, axis=-1), np.argsort(x, axis=-1))


def test_entropy_of_one_hot_uniform_and_a_batch():
    from helpers import entropy

    assert entropy([0.0, 1.0, 0.0]) == 0.0  # 0 log 0 counts as 0: no NaN
    assert np.isclose(entropy(np.full(4, 0.25)), np.log(4))
    batch = softmax(np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32))
    h = entropy(batch)
    assert h.shape == (3,) and h.dtype == np.float32
    np.testing.assert_allclose(h, [-sum(p * math.log(p) for p in row) for row in batch.astype(float)], rtol=1e-5)
    np.testing.assert_allclose(entropy(batch.T, axis=0), h)
