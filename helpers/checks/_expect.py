"""The comparisons a check is written with: `Mismatch`, `as_array`, `expect_close`, `expect_equal`.

Each raises Mismatch(message, code) naming what differs, in words and shapes; the engine (_core.py)
turns it into a ✗ verdict.
"""

import numpy as np


class Mismatch(Exception):
    """The answer is wrong: the message says what, in words and shapes; `code` names the mistake.

    code: a short stable name of a recognised mistake ("wrong-axis", "no-residual"), the same one the
    exercise's `mistakes` registers; the generic comparisons use "wrong-shape", "wrong-values", ...
    """

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def as_array(got, what):
    """`got` as a numeric ndarray, or Mismatch naming `what`."""
    try:
        arr = np.asarray(got)
    except Exception:  # a ragged list, an object numpy cannot read
        raise Mismatch(f"{what} should be an array, got {type(got).__name__}", "not-an-array") from None
    if arr.dtype.kind not in "biufc":  # bool, int, unsigned, float, complex; not objects, strings or dates
        raise Mismatch(f"{what} should be an array of numbers, got {type(got).__name__}", "not-an-array")
    return arr


def expect_close(got, expected, what, rtol=1e-5, atol=1e-8):
    """Raise Mismatch unless `got` has `expected`'s shape and values (to rtol/atol)."""
    expected = np.asarray(expected)
    arr = as_array(got, what)
    if arr.shape != expected.shape:
        raise Mismatch(f"{what} has shape {arr.shape}, expected {expected.shape}", "wrong-shape")
    if not np.issubdtype(arr.dtype, np.number) and arr.dtype != bool:
        raise Mismatch(f"{what} should hold numbers, got dtype {arr.dtype}", "not-an-array")
    if np.iscomplexobj(arr):
        raise Mismatch(f"{what} holds complex numbers; expected real ones", "not-an-array")
    if np.any(np.isnan(arr.astype(float))) and not np.any(np.isnan(expected.astype(float))):
        raise Mismatch(f"{what} contains NaN", "nan")
    if not np.allclose(arr, expected, rtol=rtol, atol=atol, equal_nan=True):
        diff = np.abs(arr.astype(float) - expected.astype(float))
        where = np.unravel_index(np.nanargmax(diff), diff.shape) if diff.ndim else ()
        at = f" at index {tuple(int(i) for i in where)}" if where else ""
        raise Mismatch(f"{what} differs from the expected values{at}: "
                       f"got {float(arr[where]):.4g}, expected {float(expected[where]):.4g}", "wrong-values")


def expect_equal(got, expected, what):
    """Raise Mismatch unless `got` equals `expected` exactly (shape, dtype kind and values)."""
    expected = np.asarray(expected)
    arr = as_array(got, what)
    if arr.shape != expected.shape:
        raise Mismatch(f"{what} has shape {arr.shape}, expected {expected.shape}", "wrong-shape")
    if expected.dtype == bool and arr.dtype != bool:
        raise Mismatch(f"{what} should be a boolean array (True = may attend), got dtype {arr.dtype}", "not-boolean")
    if not np.array_equal(arr, expected):
        where = tuple(int(i) for i in np.argwhere(arr != expected)[0])
        raise Mismatch(f"{what} differs at index {where}: got {arr[where]}, expected {expected[where]}", "wrong-values")
