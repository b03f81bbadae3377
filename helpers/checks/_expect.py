"""The comparisons a check is made of: `Mismatch`, `same`, reading the answer, `expect_close`, `expect_equal`.

Each raises Mismatch(message, code) naming what differs, in words and shapes; the engine (_core.py)
turns it into a ✗ verdict. `same` is the one meaning of "the same" every check uses.
"""

import numpy as np

# an answer computed in a lower precision than the checks' float64 is compared at that precision's tolerance
LOW_PRECISION = {np.dtype(np.float32): (1e-4, 1e-6), np.dtype(np.float16): (1e-2, 1e-3)}


class Mismatch(Exception):
    """The answer is wrong: the message says what, in words and shapes; `code` names the mistake.

    code: a short stable name of a recognised mistake ("wrong-axis", "no-residual"), the same one the
    exercise's `mistakes` registers; the generic comparisons use "wrong-shape", "wrong-values", ...
    """

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def same(got, candidate):
    """True when `got` has `candidate`'s shape and values: the one meaning of "the same" the checks use.

    To rtol 1e-6 and atol 1e-9 (an answer in float32 or float16 at its precision's tolerance); NaN matches NaN
    and an infinity the same infinity. Not numbers (strings, objects, complex numbers) are never the same.
    """
    try:
        got, candidate = np.asarray(got), np.asarray(candidate)
    except Exception:  # a ragged list
        return False
    if got.shape != candidate.shape or got.dtype.kind not in "biuf" or candidate.dtype.kind not in "biuf":
        return False
    low_rtol, low_atol = LOW_PRECISION.get(got.dtype, (0.0, 0.0))
    rtol, atol = max(1e-6, low_rtol), max(1e-9, low_atol)
    return bool(np.allclose(got.astype(float), candidate.astype(float), rtol=rtol, atol=atol, equal_nan=True))


def as_array(got, what):
    """`got` as a numeric ndarray, or Mismatch naming `what`.

    A tuple holding arrays, e.g. (output, weights) where one array is asked for, is named as such:
    "returned 2 things (a tuple)"; a tuple of plain numbers is read as an array.
    """
    if isinstance(got, tuple) and len(got) > 1 and any(isinstance(item, np.ndarray) for item in got):
        raise Mismatch(f"{what} returned {len(got)} things (a tuple); return only the one array", "not-an-array")
    try:
        arr = np.asarray(got)
    except Exception:  # a ragged list, an object numpy cannot read
        raise Mismatch(f"{what} should be an array, got {type(got).__name__}", "not-an-array") from None
    if arr.dtype.kind not in "biufc":  # bool, int, unsigned, float, complex; not objects, strings or dates
        raise Mismatch(f"{what} should be an array of numbers, got {type(got).__name__}", "not-an-array")
    return arr


def one_number(got, what, noun="one number"):
    """The learner's result as a float, or Mismatch saying what came back instead (noun: what it should be)."""
    arr = as_array(got, what)
    if arr.size != 1 or arr.ndim > 1:
        raise Mismatch(f"{what} should be {noun}, got an array of shape {arr.shape}", "wrong-shape")
    if np.iscomplexobj(arr) or arr.dtype == bool:
        raise Mismatch(f"{what} should be one real number, got {arr.dtype}", "not-an-array")
    return float(arr.reshape(()))


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


def shown(value, near):
    """`value` as text with as many significant digits as it takes to tell it from `near` (4 to 17)."""
    return next((f"{value:.{d}g}" for d in range(4, 18) if f"{value:.{d}g}" != f"{near:.{d}g}"), f"{value:.17g}")


def _families(got, expected, what, shape_only=False):
    """Name the answer by a family of mistakes (axes exchanged, shifted, scaled) when it belongs to one."""
    # imported here: the families are written with `same`, from this module
    from helpers.checks._families import axes_exchanged, scaled_by_a_constant, shifted_along_an_axis

    axes_exchanged(got, expected, what)
    shifted_along_an_axis(got, expected, what)
    if not shape_only:
        scaled_by_a_constant(got, expected, what)


def expect_close(got, expected, what, rtol=1e-5, atol=1e-8):
    """Raise Mismatch unless `got` has `expected`'s shape and values (to rtol/atol).

    An answer in float32 is compared with rtol 1e-4 and atol 1e-6 at least, one in float16 with rtol 1e-2 and
    atol 1e-3: a right answer computed in a lower precision passes. The entry named is the one
    that breaks atol + rtol·|expected| the most, printed with enough digits to show the difference.
    """
    expected = np.asarray(expected)
    arr = as_array(got, what)
    if arr.shape != expected.shape:
        if not np.iscomplexobj(arr):
            _families(arr, expected, what, shape_only=True)
        raise Mismatch(f"{what} has shape {arr.shape}, expected {expected.shape}", "wrong-shape")
    if np.iscomplexobj(arr):
        raise Mismatch(f"{what} holds complex numbers; expected real ones", "not-an-array")
    if np.any(np.isnan(arr.astype(float))) and not np.any(np.isnan(expected.astype(float))):
        raise Mismatch(f"{what} contains NaN", "nan")
    low_rtol, low_atol = LOW_PRECISION.get(arr.dtype, (0.0, 0.0))
    rtol, atol = max(rtol, low_rtol), max(atol, low_atol)
    if not np.allclose(arr, expected, rtol=rtol, atol=atol, equal_nan=True):
        values, wanted = arr.astype(float), expected.astype(float)
        with np.errstate(all="ignore"):
            excess = np.abs(values - wanted) - (atol + rtol * np.abs(wanted))  # > 0 where an entry is off
        excess = np.where(np.isnan(excess), -np.inf, excess)
        infinite = (np.isinf(values) | np.isinf(wanted)) & (values != wanted)  # an infinity where none belongs
        excess = np.where(infinite, np.inf, excess)
        where = np.unravel_index(np.argmax(excess), excess.shape) if excess.ndim else ()
        at = f" at index {tuple(int(i) for i in where)}" if where else ""
        _families(arr, expected, what)
        value, right = float(values[where]), float(wanted[where])
        raise Mismatch(
            f"{what} differs from the expected values{at}: got {shown(value, right)}, expected {shown(right, value)}",
            "wrong-values",
        )


def expect_equal(got, expected, what):
    """Raise Mismatch unless `got` equals `expected` exactly (shape, dtype kind and values)."""
    expected = np.asarray(expected)
    arr = as_array(got, what)
    if arr.shape != expected.shape:
        _families(arr, expected, what, shape_only=True)
        raise Mismatch(f"{what} has shape {arr.shape}, expected {expected.shape}", "wrong-shape")
    if expected.dtype == bool and arr.dtype != bool:
        raise Mismatch(f"{what} should be a boolean array (True = may attend), got dtype {arr.dtype}", "not-boolean")
    if expected.dtype.kind in "iu" and arr.dtype.kind == "f" and np.array_equal(arr, expected):
        raise Mismatch(
            f"{what} holds the right numbers, but as floats (dtype {arr.dtype}); an index or a count is a whole "
            "number, and a float cannot index an array: keep them whole numbers",
            "not-an-array",
        )
    if not np.array_equal(arr, expected):
        _families(arr, expected, what, shape_only=True)
        where = tuple(int(i) for i in np.argwhere(arr != expected)[0])
        raise Mismatch(
            f"{what} differs{f' at index {where}' if where else ''}: got {arr[where]}, expected {expected[where]}",
            "wrong-values",
        )  # a single number has no index to name
