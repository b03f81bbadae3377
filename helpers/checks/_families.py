"""Mistakes named by a property of the answer rather than one by one: families any check recognises.

A registered mistake names one wrong answer; a family names every answer that has its property: the
right numbers times one factor (a size, ln 2, −1), moved along an axis, with two axes exchanged, in
other places; a number equal to the right computation at another shift; rows meant to sum to 1 that
do not; attention that weights another array than the values, or scales its scores by another size;
a row softmax's usual slips. `expect_close` tries the first three on every answer it is about to call
wrong; a check calls the others (its `families`) with what only it knows.
"""

import itertools

import numpy as np

from helpers.attention import softmax
from helpers.checks._expect import Mismatch, same, shown

FAMILY_CODES = {"scaled-by-a-constant", "shifted-along-an-axis", "axes-exchanged", "another-shift"}
FAMILY_CODES |= {"not-a-distribution", "wrong-array-weighted", "scores-scaled-wrongly"}
LN2 = float(np.log(2))


def _factors(sizes):
    """(factor, how a message says it, its likely cause) for the ratios a wrong answer is off by, most telling first."""
    yield -1.0, "with its sign flipped", ""
    yield 1 / LN2, "divided by ln 2 = 0.6931", "a logarithm in base 2 (bits) where the natural one belongs"
    yield LN2, "times ln 2 = 0.6931", "a natural logarithm where one in base 2 (bits) belongs"
    for name, v in sizes.items():
        yield v, f"times {name} = {v}", f"a sum over those {v} where the mean belongs, or a division by {name} left out"
        yield 1 / v, f"divided by {name} = {v}", f"a mean over those {v} where the sum belongs, or a division too many"
    for (name, v), (other, w) in itertools.permutations(sizes.items(), 2):
        yield v / w, f"times {name}/{other} = {v}/{w}", f"a division by {other} where {name} belongs"
    for name, v in sizes.items():
        yield np.sqrt(v), f"times √{name} = √{v}", f"a division by √{name} left out"
        yield 1 / np.sqrt(v), f"divided by √{name} = √{v}", f"a division by √{name} too many"
    yield from ((2.0, "times 2", ""), (0.5, "divided by 2", ""))


def scaled_by_a_constant(got, expected, what, sizes=None):
    """Raise Mismatch when `got` is `expected` times one factor: named when it is a size, ln 2 or −1.

    sizes: {"T − 1": 5, ...}, the sizes of the check's inputs a factor may be made of. A single number is named
    only by such a factor; an array off by any one factor in every entry is named as such.
    """
    expected = np.asarray(expected, dtype=float)
    fits = got.shape == expected.shape and not np.iscomplexobj(got) and np.all(np.isfinite(got))
    if not fits or not np.all(np.isfinite(expected)) or not np.any(expected):
        return
    c = float(np.sum(got * expected)) / float(np.sum(expected * expected))  # least squares, then checked
    if np.isclose(c, 1.0, rtol=1e-6) or not same(got, c * expected):
        return
    for factor, how, cause in _factors(sizes or {}):
        if np.isclose(c, factor, rtol=1e-6):
            one = f"gave {float(got):.4g}: the right value, {float(expected):.4g}, {how}" if got.size == 1 else ""
            said = one or f"has every entry the right one {how}"
            raise Mismatch(f"{what} {said}{': ' * bool(cause)}{cause}", "scaled-by-a-constant")
    if np.count_nonzero(expected) > 1:
        raise Mismatch(
            f"{what} has every entry the right one times {c:.4g}, the same factor throughout: a scale is off "
            "somewhere (a division or a multiplication too many, or one left out)",
            "scaled-by-a-constant",
        )


