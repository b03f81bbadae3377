"""The common mistakes several exercises share, each recognised and named in one sentence.

A detector compares the learner's result with what a typical mistake would give and raises
Mismatch with a targeted message; when nothing matches it returns, and the check goes on to
its generic comparison (`expect_close`), which names the entry that differs most. Here: a row
softmax's mistakes (02, 05), a shape clash numpy reports, multi-head attention's mistakes (06),
a mask of None mistaken for a mask that blocks everything, and a returned tuple read part by part,
or found to hold the right parts in another order (10, 11).
"""

import itertools
import re

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import Mismatch, as_array, call
from helpers.checks._reference import masked_softmax_loop, multihead_loop


def _same(got, candidate):
    return got.shape == np.shape(candidate) and np.allclose(got, candidate, rtol=1e-5, atol=1e-8, equal_nan=False)


def _digits(value, near=1.0):
    """`value` as text with as many significant digits as it takes to tell it from `near` (4 to 12)."""
    for digits in range(4, 13):
        text = f"{value:.{digits}g}"
        if text != f"{near:.{digits}g}":
            break
    return text


def _lined_up(column):
    """A (..., T, 1) column of row statistics as numpy lines up a (..., T) one against a square matrix: (..., 1, T)."""
    return np.swapaxes(column, -1, -2)


