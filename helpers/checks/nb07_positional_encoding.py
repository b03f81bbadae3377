"""The exercises of 07_positional_encoding."""

import functools
import itertools

import numpy as np

from helpers.checks._core import Mismatch, as_array, call, check_rng, edited, exercise, expect_close
from helpers.positional import sinusoidal_positional_encoding

# --- exercise 1: sinusoidal_table. A table is three choices: which positions, how fast each pair turns, where the
# sines and cosines go. The check rebuilds the table for every combination of choices and names each wrong one.

# how fast pair i turns, in radians per position: {the wrong parts: speeds(d_model) -> (d_model/2,) or (d_model,)}
_SPEEDS = {
    (): lambda d: 10000.0 ** (-np.arange(0, d, 2) / d),  # the right one: 10000^(-2i/d)
    ("inverted-frequencies",): lambda d: 10000.0 ** (np.arange(0, d, 2) / d),  # +2i/d: the pairs speed up
    ("pair-index",): lambda d: 10000.0 ** (-np.arange(d // 2) / d),  # i where 2i belongs
    ("pair-index", "inverted-frequencies"): lambda d: 10000.0 ** (np.arange(d // 2) / d),  # both
    ("integer-division",): lambda d: np.ones(d // 2),  # 2i // d = 0 for every pair: all turn at 1 rad
    ("rounded-exponent",): lambda d: 10000.0 ** (-np.arange(0, d, 2) // d),  # −2i // d = −1 after pair 0
    ("per-column",): lambda d: 10000.0 ** (-np.arange(d) / d),  # column c with its own speed 10000^(-c/d)
}
_LAYOUTS = (None, "sin-cos-swapped", "sines-then-cosines", "sines-twice")  # sin, cos (right); cos, sin; halves; sin
_POSITIONS = (None, "ignores-positions")  # positions[t] (right); the row number t
_PARTS = {
    "inverted-frequencies": "the pairs speed up instead of slowing down: pair i turns by 10000^(−2i/d_model) radians "
    "per position (the position times that, or divided by 10000^(2i/d_model)); you "
    "multiplied by the growing factor, or divided by the shrinking one",
    "pair-index": "the exponent uses the pair number i where the pair's first column 2i belongs, so the speeds only "
    "fall to about 1/100 radian per position (10000^(−1/2)) instead of about 1/10000",
    "integer-division": "every pair turns by exactly 1 radian per position: your exponent 2i/d_model came out 0, "
    "which whole-number division (rounding down) gives; it is a fraction between 0 and 1",
    "rounded-exponent": "the speeds jump from 1 radian per position (pair 0) to 1/10000 for all the others: your "
    "exponent −2i/d_model was rounded down to −1 (whole-number division); it is between 0 and −1",
    "per-column": "the two columns of a pair turn at one speed, pair i's 10000^(−2i/d_model); your cosine column 2i+1 "
    "used a speed of its own, 10000^(−(2i+1)/d_model)",
    "sin-cos-swapped": "sines and cosines are swapped: the even columns (0, 2, 4, …) hold the sines, the odd ones "
    "(1, 3, 5, …) the cosines",
    "sines-then-cosines": "all the sines come first, then all the cosines: they alternate, the sine of pair i in "
    "column 2i and its cosine in column 2i+1",
    "sines-twice": "the odd columns hold sines too: each pair is a sine and a cosine of the same angle, the sine in "
    "column 2i and the cosine in column 2i+1",
    "ignores-positions": "row t encodes position t, the row number: it must encode the t-th of the positions you "
    "were given, which need not be 0, 1, 2, …",
}


def _table(positions, d_model, speed, layout):
    """The (T, d_model) table a learner gets with these positions, pair speeds and column layout."""
    angles = positions[:, None] * _SPEEDS[speed](d_model)  # (T, 1) * (d/2,) -> (T, d/2); (T, d) for "per-column"
    if speed == ("per-column",):  # with another layout too, it is not a mistake anyone writes
        return None if layout else np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))  # (T, d)
    if layout == "sines-then-cosines":
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)  # (T, d/2) | (T, d/2) -> (T, d)
    first, second = {"sin-cos-swapped": (np.cos, np.sin), "sines-twice": (np.sin, np.sin)}.get(layout, (np.sin, np.cos))
    table = np.empty((len(positions), d_model))
    table[:, 0::2], table[:, 1::2] = first(angles), second(angles)  # (T, d/2) each
    return table


_COMBINATIONS = sorted(
    itertools.product(_POSITIONS, _SPEEDS, _LAYOUTS),  # every combination, one wrong choice first
    key=lambda parts: len(parts[1]) + (parts[0] is not None) + (parts[2] is not None),
)
_RIGHT_ANGLES = "positions[:, None] * 10000 ** (-np.arange(0, d_model, 2) / d_model)"  # (T, d/2), as in a mistake


def _source(*lines, angles=_RIGHT_ANGLES, first="np.sin", second="np.cos", table="np.zeros((len(positions), d_model))"):
    """A learner's sinusoidal_table: the body `lines`, or else one that writes `first`, `second` of the `angles`."""
    lines = lines or (
        f"angles = {angles}",
        f"table = {table}",
        f"table[:, 0::2] = {first}(angles)",
        f"table[:, 1::2] = {second}(angles)",
        "return table",
    )
    return "def sinusoidal_table(positions, d_model):\n" + "".join(f"    {line}\n" for line in lines)


@exercise(
    notebook="07_positional_encoding",
    hint="Think of each pair of columns as a clock hand turning at its own speed: the first pair fastest, one "
    "radian per position, each later pair more slowly, the last pair slowest (the speeds are the ones the text "
    "above gives). A row of the table says where every hand points at that row's position, as the sine and the "
    "cosine of its angle, and every (position, pair) combination has an angle of its own.",
    hint2=(
        "Check three entries by hand. Position 0 is sin 0 and cos 0 in every pair: 0, 1, 0, 1, … . Pair 0 "
        "turns fastest, one radian per position, so position 1 begins with sin 1 ≈ 0.841 and cos 1 ≈ 0.540. "
        "The last pair turns slowest, so its two columns hardly change down the table. If the first pair "
        "barely moves and the last spins, the speeds are upside down."
    ),
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
        "inverted-frequencies": _source(angles="positions[:, None] * 10000 ** (np.arange(0, d_model, 2) / d_model)"),
        "pair-index": _source(angles="positions[:, None] * 10000 ** (-np.arange(d_model // 2) / d_model)"),
        "integer-division": _source(angles="positions[:, None] / 10000 ** (np.arange(0, d_model, 2) // d_model)"),
        "rounded-exponent": _source(angles="positions[:, None] * 10000.0 ** (-np.arange(0, d_model, 2) // d_model)"),
        "per-column": _source(
            "columns = np.arange(d_model)",
            "angles = positions[:, None] * 10000 ** (-columns / d_model)",
            "return np.where(columns % 2 == 0, np.sin(angles), np.cos(angles))",
        ),
        "sin-cos-swapped": _source(first="np.cos", second="np.sin"),
        "sines-twice": _source(second="np.sin"),
        "sines-then-cosines": _source(
            f"angles = {_RIGHT_ANGLES}", "return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)"
        ),
        "stacked-pairs": _source(
            f"angles = {_RIGHT_ANGLES}", "return np.stack([np.sin(angles), np.cos(angles)], axis=-1)"
        ),
        "ignores-positions": _source(angles=_RIGHT_ANGLES.replace("positions", "np.arange(len(positions))", 1)),
        "transposed-angles": _source(angles="10000 ** (-np.arange(0, d_model, 2) / d_model)[:, None] * positions"),
        "integer-table": _source(table="np.zeros((len(positions), d_model), dtype=positions.dtype)"),
    },
    forbid=(
        "helpers.sinusoidal_positional_encoding",
        "helpers.positional.sinusoidal_positional_encoding",
        "helpers.positional.rotary_angles",
    ),  # rotary_angles computes the table's angles
)
def sinusoidal_table(answer):
    # integer positions (as the notebook passes them), then float ones; never 0, 1, 2, ... in the first case
    for positions, d_model in (
        (np.array([0, 3, 7, 100, 2]), 8),
        (np.array([12.0, 5.0, 0.0, 40.0]), 16),
        (np.array([511, 40]), 384),
    ):
        what = f"sinusoidal_table(positions={positions.tolist()}, d_model={d_model})"
        expected = _table(positions.astype(float), d_model, (), None)  # (T, d_model)
        T, pairs = len(positions), d_model // 2
        try:
            got = as_array(call(answer, positions, d_model), what)
        except ValueError as exc:  # angles built (pairs, T), then written into the table's (T, pairs) columns
            if f"fromshape({pairs},{T})intoshape({T},{pairs})" not in str(exc).replace(" ", ""):
                raise
            raise Mismatch(
                f"{what}: your angles came out ({pairs}, {T}), one row per pair, and could not be written "
                f"into the table's ({T}, {pairs}) sine columns: positions go down, pairs across",
                "transposed-angles",
            ) from None
        if got.shape == (T, pairs, 2) and np.allclose(got.reshape(expected.shape), expected):
            raise Mismatch(
                f"{what} has shape {got.shape}: each pair's sine and cosine on an axis of their own; the "
                "table is flat, (T, d_model), the last two axes joined so that pair i's sine and cosine "
                "sit side by side in columns 2i and 2i+1",
                "stacked-pairs",
            )
        if got.shape == expected.shape and got.dtype.kind in "iub":
            raise Mismatch(
                f"{what} holds whole numbers (dtype {got.dtype}): your table took the positions' integer "
                "type, so each sine and cosine written into it was cut to 0, 1 or −1",
                "integer-table",
            )
        for which_positions, speed, layout in _COMBINATIONS if got.shape == expected.shape else ():
            wrong = [*speed, *(part for part in (layout, which_positions) if part is not None)]
            variant = _table(
                np.arange(T, dtype=float) if which_positions else positions.astype(float), d_model, speed, layout
            )  # the table that this combination of choices gives
            if wrong and variant is not None and np.allclose(got, variant) and not np.allclose(variant, expected):
                raise Mismatch(f"{what}: {'; and '.join(_PARTS[part] for part in wrong)}", wrong[0])
        expect_close(got, expected, what)


# --- exercise 2: added_length(x_length, d_model), predicted, then measured by the check

# plausible wrong predictions: {code: (the prediction as a learner writes it, what the message says)}
_LENGTH_MISTAKES = {
    "added-lengths": (
        "x_length + np.sqrt(d_model / 2)",
        "you added the two lengths, as for two vectors pointing the "
        "same way; these two are nearly orthogonal, so their squared lengths add (Pythagoras)",
    ),
    "no-square-root": ("x_length**2 + d_model / 2", "that is the squared length; take its square root"),
    "full-width": (
        "np.sqrt(x_length**2 + d_model)",
        "you gave the encoding a squared length of d_model; a row has "
        "d_model/2 pairs (sin, cos), each of length 1 (sin² + cos² = 1): its squared length is d_model/2",
    ),
    "unit-encoding": (
        "np.sqrt(x_length**2 + 1)",
        "you gave the encoding a length of 1: each pair (sin, cos) has "
        "length 1, but a row has d_model/2 pairs, so its squared length is d_model/2",
    ),
    "pairs-squared": (
        "np.sqrt(x_length**2 + (d_model / 2) ** 2)",
        "you gave the encoding a length of d_model/2, "
        "the number of pairs: that is its squared length (1 per pair), so its length is √(d_model/2)",
    ),
    "unsquared-length": ("np.sqrt(x_length + d_model / 2)", "you added x's length to the encoding's squared length"),
    "encoding-only": ("np.sqrt(d_model / 2)", "that is the encoding's length alone: the token vector counts too"),
}


def _measured_length(x_length, d_model, rng):
    """The mean length of x + PE_p over 400 random directions x of length x_length and 10 positions p."""
    x = rng.normal(size=(400, 1, d_model))  # (400, 1, d): random directions ...
    x *= x_length / np.linalg.norm(x, axis=-1, keepdims=True)  # ... of length x_length
    sums = x + sinusoidal_positional_encoding(50, d_model)[::5]  # (400, 1, d) + (10, d) -> (400, 10, d)
    return float(np.linalg.norm(sums, axis=-1).mean())


def _one_number(got, what):
    """The learner's result as a float, or Mismatch saying what came back instead."""
    predicted = as_array(got, what)
    if predicted.size != 1 or predicted.dtype.kind not in "iuf":
        raise Mismatch(
            f"{what} should be one real number, got {predicted.dtype} of shape {predicted.shape}", "wrong-shape"
        )
    return float(predicted.reshape(()))


@exercise(
    notebook="07_positional_encoding",
    hint="Each pair (sin, cos) of an encoding has length 1, so a whole row has squared length d_model/2. In many "
    "dimensions a random direction is nearly orthogonal to any fixed vector, and for orthogonal vectors the "
    "squared lengths add (Pythagoras).",
    hint2="Test your formula on two cases you can work out in your head. A token vector of length 0 adds nothing, so "
    "you must get the encoding's own length, √(d_model/2), 13.9 for d_model = 384. A very long token vector, "
    "say of length 1,000, hardly notices the encoding, so you must get very nearly 1,000.",
    solution="""
        def added_length(x_length, d_model):
            return np.sqrt(x_length**2 + d_model / 2)
    """,
    mistakes={
        code: f"def added_length(x_length, d_model):\n    return {formula}\n"
        for code, (formula, _) in _LENGTH_MISTAKES.items()
    },
)
def added_length(answer):
    rng = check_rng()
    for x_length, d_model in ((1.0, 384), (20.0, 384), (1.0, 16), (5.0, 64)):
        measured = _measured_length(x_length, d_model, rng)  # the check measures what you predict
        what = f"added_length({x_length}, {d_model})"
        predicted = _one_number(call(answer, x_length, d_model), what)
        if np.isclose(predicted, measured, rtol=0.03):
            continue  # within the noise of 4,000 random sums
        for code, (formula, says) in _LENGTH_MISTAKES.items():  # our own formulas, evaluated at these inputs
            if np.isclose(predicted, eval(formula, {"np": np, "x_length": x_length, "d_model": d_model}), rtol=1e-6):
                raise Mismatch(
                    f"{what} gave {predicted:.4g}: {says}. Measured over 400 random vectors: {measured:.4g}", code
                )
        raise Mismatch(
            f"{what}: you predicted {predicted:.4g}, but 400 random vectors of length {x_length} plus "
            f"encodings measure {measured:.4g}",
            "wrong-values",
        )


# --- exercise 3: score_from_offset(q_pair, k_pair, offset, theta): RoPE's score from the offset n − m alone


def _turn(angle, signs=(1, -1, 1, 1), swapped=False):
    """A turn a learner may write, (2, 2): [[±cos, ±sin], [±sin, ±cos]] (1, −1, 1, 1: the rotation), or swapped."""
    c, s = np.cos(angle), np.sin(angle)
    return (np.array(signs) * ((s, c, c, s) if swapped else (c, s, s, c))).reshape(2, 2)


def _wrong_turns():
    """(code, turn(angle) -> (2, 2)) of each wrong turn of the key that the check names."""
    yield "unturned", lambda angle: np.eye(2)  # no turn, or both pairs turned alike
    yield "wrong-direction", lambda angle: _turn(-angle)  # the key clockwise, or the query instead of the key
    yield "in-place", lambda angle: np.stack([_turn(angle)[0], np.sin(angle) * _turn(angle)[0] + [0, np.cos(angle)]])
    for signs in itertools.product((1, -1), repeat=4):  # (in place: the new b computed from the new a, above)
        yield "cosines-off-diagonal", functools.partial(_turn, signs=signs, swapped=True)
        turn = _turn(1.0, signs)
        if not (np.allclose(turn @ turn.T, np.eye(2)) and np.linalg.det(turn) > 0):  # rotations by other angles aside
            yield "not-a-rotation", functools.partial(_turn, signs=signs)


_TURN_SAYS = {  # what each wrong turn of the key did
    "unturned": "that is q·k, the score at offset 0, whatever the offset: the key was not turned relative to the "
    "query (turning both pairs by the same angle changes no dot product)",
    "wrong-direction": "that is the score at the opposite offset, {minus}: the key turns counter-clockwise by the "
    "offset times θ; turning the query by that angle instead, or the key clockwise, reverses it",
    "in-place": "your turned key's second coordinate was computed from its already-turned first coordinate; both "
    "new coordinates come from the key's original two numbers",
    "not-a-rotation": "your turn of the key is not a rotation: it {does}, where a rotation keeps both the length "
    "and the orientation (the cosine in both diagonal places, the two sines of opposite signs)",
    "cosines-off-diagonal": "your turn of the key has its sines and cosines in each other's places (or its two new "
    "coordinates): turned by 0, a key (a, b) must stay (a, b); yours would become (±b, ±a)",
}
_SCORE_CASES = [
    (np.array(q), np.array(k), offset, theta)
    for q, k, offset, theta in (  # general pairs and angles:
        ((0.6, -1.1), (2.0, 0.7), 3, 0.4),
        ((1.5, 0.5), (-0.4, 1.3), -2, 1.0),
        ((-0.8, 0.3), (1.0, -2.0), 7, 0.01),
    )
]
_TURNED = "[a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)]"
_SCORE_SOLUTION = f"""
def score_from_offset(q_pair, k_pair, offset, theta):
    a, b = k_pair
    angle = offset * theta  # the key turns by (n - m) * theta relative to the query
    k_turned = np.array({_TURNED})
    return np.dot(q_pair, k_turned)  # one number: q . R_(n-m) k
"""


@exercise(
    notebook="07_positional_encoding",
    hint="By section 4 the score of a query at position m and a key at position n is q·R_{n−m}k: the query as it "
    "is, dotted with the key turned counter-clockwise by the angle (n − m)θ. So one turn is enough, of the "
    "key, by the offset times θ; then a dot product.",
    hint2="The turn is the 2 × 2 rotation that rotate_loop applies to each pair, cosines on the diagonal. Check it "
    "before the dot product: the key (1, 0) turned by a quarter turn (offset·θ = π/2) must land on (0, 1), "
    "and a turn never changes the key's length. The score is one number: the query's first coordinate times "
    "the turned key's first, plus the same for the second.",
    solution=_SCORE_SOLUTION,
    mistakes={
        "wrong-direction": edited(
            _SCORE_SOLUTION,
            ("a, b = k_pair", "a, b = q_pair"),
            ("np.dot(q_pair, k_turned)", "np.dot(k_turned, k_pair)"),
        ),
        "unturned": edited(
            _SCORE_SOLUTION,
            (
                "return np.dot(q_pair, k_turned)",  # both turned by the offset
                f"a, b = q_pair\n    return np.dot(np.array({_TURNED}), k_turned)",
            ),
        ),
        "in-place": edited(
            _SCORE_SOLUTION,
            (
                f"k_turned = np.array({_TURNED})",
                "k_turned = np.array([a, b], "
                "dtype=float)\n    k_turned[0] = a * np.cos(angle) - b * np.sin(angle)"
                "\n    k_turned[1] = k_turned[0] * np.sin(angle) + b * np.cos(angle)",
            ),
        ),
        "not-a-rotation": edited(_SCORE_SOLUTION, ("a * np.sin(angle) + b", "-a * np.sin(angle) + b")),
        "cosines-off-diagonal": edited(
            _SCORE_SOLUTION, (_TURNED, "[a * np.sin(angle) + b * np.cos(angle), a * np.cos(angle) - b * np.sin(angle)]")
        ),
    },
    forbid=("helpers.positional.apply_rotary",),
)
def score_from_offset(answer):
    cases = []  # (what, q, k, angle, the learner's score, the right one, offset): no two turns agree on all three
    for q, k, offset, theta in _SCORE_CASES:
        what = f"score_from_offset(q={q.tolist()}, k={k.tolist()}, offset={offset}, theta={theta})"
        right = float((_turn(5 * theta) @ q) @ (_turn((5 + offset) * theta) @ k))  # q at position 5, k at 5 + offset
        got = _one_number(call(answer, q, k, offset, theta), what)
        cases.append((what, q, k, offset * theta, got, right, offset))
    wrong = [case for case in cases if not np.isclose(case[4], case[5], rtol=1e-6, atol=1e-9)]
    if not wrong:
        return
    what, q, k, angle, got, right, offset = wrong[0]
    for code, turn in _wrong_turns():  # a mistake is named only when it explains every case
        if all(np.isclose(c[4], c[1] @ turn(c[3]) @ c[2], rtol=1e-6, atol=1e-9) for c in cases):
            length, turned = np.linalg.norm(k), np.linalg.norm(turn(angle) @ k)  # the learner's key's length
            does = (
                f"changes the key's length from {length:.3g} to {turned:.3g}"
                if not np.isclose(length, turned)
                else "mirrors the key (keeping its length)"
            )
            raise Mismatch(
                f"{what} gave {got:.4g}: {_TURN_SAYS[code].format(minus=-offset, does=does)}. With the "
                f"query at position 5 and the key at {5 + offset}, both turned, the score is {right:.4g}",
                code,
            )
    expect_close(got, right, what)