def shifted_along_an_axis(got, expected, what):
    """Raise Mismatch when `got` holds the right entries moved a place or two along one axis, or some dropped.

    Shapes: got and expected of the same number of axes; they may differ by one or two places along one axis.
    """
    if got.ndim != expected.ndim or got.ndim == 0 or np.iscomplexobj(got):
        return
    for axis, k in itertools.product(range(expected.ndim), (1, 2)):
        (n, m), count = (expected.shape[axis], got.shape[axis]), "one" if k == 1 else "two"
        if np.delete(got.shape, axis).tolist() != np.delete(expected.shape, axis).tolist():
            continue

        def cut(x, start, stop=None, axis=axis):
            return np.take(x, range(start, x.shape[axis] if stop is None else stop), axis=axis)

        if m == n >= k + 2 and not same(cut(expected, k), cut(expected, 0, n - k)):
            for sign, moved, right in (
                ("+", cut(got, 0, n - k), cut(expected, k)),
                ("−", cut(got, k), cut(expected, 0, n - k)),
            ):
                if same(moved, right):
                    raise Mismatch(
                        f"{what} has the right numbers moved {k} place{'s' * (k > 1)} along axis {axis} (of length "
                        f"{n}): its entry at place i is the right entry of place i {sign} {k}",
                        "shifted-along-an-axis",
                    )
        for start, fewer, more in ((k, "without the first", "at the start"), (0, "without the last", "at the end")):
            dropped = m == n - k and same(got, cut(expected, start, start + n - k))
            if dropped or m == n + k and same(cut(got, start, start + n), expected):
                said = f"{fewer} {count}" if m < n else f"with {count} more {more}"
                raise Mismatch(
                    f"{what} has {m} places along axis {axis} where {n} are expected: the right ones, {said}",
                    "shifted-along-an-axis",
                )


def axes_exchanged(got, expected, what):
    """Raise Mismatch when `got` holds the right numbers with its axes in another order (a transpose)."""
    if got.ndim != expected.ndim or not 2 <= got.ndim <= 4 or sorted(got.shape) != sorted(expected.shape):
        return
    for order in list(itertools.permutations(range(expected.ndim)))[1:]:
        if same(got, np.transpose(expected, order)) and not same(got, expected):
            moved = [i for i, j in enumerate(order) if i != j]
            axes = f"axes {moved[0]} and {moved[1]} exchanged" if len(moved) == 2 else f"its axes in the order {order}"
            raise Mismatch(
                f"{what} has the right numbers with {axes} (shape {got.shape}, expected {expected.shape}): "
                "a transpose too many or one missing",
                "axes-exchanged",
            )


def another_shift(got, variants, what, says):
    """Raise Mismatch when `got` equals the right computation at another shift: variants {shift: its result}.

    says: the sentence naming what that shift does, in the check's own words, with {shift} in it.
    """
    for shift, value in variants.items():
        if same(got, value):
            raise Mismatch(f"{what}: {says.format(shift=shift)}", "another-shift")


def not_a_distribution(got, expected, what, says, code="not-a-distribution", where=None):
    """Raise Mismatch when rows of `got` that should each sum to 1 (over the last axis), as `expected`'s do, do not.

    says: what follows "row i sums to x, not 1"; where: (...) bool, the rows that must sum to 1 (default all).
    """
    if got.shape != np.shape(expected) or got.dtype.kind not in "biuf":
        return
    sums = got.sum(axis=-1)
    rows = np.ones(sums.shape, bool) if where is None else where
    if rows.any() and not np.allclose(sums[rows], 1, atol=1e-6):
        worst = np.unravel_index(np.argmax(np.where(rows, np.abs(sums - 1), -1.0)), sums.shape)
        label = f"row {', '.join(str(int(i)) for i in worst)} sums" if worst else "it sums"
        raise Mismatch(f"{what}: {label} to {shown(float(sums[worst]), 1.0)}, not 1{says}", code)


def wrong_array_weighted(got, candidates, what, right="the values V"):
    """Raise Mismatch when `got` is the attention weights applied to another array: candidates {its name: result}."""
    for name, candidate in candidates.items():
        if same(got, candidate):
            raise Mismatch(
                f"{what} mixes the rows of {name} with the attention weights; the weights mix the rows of "
                f"{right}: each output row is {right} weighted by that query's row of weights",
                "wrong-array-weighted",
            )


