"""sinusoidal_positional_encoding against its closed form, and the properties that make it useful."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import sinusoidal_positional_encoding

FAST = settings(max_examples=50, deadline=None)


def closed_form(T, d_model):
    """PE[p, 2i] = sin(p / 10000^(2i/d_model)), PE[p, 2i+1] = cos(p / 10000^(2i/d_model)), entry by entry."""
    pe = np.zeros((T, d_model))
    for p in range(T):
        for column in range(d_model):
            two_i = column - column % 2  # the even column of this sine/cosine pair
            angle = p / 10000 ** (two_i / d_model)
            pe[p, column] = math.sin(angle) if column % 2 == 0 else math.cos(angle)
    return pe


@FAST
@given(st.integers(1, 40), st.integers(1, 33))  # odd d_model too: the last column is then a sine
def test_equals_the_closed_form(T, d_model):
    pe = sinusoidal_positional_encoding(T, d_model)
    assert pe.shape == (T, d_model) and pe.dtype == np.float64
    np.testing.assert_allclose(pe, closed_form(T, d_model), rtol=0, atol=1e-12)


def test_by_hand():
    pe = sinusoidal_positional_encoding(3, 4)
    expected = [
        [0, 1, 0, 1],  # position 0: sin 0 = 0, cos 0 = 1
        [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)],  # 10000^(2/4) = 100
        [math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)],
    ]
    np.testing.assert_allclose(pe, expected, rtol=0, atol=1e-15)


@FAST
@given(st.integers(1, 30), st.integers(1, 16).map(lambda n: 2 * n))
def test_each_pair_lies_on_the_unit_circle(T, d_model):
    pe = sinusoidal_positional_encoding(T, d_model)
    np.testing.assert_allclose(pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2, 1.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(pe, axis=1), math.sqrt(d_model / 2), atol=1e-12)


@FAST
@given(st.integers(0, 50), st.integers(0, 50), st.integers(1, 8).map(lambda n: 2 * n))
def test_a_shift_by_k_is_the_same_rotation_at_every_position(p, k, d_model):
    # PE[p + k] = R(k) PE[p], where R(k) rotates pair i by the angle k * w_i: relative positions are linear
    pe = sinusoidal_positional_encoding(p + k + 1, d_model)
    w = 1 / 10000 ** (np.arange(0, d_model, 2) / d_model)  # (d/2,) the pairs' frequencies
    sin_p, cos_p = pe[p, 0::2], pe[p, 1::2]
    rotated_sin = sin_p * np.cos(k * w) + cos_p * np.sin(k * w)  # sin(a + b)
    rotated_cos = cos_p * np.cos(k * w) - sin_p * np.sin(k * w)  # cos(a + b)
    np.testing.assert_allclose(pe[p + k, 0::2], rotated_sin, atol=1e-9)
    np.testing.assert_allclose(pe[p + k, 1::2], rotated_cos, atol=1e-9)


def test_positions_are_distinct():
    pe = sinusoidal_positional_encoding(200, 16)
    distances = np.linalg.norm(pe[:, None, :] - pe[None, :, :], axis=-1)  # (T, T)
    np.fill_diagonal(distances, np.inf)
    assert distances.min() > 1e-3


def test_first_column_is_sin_of_the_position_and_frequencies_fall():
    pe = sinusoidal_positional_encoding(10, 8)
    np.testing.assert_allclose(pe[:, 0], np.sin(np.arange(10)), atol=1e-15)
    # later pairs turn slower: the number of sign changes in each sine column never increases
    flips = [(np.diff(np.sign(pe[:, c])) != 0).sum() for c in range(0, 8, 2)]
    assert flips == sorted(flips, reverse=True) and flips[0] > flips[-1]
