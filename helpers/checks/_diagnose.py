"""What the checks read from the learner's function: an untouched stub, a forbidden shortcut, a crash.

Pure inspection of the learner's code and exceptions; the verdicts are in `_core.py`.
"""

import ast
import dis
import importlib
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
# standard library, installed packages; and numpy < 1.25's dispatch code, compiled under a file name of its own
_HELPERS = str(Path(__file__).parent.parent)
_NOT_THE_LEARNERS = tuple(
    {
        _HELPERS,
        str(Path(np.__file__).parent),
        "<__array_function__ internals>",
        *(sysconfig.get_paths()[key] for key in ("stdlib", "purelib", "platlib")),
    }
)


def is_untouched_stub(fn):
    """True when `fn` is still the stub: only comments, a docstring, `...`/pass and `raise NotImplementedError`."""
    if not isinstance(fn, types.FunctionType):
        return False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):  # no source (e.g. exec'd text): judge by the bytecode
        code = fn.__code__
        return code.co_names == ("NotImplementedError",) and all(
            c is None or c is Ellipsis or isinstance(c, str) for c in code.co_consts
        )
    definition = next((node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)), None)
    if definition is None:
        return False
    body = [
        stmt
        for stmt in definition.body
        if not (isinstance(stmt, ast.Pass) or isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))
    ]
    return len(body) == 1 and _raises_not_implemented(body[0])


def _raises_not_implemented(stmt):
    if not isinstance(stmt, ast.Raise) or stmt.exc is None:
        return False
    exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _code_objects(code):
    """The code object and those of the functions nested in it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def uses_forbidden(fn, forbid):
    """The first of `forbid` ("helpers.softmax", ...) that `fn` reaches through its globals or imports, else None."""
    if not forbid or not isinstance(fn, types.FunctionType):
        return None
    codes = list(_code_objects(fn.__code__))
    names = {name for code in codes for name in code.co_names}  # every global or attribute name it refers to
    # the values those names have: the notebook's globals, and variables the function closes over
    reachable = {name: fn.__globals__[name] for name in names if name in fn.__globals__}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
        try:
            reachable[name] = cell.cell_contents
        except ValueError:  # a variable of the enclosing function not assigned yet
            pass
    # modules imported inside the function body (`from helpers.attention import softmax`, `import helpers`,
    # `from helpers import embeddings`): the answer has not run yet, so the workshop's are imported here
    in_body = {i.argval for code in codes for i in dis.get_instructions(code) if i.opname == "IMPORT_NAME"}
    workshop = sorted(name for name in in_body if name == "helpers" or name.startswith("helpers."))
    for name in (workshop + [dotted.rsplit(".", 1)[0] for dotted in forbid]) if workshop else ():
        try:
            importlib.import_module(name)
        except Exception:  # a module that does not exist: the answer's own crash, later
            pass
    imported = [sys.modules[name] for name in in_body if name in sys.modules]
    imported += [
        getattr(module, name)
        for module in imported
        for name in names
        if isinstance(getattr(module, name, None), types.ModuleType)
    ]
    for dotted in forbid:
        module_name, attr = dotted.rsplit(".", 1)
        target = getattr(sys.modules.get(module_name), attr, None)
        if target is None:  # that module is not even imported: nothing can call it
            continue
        for value in [*reachable.values(), *imported]:
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
    inner = [f for f in every[mine[-1] + 1 :] if f.filename.startswith(_HELPERS)] if mine else []
    if inner and where:
        where = f" (raised inside the workshop's `{_helper_name(inner[0])}`, called from your line: {frames[-1].line})"
    if isinstance(exc, NotImplementedError):
        raiser = frames[-1].name if frames else "?"
        if fn is not None and raiser == getattr(fn, "__name__", None):
            return (
                "your function still raises NotImplementedError: delete the `raise NotImplementedError` "
                f"line once your code is written{where}"
            )
        return f"your code calls `{raiser}`, which still raises NotImplementedError: finish that one first{where}"
    line = frames[-1].line if frames and frames[-1].line else ""
    return f"your code raised {type(exc).__name__}: {exc}{where}{_explain_numpy(str(exc), line)}"


def _helper_name(frame):
    """helpers/attention.py, function softmax -> "helpers.attention.softmax"."""
    module = Path(frame.filename).relative_to(Path(_HELPERS).parent).with_suffix("")
    return ".".join(module.parts) + "." + frame.name


_PRODUCT = (
    ". In a matrix product A times B the last axis of A must equal the second-to-last of B, here {} and {}: "
    "check which factor comes first, and whether a transpose is missing or one too many"
)
_SHAPE = re.compile(r"\(([\d, ]*)\)")


def _shape(text):
    return tuple(int(n) for n in text.split(",") if n.strip())


def _explain_numpy(message, line=""):
    """A sentence in shapes for numpy's cryptic messages (matrix products, broadcasting) and two Python slips, else ''.

    line: the learner's line that raised, when known (it tells an entry-by-entry product from a sum or a division).
    """
    matmul = re.search(
        r"matmul: Input operand \d has a mismatch in its core dimension \d.*\(size (\d+) is "
        r"different from (\d+)\)",
        message,
    )
    if matmul:
        return _PRODUCT.format(matmul.group(2), matmul.group(1))
    dot = re.search(r"shapes \([\d, ]*\) and \([\d, ]*\) not aligned: (\d+) \(dim \d+\) != (\d+) \(dim \d+\)", message)
    if dot:  # np.dot's own wording for the same mistake
        return _PRODUCT.format(dot.group(1), dot.group(2))
    broadcast = re.search(r"could not be broadcast together with (?:remapped )?shapes (.*)", message)
    if broadcast:
        shapes = [_shape(found) for found in _SHAPE.findall(broadcast.group(1))[:2]]
        if len(shapes) < 2:
            return ""
        a, b = shapes
        text = (
            f". Arrays of shapes {a} and {b} cannot be combined entry by entry: compared from the right, each "
            "pair of axes must be equal or 1"
        )
        starred = re.search(r"(?<![*])[*](?![*=])", line or "")
        if (
            starred and len(a) == len(b) == 2 and 1 not in a + b and a != b and (a[1] == b[0] or b[1] == a[0])
        ):  # e.g. X times its transpose, or weights times X
            return (
                f"{text}. A single star multiplies entry by entry; a sum of products over a shared axis is a "
                "matrix product"
            )
        if len(a) != len(b) or 1 in a + b:  # an axis dropped by a sum or a max, or one never inserted
            return (
                f"{text}. Insert an axis of length 1 where one is missing (indexing with None), or keep the "
                "summed axis after a sum or max (numpy's keepdims)"
            )
        return text
    if re.search(r"unsupported operand type\(s\) for \^|'bitwise_xor' not supported", message):
        return ". In Python the caret is bitwise XOR (on whole numbers), not a power: a power is written with two stars"
    if re.search(r"'(numpy\.)?float(16|32|64)?' object cannot be interpreted as an integer", message):
        return (
            ". A shape, a size or a count needs whole numbers: a division with one slash gives a float even when "
            "it comes out even (8 / 2 is 4.0); integer division, written with two slashes, gives a whole number"
        )
    return ""