def scores_divided_by(got, attend, what, sizes, right):
    """Raise Mismatch when `got` is attention with its scores scaled by a size (or its root) other than the right one.

    attend(divisor) -> the output with the scores divided by `divisor`; sizes {"window": 3, ...} the sizes a
    learner may have divided (or multiplied) by; right: the right divisor as (its name, its value), ("√d", 2.0).
    """
    for size, v in sizes.items():
        for divisor, how in ((v**0.5, f"divided by √{size} = √{v}"), (v, f"divided by {size} = {v}"),
                             (v**-0.5, f"multiplied by √{size} = √{v}")):  # fmt: skip
            if not np.isclose(divisor, right[1]) and same(got, attend(divisor)):
                raise Mismatch(
                    f"{what}: the scores were {how}; scaled attention divides them by {right[0]} = {right[1]:.4g}, "
                    "the square root of the width of the queries and keys (04)",
                    "scores-scaled-wrongly",
                )


def other_order(got, expected):
    """True when `got` holds `expected`'s entries, each as often, in other places."""
    return got.shape == expected.shape and not same(got, expected) and same(np.sort(got, None), np.sort(expected, None))


def parts_in_other_order(got, expected, names, what, code):
    """Raise Mismatch(code) when the returned parts `got` are the `expected` ones, each named in `names`, reordered."""
    for order in list(itertools.permutations(range(len(names))))[1:]:
        if all(same(got[i], expected[j]) for i, j in enumerate(order)):
            raise Mismatch(
                f"{what} returned the right results in another order, {', '.join(names[j] for j in order)}; "
                f"return them in the order {', '.join(names)}",
                code,
            )


# ---- a row softmax's slips: 02's row_softmax, 05's masked_softmax, and the weights inside 02's attention

SOFTMAX_SAYS = {  # the message that names each slip, after "{what}: "
    "wrong-axis": "you normalised each column (axis -2); the softmax runs along each row (the last axis): every "
    "query's weights over the keys sum to 1",
    "whole-matrix": "you divided by the sum of the whole matrix; divide each row by its own sum (summed over the "
    "last axis, kept as a column of shape {column})",
    "max-as-a-row": "your row maxima, shape {rows}, were lined up with the columns (numpy lines shapes up from the "
    "right), so row i's maximum was subtracted from column i. The matrix is square, so numpy did not complain; "
    "keep them as a column, shape {column}, so that each acts on its own row",
    "sums-as-a-row": "your row sums, shape {rows}, were lined up with the columns (numpy lines shapes up from the "
    "right), so column i was divided by row i's sum. The matrix is square, so numpy did not complain; keep them as "
    "a column, shape {column}, so that each divides its own row",
    "shift-mismatch": "you subtracted each row's max from the exponentials in the numerator but not from those "
    "summed in the denominator (or the other way round), so each row is the softmax times e^(± its max) and does "
    "not sum to 1. Shift every exponential by the same max, then divide them by their own row sum",
    "max-after-exp": "you subtracted each row's max after the exponential, from e^s; it is subtracted from the "
    "scores before it, e^(s − max), which leaves the weights unchanged",
    "floor-division": "every weight came out as a whole number, 0 (or 1 where a row has a single key): floor "
    "division, written with two slashes, rounds each weight down. Divide with one slash",
    "rows-not-normalised": "each row's largest entry is exactly 1 and the rows sum to more than 1: these are the "
    "exponentials of the shifted scores, not yet divided by their row's sum",
    "returned-in-loop": "the first row is right but every other row is all 0: did your loop return after its first "
    "row? Return once the loop has filled every row",
    "column-sums": "each column sums to 1, the rows do not: you divided by the column sums (down the queries). "
    "Divide each row's exponentials by that row's own sum, over the keys",
    "no-exp": "some weights are negative ({value} in row {label}). Each weight is an exponential divided by the "
    "row's sum of exponentials, so none is negative: take the exponential of every (shifted) score",
}


