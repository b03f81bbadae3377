"""The checks' engine: the registry, verdicts, hints and solution, and the hooks every verdict is handed to.

A check never raises: ✓ correct / ✗ what is wrong, in words and shapes / · not attempted. An exercise (its
module helpers/checks/nbNN_name.py, docs/adding-an-exercise.md) is a function yielding the `Case`s its answer
is called on, decorated with `@exercise(hint=..., hint2=..., solution=..., mistakes=...)`: the mistakes are a
table, each the solution with a change and the one message that names it (_cases.py). Feedback teaches
without handing out code: only `solution` holds code.
"""

import functools
import inspect
import textwrap
from dataclasses import dataclass, field

import numpy as np

from helpers.checks._cases import Case, Judge, call, define, edited, mistakes_of, raised_by_the_answer  # noqa: F401
from helpers.checks._diagnose import explain_crash, is_untouched_stub, uses_forbidden
from helpers.checks._expect import Mismatch, as_array, expect_close, expect_equal  # noqa: F401 - re-exported

CORRECT, INCORRECT, NOT_ATTEMPTED = "correct", "incorrect", "not attempted"
__all__ = "CORRECT INCORRECT NOT_ATTEMPTED EXERCISES Case Exercise Mismatch NotAttempted Result as_array call".split()
__all__ += "compare edited exercise expect_close expect_equal hint on_verdict progress reporting solution".split()


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
    ways: list = field(default_factory=list)  # every registered Mistake (a code may have several ways)

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
RESERVED = {name for name in __all__ if name.islower()}  # names the package already uses: no exercise may take one
LATEST = {}  # exercise name -> the status of its latest check in this kernel (for progress())
HINTS_SHOWN = {}  # exercise name -> how many of its hints the learner has asked for in this kernel
HOOKS = []  # on_verdict(fn): each fn(exercise, verdict, mistake, message) is handed every verdict
REPORTING = {"on": True}  # checks.reporting(False): the hooks are handed nothing


def exercise(*, hint, hint2, solution, mistakes, forbid=(), notebook=None, **judging):
    """Register a check; the decorated name becomes `checks.<name>(answer) -> Result`.

    The decorated function yields the Cases the answer is called on; mistakes: the table of mistakes (_cases.py);
    judging: how a result is read and compared (returns, exact, close, read, compare, families: _cases.Judge).
    notebook: by default from the module's name (nb05_masking -> 05_masking). hint: the idea in words (no code);
    hint2: more concrete, still no code. forbid: "module.name" of workshop functions that already are the answer.
    """

    def register(check_fn):
        name = check_fn.__name__
        book = notebook or check_fn.__module__.rsplit(".", 1)[-1].removeprefix("nb")
        if name in RESERVED:
            raise ValueError(f"exercise {name!r} would hide checks.{name}: rename it")
        if name in EXERCISES:  # a second one would silently replace the first
            raise ValueError(
                f"exercise {name!r} is registered twice (notebooks {EXERCISES[name].notebook} and {book}): rename one"
            )
        if not mistakes:
            raise ValueError(f"exercise {name!r} registers no mistakes: give at least one plausible wrong answer")
        if not isinstance(mistakes, str):
            raise TypeError(
                f"exercise {name!r}: mistakes should be a table of mistakes, a string; got {type(mistakes).__name__}"
            )
        if inspect.signature(check_fn).parameters:
            raise TypeError(
                f"exercise {name!r}: {name} takes no arguments: it yields the Cases its answer is called on"
            )
        clean = _clean(solution)
        ways = mistakes_of(mistakes, clean)
        check = Judge(name, check_fn, clean, ways, **judging)
        first = {way.code: way.source for way in reversed(ways)}  # each code's first way
        mistakes_by_code = {code: first[code] for code in dict.fromkeys(way.code for way in ways)}
        EXERCISES[name] = Exercise(
            name, book, check, _clean(hint), _clean(hint2), clean, mistakes_by_code, forbid, ways
        )

        @functools.wraps(check_fn)
        def run(answer):
            return EXERCISES[name].run(answer)

        return run

    return register


def _clean(text):
    return textwrap.dedent(text).strip()


def _next_help(name):
    """The line under a verdict: where the learner's next piece of help is (a hint, the second, the solution)."""
    steps = (
        f"checks.hint({name!r}) gives a hint.",
        f"checks.hint({name!r}) again gives a more concrete hint.",
        f"checks.solution({name!r}) shows a solution.",
    )
    return steps[min(HINTS_SHOWN.get(name, 0), 2)]


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
            mistake = "check-failed"
            text = (
                f"the check could not read your answer ({type(exc).__name__}: {exc}). Compare what your function "
                "returns (its type, shape and order) with what the exercise asks for; if they match, this is a "
                "fault of the workshop's check: tell your instructor"
            )
        message = f"✗ {ex.name}: {text}\n  {_next_help(ex.name)}"
    LATEST.pop(ex.name, None)  # re-inserted: the last one checked comes last
    LATEST[ex.name] = status
    print(message, flush=True)
    for hook in HOOKS if REPORTING["on"] else ():
        try:
            hook(ex.name, status, mistake, message)
        except Exception:  # a hook never stops a check
            pass
    return Result(ex.name, status, message, mistake)


def on_verdict(fn):
    """Hand every verdict from now on to `fn(exercise, verdict, mistake, message)` (once, however often called).

    A hook's exceptions are swallowed: a check never raises. A hook with a `switch(on) -> str` attribute is told
    when `reporting` switches, and says what holds. Returns fn, so it can decorate.
    """
    if fn not in HOOKS:
        HOOKS.append(fn)
    return fn


def reporting(on=None):
    """Switch handing your verdicts to the hooks (the class board's reporter, on a hub) off (`False`) or on (`True`).

    Prints what holds: each hook that can switch says it in its own words.
    """
    if on is not None:
        if not isinstance(on, bool):
            raise TypeError(f"reporting(on) takes True or False, got {type(on).__name__}")
        REPORTING["on"] = on
    said = [hook.switch(REPORTING["on"]) for hook in HOOKS if hasattr(hook, "switch")]
    print(
        "\n".join(said) or "Reporting: no reporter is set up in this kernel (no class board here), so nothing is sent."
    )


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
    print(message, flush=True)
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
