"""Exercise checks: ✓ correct / ✗ the mistake, named in words / · not attempted. A check never raises.

In a notebook:

    def cosine_similarity(a, b):
        # your code here
        raise NotImplementedError

    checks.cosine_similarity(cosine_similarity)   # prints one verdict line (and a hint)
    checks.hint("cosine_similarity")              # prints a hint (asked again: a more concrete one)
    checks.solution("cosine_similarity")          # prints a solution
    checks.compare(got, expected)                 # ✓ or ✗ where they differ, for a cell of your own
    checks.reporting(False)                       # on a hub with a class board: stop sending verdicts to it

The engine is in `_core.py`, the reference answers in `_reference.py`, and each notebook's
exercises in its own module, `nbNN_<notebook>.py`, found and registered on import.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from helpers.checks._core import (  # noqa: F401 - the public names of the package
    CORRECT,
    EXERCISES,
    INCORRECT,
    NOT_ATTEMPTED,
    Exercise,
    Mismatch,
    NotAttempted,
    Result,
    as_array,
    call,
    compare,
    edited,
    exercise,
    expect_close,
    expect_equal,
    hint,
    progress,
    solution,
)
from helpers.checks._report import reporting  # noqa: F401 - checks.reporting(False) stops sending verdicts

for _module in sorted(m.name for m in _pkgutil.iter_modules(__path__) if m.name.startswith("nb")):
    _importlib.import_module(f"{__name__}.{_module}")


def __getattr__(name):
    """checks.<exercise name>(answer) runs that exercise's check."""
    if name in EXERCISES:
        return EXERCISES[name].run
    raise AttributeError(f"helpers.checks has no exercise or function called {name!r}")


def __dir__():
    return sorted(set(globals()) | set(EXERCISES))