def row_softmax_mistakes(got, scores, what, mask=None):
    """Name the usual ways a row softmax goes wrong, or return when none fits.

    The softmax over the wrong axis or the whole matrix, NaN, maxima or sums without their kept axis (on a square
    matrix numpy lines them up with the columns without complaint), a max shift above but not below the line, the
    max subtracted after the exponential, a loop that returned after its first row, floor division, column sums,
    negative weights (no exponential), the shifted exponentials not yet divided; else the row farthest from
    summing to 1.
    Shapes: got and scores (..., T_q, T_k); mask broadcastable to them (True = may attend) or None.
    """
    allowed = np.ones(scores.shape, dtype=bool) if mask is None else np.broadcast_to(mask, scores.shape)
    masked = np.where(allowed, scores, -np.inf)
    if got.shape != scores.shape or np.iscomplexobj(got) or not np.issubdtype(got.dtype, np.number):
        return
    if np.any(np.isnan(got)):
        masked_rows = (
            " and a row whose keys are all masked gives 0/0 unless it is shifted by 0 and divided by 1 instead"
            if mask is not None
            else ""
        )
        raise Mismatch(
            f"{what} contains NaN: the exponential of a large score overflows unless each row's max is "
            f"subtracted first{masked_rows}",
            "nan",
        )
    T_q, T_k = scores.shape[-2:]
    rows, column = scores.shape[:-1], scores.shape[:-1] + (1,)
    if T_q > 1 and T_k > 1 and _same(got, softmax(masked, axis=-2)):
        raise Mismatch(
            f"{what}: you normalised each column (axis -2); the softmax runs along each row "
            "(the last axis): every query's weights over the keys sum to 1",
            "wrong-axis",
        )
    expected = softmax(masked)  # (..., T_q, T_k); a row with no allowed key is all zeros
    if _same(got, expected):
        return
    with np.errstate(all="ignore"):
        whole = np.exp(masked - masked.max()) / np.exp(masked - masked.max()).sum()
        row_max = masked.max(axis=-1, keepdims=True)  # (..., T_q, 1)
        row_max = np.where(np.isfinite(row_max), row_max, 0.0)
        shifted = np.exp(masked - row_max)  # (..., T_q, T_k): the numerators, each row's largest is 1
        sums = shifted.sum(axis=-1, keepdims=True)  # (..., T_q, 1)
        square = {}  # what a max or a sum of shape (..., T) does against a square matrix: code -> candidates
        if T_q == T_k:
            lined_max = np.exp(masked - _lined_up(row_max))  # row i's max subtracted from column i
            square["max-as-a-row"] = [
                lined_max / lined_max.sum(axis=-1, keepdims=True),
                lined_max / _lined_up(lined_max.sum(axis=-1, keepdims=True)),
            ]
            unshifted = np.exp(masked)
            square["sums-as-a-row"] = [
                shifted / _lined_up(sums),
                unshifted / _lined_up(unshifted.sum(axis=-1, keepdims=True)),
            ]
        unshifted_below = expected * np.exp(-row_max)  # the max subtracted above the line only
        unshifted_above = expected * np.exp(row_max)  # ... or below it only
        after_exp = np.exp(masked) - np.exp(masked).max(axis=-1, keepdims=True)
        after_exp = after_exp / after_exp.sum(axis=-1, keepdims=True)
    if _same(got, whole):
        raise Mismatch(
            f"{what}: you divided by the sum of the whole matrix; divide each row by its own sum "
            f"(summed over the last axis, kept as a column of shape {_shape(column)})",
            "whole-matrix",
        )
    for code, candidates in square.items():
        if not any(_same(got, np.nan_to_num(candidate)) for candidate in candidates):
            continue
        if code == "max-as-a-row":
            raise Mismatch(
                f"{what}: your row maxima, shape {_shape(rows)}, were lined up with the columns (numpy "
                "lines shapes up from the right), so row i's maximum was subtracted from column i. The "
                "matrix is square, so numpy did not complain; keep them as a column, shape "
                f"{_shape(column)}, so that each acts on its own row",
                "max-as-a-row",
            )
        raise Mismatch(
            f"{what}: your row sums, shape {_shape(rows)}, were lined up with the columns (numpy lines "
            "shapes up from the right), so column i was divided by row i's sum. The matrix is square, so "
            f"numpy did not complain; keep them as a column, shape {_shape(column)}, so that each divides "
            "its own row",
            "sums-as-a-row",
        )
    if _same(got, unshifted_below) or _same(got, unshifted_above):
        raise Mismatch(
            f"{what}: you subtracted each row's max from the exponentials in the numerator but not from "
            "those summed in the denominator (or the other way round), so each row is the softmax times "
            "e^(± its max) and does not sum to 1. Shift every exponential by the same max, then divide "
            "them by their own row sum",
            "shift-mismatch",
        )
    if _same(got, after_exp):
        raise Mismatch(
            f"{what}: you subtracted each row's max after the exponential, from e^s; it is subtracted from "
            "the scores before it, e^(s − max), which leaves the weights unchanged",
            "max-after-exp",
        )
    flat_got, flat_expected = got.reshape(-1, T_k), expected.reshape(-1, T_k)
    if (
        len(flat_got) > 1
        and np.allclose(flat_got[0], flat_expected[0])
        and not np.any(flat_got[1:])
        and np.any(flat_expected[1:])
    ):
        raise Mismatch(
            f"{what}: the first row is right but every other row is all 0: did your loop return after "
            "its first row? Return once the loop has filled every row",
            "returned-in-loop",
        )
    if not np.allclose(expected, np.floor(expected)) and _same(got, np.floor(expected)):
        raise Mismatch(
            f"{what}: every weight came out as a whole number, 0 (or 1 where a row has a single key): "
            "floor division, written with two slashes, rounds each weight down. Divide with one slash",
            "floor-division",
        )
    if np.any(got < 0):
        where = np.unravel_index(np.argmin(got), got.shape)
        label = ", ".join(str(int(i)) for i in where[:-1])
        raise Mismatch(
            f"{what}: some weights are negative ({_digits(float(got[where]), 0.0)} in row {label}). Each "
            "weight is an exponential divided by the row's sum of exponentials, so none is negative: take "
            "the exponential of every (shifted) score",
            "no-exp",
        )
    has_keys = allowed.any(axis=-1)
    row_sums = got.sum(axis=-1)
    if np.allclose(row_sums[has_keys], 1, atol=1e-6):
        return
    columns_have_keys = allowed.any(axis=-2)
    if T_q > 1 and np.allclose(got.sum(axis=-2)[columns_have_keys], 1, atol=1e-6):
        raise Mismatch(
            f"{what}: each column sums to 1, the rows do not: you divided by the column sums (down the "
            "queries). Divide each row's exponentials by that row's own sum, over the keys",
            "column-sums",
        )
    if _same(got, shifted):
        raise Mismatch(
            f"{what}: each row's largest entry is exactly 1 and the rows sum to more than 1: these are the "
            "exponentials of the shifted scores, not yet divided by their row's sum",
            "rows-not-normalised",
        )
    off = np.where(has_keys, np.abs(row_sums - 1), -1.0)
    worst = np.unravel_index(np.argmax(off), off.shape)
    label = ", ".join(str(int(i)) for i in worst)
    raise Mismatch(
        f"{what}: row {label} sums to {_digits(float(row_sums[worst]))}, not 1. Each row of weights is "
        "that row's exponentials divided by their own sum, so it sums to 1",
        "rows-not-normalised",
    )


def _shape(shape):
    """A shape as the messages print it: (4,), (4, 1)."""
    return str(tuple(int(n) for n in shape))


