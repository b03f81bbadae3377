"""The checks' engine: verdicts, the registry, `call`, `expect_*`, hints and solution.

A check never raises: ✓ correct / ✗ what is wrong, in words and shapes / · not attempted.
Adding an exercise: in the notebook's module (helpers/checks/nbNN_name.py) write a function
that takes the learner's answer and raises `Mismatch(message, code)` (or lets `expect_close` /
`expect_equal` / `call` raise it) when it is wrong, and decorate it with `@exercise(notebook=...,
hint=..., hint2=..., solution=..., mistakes={code: source})`. `solution` and each mistake are
source code defining the learner's function; the tests run every exercise's check on all of
them (each mistake must get its own code), on an untouched stub and on crashing answers.
Feedback teaches without handing out code: only `solution` holds code (docs/adding-an-exercise.md).
"""

import copy
import functools
import sys
import textwrap
import warnings
from dataclasses import dataclass

import numpy as np

from helpers.checks._diagnose import explain_crash, is_untouched_stub, uses_forbidden
from helpers.checks._expect import Mismatch, as_array, expect_close, expect_equal  # noqa: F401 - re-exported
from helpers.checks._report import report

CORRECT, INCORRECT, NOT_ATTEMPTED = "correct", "incorrect", "not attempted"


class NotAttempted(Exception):
    """The answer is still the untouched stub."""


@dataclass
class Exercise:
    name: str  # the check's name, also the name of the function the learner writes
    notebook: str
    check: object  # callable(answer) -> None, raises Mismatch when wrong
    hint: str  # the idea, in words; names at most a function
    hint2: str  # a more concrete second hint, still without code
    solution: str  # source code defining `name`: the only place an exercise shows code
    mistakes: dict  # code -> source defining a plausible wrong `name` that the check names with that code
    forbid: tuple = ()  # "module.name" of workshop functions the answer may not call (they are the answer)

    @property
    def wrong(self):
        """The source of the first registered mistake (one plausible wrong answer)."""
        return next(iter(self.mistakes.values()))

    def run(self, answer):
        """Check `answer`, print one verdict line and return the Result."""
        return _run(self, answer)


@dataclass
class Result:
    """What a check found; the check has already printed `message`."""

    exercise: str
    status: str
    message: str
    mistake: str = None  # the Mismatch code of a wrong answer ("wrong-axis", "crash", ...); None otherwise

    def __bool__(self):
        return self.status == CORRECT

    def _ipython_display_(self):
        # printed when the check ran; showing it again as Out[] would double it
        pass


EXERCISES = {}
# names the checks package already uses: an exercise may not take them
RESERVED = {
    "hint",
    "solution",
    "progress",
    "call",
    "exercise",
    "expect_close",
    "expect_equal",
    "as_array",
    "compare",
    "edited",
    "reporting",
}
LATEST = {}  # exercise name -> the status of its latest check in this kernel (for progress())
HINTS_SHOWN = {}  # exercise name -> how many of its hints the learner has asked for in this kernel


def exercise(*, notebook, hint, hint2, solution, mistakes, forbid=()):
    """Register a check; the decorated name becomes `checks.<name>(answer) -> Result`.

    hint: the idea in words (no code); hint2: a more concrete second hint (still no code).
    mistakes: {code: source} plausible wrong answers, each of which the check names with `code`.
    forbid: "module.name" of workshop functions that already are the answer (e.g. "helpers.softmax"
    for an exercise that writes a softmax): an answer calling one is told to write it itself.
    """

    def register(check_fn):
        name = check_fn.__name__
        if name in RESERVED:
            raise ValueError(f"exercise {name!r} would hide checks.{name}: rename it")
        if name in EXERCISES:  # a second one would silently replace the first
            raise ValueError(
                f"exercise {name!r} is registered twice (notebooks "
                f"{EXERCISES[name].notebook} and {notebook}): rename one"
            )
        if not mistakes:
            raise ValueError(f"exercise {name!r} registers no mistakes: give at least one plausible wrong answer")
        EXERCISES[name] = Exercise(
            name,
            notebook,
            check_fn,
            _clean(hint),
            _clean(hint2),
            _clean(solution),
            {code: _clean(source) for code, source in mistakes.items()},
            tuple(forbid),
        )

        @functools.wraps(check_fn)
        def run(answer):
            return EXERCISES[name].run(answer)

        return run

    return register


def _clean(text):
    return textwrap.dedent(text).strip()


def edited(source, *changes):
    """`source` (an exercise's solution) with each (old, new) text replaced: one plausible wrong answer.

    Each `old` must occur in the source, so a solution edited later cannot silently drop a mistake.
    """
    for old, new in changes:
        if old not in source:
            raise ValueError(f"{old!r} is not in the source it should change")
        source = source.replace(old, new)
    return source


def call(fn, *args, **kwargs):
    """Call the learner's function on copies of the (array, list, dict) arguments; returning None is a Mismatch.

    An exception from the learner's code is marked as theirs (the verdict quotes their line); one
    raised by the check's own code after it is a fault of the check, and says so.
    """
    if not callable(fn):
        raise Mismatch(f"expected a function, got {type(fn).__name__}", "not-a-function")
    copies = [copy.deepcopy(a) if isinstance(a, (np.ndarray, list, dict)) else a for a in args]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = fn(*copies, **kwargs)
    except Exception as exc:
        exc._raised_by_the_answer = True
        raise
    if result is None:
        raise Mismatch("your function returned None: did you forget `return`?", "returned-none")
    return result


