"""The checks' engine: verdicts, the registry, `call`, `expect_*`, hint and solution.

A check never raises: ✓ correct / ✗ what differs + a hint / · not attempted.
Adding an exercise: in the notebook's module (helpers/checks/nbNN_name.py) write a function
that takes the learner's answer and raises `Mismatch` (through `expect_close` / `expect_equal`
/ `call`) when it is wrong, and decorate it with `@exercise(notebook=..., hint=..., solution=...,
wrong=...)`. `solution` and `wrong` are source code defining the learner's function; the
tests run every exercise's check on both, on an untouched stub and on crashing answers.
"""

import copy
import functools
import sys
import textwrap
import warnings
from dataclasses import dataclass

import numpy as np

from helpers.checks._diagnose import explain_crash, is_untouched_stub, uses_forbidden

CORRECT, INCORRECT, NOT_ATTEMPTED = "correct", "incorrect", "not attempted"


class Mismatch(Exception):
    """The answer is wrong; the message says what differs."""


class NotAttempted(Exception):
    """The answer is still the untouched stub."""


@dataclass
class Exercise:
    name: str  # the check's name, also the name of the function the learner writes
    notebook: str
    check: object  # callable(answer) -> None, raises Mismatch when wrong
    hint: str
    solution: str  # source code defining `name`
    wrong: str  # source code defining a plausible wrong `name` (for the tests)
    forbid: tuple = ()  # "module.name" of workshop functions the answer may not call (they are the answer)

    def run(self, answer):
        """Check `answer`, print one verdict line and return the Result."""
        return _run(self, answer)


@dataclass
class Result:
    """What a check found; the check has already printed `message`."""

    exercise: str
    status: str
    message: str

    def __bool__(self):
        return self.status == CORRECT

    def _ipython_display_(self):
        # printed when the check ran; showing it again as Out[] would double it
        pass


EXERCISES = {}
# names the checks package already uses: an exercise may not take them
RESERVED = {"hint", "solution", "progress", "call", "exercise", "expect_close", "expect_equal", "as_array"}
LATEST = {}  # exercise name -> the status of its latest check in this kernel (for progress())


def exercise(*, notebook, hint, solution, wrong, forbid=()):
    """Register a check; the decorated name becomes `checks.<name>(answer) -> Result`.

    forbid: "module.name" of workshop functions that already are the answer (e.g. "helpers.softmax"
    for an exercise that writes a softmax): an answer calling one is told to write it itself.
    """

    def register(check_fn):
        name = check_fn.__name__
        if name in RESERVED:
            raise ValueError(f"exercise {name!r} would hide checks.{name}: rename it")
        if name in EXERCISES:  # a second one would silently replace the first
            raise ValueError(f"exercise {name!r} is registered twice (notebooks "
                             f"{EXERCISES[name].notebook} and {notebook}): rename one")
        EXERCISES[name] = Exercise(name, notebook, check_fn, textwrap.dedent(hint).strip(),
                                   textwrap.dedent(solution).strip(), textwrap.dedent(wrong).strip(), tuple(forbid))

        @functools.wraps(check_fn)
        def run(answer):
            return EXERCISES[name].run(answer)

        return run

    return register


def call(fn, *args, **kwargs):
    """Call the learner's function on copies of the (array, list, dict) arguments; returning None is a Mismatch."""
    if not callable(fn):
        raise Mismatch(f"expected a function, got {type(fn).__name__}")
    copies = [copy.deepcopy(a) if isinstance(a, (np.ndarray, list, dict)) else a for a in args]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = fn(*copies, **kwargs)
    if result is None:
        raise Mismatch("your function returned None: did you forget `return`?")
    return result


def as_array(got, what):
    """`got` as a numeric ndarray, or Mismatch naming `what`."""
    try:
        arr = np.asarray(got)
    except Exception:  # a ragged list, an object numpy cannot read
        raise Mismatch(f"{what} should be an array, got {type(got).__name__}") from None
    if arr.dtype == object:
        raise Mismatch(f"{what} should be an array of numbers, got {type(got).__name__}")
    return arr


