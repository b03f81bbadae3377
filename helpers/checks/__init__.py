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

The engine is in `_core.py` (verdicts, hooks) and `_cases.py` (a check as cases and mistakes), each
notebook's exercises in its own module, `nbNN_<notebook>.py`, found and registered on import. The modules
named in WORKSHOP_CHECK_HOOKS (comma-separated; a hub's board configuration sets it) are imported too:
each may hand every verdict to something with `checks.on_verdict(fn)` (helpers.board_report does).
"""

import importlib as _importlib
import os as _os
import pkgutil as _pkgutil

from helpers.checks._core import *  # noqa: F403 - the public names of the package: _core.__all__
from helpers.checks._core import EXERCISES, __all__  # noqa: F401 - the same public names

for _module in sorted(m.name for m in _pkgutil.iter_modules(__path__) if m.name.startswith("nb")):  # noqa: F405
    _importlib.import_module(f"{__name__}.{_module}")

for _hooks in filter(None, (name.strip() for name in _os.environ.get("WORKSHOP_CHECK_HOOKS", "").split(","))):
    try:
        _importlib.import_module(_hooks)
    except Exception:  # a hook that cannot load must not stop the checks
        pass


def __getattr__(name):
    """checks.<exercise name>(answer) runs that exercise's check."""
    if name in EXERCISES:
        return EXERCISES[name].run
    raise AttributeError(f"helpers.checks has no exercise or function called {name!r}")


def __dir__():
    return sorted(set(globals()) | set(EXERCISES))
