"""What the checks read from the learner's function: an untouched stub, a forbidden shortcut, a crash.

Pure inspection of the learner's code and exceptions; the verdicts are in `_core.py`.
"""

import ast
import inspect
import re
import sys
import sysconfig
import textwrap
import traceback
import types
from pathlib import Path

import numpy as np

# frames in these folders are not the learner's: the workshop's helpers (the checks among them), numpy, the
# standard library, installed packages
_HELPERS = str(Path(__file__).parent.parent)
_NOT_THE_LEARNERS = tuple({_HELPERS, str(Path(np.__file__).parent),
                           *(sysconfig.get_paths()[key] for key in ("stdlib", "purelib", "platlib"))})


def is_untouched_stub(fn):
    """True when `fn` is still the stub: only comments, a docstring, `...`/pass and `raise NotImplementedError`."""
    if not isinstance(fn, types.FunctionType):
        return False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):  # no source (e.g. exec'd text): judge by the bytecode
        code = fn.__code__
        return code.co_names == ("NotImplementedError",) and all(
            c is None or c is Ellipsis or isinstance(c, str) for c in code.co_consts)
    definition = next((node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)), None)
    if definition is None:
        return False
    body = [stmt for stmt in definition.body
            if not (isinstance(stmt, ast.Pass) or isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))]
    return len(body) == 1 and _raises_not_implemented(body[0])


def _raises_not_implemented(stmt):
    if not isinstance(stmt, ast.Raise) or stmt.exc is None:
        return False
    exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _names_used(code):
    """Every global or attribute name the code object (and the functions nested in it) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_used(const)
    return names


def uses_forbidden(fn, forbid):
    """The first of `forbid` ("helpers.softmax", ...) that `fn` calls through its globals, else None."""
    if not forbid or not isinstance(fn, types.FunctionType):
        return None
    names = _names_used(fn.__code__)
    # the values those names have: the notebook's globals, and variables the function closes over
    reachable = {name: fn.__globals__[name] for name in names if name in fn.__globals__}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
        try:
            reachable[name] = cell.cell_contents
        except ValueError:  # a variable of the enclosing function not assigned yet
            pass
    for dotted in forbid:
        module_name, attr = dotted.rsplit(".", 1)
        target = getattr(sys.modules.get(module_name), attr, None)
        if target is None:  # that module is not even imported: nothing can call it
            continue
        for value in reachable.values():
            if value is target:  # e.g. `from helpers import softmax`, then softmax(...)
                return dotted
            # e.g. `import helpers`, then helpers.softmax(...)
            if isinstance(value, types.ModuleType) and attr in names and getattr(value, attr, None) is target:
                return dotted
    return None


def explain_crash(exc, fn=None):
    """One line: the exception, numpy's message explained where it is cryptic, and the learner's line.

    "your line" is the last line of the learner's own code in the traceback; when the exception came
    from a workshop helper that line called, the helper is named too.
    """
    every = traceback.extract_tb(exc.__traceback__)
    mine = [i for i, f in enumerate(every) if not f.filename.startswith(_NOT_THE_LEARNERS)]
    frames = [every[i] for i in mine]
    where = f" (in your line: {frames[-1].line})" if frames and frames[-1].line else ""
    inner = [f for f in every[mine[-1] + 1:] if f.filename.startswith(_HELPERS)] if mine else []
    if inner and where:
        where = f" (raised inside the workshop's `{_helper_name(inner[0])}`, called from your line: {frames[-1].line})"
    if isinstance(exc, NotImplementedError):
        raiser = frames[-1].name if frames else "?"
        if fn is not None and raiser == getattr(fn, "__name__", None):
            return ("your function still raises NotImplementedError: delete the `raise NotImplementedError` "
                    f"line once your code is written{where}")
        return (f"your code calls `{raiser}`, which still raises NotImplementedError: finish that one "
                f"first{where}")
    return f"your code raised {type(exc).__name__}: {exc}{where}{_explain_numpy(str(exc))}"


def _helper_name(frame):
    """helpers/attention.py, function softmax -> "helpers.attention.softmax"."""
    module = Path(frame.filename).relative_to(Path(_HELPERS).parent).with_suffix("")
    return ".".join(module.parts) + "." + frame.name


def _explain_numpy(message):
    """A sentence in shapes for numpy's two most cryptic messages (matmul and broadcasting), else ''."""
    matmul = re.search(r"matmul: Input operand \d has a mismatch in its core dimension \d.*\(size (\d+) is "
                       r"different from (\d+)\)", message)
    if matmul:
        return (f". In a matrix product A times B the last axis of A must equal the second-to-last of B, here "
                f"{matmul.group(2)} and {matmul.group(1)}: a missing transpose is the usual cause (to compare "
                "every row of one matrix with every row of another, the second goes in transposed)")
    broadcast = re.search(r"could not be broadcast together with shapes (\S+) (\S+)", message)
    if broadcast:
        return (f". Arrays of shapes {broadcast.group(1)} and {broadcast.group(2)} cannot be combined element "
                "by element: compared from the right, each pair of axes must be equal or 1. Insert an axis of "
                "length 1 where one is missing (indexing with None), or keep the summed axis after a sum or max "
                "(numpy's keepdims)")
    return ""