def same_numbers_other_order(got, expected, what, advice, code):
    """Raise Mismatch(code) with `advice` when `got` has `expected`'s shape and entries, but in other places."""
    if (
        got.shape == expected.shape
        and not np.allclose(got, expected)
        and np.allclose(np.sort(got, axis=None), np.sort(expected, axis=None))
    ):
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


def _tokens_mixed(x, context, W_q, W_k, W_v, W_o, n_heads, mask, plain_merge):
    """Multi-head attention whose heads come from a plain reshape (T, d_model) -> (h, T, d_head).

    plain_merge: merge with the plain reshape back too (else the right merge).
    Shapes: x (T_q, d_model), context (T_k, d_model), mask (T_q, T_k) or None -> (T_q, d_model).
    """
    d_model = W_q.shape[1]
    d_head = d_model // n_heads
    Q, K, V = (M.reshape(n_heads, M.shape[0], d_head) for M in (x @ W_q, context @ W_k, context @ W_v))
    allowed = np.ones((x.shape[0], context.shape[0]), bool) if mask is None else mask
    heads = np.stack([masked_softmax_loop(Q[i] @ K[i].T / np.sqrt(d_head), allowed) @ V[i] for i in range(n_heads)])
    merged = heads.reshape(x.shape[0], d_model) if plain_merge else np.concatenate(list(heads), axis=-1)
    return merged @ W_o  # (T_q, d_model)


def multihead_mistakes(got, expected, inputs, mask, what):
    """Name the usual ways multi-head attention goes wrong, or return when none fits.

    The scores scaled by √d_model, by d_head or not at all; one head over every column; the mask ignored,
    inverted, applied after the softmax or as a score of 0; each head's softmax over the queries; no output
    projection; heads cut by a plain reshape, which mixes tokens.
    inputs: (x, context, W_q, W_k, W_v, W_o, n_heads). Shapes: x (T_q, d_model), context (T_k, d_model),
    W_* (d_model, d_model), mask (T_q, T_k) or None; got and expected (T_q, d_model).
    """
    if got.shape != expected.shape or np.iscomplexobj(got) or not np.issubdtype(got.dtype, np.number):
        return
    x, context, W_q, W_k, W_v, W_o, n_heads = inputs
    d_model = W_q.shape[1]
    d_head = d_model // n_heads
    seen = np.nan_to_num(got)  # a row with no allowed key may be NaN in an answer and 0 in a candidate

    def gives(candidate):  # (a way that is right for these inputs is no mistake here)
        return np.allclose(seen, candidate) and not np.allclose(candidate, expected)

    def variant(**change):
        return multihead_loop(*inputs, mask, **change)

    if gives(variant(project=False)):
        raise Mismatch(
            f"{what}: you merged the heads but did not apply the output projection W_o "
            f"({d_model}, {d_model}); the layer's output is the merged heads times W_o",
            "no-output-projection",
        )
    if gives(variant(scale=1 / np.sqrt(d_model))):
        raise Mismatch(
            f"{what}: each head's scores are divided by √d_model = √{d_model}. A head's queries and "
            f"keys have d_head = {d_head} entries, so divide by √d_head = √{d_head}",
            "scaled-by-d-model",
        )
    if gives(variant(scale=1.0)):
        raise Mismatch(
            f"{what}: the scores are not scaled; divide each head's scores by √d_head = √{d_head}, as in 04_scaling",
            "not-scaled",
        )
    if gives(variant(scale=1 / d_head)):
        raise Mismatch(
            f"{what}: each head's scores are divided by d_head = {d_head}; divide by its square root, "
            f"√d_head = √{d_head}, as in 04_scaling",
            "scaled-by-d-head",
        )
    if n_heads > 1 and any(
        gives(multihead_loop(*inputs[:-1], 1, mask, scale=scale))
        for scale in (1 / np.sqrt(d_head), 1 / np.sqrt(d_model))
    ):
        raise Mismatch(
            f"{what}: your attention ran as one head over all {d_model} columns. Split the queries, "
            f"keys and values into {n_heads} heads of d_head = {d_head} columns, each with its own "
            "scores and softmax, then merge the heads",
            "one-head",
        )
    if mask is not None and gives(multihead_loop(*inputs)):
        raise Mismatch(
            f"{what}: the mask is not applied, so each query also attends to the keys it must not "
            "see. Where the mask is False, the score becomes −∞ before the softmax",
            "mask-ignored",
        )
    if mask is not None and gives(multihead_loop(*inputs, ~mask)):
        raise Mismatch(
            f"{what}: each query attends to exactly the keys the mask blocks. In this workshop a "
            "mask's True means 'may attend' (as in 05_masking): where the mask is False the score "
            "becomes −∞",
            "true-means-blocked",
        )
    if gives(variant(weights_of=lambda scores, allowed: softmax(np.where(allowed, scores, -np.inf), axis=-2))):
        raise Mismatch(
            f"{what}: each head's softmax ran down the columns, over the queries; it runs along each "
            "row, over the keys, so that each query's weights sum to 1",
            "wrong-axis",
        )
    if mask is not None and gives(variant(weights_of=lambda scores, allowed: softmax(scores) * allowed)):
        raise Mismatch(
            f"{what}: the blocked keys got weight 0 after the softmax, so the rows no longer sum to 1: "
            "their share was thrown away instead of shared among the allowed keys. Block the scores "
            "(−∞) before the softmax",
            "after-softmax",
        )
    if mask is not None and gives(variant(weights_of=lambda scores, allowed: softmax(np.where(allowed, scores, 0)))):
        raise Mismatch(
            f"{what}: the blocked scores became 0 (multiplying the scores by the mask does that), an "
            "ordinary score whose exponential is 1, so the blocked keys still get weight. A blocked "
            "score must be −∞",
            "zero-fill",
        )
    if any(gives(_tokens_mixed(*inputs, mask, plain_merge)) for plain_merge in (True, False)):
        raise Mismatch(
            f"{what}: your heads mix tokens. A reshape of (T, d_model) straight to (h, T, d_head) "
            "fills head 0 with the first tokens' numbers in memory order, so a head's rows are "
            "pieces of several tokens. Cut each token's columns into (h, d_head) first, then move "
            "the heads axis in front",
            "tokens-mixed",
        )