def expect_close(got, expected, what, rtol=1e-5, atol=1e-8):
    """Raise Mismatch unless `got` has `expected`'s shape and values (to rtol/atol)."""
    expected = np.asarray(expected)
    arr = as_array(got, what)
    if arr.shape != expected.shape:
        raise Mismatch(f"{what} has shape {arr.shape}, expected {expected.shape}")
    if not np.issubdtype(arr.dtype, np.number) and arr.dtype != bool:
        raise Mismatch(f"{what} should hold numbers, got dtype {arr.dtype}")
    if np.any(np.isnan(arr.astype(float))) and not np.any(np.isnan(expected.astype(float))):
        raise Mismatch(f"{what} contains NaN")
    if not np.allclose(arr, expected, rtol=rtol, atol=atol, equal_nan=True):
        diff = np.abs(arr.astype(float) - expected.astype(float))
        where = np.unravel_index(np.nanargmax(diff), diff.shape) if diff.ndim else ()
        at = f" at index {tuple(int(i) for i in where)}" if where else ""
        raise Mismatch(f"{what} differs from the expected values{at}: "
                       f"got {float(arr[where]):.4g}, expected {float(expected[where]):.4g}")


def expect_equal(got, expected, what):
    """Raise Mismatch unless `got` equals `expected` exactly (shape, dtype kind and values)."""
    expected = np.asarray(expected)
    arr = as_array(got, what)
    if arr.shape != expected.shape:
        raise Mismatch(f"{what} has shape {arr.shape}, expected {expected.shape}")
    if expected.dtype == bool and arr.dtype != bool:
        raise Mismatch(f"{what} should be a boolean array (True = may attend), got dtype {arr.dtype}")
    if not np.array_equal(arr, expected):
        where = tuple(int(i) for i in np.argwhere(arr != expected)[0])
        raise Mismatch(f"{what} differs at index {where}: got {arr[where]}, expected {expected[where]}")


def _run(ex, answer):
    """Run one check and print one verdict; never raises (except KeyboardInterrupt)."""
    try:
        if answer is None or answer is Ellipsis or is_untouched_stub(answer):
            raise NotAttempted
        forbidden = uses_forbidden(answer, ex.forbid)
        if forbidden:
            raise Mismatch(f"your {ex.name} calls the workshop's own `{forbidden}`, which is the answer: "
                           "write it yourself from numpy operations, that is what this exercise practises")
        ex.check(answer)
        status, message = CORRECT, f"✓ {ex.name}: correct!"
    except NotAttempted:
        status = NOT_ATTEMPTED
        message = (f"· {ex.name}: not attempted yet. Write your code in place of `raise NotImplementedError` "
                   f"and run the cell again.\n  checks.hint({ex.name!r}) gives a hint.")
    except Mismatch as exc:
        status, message = INCORRECT, f"✗ {ex.name}: {exc}\n  Hint: {ex.hint}"
    except Exception as exc:  # a crash inside the learner's code is shown, never raised
        status, message = INCORRECT, f"✗ {ex.name}: {explain_crash(exc, answer)}\n  Hint: {ex.hint}"
    LATEST.pop(ex.name, None)  # re-inserted: the last one checked comes last
    LATEST[ex.name] = status
    print(message)
    sys.stdout.flush()
    return Result(ex.name, status, message)


def _lookup(name):
    if name not in EXERCISES:
        known = ", ".join(sorted(EXERCISES))
        print(f"No exercise called {name!r}. The exercises are: {known}")
        return None
    return EXERCISES[name]


def hint(name):
    """Print the hint for exercise `name`."""
    ex = _lookup(name)
    if ex:
        print(f"Hint for {name}: {ex.hint}")


def solution(name):
    """Print a solution for exercise `name`."""
    ex = _lookup(name)
    if ex:
        print(ex.solution)


def progress(notebook=None):
    """Print which exercises of a notebook are done: the latest verdict of each in this kernel.

    notebook: e.g. "05_masking"; by default the notebook of the exercise checked last (or every
    notebook, before any check has run).
    """
    notebooks = list(dict.fromkeys(ex.notebook for ex in EXERCISES.values()))
    if notebook is None and LATEST:
        notebook = EXERCISES[list(LATEST)[-1]].notebook
    chosen = [notebook] if notebook is not None else notebooks
    if notebook is not None and notebook not in notebooks:
        print(f"No exercises for {notebook!r}. Notebooks with exercises: {', '.join(notebooks)}")
        return
    marks = {CORRECT: "✓", INCORRECT: "✗", NOT_ATTEMPTED: "·"}
    for name_of_notebook in chosen:
        names = [ex.name for ex in EXERCISES.values() if ex.notebook == name_of_notebook]
        done = sum(LATEST.get(n) == CORRECT for n in names)
        print(f"{name_of_notebook}: {done} of {len(names)} exercises correct")
        for n in names:
            status = LATEST.get(n)
            print(f"  {marks.get(status, ' ')} {n}" + ("" if status else "  (not checked yet)"))


def check_rng():
    """Each check draws its test inputs from the same seed, so its messages are repeatable."""
    return np.random.default_rng(1234)
