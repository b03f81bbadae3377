"""Fixtures shared by the helpers' tests."""

import warnings

import numpy as np
import pytest


@pytest.fixture
def rng():
    """A fresh, seeded generator per test, so a failure reproduces."""
    return np.random.default_rng(20240601)


@pytest.fixture
def strict_numpy():
    """Make overflow, invalid (NaN) and divide-by-zero, and every warning, an error (underflow to 0 is fine)."""
    with np.errstate(over="raise", invalid="raise", divide="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        yield