def none_mask_mistakes(answer, args, got, expected, what):
    """Raise Mismatch when the answer is wrong with mask=None but right with a mask that allows every key.

    args: the arguments before the mask, the queries' sequence first and the keys' second.
    Shapes: args[0] (T_q, ...), args[1] (T_k, ...); got and expected the answer's shape.
    """
    everything = np.ones((args[0].shape[0], args[1].shape[0]), dtype=bool)  # (T_q, T_k)
    try:
        with_full_mask = as_array(call(answer, *args, everything), what)
    except Exception:  # a crash or an odd result here says nothing about None
        return
    if not (with_full_mask.shape == expected.shape and np.allclose(with_full_mask, expected)):
        return
    if np.all(np.isnan(got)) or np.allclose(np.nan_to_num(got), 0):
        blank = "NaN" if np.all(np.isnan(got)) else "zeros"
        raise Mismatch(
            f"{what}: with mask=None every score was blocked, so your result is all {blank} (with a mask "
            "that allows every key it is right). None means no mask: every query sees every key; block "
            "scores only when a mask is given",
            "mask-none",
        )
    raise Mismatch(
        f"{what}: with mask=None your result is wrong, yet with a mask that allows every key it is right. "
        "None means no mask: every query sees every key, and the scores stay as they are",
        "mask-none",
    )


def matches(got, candidate):
    """True when `got` has `candidate`'s shape and values (tight tolerance); NaN where `candidate` has NaN matches."""
    candidate = np.asarray(candidate, dtype=float)
    fits = got.shape == candidate.shape and np.issubdtype(got.dtype, np.number) and not np.iscomplexobj(got)
    return fits and bool(np.allclose(got.astype(float), candidate, rtol=1e-7, atol=1e-12, equal_nan=True))


def returned_tuple(got, names, what):
    """The learner's returned tuple as arrays, one per name in `names`, or Mismatch (wrong-shape)."""
    if not isinstance(got, (tuple, list)) or len(got) != len(names):
        returned = f"{len(got)} things" if isinstance(got, (tuple, list)) else "one thing"
        raise Mismatch(
            f"{what} should return {len(names)} things, ({', '.join(names)}) in that order; your "
            f"function returned {returned}",
            "wrong-shape",
        )
    return [as_array(x, f"{what}: {name}") for x, name in zip(got, names, strict=True)]


def returned_in_other_order(got, expected, names, what, code):
    """Raise Mismatch(code) when the arrays `got` are the `expected` ones, each named in `names`, in another order."""
    for order in itertools.permutations(range(len(names))):
        if list(order) != sorted(order) and all(matches(got[i], expected[j]) for i, j in enumerate(order)):
            raise Mismatch(
                f"{what} returned the right results in another order, {', '.join(names[j] for j in order)}; "
                f"return them in the order {', '.join(names)}",
                code,
            )
