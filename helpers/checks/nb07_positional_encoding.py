"""The exercises of 07_positional_encoding."""

import functools
import itertools

import numpy as np

from helpers.checks._core import Case, Mismatch, check_rng, exercise
from helpers.checks._expect import one_number
from helpers.checks._reference import sinusoidal_loop
from helpers.positional import sinusoidal_positional_encoding

# --- exercise 1: sinusoidal_table. A table is three choices: which positions, how fast each pair turns, where the
# sines and cosines go; a table with two or three of them wrong is named by each (the engine's `together`).


@exercise(
    hint="Think of each pair of columns as a clock hand turning at its own speed: the first pair fastest, one "
    "radian per position, each later pair more slowly, the last pair slowest (the speeds are the ones the text "
    "above gives). A row of the table says where every hand points at that row's position, as the sine and the "
    "cosine of its angle, and every (position, pair) combination has an angle of its own.",
    hint2="Check three entries by hand. Position 0 is sin 0 and cos 0 in every pair: 0, 1, 0, 1, … . Pair 0 "
    "turns fastest, one radian per position, so position 1 begins with sin 1 ≈ 0.841 and cos 1 ≈ 0.540. "
    "The last pair turns slowest, so its two columns hardly change down the table. If the first pair "
    "barely moves and the last spins, the speeds are upside down.",
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
    mistakes=r"""
        pair-index: `arange(0, d_model, 2)` → `arange(d_model // 2)`
            {what}: the exponent uses the pair number i where the pair's first column 2i belongs, so the speeds only
            fall to about 1/100 radian per position (10000^(−1/2)) instead of about 1/10000
        inverted-frequencies: `(-np.arange` → `(np.arange`
            {what}: the pairs speed up instead of slowing down: pair i turns by 10000^(−2i/d_model) radians per position
            (the position times that, or divided by 10000^(2i/d_model)); you multiplied by the growing factor, or
            divided by the shrinking one
        integer-division:
            `10000.0 ** (-np.arange(0, d_model, 2) / d_model)` → `1 / 10000 ** (np.arange(0, d_model, 2) // d_model)`
            {what}: every pair turns by exactly 1 radian per position: your exponent 2i/d_model came out 0, which
            whole-number division (rounding down) gives; it is a fraction between 0 and 1
        rounded-exponent: `/ d_model)` → `// d_model)`
            {what}: the speeds jump from 1 radian per position (pair 0) to 1/10000 for all the others: your exponent
            −2i/d_model was rounded down to −1 (whole-number division); it is between 0 and −1
        per-column: `10000.0 ** (-np.arange(0, d_model, 2) / d_model)` → `10000.0 ** (-np.arange(d_model) / d_model)`
            `table = ` → `return np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))\n    table = `
            {what}: the two columns of a pair turn at one speed, pair i's 10000^(−2i/d_model); your cosine column 2i+1
            used a speed of its own, 10000^(−(2i+1)/d_model)
        sin-cos-swapped: `np.sin(angles)  # even` → `np.cos(angles)  # even`
            `np.cos(angles)  # odd` → `np.sin(angles)  # odd`
            {what}: sines and cosines are swapped: the even columns (0, 2, 4, …) hold the sines, the odd ones (1, 3, 5,
            …) the cosines
        sines-twice: `np.cos(angles)  # odd` → `np.sin(angles)  # odd`
            {what}: the odd columns hold sines too: each pair is a sine and a cosine of the same angle, the sine in
            column 2i and the cosine in column 2i+1
        sines-then-cosines: `table = ` → `return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)\n    table = `
            {what}: all the sines come first, then all the cosines: they alternate, the sine of pair i in column 2i and
            its cosine in column 2i+1
        stacked-pairs:
            `table = np.zeros((len(positions), d_model))` → `return np.stack([np.sin(angles), np.cos(angles)], axis=-1)`
            {what} has shape {got.shape}: each pair's sine and cosine on an axis of their own; the table is flat, (T,
            d_model), the last two axes joined so that pair i's sine and cosine sit side by side in columns 2i and 2i+1
        ignores-positions: `angles = positions[:, None]` → `angles = np.arange(len(positions))[:, None]`
            {what}: row t encodes position t, the row number: it must encode the t-th of the positions you were given,
            which need not be 0, 1, 2, …
        transposed-angles: `positions[:, None] * omegas` → `omegas[:, None] * positions`
            {what}: your angles came out ({pairs}, {T}), one row per pair, and could not be written into the table's
            ({T}, {pairs}) sine columns: positions go down, pairs across
        integer-table: `np.asarray(positions, dtype=float)` → `np.asarray(positions)`
            `d_model))` → `d_model), dtype=positions.dtype)`
            {what} holds whole numbers (dtype {got.dtype}): your table took the positions' integer type, so each sine
            and cosine written into it was cut to 0, 1 or −1
    """,
    combine=3,
    # rotary_angles computes the table's angles
    forbid=("helpers.sinusoidal_positional_encoding", "helpers.positional.rotary_angles"),
)
def sinusoidal_table():
    # integer positions (as the notebook passes them), then float ones; never 0, 1, 2, ... in the first case
    for positions, d_model in (
        (np.array([0, 3, 7, 100, 2]), 8),
        (np.array([12.0, 5.0, 0.0, 40.0]), 16),
        (np.array([511, 40]), 384),
    ):
        what = f"sinusoidal_table(positions={positions.tolist()}, d_model={d_model})"
        expected = sinusoidal_loop(positions, d_model)  # (T, d_model)
        yield Case(what, (positions, d_model), facts={"T": len(positions), "pairs": d_model // 2}, expected=expected)


# --- exercise 2: added_length(x_length, d_model), predicted, then measured by the check


def _measured_length(x_length, d_model, rng):
    """The mean length of x + PE_p over 400 random directions x of length x_length and 10 positions p."""
    x = rng.normal(size=(400, 1, d_model))  # (400, 1, d): random directions ...
    x *= x_length / np.linalg.norm(x, axis=-1, keepdims=True)  # ... of length x_length
    sums = x + sinusoidal_positional_encoding(50, d_model)[::5]  # (400, 1, d) + (10, d) -> (400, 10, d)
    return float(np.linalg.norm(sums, axis=-1).mean())


def _measured_right(got, expected, case):
    """Right within the noise of 4,000 random sums (3 %)."""
    if not np.isclose(got, expected, rtol=0.03):
        x_length, _ = case.args
        raise Mismatch(
            f"{case.what}: you predicted {got:.4g}, but 400 random vectors of length {x_length} plus encodings "
            f"measure {expected:.4g}",
            "wrong-values",
        )


@exercise(
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
    mistakes=r"""
        added-lengths: `np.sqrt(x_length**2 + d_model / 2)` → `x_length + np.sqrt(d_model / 2)`
            {what} gave {got:.4g}: you added the two lengths, as for two vectors pointing the same way; these two are
            nearly orthogonal, so their squared lengths add (Pythagoras). {measured}
        no-square-root: `np.sqrt(x_length**2 + d_model / 2)` → `x_length**2 + d_model / 2`
            {what} gave {got:.4g}: that is the squared length; take its square root. {measured}
        full-width: `np.sqrt(x_length**2 + d_model / 2)` → `np.sqrt(x_length**2 + d_model)`
            {what} gave {got:.4g}: you gave the encoding a squared length of d_model; a row has d_model/2 pairs (sin,
            cos), each of length 1 (sin² + cos² = 1): its squared length is d_model/2. {measured}
        unit-encoding: `np.sqrt(x_length**2 + d_model / 2)` → `np.sqrt(x_length**2 + 1)`
            {what} gave {got:.4g}: you gave the encoding a length of 1: each pair (sin, cos) has length 1, but a row has
            d_model/2 pairs, so its squared length is d_model/2. {measured}
        pairs-squared: `np.sqrt(x_length**2 + d_model / 2)` → `np.sqrt(x_length**2 + (d_model / 2) ** 2)`
            {what} gave {got:.4g}: you gave the encoding a length of d_model/2, the number of pairs: that is its squared
            length (1 per pair), so its length is √(d_model/2). {measured}
        unsquared-length: `np.sqrt(x_length**2 + d_model / 2)` → `np.sqrt(x_length + d_model / 2)`
            {what} gave {got:.4g}: you added x's length to the encoding's squared length. {measured}
        encoding-only: `np.sqrt(x_length**2 + d_model / 2)` → `np.sqrt(d_model / 2)`
            {what} gave {got:.4g}: that is the encoding's length alone: the token vector counts too. {measured}
    """,
    read=lambda got, what: one_number(got, what, "one real number"),
    compare=_measured_right,
)
def added_length():
    rng = check_rng()
    for x_length, d_model in ((1.0, 384), (20.0, 384), (1.0, 16), (5.0, 64)):
        measured = _measured_length(x_length, d_model, rng)  # the check measures what you predict
        facts = {"measured": f"Measured over 400 random vectors: {measured:.4g}"}
        yield Case(f"added_length({x_length}, {d_model})", (x_length, d_model), {}, facts, measured)


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
_WHATS = [
    f"score_from_offset(q={q.tolist()}, k={k.tolist()}, offset={offset}, theta={theta})"
    for q, k, offset, theta in _SCORE_CASES
]


def _name_the_turn(got, expected, case):
    """Name the wrong turn of the key that explains every case (the registered ones among them)."""
    cases = [(q, k, offset * theta) for q, k, offset, theta in _SCORE_CASES]
    wrong = [
        i for i, (g, e) in enumerate(zip(got, expected, strict=True)) if not np.isclose(g, e, rtol=1e-6, atol=1e-9)
    ]
    if not wrong:
        return
    i = wrong[0]
    (_, k, angle), offset = cases[i], _SCORE_CASES[i][2]
    for code, turn in _wrong_turns():  # a mistake is named only when it explains every case
        if all(
            np.isclose(g, q_ @ turn(a) @ k_, rtol=1e-6, atol=1e-9) for g, (q_, k_, a) in zip(got, cases, strict=True)
        ):
            length, turned = np.linalg.norm(k), np.linalg.norm(turn(angle) @ k)  # the learner's key's length
            does = (
                f"changes the key's length from {length:.3g} to {turned:.3g}"
                if not np.isclose(length, turned)
                else "mirrors the key (keeping its length)"
            )
            raise Mismatch(
                f"{_WHATS[i]} gave {got[i]:.4g}: {_TURN_SAYS[code].format(minus=-offset, does=does)}. With the query "
                f"at position 5 and the key at {5 + offset}, both turned, the score is {expected[i]:.4g}",
                code,
            )


@exercise(
    hint="By section 4 the score of a query at position m and a key at position n is q·R_{n−m}k: the query as it "
    "is, dotted with the key turned counter-clockwise by the angle (n − m)θ. So one turn is enough, of the "
    "key, by the offset times θ; then a dot product.",
    hint2="The turn is the 2 × 2 rotation that rotate_loop applies to each pair, cosines on the diagonal. Check it "
    "before the dot product: the key (1, 0) turned by a quarter turn (offset·θ = π/2) must land on (0, 1), "
    "and a turn never changes the key's length. The score is one number: the query's first coordinate times "
    "the turned key's first, plus the same for the second.",
    solution="""
        def score_from_offset(q_pair, k_pair, offset, theta):
            a, b = k_pair
            angle = offset * theta  # the key turns by (n - m) * theta relative to the query
            k_turned = np.array([a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)])
            return np.dot(q_pair, k_turned)  # one number: q . R_(n-m) k
    """,
    mistakes=r"""
        wrong-direction: `a, b = k_pair` → `a, b = q_pair`, `np.dot(q_pair, k_turned)` → `np.dot(k_turned, k_pair)`
        unturned: `np.dot(q_pair, k_turned)` → `np.dot(q_pair, k_pair)`
        in-place:
            `, a * np.sin(angle) + b * np.cos(angle)])` → `, 0])`
            `return` → `k_turned[1] = k_turned[0] * np.sin(angle) + b * np.cos(angle)\n    return`
        not-a-rotation: `a * np.sin(angle) + b` → `-a * np.sin(angle) + b`
        cosines-off-diagonal: `np.array([` → `np.array([a * np.sin(angle) + b * np.cos(angle), `
            `, a * np.sin(angle) + b * np.cos(angle)])` → `])`
    """,
    read=lambda got, what: one_number(got, what, "one real number"),
    close={"rtol": 1e-6, "atol": 1e-9},
    families=_name_the_turn,
    forbid=("helpers.positional.apply_rotary",),
)
def score_from_offset():
    rights = [float((_turn(5 * theta) @ q) @ (_turn((5 + offset) * theta) @ k)) for q, k, offset, theta in _SCORE_CASES]
    run = lambda f: tuple(f(q, k, offset, theta) for q, k, offset, theta in _SCORE_CASES)  # noqa: E731
    yield Case(_WHATS[0], expected=tuple(rights), run=run, parts=_WHATS)  # q at position 5, k at 5 + offset
