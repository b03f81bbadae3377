"""helpers/losses.py: cross-entropy and squared error against loops and finite differences, accuracy, and the
one check of integer ids that the losses (targets) and the models (word ids) share."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import losses, softmax
from helpers.gradients import numerical_gradient  # tested against closed forms in test_gradients.py


def test_softmax_cross_entropy_matches_loop():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(2, 3, 5)) * 3
    targets = rng.integers(0, 5, size=(2, 3))
    expected = 0.0
    for b in range(2):
        for t in range(3):
            z = logits[b, t]
            expected -= np.log(np.exp(z[targets[b, t]]) / np.exp(z).sum())
    loss, _ = losses.softmax_cross_entropy(logits, targets)
    assert loss == pytest.approx(expected / 6, rel=1e-12)


def test_softmax_cross_entropy_gradient_against_finite_differences():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(4, 6))
    targets = rng.integers(0, 6, size=4)
    _, d_logits = losses.softmax_cross_entropy(logits, targets)
    numeric = numerical_gradient(lambda z: losses.softmax_cross_entropy(z, targets)[0], logits)
    np.testing.assert_allclose(d_logits, numeric, atol=1e-8)


def test_softmax_cross_entropy_is_stable_for_huge_logits():
    logits = np.array([[1000.0, 0.0, -1000.0]])
    loss, d_logits = losses.softmax_cross_entropy(logits, np.array([1]))
    assert loss == pytest.approx(1000.0)
    np.testing.assert_allclose(d_logits, [[1.0, -1.0, 0.0]], atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(2, 7), st.integers(0, 10_000))
def test_cross_entropy_gradient_rows_sum_to_zero(n, classes, seed):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, classes)) * 5
    loss, d_logits = losses.softmax_cross_entropy(logits, rng.integers(0, classes, size=n))
    assert loss >= 0
    np.testing.assert_allclose(d_logits.sum(axis=-1), 0, atol=1e-12)


def test_cross_entropy_keeps_float32():
    logits = np.ones((2, 3), dtype=np.float32)
    loss, d_logits = losses.softmax_cross_entropy(logits, np.array([0, 2]))
    assert loss.dtype == np.float32 and d_logits.dtype == np.float32
    assert loss == pytest.approx(np.log(3), rel=1e-6)


@pytest.mark.parametrize("loss_fn", [losses.softmax_cross_entropy, losses.accuracy])
def test_bad_targets_are_rejected(loss_fn):
    logits = np.zeros((2, 3))
    with pytest.raises(TypeError, match="targets must be integer ids"):
        loss_fn(logits, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"targets has shape \(3,\), expected the logits' leading shape \(2,\)"):
        loss_fn(logits, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"targets must lie in \[0, 3\), got values from 0 to 3"):
        loss_fn(logits, np.array([0, 3]))
    with pytest.raises(ValueError, match=r"from -1 to 0"):
        loss_fn(logits, np.array([-1, 0]))


def test_check_ids_gives_back_the_ids_or_names_the_argument():
    ids = [[0, 4], [2, 1]]
    np.testing.assert_array_equal(losses.check_ids(ids, "ids", 5), ids)
    assert losses.check_ids(np.zeros((0, 3), int), "ids", 1).shape == (0, 3)  # nothing to check in an empty batch
    with pytest.raises(TypeError, match="symbols must be integer ids.*float64"):
        losses.check_ids(np.array([0.0]), "symbols", 5)
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 5\), got values from 0 to 5"):
        losses.check_ids(np.array([0, 5]), "ids", 5)


def test_mean_squared_error_value_and_gradient():
    rng = np.random.default_rng(4)
    p, t = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    loss, d_p = losses.mean_squared_error(p, t)
    assert loss == pytest.approx(np.mean((p - t) ** 2))
    np.testing.assert_allclose(d_p, numerical_gradient(lambda x: losses.mean_squared_error(x, t)[0], p), atol=1e-8)
    with pytest.raises(ValueError, match="shape"):
        losses.mean_squared_error(p, t[:2])


def test_accuracy():
    logits = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    assert losses.accuracy(logits, np.array([1, 0, 0, 0])) == 0.75


def test_the_gradient_of_a_large_vocabulary_needs_no_vocabulary_by_vocabulary_array():
    """12 scores a sentence over SmolLM2's 49,152 tokens: the gradient is built in the logits' own size (a one-hot
    made from an identity matrix would take C x C numbers, 9.7 GB there, more than a browser's whole memory)."""
    rng = np.random.default_rng(0)
    logits, targets = rng.normal(size=(4, 5_000)).astype(np.float32), rng.integers(5_000, size=4)  # (4, C)
    tracemalloc.start()
    try:
        loss, d_logits = losses.softmax_cross_entropy(logits, targets)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * logits.nbytes  # a (C, C) float32 identity alone would be 100 MB, 1,250 times the logits
    expected = softmax(logits) - np.eye(5_000, dtype=np.float32)[targets]  # the one-hot, here, for the comparison
    np.testing.assert_allclose(d_logits, expected / 4, rtol=1e-6, atol=1e-9)
