"""Mistakes named by a property of the answer rather than one by one: families any check recognises.

A registered mistake names one wrong answer; a family names every answer that has its property:
the right numbers times one factor (a size, ln 2, −1), moved along an axis, with two axes exchanged;
a number equal to the right computation at another shift; rows meant to sum to 1 that do not; an
attention output that weights another array than the values. `expect_close` tries the first three
on every answer it is about to call wrong; a check calls the others with what only it knows.
"""

import itertools

import numpy as np

from helpers.checks._expect import Mismatch, same

FAMILY_CODES = {
    "scaled-by-a-constant",
    "shifted-along-an-axis",
    "axes-exchanged",
    "another-shift",
    "not-a-distribution",
    "wrong-array-weighted",
    "scores-scaled-wrongly",
}
LN2 = float(np.log(2))


def _number(x):
    return f"{x:.4g}"


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
    yield 2.0, "times 2", ""
    yield 0.5, "divided by 2", ""


def scaled_by_a_constant(got, expected, what, sizes=None):
    """Raise Mismatch when `got` is `expected` times one factor: named when it is a size, ln 2 or −1.

    sizes: {"T − 1": 5, ...}, the sizes of the check's inputs a factor may be made of. A single number is named
    only by such a factor; an array off by any one factor in every entry is named as such.
    Shapes: got and expected the same.
    """
    expected = np.asarray(expected, dtype=float)
    if got.shape != expected.shape or np.iscomplexobj(got) or not np.all(np.isfinite(got)):
        return
    scale = float(np.sum(expected * expected))
    if scale == 0 or not np.all(np.isfinite(expected)):
        return
    c = float(np.sum(got * expected)) / scale  # least squares, then checked
    if np.isclose(c, 1.0, rtol=1e-6) or not same(got, c * expected):
        return
    for factor, how, cause in _factors(sizes or {}):
        if np.isclose(c, factor, rtol=1e-6):
            if got.size == 1:
                said = f"gave {_number(float(got))}: the right value, {_number(float(expected))}, {how}"
            else:
                said = f"has every entry the right one {how}"
            raise Mismatch(f"{what} {said}{': ' * bool(cause)}{cause}", "scaled-by-a-constant")
    if np.count_nonzero(expected) > 1:
        raise Mismatch(
            f"{what} has every entry the right one times {_number(c)}, the same factor throughout: a scale is "
            "off somewhere (a division or a multiplication too many, or one left out)",
            "scaled-by-a-constant",
        )


def shifted_along_an_axis(got, expected, what):
    """Raise Mismatch when `got` holds the right entries moved a place or two along one axis, or some dropped.

    Shapes: got and expected of the same number of axes; they may differ by one or two places along one axis.
    """
    if got.ndim != expected.ndim or got.ndim == 0 or np.iscomplexobj(got):
        return
    for axis, k in itertools.product(range(expected.ndim), (1, 2)):
        n, m = expected.shape[axis], got.shape[axis]
        if got.shape[:axis] + got.shape[axis + 1 :] != expected.shape[:axis] + expected.shape[axis + 1 :]:
            continue

        def cut(x, start, stop=None, axis=axis):
            return np.take(x, range(start, x.shape[axis] if stop is None else stop), axis=axis)

        where = f"along axis {axis} (of length {n})"
        if m == n and n >= k + 2 and not same(cut(expected, k), cut(expected, 0, n - k)):
            for d in (k, -k):
                if same(cut(got, 0, n - k), cut(expected, k)) if d > 0 else same(cut(got, k), cut(expected, 0, n - k)):
                    sign = "+" if d > 0 else "−"
                    raise Mismatch(
                        f"{what} has the right numbers moved {k} place{'s' * (k > 1)} {where}: its entry at "
                        f"place i is the right entry of place i {sign} {k}",
                        "shifted-along-an-axis",
                    )
        count = "one" if k == 1 else "two"
        if m == n - k:
            for start, which in ((k, "first"), (0, "last")):
                if same(got, cut(expected, start, start + n - k)):
                    raise Mismatch(
                        f"{what} has {m} places along axis {axis} where {n} are expected: the right ones, "
                        f"without the {which} {count}",
                        "shifted-along-an-axis",
                    )
        if m == n + k:
            for start, end in ((k, "start"), (0, "end")):
                if same(cut(got, start, start + n), expected):
                    raise Mismatch(
                        f"{what} has {m} places along axis {axis} where {n} are expected: the right ones, with "
                        f"{count} more at the {end}",
                        "shifted-along-an-axis",
                    )


def axes_exchanged(got, expected, what):
    """Raise Mismatch when `got` holds the right numbers with its axes in another order (a transpose)."""
    if got.ndim != expected.ndim or not 2 <= got.ndim <= 4 or sorted(got.shape) != sorted(expected.shape):
        return
    for order in itertools.permutations(range(expected.ndim)):
        if list(order) == sorted(order):
            continue
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
        if same(np.asarray(got, dtype=float), np.asarray(value, dtype=float)):
            raise Mismatch(f"{what}: {says.format(shift=shift)}", "another-shift")


def not_a_distribution(got, what, noun, where=None):
    """Raise Mismatch when rows of `got` that should each sum to 1 (over the last axis) do not.

    noun: what a row is ("weights over the keys"); where: (...) bool, the rows that must sum to 1 (default all).
    """
    sums = got.sum(axis=-1)
    rows = np.ones(sums.shape, bool) if where is None else where
    if not rows.any() or np.allclose(sums[rows], 1, atol=1e-6):
        return
    off = np.where(rows, np.abs(sums - 1), -1.0)
    worst = np.unravel_index(np.argmax(off), off.shape)
    label = f"row {', '.join(str(int(i)) for i in worst)} sums" if worst else "it sums"
    raise Mismatch(
        f"{what}: {label} to {_number(float(sums[worst]))}, not 1: {noun} are a distribution, which adds up to 1",
        "not-a-distribution",
    )


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
    name, value = right
    for size, v in sizes.items():
        for divisor, label in (
            (np.sqrt(v), f"divided by √{size} = √{v}"),
            (float(v), f"divided by {size} = {v}"),
            (1 / np.sqrt(v), f"multiplied by √{size} = √{v}"),
        ):
            if not np.isclose(divisor, value) and same(got, attend(divisor)):
                raise Mismatch(
                    f"{what}: the scores were {label}; scaled attention divides them by {name} = "
                    f"{_number(value)}, the square root of the width of the queries and keys (04)",
                    "scores-scaled-wrongly",
                )
