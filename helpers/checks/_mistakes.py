"""The common mistakes several exercises share, each recognised and named in one sentence.

A detector compares the learner's result with what a typical mistake would give and raises
Mismatch with a targeted message; when nothing matches it returns, and the check goes on to
its generic comparison (`expect_close`), which names the first differing entry.
"""

import re

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import Mismatch


def _same(got, candidate):
    return got.shape == np.shape(candidate) and np.allclose(got, candidate, rtol=1e-5, atol=1e-8, equal_nan=False)


def row_softmax_mistakes(got, scores, what, mask=None):
    """Name a softmax over the wrong axis, over the whole matrix, without the max shift, or unnormalised rows.

    Shapes: got and scores (..., T_q, T_k); mask broadcastable to them (True = may attend) or None.
    """
    allowed = np.ones(scores.shape, dtype=bool) if mask is None else np.broadcast_to(mask, scores.shape)
    masked = np.where(allowed, scores, -np.inf)
    if got.shape != scores.shape or np.iscomplexobj(got) or not np.issubdtype(got.dtype, np.number):
        return
    if np.any(np.isnan(got)):
        masked_rows = (" and a row whose keys are all masked gives 0/0 unless it is shifted by 0 and divided by 1 "
                       "instead" if mask is not None else "")
        raise Mismatch(f"{what} contains NaN: exp() of large scores overflows unless each row's max is subtracted "
                       f"first{masked_rows}", "nan")
    if scores.shape[-1] > 1 and scores.shape[-2] > 1 and _same(got, softmax(masked, axis=-2)):
        raise Mismatch(f"{what}: you normalised each column (axis -2); the softmax runs along each row "
                       "(the last axis): every query's weights over the keys sum to 1", "wrong-axis")
    with np.errstate(all="ignore"):
        whole = np.exp(masked - masked.max()) / np.exp(masked - masked.max()).sum()
    if _same(got, whole):
        column = "(T_q, 1)" if scores.ndim == 2 else "(..., T_q, 1)"
        raise Mismatch(f"{what}: you divided by the sum of the whole matrix; divide each row by its own sum "
                       f"(summed over the last axis, kept as a column of shape {column})", "whole-matrix")
    sums = got.sum(axis=-1)
    has_keys = allowed.any(axis=-1)
    if not np.allclose(sums[has_keys], 1, atol=1e-6):
        first = tuple(int(i) for i in np.argwhere(has_keys & ~np.isclose(sums, 1, atol=1e-6))[0])
        label = ", ".join(map(str, first))
        raise Mismatch(f"{what}: row {label} sums to {float(sums[first]):.4g}, not 1: divide each row of exp() "
                       "by its own sum", "rows-not-normalised")


def same_numbers_other_order(got, expected, what, advice, code):
    """Raise Mismatch(code) with `advice` when `got` has `expected`'s shape and entries, but in other places."""
    if got.shape == expected.shape and not np.allclose(got, expected) and np.allclose(
            np.sort(got, axis=None), np.sort(expected, axis=None)):
        raise Mismatch(f"{what} has the right shape and the right numbers in the wrong places: {advice}", code)


_BROADCAST = re.compile(r"could not be broadcast together with shapes (\([\d,]*\)) (\([\d,]*\))")


def broadcast_clash(exc):
    """The two shapes numpy could not broadcast together in `exc` (a ValueError), as a set of tuples; else empty.

    The checks use it to name the shape mistake behind a crash (a row length kept as a row, not a column).
    """
    found = _BROADCAST.search(str(exc))
    if not found:
        return set()
    return {tuple(int(n) for n in shape.strip("()").split(",") if n) for shape in found.groups()}