def raised_by_the_answer(exc):
    """True when `exc` came out of the learner's own code, as `call` ran it (not out of the check's code)."""
    return getattr(exc, "_raised_by_the_answer", False)


def _next_help(name):
    """The line under a verdict: where the learner's next piece of help is (a hint, the second, the solution)."""
    shown = HINTS_SHOWN.get(name, 0)
    if shown == 0:
        return f"checks.hint({name!r}) gives a hint."
    if shown == 1:
        return f"checks.hint({name!r}) again gives a more concrete hint."
    return f"checks.solution({name!r}) shows a solution."


def _run(ex, answer):
    """Run one check and print one verdict; never raises (except KeyboardInterrupt).

    A ✗ names the mistake and says where help is; it does not print the hint itself: the message
    already says what is wrong, and a learner who wants more asks for it (docs/adding-an-exercise.md).
    """
    mistake = None
    try:
        if answer is None or answer is Ellipsis or is_untouched_stub(answer):
            raise NotAttempted
        forbidden = uses_forbidden(answer, ex.forbid)
        if forbidden:
            raise Mismatch(
                f"your {ex.name} calls the workshop's own `{forbidden}`, which is the answer: "
                "write it yourself from numpy operations, that is what this exercise practises",
                "forbidden",
            )
        ex.check(answer)
        status, message = CORRECT, f"✓ {ex.name}: correct!"
    except NotAttempted:
        status = NOT_ATTEMPTED
        message = (
            f"· {ex.name}: not attempted yet. Write your code in place of `raise NotImplementedError` "
            f"and run the cell again.\n  {_next_help(ex.name)}"
        )
    except Mismatch as exc:
        status, mistake = INCORRECT, exc.code
        message = f"✗ {ex.name}: {exc}\n  {_next_help(ex.name)}"
    except Exception as exc:  # never raised: a crash in the learner's code is shown, one in the check is owned
        status = INCORRECT
        if raised_by_the_answer(exc):
            mistake = "not-finished" if isinstance(exc, NotImplementedError) else "crash"
            text = explain_crash(exc, answer)
        else:
            mistake, text = (
                "check-failed",
                (
                    f"the check could not read your answer ({type(exc).__name__}: {exc}). Compare what your function "
                    "returns (its type, shape and order) with what the exercise asks for; if they match, this is a "
                    "fault of the workshop's check: tell your instructor"
                ),
            )
        message = f"✗ {ex.name}: {text}\n  {_next_help(ex.name)}"
    LATEST.pop(ex.name, None)  # re-inserted: the last one checked comes last
    LATEST[ex.name] = status
    print(message)
    sys.stdout.flush()
    report(ex.name, status, mistake, message)  # to the class board, on a hub that runs one; never raises
    return Result(ex.name, status, message, mistake)


def compare(got, expected, what="your result", rtol=1e-5, atol=1e-8):
    """Print ✓ when `got` has `expected`'s shape and values (to rtol/atol), else ✗ and where they differ.

    For trying things in a cell of your own: it never raises, so Run All never stops there. `got` may be
    a function of no arguments (`lambda: attention_row(X, layer, 8, 2)`): it is called here, and a crash
    inside it (or a stub that still raises NotImplementedError) is reported, not raised.
    Returns a Result (true when they agree).
    """
    try:
        if callable(got):
            got = call(got)
        expect_close(got, expected, what, rtol=rtol, atol=atol)
        status, mistake, message = CORRECT, None, f"✓ {what} agrees with the expected values"
    except Mismatch as exc:
        status, mistake, message = INCORRECT, exc.code, f"✗ {exc}"
    except Exception as exc:
        if raised_by_the_answer(exc):  # the learner's code crashed (or is not written yet)
            mistake = "not-finished" if isinstance(exc, NotImplementedError) else "crash"
            status, message = INCORRECT, f"✗ {what}: {explain_crash(exc)}"
        else:  # e.g. `expected` itself is not numbers
            status, mistake = INCORRECT, "not-an-array"
            message = f"✗ could not compare {what}: {type(exc).__name__}: {exc}"
    print(message)
    sys.stdout.flush()
    return Result("compare", status, message, mistake)


def _lookup(name):
    if name not in EXERCISES:
        known = ", ".join(sorted(EXERCISES))
        print(f"No exercise called {name!r}. The exercises are: {known}")
        return None
    return EXERCISES[name]


def hint(name, which=None):
    """Print a hint for exercise `name`: the first one, then (asked again) a more concrete second one.

    which: 1 or 2 prints that hint (and counts as having seen it).
    """
    ex = _lookup(name)
    if not ex:
        return
    if which not in (None, 1, 2):
        print(f"checks.hint({name!r}, which) takes which = 1 or 2, got {which!r}")
        return
    level = which or min(HINTS_SHOWN.get(name, 0) + 1, 2)
    HINTS_SHOWN[name] = max(HINTS_SHOWN.get(name, 0), level)
    if level == 1:
        print(f"Hint 1 of 2 for {name}: {ex.hint}\n  (checks.hint({name!r}) again gives a more concrete one.)")
    else:
        print(f"Hint 2 of 2 for {name}: {ex.hint2}\n  (checks.solution({name!r}) shows a solution.)")


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
