"""The exercises of 07_positional_encoding."""

import numpy as np

from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close
from helpers.positional import apply_rotary, sinusoidal_positional_encoding


def _table_variants(positions, d_model):
    """Common wrong tables for `positions`, each named by what went wrong: {message: (T, d_model)}."""
    pairs = np.arange(0, d_model, 2)  # (d/2,): 2i, the even column of each pair
    angles = positions[:, None] * 10000.0 ** (-pairs / d_model)  # (T, d/2)
    by_pair_index = positions[:, None] * 10000.0 ** (-(pairs // 2) / d_model)  # exponent i/d instead of 2i/d
    columns = np.arange(d_model)  # each column with its own speed 10000^(-c/d)
    per_column = positions[:, None] * 10000.0 ** (-columns / d_model)  # (T, d)
    variants = {}
    swapped = np.empty((len(positions), d_model))
    swapped[:, 0::2], swapped[:, 1::2] = np.cos(angles), np.sin(angles)
    variants["sines and cosines are swapped: even columns (0, 2, ...) hold sin(p w_i), odd ones cos(p w_i)"] = swapped
    half = np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
    variants["all the sines come first, then all the cosines: interleave them, sin in column 2i and cos in "
             "column 2i+1"] = half
    slow = np.empty((len(positions), d_model))
    slow[:, 0::2], slow[:, 1::2] = np.sin(by_pair_index), np.cos(by_pair_index)
    variants["pair i's speed is 10000^(-2i/d_model): the exponent uses 2i, the pair's even column, "
             "not the pair number i"] = slow
    own_speed = np.where(columns % 2 == 0, np.sin(per_column), np.cos(per_column))
    variants["both columns of a pair turn at one speed, 10000^(-2i/d_model); here the cosine column "
             "used its own index 2i+1"] = own_speed
    return variants


@exercise(
    notebook="07_positional_encoding",
    hint="angles = positions[:, None] * 10000.0 ** (-np.arange(0, d_model, 2) / d_model) is (T, d_model/2); "
         "fill a (T, d_model) array with np.sin(angles) in the even columns [:, 0::2] and np.cos(angles) "
         "in the odd ones [:, 1::2].",
    solution="""
        def sinusoidal_table(positions, d_model):
            positions = np.asarray(positions, dtype=float)  # (T,)
            omegas = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)  # (d_model/2,)
            angles = positions[:, None] * omegas  # (T, 1) * (d/2,) -> (T, d/2)
            table = np.zeros((len(positions), d_model))
            table[:, 0::2] = np.sin(angles)  # even columns
            table[:, 1::2] = np.cos(angles)  # odd columns
            return table
    """,
    wrong="""
        def sinusoidal_table(positions, d_model):
            positions = np.asarray(positions, dtype=float)
            omegas = 10000.0 ** (-np.arange(d_model // 2) / d_model)
            angles = positions[:, None] * omegas
            table = np.zeros((len(positions), d_model))
            table[:, 0::2] = np.sin(angles)
            table[:, 1::2] = np.cos(angles)
            return table
    """,
    forbid=("helpers.sinusoidal_positional_encoding", "helpers.positional.sinusoidal_positional_encoding"),
)
def sinusoidal_table(answer):
    for positions, d_model in (([0, 3, 7, 100, 2], 8), (list(range(6)), 16), ([511, 40], 384)):
        positions = np.array(positions)
        expected = sinusoidal_positional_encoding(positions.max() + 1, d_model)[positions]  # rows of the helper's table
        what = f"sinusoidal_table(positions={positions.tolist()}, d_model={d_model})"
        got = as_array(call(answer, positions, d_model), what)
        if got.shape == (len(positions), d_model // 2):
            raise Mismatch(f"{what} has shape {got.shape}: return all d_model columns, a sine and a cosine per pair")
        if got.shape == expected.shape:
            ordered = sinusoidal_positional_encoding(len(positions), d_model)
            if not np.array_equal(positions, np.arange(len(positions))) and np.allclose(got, ordered):
                raise Mismatch(f"{what}: row t must encode position positions[t], not t")
            for message, variant in _table_variants(positions.astype(float), d_model).items():
                if np.allclose(got, variant) and not np.allclose(variant, expected):
                    raise Mismatch(f"{what}: {message}")
        expect_close(got, expected, what)


@exercise(
    notebook="07_positional_encoding",
    hint="Every pair (sin, cos) has length 1, so a row of the table has squared length d_model / 2. A random "
         "direction is nearly orthogonal to it in many dimensions, and for orthogonal vectors the squared "
         "lengths add (Pythagoras).",
    solution="""
        def added_length(x_length, d_model):
            return np.sqrt(x_length**2 + d_model / 2)
    """,
    wrong="""
        def added_length(x_length, d_model):
            return x_length + np.sqrt(d_model / 2)
    """,
)
def added_length(answer):
    rng = check_rng()
    for x_length, d_model in ((1.0, 384), (20.0, 384), (1.0, 16), (5.0, 64)):
        PE = sinusoidal_positional_encoding(50, d_model)  # (50, d_model)
        x = rng.normal(size=(400, d_model))  # (400, d): random directions ...
        x *= x_length / np.linalg.norm(x, axis=1, keepdims=True)  # ... of length x_length
        sums = x[:, None, :] + PE[None, ::5, :]  # (400, 1, d) + (1, 10, d) -> (400, 10, d)
        measured = float(np.linalg.norm(sums, axis=-1).mean())  # the check measures what you predict
        predicted = as_array(call(answer, x_length, d_model), "your prediction")
        if predicted.shape != ():
            raise Mismatch(f"return one number, got an array of shape {predicted.shape}")
        if np.isclose(float(predicted), x_length + np.sqrt(d_model / 2), rtol=1e-6):
            raise Mismatch(f"for x_length={x_length}, d_model={d_model} you added the two lengths "
                           f"({float(predicted):.4g}), but the vectors are nearly orthogonal: measured {measured:.4g}")
        if not np.isclose(float(predicted), measured, rtol=0.03):
            raise Mismatch(f"for x_length={x_length}, d_model={d_model} you predicted {float(predicted):.4g}, "
                           f"but 400 random vectors plus encodings measure {measured:.4g}")


@exercise(
    notebook="07_positional_encoding",
    hint="With angle = position * theta: a' = a cos(angle) - b sin(angle), b' = a sin(angle) + b cos(angle).",
    solution="""
        def rotate_pair(pair, position, theta):
            a, b = pair
            angle = position * theta
            return np.array([a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)])
    """,
    wrong="""
        def rotate_pair(pair, position, theta):
            a, b = pair
            angle = position * theta
            return np.array([a * np.cos(angle) + b * np.sin(angle), -a * np.sin(angle) + b * np.cos(angle)])
    """,
    forbid=("helpers.positional.apply_rotary",),
)
def rotate_pair(answer):
    for pair, position, theta in (((1.0, 0.0), 1, 1.0), ((0.3, -2.0), 7, 0.1), ((2.0, 1.0), 0, 1.0),
                                  ((-1.0, 0.5), 3, 0.01)):
        pair = np.array(pair)
        what = f"rotate_pair({pair.tolist()}, position={position}, theta={theta})"
        expected = apply_rotary(pair[None], [position * theta])[0]  # one pair: turned by exactly that angle
        got = as_array(call(answer, pair, position, theta), what)
        if got.shape == (2,) and position * theta != 0:
            if np.allclose(got, apply_rotary(pair[None], [-position * theta])[0]):
                raise Mismatch(f"{what} turned the pair clockwise: the angle goes the other way "
                               f"(a' = a cos - b sin, b' = a sin + b cos)")
            if position != 1 and np.allclose(got, apply_rotary(pair[None], [theta])[0]):
                raise Mismatch(f"{what} turned the pair by theta; the angle is position * theta")
        expect_close(got, expected, what)
