"""helpers.positional: the sinusoidal table and RoPE against loops and closed forms, their offset
properties, bad inputs, and the pretrained model's learned position table."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import sinusoidal_positional_encoding
from helpers.positional import apply_rotary, learned_position_table, rotary_angles
from helpers.pretrained import load_tensors

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


@FAST
@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 30), st.integers(1, 12).map(lambda n: 2 * n))
def test_the_dot_product_of_two_positions_depends_only_on_their_offset(p, q, k, d_model):
    # PE[p] . PE[p + k] = sum_i cos(k w_i): the same for every p
    pe = sinusoidal_positional_encoding(max(p, q) + k + 1, d_model)
    w = 1 / 10000 ** (np.arange(0, d_model, 2) / d_model)  # (d/2,)
    assert abs(pe[p] @ pe[p + k] - pe[q] @ pe[q + k]) < 1e-12 * d_model
    assert abs(pe[p] @ pe[p + k] - np.cos(k * w).sum()) < 1e-12 * d_model


def test_the_offset_curve_falls_from_its_peak_at_zero():
    pe = sinusoidal_positional_encoding(200, 64)
    curve = pe[50] @ pe[50:].T  # (150,): offsets 0..149
    assert curve[0] == pytest.approx(32) and (curve[1:] < curve[0] - 0.1).all()
    assert curve[1] > curve[10] > curve[100]  # nearby positions are more alike than far ones


# ---------------------------------------------------------------------------------------
# rotary position embedding (RoPE)
# ---------------------------------------------------------------------------------------


def rotary_by_loop(x, positions, base=10000):
    """Rotate each pair (2i, 2i+1) of each row of x (T, d) by positions[t] * base^(-2i/d), with math.cos/sin."""
    out = np.zeros_like(x)
    T, d = x.shape
    for t in range(T):
        for i in range(d // 2):
            angle = positions[t] * base ** (-2 * i / d)
            a, b = x[t, 2 * i], x[t, 2 * i + 1]
            out[t, 2 * i] = a * math.cos(angle) - b * math.sin(angle)
            out[t, 2 * i + 1] = a * math.sin(angle) + b * math.cos(angle)
    return out


EVEN = st.integers(1, 8).map(lambda n: 2 * n)


@FAST
@given(st.integers(1, 12), EVEN, st.integers(0, 2**32 - 1))
def test_rotary_equals_the_loop(T, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(T, d))
    positions = rng.integers(-50, 500, T)
    np.testing.assert_allclose(apply_rotary(x, positions), rotary_by_loop(x, positions), rtol=0, atol=1e-12)
    np.testing.assert_allclose(apply_rotary(x), rotary_by_loop(x, range(T)), rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        apply_rotary(x, positions, base=100), rotary_by_loop(x, positions, base=100), rtol=0, atol=1e-12
    )


def test_rotary_by_hand():
    x = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 2.0]])  # (3, 4)
    out = apply_rotary(x)  # frequencies 1 and 10000^(-2/4) = 0.01
    expected = [
        [1, 0, 1, 0],  # position 0: no rotation
        [math.cos(1), math.sin(1), math.cos(0.01), math.sin(0.01)],  # (1, 0) turned by 1 and 0.01 rad
        [-2 * math.sin(2), 2 * math.cos(2), -2 * math.sin(0.02), 2 * math.cos(0.02)],
    ]  # (0, 2) by 2, 0.02
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-15)


@FAST
@given(st.integers(0, 300), st.integers(0, 300), st.integers(-300, 300), EVEN, st.integers(0, 2**32 - 1))
def test_rotary_q_dot_k_depends_only_on_the_offset(m, n, shift, d, seed):
    # (R_m q) . (R_n k) = q . R_(n-m) k: shifting both positions by the same amount changes nothing
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(1, d)), rng.normal(size=(1, d))
    score = (apply_rotary(q, [m]) @ apply_rotary(k, [n]).T).item()
    shifted = (apply_rotary(q, [m + shift]) @ apply_rotary(k, [n + shift]).T).item()
    relative = (q @ apply_rotary(k, [n - m]).T).item()  # q at position 0, k at the offset
    scale = np.linalg.norm(q) * np.linalg.norm(k)
    assert abs(score - shifted) < 1e-12 * scale
    assert abs(score - relative) < 1e-12 * scale


def test_rotary_scores_are_constant_along_each_diagonal(rng):
    T, d = 40, 16
    q, k = rng.normal(size=d), rng.normal(size=d)
    Q = apply_rotary(np.tile(q, (T, 1)))  # the same content at every position, rotated: (T, d)
    K = apply_rotary(np.tile(k, (T, 1)))  # (T, d)
    scores = Q @ K.T  # (T, T): scores[m, n] depends only on n - m, a Toeplitz matrix
    for offset in range(-T + 1, T):
        diagonal = np.diagonal(scores, offset)
        assert np.ptp(diagonal) < 1e-12 * np.abs(scores).max()
    assert np.ptp(scores) > 1  # but different offsets differ


@FAST
@given(st.integers(1, 10), EVEN, st.integers(0, 2**32 - 1))
def test_rotary_preserves_norms_and_undoes_with_minus_the_positions(T, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, T, d))
    positions = rng.normal(0, 100, T)
    y = apply_rotary(x, positions)
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-13)
    np.testing.assert_allclose(apply_rotary(y, -positions), x, rtol=0, atol=1e-12)
    # the transpose is the inverse: <R x, z> = <x, R^T z> with R^T = rotation by -positions
    z = rng.normal(size=x.shape)
    assert np.sum(y * z) == pytest.approx(np.sum(x * apply_rotary(z, -positions)), rel=1e-12, abs=1e-12)


def test_rotary_batches_and_per_sequence_positions(rng):
    x = rng.normal(size=(3, 2, 5, 6))  # (B, h, T, d)
    out = apply_rotary(x)
    for b in range(3):
        for h in range(2):
            np.testing.assert_allclose(out[b, h], rotary_by_loop(x[b, h], range(5)), atol=1e-12)
    positions = rng.integers(0, 100, (3, 1, 5))  # each sequence its own positions, shared by the heads
    out = apply_rotary(x, positions)
    np.testing.assert_allclose(out[2, 1], rotary_by_loop(x[2, 1], positions[2, 0]), atol=1e-12)


def test_rotary_keeps_the_dtype_and_leaves_x_alone(rng):
    x32 = rng.normal(size=(4, 8)).astype(np.float32)
    before = x32.copy()
    out = apply_rotary(x32)
    assert out.dtype == np.float32 and out.shape == (4, 8)
    np.testing.assert_array_equal(x32, before)
    np.testing.assert_allclose(out, apply_rotary(x32.astype(np.float64)), rtol=0, atol=1e-6)
    assert apply_rotary(np.ones((2, 4), dtype=int)).dtype == np.float64


def test_rotary_position_zero_changes_nothing(rng):
    x = rng.normal(size=(1, 8))
    np.testing.assert_array_equal(apply_rotary(x), x)


@pytest.mark.parametrize("d", [1, 3, 7])
def test_rotary_odd_d_is_a_clear_error(d):
    with pytest.raises(ValueError, match=rf"d must be even.*\(4, {d}\)"):
        apply_rotary(np.ones((4, d)))


@pytest.mark.parametrize(
    ("x", "kwargs", "error", "match"),
    [
        (np.ones(4), {}, ValueError, r"x must have at least 2 dimension"),
        ("abcd", {}, TypeError, r"x must be an array of numbers"),
        (np.ones((3, 4)), {"positions": np.arange(4)}, ValueError, r"positions with shape \(4,\).*\(3,\)"),
        (np.ones((3, 4)), {"positions": np.zeros((2, 3))}, ValueError, r"positions with shape \(2, 3\)"),
        (np.ones((3, 4)), {"positions": [0, np.nan, 1]}, ValueError, r"positions must be finite"),
        (np.ones((3, 4)), {"positions": ["a", "b", "c"]}, TypeError, r"positions must be an array of numbers"),
        (np.ones((3, 4)), {"base": 1}, ValueError, r"base must be a number > 1"),
        (np.ones((3, 4)), {"base": "10000"}, ValueError, r"base must be a number > 1"),
    ],
)
def test_rotary_bad_input(x, kwargs, error, match):
    with pytest.raises(error, match=match):
        apply_rotary(x, **kwargs)


def test_rotary_angles_are_a_geometric_series():
    angles = rotary_angles(np.array([1.0]), 8)  # (1, 4): the frequencies themselves
    np.testing.assert_allclose(angles[0], [1, 0.1, 0.01, 0.001], rtol=1e-12)


# ---------------------------------------------------------------------------------------
# the pretrained model's learned position table
# ---------------------------------------------------------------------------------------


def test_learned_table_is_the_models_and_a_private_copy():
    table = learned_position_table()
    assert table.shape == (512, 384) and table.dtype == np.float32
    np.testing.assert_array_equal(table, load_tensors()["embeddings.position_embeddings.weight"])
    table[0] = 0  # writable, and editing it leaves the cached weights alone
    assert np.abs(load_tensors()["embeddings.position_embeddings.weight"][0]).sum() > 0
    assert learned_position_table(np.float64).dtype == np.float64


def test_learned_table_nearby_positions_are_alike():
    table = learned_position_table(np.float64)
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)  # (512, 384)
    cosines = unit @ unit.T  # (512, 512)
    mean_at = {k: np.diagonal(cosines, k).mean() for k in (1, 100, 400)}
    assert mean_at[1] > 0.8 and mean_at[100] < 0.3 and mean_at[400] < 0
