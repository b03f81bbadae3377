"""The exercises of 07_positional_encoding."""

import itertools

import numpy as np

from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close
from helpers.positional import apply_rotary, sinusoidal_positional_encoding

# --- exercise 1: sinusoidal_table. A table is three choices: which positions, how fast each pair turns, and where
# the sines and cosines go. A wrong answer is one wrong choice, or two: the check rebuilds the table for every
# combination and names each wrong part.

# how fast pair i turns, in radians per position: {the wrong parts: speeds(d_model) -> (d_model/2,) or (d_model,)}
_SPEEDS = {
    (): lambda d: 10000.0 ** (-np.arange(0, d, 2) / d),  # the right one: 10000^(-2i/d)
    ("inverted-frequencies",): lambda d: 10000.0 ** (np.arange(0, d, 2) / d),  # +2i/d: the pairs speed up
    ("pair-index",): lambda d: 10000.0 ** (-np.arange(d // 2) / d),  # i where 2i belongs
    ("pair-index", "inverted-frequencies"): lambda d: 10000.0 ** (np.arange(d // 2) / d),  # both
    ("integer-division",): lambda d: np.ones(d // 2),  # 2i // d = 0 for every pair: all turn at 1 rad
    ("per-column",): lambda d: 10000.0 ** (-np.arange(d) / d),  # column c with its own speed 10000^(-c/d)
}
_LAYOUTS = (None, "sin-cos-swapped", "sines-then-cosines")  # interleaved sin, cos (right); cos, sin; halves
_POSITIONS = (None, "ignores-positions")  # positions[t] (right); the row number t

_PARTS = {
    "inverted-frequencies": "the pairs speed up instead of slowing down: the exponent of 10000 is negative, "
                            "−2i/d_model, so that pair 0 turns by 1 radian per position and each pair after it "
                            "more slowly",
    "pair-index": "the exponent uses the pair number i where the pair's first column 2i belongs, so the speeds only "
                  "fall to about 1/100 radian per position (10000^(−1/2)) instead of about 1/10000",
    "integer-division": "every pair turns by exactly 1 radian per position: your exponent 2i/d_model came out 0 for "
                        "every pair, which is what whole-number division (rounding down) gives; it is a fraction "
                        "between 0 and 1",
    "per-column": "the two columns of a pair turn at one speed, pair i's 10000^(−2i/d_model); your cosine column 2i+1 "
                  "used a speed of its own, 10000^(−(2i+1)/d_model)",
    "sin-cos-swapped": "sines and cosines are swapped: the even columns (0, 2, 4, …) hold the sines, the odd ones "
                       "(1, 3, 5, …) the cosines",
    "sines-then-cosines": "all the sines come first, then all the cosines: they alternate, the sine of pair i in "
                          "column 2i and its cosine in column 2i+1",
    "ignores-positions": "row t encodes position t, the row number: it must encode the t-th of the positions you "
                         "were given, which need not be 0, 1, 2, …",
}


def _table(positions, d_model, speed, layout):
    """The (T, d_model) table a learner gets with these positions, pair speeds and column layout."""
    speeds = _SPEEDS[speed](d_model)
    angles = positions[:, None] * speeds  # (T, 1) * (d/2,) -> (T, d/2); (T, d) for "per-column"
    if speed == ("per-column",):
        if layout is not None:  # a per-column speed with another layout is not a mistake anyone writes
            return None
        columns = np.arange(d_model)  # (d,)
        return np.where(columns % 2 == 0, np.sin(angles), np.cos(angles))  # (T, d)
    first, second = (np.cos, np.sin) if layout == "sin-cos-swapped" else (np.sin, np.cos)
    if layout == "sines-then-cosines":
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)  # (T, d/2) | (T, d/2) -> (T, d)
    table = np.empty((len(positions), d_model))
    table[:, 0::2], table[:, 1::2] = first(angles), second(angles)  # (T, d/2) each
    return table


def _table_mistakes(got, positions, d_model, expected, what):
    """Raise Mismatch naming each wrong choice when `got` is the table of one wrong combination."""
    combinations = sorted(itertools.product(_POSITIONS, _SPEEDS, _LAYOUTS),
                          key=lambda parts: len(parts[1]) + (parts[0] is not None) + (parts[2] is not None))
    for which_positions, speed, layout in combinations:  # the ones with a single wrong part first
        wrong = [*speed, *(part for part in (layout, which_positions) if part is not None)]
        used = np.arange(len(positions), dtype=float) if which_positions else positions
        variant = _table(used, d_model, speed, layout)
        if wrong and variant is not None and np.allclose(got, variant) and not np.allclose(variant, expected):
            described = "; and ".join(_PARTS[part] for part in wrong)
            raise Mismatch(f"{what}: {described}", wrong[0])


_RIGHT_ANGLES = "positions[:, None] * 10000 ** (-np.arange(0, d_model, 2) / d_model)"  # (T, d/2), as in a mistake


def _filled(angles, first="np.sin", second="np.cos", table="np.zeros((len(positions), d_model))"):
    """The source of a learner's sinusoidal_table that computes `angles` and writes `first`, `second` of them."""
    return (f"def sinusoidal_table(positions, d_model):\n    angles = {angles}\n    table = {table}\n"
            f"    table[:, 0::2] = {first}(angles)\n    table[:, 1::2] = {second}(angles)\n    return table\n")


@exercise(
    notebook="07_positional_encoding",
    hint="Pair i turns at the speed ω_i = 10000^(−2i/d_model) radians per position, so position p's angle in pair i "
         "is p·ω_i. Compute every angle at once, a (T, d_model/2) array, by broadcasting a column of positions "
         "against a row of speeds; the sines of the angles go in the even columns, their cosines in the odd ones.",
    hint2="The numbers 2i are the even numbers 0, 2, 4, … below d_model (np.arange can count in steps of 2); divide "
          "them by d_model and negate them to get the exponents. Give the positions a second axis of length 1, so "
          "that multiplying them by the d_model/2 speeds gives the (T, d_model/2) angles. Then start from a "
          "(T, d_model) table of zeros, write the sines into every second column starting at column 0, and the "
          "cosines into every second column starting at column 1.",
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
    mistakes={
        "inverted-frequencies": _filled("positions[:, None] * 10000 ** (np.arange(0, d_model, 2) / d_model)"),
        "pair-index": _filled("positions[:, None] * 10000 ** (-np.arange(d_model // 2) / d_model)"),
        "integer-division": _filled("positions[:, None] / 10000 ** (np.arange(0, d_model, 2) // d_model)"),
        "per-column": """
            def sinusoidal_table(positions, d_model):
                columns = np.arange(d_model)
                angles = positions[:, None] * 10000 ** (-columns / d_model)
                return np.where(columns % 2 == 0, np.sin(angles), np.cos(angles))
        """,
        "sin-cos-swapped": _filled(_RIGHT_ANGLES, first="np.cos", second="np.sin"),
        "sines-then-cosines": f"""
            def sinusoidal_table(positions, d_model):
                angles = {_RIGHT_ANGLES}
                return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
        """,
        "ignores-positions": _filled("np.arange(len(positions))[:, None]"
                                     " * 10000 ** (-np.arange(0, d_model, 2) / d_model)"),
        "transposed": """
            def sinusoidal_table(positions, d_model):
                angles = 10000 ** (-np.arange(0, d_model, 2) / d_model)[:, None] * positions
                table = np.zeros((d_model, len(positions)))
                table[0::2] = np.sin(angles)
                table[1::2] = np.cos(angles)
                return table
        """,
        "half-width": f"""
            def sinusoidal_table(positions, d_model):
                return np.sin({_RIGHT_ANGLES})
        """,
        "integer-table": _filled(_RIGHT_ANGLES, table="np.zeros((len(positions), d_model), dtype=positions.dtype)"),
    },
    forbid=("helpers.sinusoidal_positional_encoding", "helpers.positional.sinusoidal_positional_encoding"),
)
def sinusoidal_table(answer):
    # integer positions (as the notebook passes them), then float ones; never 0, 1, 2, ... in the first case
    for positions, d_model in ((np.array([0, 3, 7, 100, 2]), 8), (np.array([12.0, 5.0, 0.0, 40.0]), 16),
                               (np.array([511, 40]), 384)):
        what = f"sinusoidal_table(positions={positions.tolist()}, d_model={d_model})"
        expected = _table(positions.astype(float), d_model, (), None)  # (T, d_model)
        got = as_array(call(answer, positions, d_model), what)
        if got.shape == (len(positions), d_model // 2):
            raise Mismatch(f"{what} has shape {got.shape}, one column per pair: the table has d_model columns, "
                           "the sine of each pair's angle and then its cosine", "half-width")
        if got.shape == expected.shape[::-1] and len(positions) != d_model and np.allclose(got.T, expected):
            raise Mismatch(f"{what} has shape {got.shape}, (d_model, T): one row per dimension; the table has one "
                           "row per position and one column per dimension, (T, d_model)", "transposed")
        if got.shape == expected.shape and got.dtype.kind in "iub":
            raise Mismatch(f"{what} holds whole numbers (dtype {got.dtype}): your table took the positions' integer "
                           "type, so every sine and cosine written into it was cut to 0, 1 or −1; make a table of "
                           "floats", "integer-table")
        if got.shape == expected.shape and not np.iscomplexobj(got):
            _table_mistakes(got, positions.astype(float), d_model, expected, what)
        expect_close(got, expected, what)


# --- exercise 2: added_length(x_length, d_model), predicted, then measured by the check

# plausible wrong predictions: {code: (prediction(x_length, d_model), what it says)}
_LENGTH_MISTAKES = {
    "added-lengths": (lambda x, d: x + np.sqrt(d / 2),
                      "you added the two lengths, as for two vectors pointing the same way; these two are nearly "
                      "orthogonal, so their squared lengths add (Pythagoras)"),
    "no-square-root": (lambda x, d: x**2 + d / 2,
                       "that is the squared length of x + PE_p; the length is its square root"),
    "full-width": (lambda x, d: np.sqrt(x**2 + d),
                   "you gave the encoding a squared length of d_model; a row has d_model/2 pairs (sin, cos), each "
                   "of length 1 (sin² + cos² = 1), so its squared length is d_model/2"),
    "unsquared-length": (lambda x, d: np.sqrt(x + d / 2),
                         "you added x's length to the encoding's squared length: square x's length too"),
    "encoding-only": (lambda x, d: np.sqrt(d / 2),
                      "that is the length of the encoding alone: the token vector's length counts too"),
}


def _measured_length(x_length, d_model, rng):
    """The mean length of x + PE_p over 400 random directions x of length x_length and 10 positions p."""
    PE = sinusoidal_positional_encoding(50, d_model)  # (50, d_model)
    x = rng.normal(size=(400, d_model))  # (400, d): random directions ...
    x *= x_length / np.linalg.norm(x, axis=1, keepdims=True)  # ... of length x_length
    sums = x[:, None, :] + PE[None, ::5, :]  # (400, 1, d) + (1, 10, d) -> (400, 10, d)
    return float(np.linalg.norm(sums, axis=-1).mean())


def _one_number(got, what):
    """The learner's prediction as a float, or Mismatch saying what came back instead."""
    predicted = as_array(got, what)
    if predicted.size != 1:
        raise Mismatch(f"{what} should be one number, got an array of shape {predicted.shape}", "wrong-shape")
    if np.iscomplexobj(predicted) or not np.issubdtype(predicted.dtype, np.number):
        raise Mismatch(f"{what} should be one real number, got {predicted.dtype}", "not-an-array")
    return float(predicted.reshape(()))


@exercise(
    notebook="07_positional_encoding",
    hint="Each pair (sin, cos) of an encoding has length 1, so a whole row has squared length d_model/2. In many "
         "dimensions a random direction is nearly orthogonal to any fixed vector, and for orthogonal vectors the "
         "squared lengths add (Pythagoras).",
    hint2="Picture a right triangle whose two short sides are the token vector and the encoding: the sum x + PE_p is "
          "its long side. Square the token vector's length, add the encoding's squared length (the number of "
          "pairs), and take the square root of the total.",
    solution="""
        def added_length(x_length, d_model):
            return np.sqrt(x_length**2 + d_model / 2)
    """,
    mistakes={code: f"def added_length(x_length, d_model):\n    return {source}\n" for code, source in (
        ("added-lengths", "x_length + np.sqrt(d_model / 2)"),
        ("no-square-root", "x_length**2 + d_model / 2"),
        ("full-width", "np.sqrt(x_length**2 + d_model)"),
        ("unsquared-length", "np.sqrt(x_length + d_model / 2)"),
        ("encoding-only", "np.sqrt(d_model / 2)"),
    )},
)
def added_length(answer):
    rng = check_rng()
    for x_length, d_model in ((1.0, 384), (20.0, 384), (1.0, 16), (5.0, 64)):
        measured = _measured_length(x_length, d_model, rng)  # the check measures what you predict
        what = f"added_length({x_length}, {d_model})"
        predicted = _one_number(call(answer, x_length, d_model), what)
        if np.isclose(predicted, measured, rtol=0.03):
            continue  # within the noise of 4,000 random sums
        for code, (prediction, says) in _LENGTH_MISTAKES.items():
            if np.isclose(predicted, prediction(x_length, d_model), rtol=1e-6):
                raise Mismatch(f"{what} gave {predicted:.4g}: {says}. Measured over 400 random vectors: "
                               f"{measured:.4g}", code)
        raise Mismatch(f"{what}: you predicted {predicted:.4g}, but 400 random vectors of length {x_length} plus "
                       f"encodings measure {measured:.4g}", "wrong-values")


# --- exercise 3: rotate_pair(pair, position, theta)


def _turned(pair, angle):
    """`pair` turned counter-clockwise by `angle` radians (the workshop's rotation), (2,)."""
    return apply_rotary(pair[None], [angle])[0]  # one pair, one position: turned by exactly that angle


_NEW_A, _NEW_B = "a * np.cos(angle) - b * np.sin(angle)", "a * np.sin(angle) + b * np.cos(angle)"  # as learners write


def _rotation(angle, first=_NEW_A, second=_NEW_B):
    """The source of a learner's rotate_pair that turns by `angle` and returns (`first`, `second`)."""
    return (f"def rotate_pair(pair, position, theta):\n    a, b = pair\n    angle = {angle}\n"
            f"    return np.array([{first}, {second}])\n")


@exercise(
    notebook="07_positional_encoding",
    hint="The pair is a point (a, b) in the plane. Turning it counter-clockwise by the angle position·theta is the "
         "2 × 2 rotation matrix of section 4 applied to it: cosines on the diagonal, and the sine with a minus "
         "sign in the top row.",
    hint2="First the angle: the position times theta, in radians (numpy's sin and cos take radians, and theta is "
          "given in radians). The new first coordinate is a times the angle's cosine minus b times its sine; the "
          "new second coordinate is a times its sine plus b times its cosine. Return the two as one array.",
    solution="""
        def rotate_pair(pair, position, theta):
            a, b = pair
            angle = position * theta
            return np.array([a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)])
    """,
    mistakes={
        "clockwise": _rotation("position * theta", "a * np.cos(angle) + b * np.sin(angle)",
                               "-a * np.sin(angle) + b * np.cos(angle)"),
        "theta-only": _rotation("theta"),
        "degrees": _rotation("np.radians(position * theta)"),
        "coordinates-swapped": _rotation("position * theta", _NEW_B, _NEW_A),
    },
    forbid=("helpers.positional.apply_rotary",),
)
def rotate_pair(answer):
    for pair, position, theta in (((1.0, 0.0), 1, 1.0), ((0.3, -2.0), 7, 0.1), ((2.0, 1.0), 0, 1.0),
                                  ((-1.0, 0.5), 3, 0.01)):
        pair = np.array(pair)
        what = f"rotate_pair({pair.tolist()}, position={position}, theta={theta})"
        angle = position * theta
        expected = _turned(pair, angle)
        got = as_array(call(answer, pair, position, theta), what)
        if got.shape == (2,) and not np.iscomplexobj(got) and not np.allclose(got, expected):
            if np.allclose(got, _turned(pair, -angle)):
                raise Mismatch(f"{what} turned the pair clockwise, by −{angle:g} rad: RoPE turns it "
                               "counter-clockwise, so the minus sign goes with the sine in the new first coordinate",
                               "clockwise")
            if np.allclose(got, _turned(pair, theta)):
                raise Mismatch(f"{what} turned the pair by theta, {theta:g} rad, whatever the position: the angle is "
                               f"the position times theta, here {angle:g} rad", "theta-only")
            if np.allclose(got, _turned(pair, np.radians(angle))):
                raise Mismatch(f"{what} read the angle {angle:g} as degrees: theta is already in radians, as "
                               "numpy's sin and cos take them, so no conversion is needed", "degrees")
            if np.allclose(got[::-1], expected):
                raise Mismatch(f"{what} has the right two numbers in the wrong order: the first is the new a, "
                               "a cos − b sin, the second the new b, a sin + b cos", "coordinates-swapped")
        expect_close(got, expected, what)