def _softmax_slips(masked, right):
    """{code: [the weights that slip gives]} for a row softmax of `masked` (blocked scores −∞), most telling first."""
    (T_q, T_k), T = masked.shape[-2:], np.swapaxes  # T(x, -1, -2): a column of row statistics lined up as a row
    with np.errstate(all="ignore"):
        row_max = masked.max(axis=-1, keepdims=True)  # (..., T_q, 1)
        row_max = np.where(np.isfinite(row_max), row_max, 0.0)
        shifted, unshifted, whole = np.exp(masked - row_max), np.exp(masked), np.exp(masked - masked.max())
        lined = np.exp(masked - T(row_max, -1, -2)) if T_q == T_k else None  # row i's max from column i
        after = unshifted - unshifted.max(axis=-1, keepdims=True)
        sums = {id(e): e.sum(axis=-1, keepdims=True) for e in (shifted, unshifted, lined, after) if e is not None}
        return {
            "wrong-axis": [softmax(masked, axis=-2)] if T_q > 1 and T_k > 1 else [],
            "whole-matrix": [whole / whole.sum()],
            "max-as-a-row": [lined / sums[id(lined)], lined / T(sums[id(lined)], -1, -2)] if T_q == T_k else [],
            "sums-as-a-row": [e / T(sums[id(e)], -1, -2) for e in (shifted, unshifted)] if T_q == T_k else [],
            "shift-mismatch": [right * np.exp(-row_max), right * np.exp(row_max)],
            "max-after-exp": [after / sums[id(after)]],
            "floor-division": [np.floor(right)] if not np.allclose(right, np.floor(right)) else [],
            "rows-not-normalised": [shifted],
        }


def softmax_slips(got, scores, what, mask=None):
    """Name the usual ways a row softmax goes wrong (SOFTMAX_SAYS), or return when none fits.

    Each slip's weights are worked out from the scores and compared; then what a result shows by itself: NaN, a
    loop that returned after its first row, negative weights, columns that sum to 1, rows that do not.
    Shapes: got and scores (..., T_q, T_k); mask broadcastable to them (True = may attend) or None.
    """
    if got.shape != scores.shape or np.iscomplexobj(got) or not np.issubdtype(got.dtype, np.number):
        return
    allowed = np.ones(scores.shape, dtype=bool) if mask is None else np.broadcast_to(mask, scores.shape)
    masked = np.where(allowed, scores, -np.inf)
    if np.any(np.isnan(got)):
        blind = " and a row whose keys are all masked gives 0/0 unless it is shifted by 0 and divided by 1 instead"
        raise Mismatch(
            f"{what} contains NaN: the exponential of a large score overflows unless each row's max is subtracted "
            f"first{blind if mask is not None else ''}",
            "nan",
        )
    right = softmax(masked)  # (..., T_q, T_k); a row with no allowed key is all zeros
    if same(got, right):
        return
    shapes = {"column": str(scores.shape[:-1] + (1,)), "rows": str(scores.shape[:-1])}
    for code, candidates in _softmax_slips(masked, right).items():
        if any(same(got, np.nan_to_num(c)) and not same(c, right) for c in candidates):
            raise Mismatch(f"{what}: " + SOFTMAX_SAYS[code].format(**shapes), code)
    rows_got, rows_right = got.reshape(-1, got.shape[-1]), right.reshape(-1, got.shape[-1])
    if len(rows_got) > 1 and same(rows_got[0], rows_right[0]) and not rows_got[1:].any() and rows_right[1:].any():
        raise Mismatch(f"{what}: " + SOFTMAX_SAYS["returned-in-loop"], "returned-in-loop")
    if np.any(got < 0):
        where = np.unravel_index(np.argmin(got), got.shape)
        label, value = ", ".join(str(int(i)) for i in where[:-1]), shown(float(got[where]), 0.0)
        raise Mismatch(f"{what}: " + SOFTMAX_SAYS["no-exp"].format(label=label, value=value), "no-exp")
    rows_sum = np.allclose(got.sum(axis=-1)[allowed.any(axis=-1)], 1, atol=1e-6)
    if scores.shape[-2] > 1 and np.allclose(got.sum(axis=-2)[allowed.any(axis=-2)], 1, atol=1e-6) and not rows_sum:
        raise Mismatch(f"{what}: " + SOFTMAX_SAYS["column-sums"], "column-sums")
    says = ". Each row of weights is that row's exponentials divided by their own sum, so it sums to 1"
    not_a_distribution(got, right, what, says, "rows-not-normalised", allowed.any(axis=-1))
