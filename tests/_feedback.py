"""What exercise feedback may not contain: code. Used by tests/test_checks.py and the notebooks' tests.

The rule (docs/adding-an-exercise.md): a ✗ message names what is wrong in words and shapes, a hint
describes the idea and names at most a function, and code appears only in the solution. Maths in
words or symbols (√d_k, Q·Kᵀ, e^(m − m_new), sin and cos of p·ω) is not code.
"""

import ast
import re
from pathlib import Path

# call names that read as maths when their arguments do: exp(m − m_new), max(m, the block's max)
MATH = {"sin", "cos", "exp", "log", "max", "min", "softmax", "sqrt", "tanh", "e"}
PATTERNS = [
    (r"\bnp\.\w+(\.\w+)*\s*\(", "a numpy call"),
    (r"[\w)\]]\s*@\s*[\w(]", "a matrix product written as code (say it in words, or Q·Kᵀ)"),
    (r"\w\.T\b", "a transpose written as code"),
    (r"\w\.\w+\(\)", "a method call"),
    (r"\[[^\]]*(:|\.\.\.|\bNone\b)[^\]]*\]", "indexing or slicing"),
    (r"(?<![\s'\"(])\b[A-Za-z_]\w*\[[^\]]+\]", "indexing"),
    (r"\b(axis|keepdims|dtype|out|ord|where)\s*=", "a numpy keyword argument"),
    (r"\b[A-Za-z_][\w.]*\s?=\s?[A-Za-z_][\w.]*\(", "an assignment of a call"),
    (r"\*\*", "a power written as code"),
    (r"\+=|-=|\*=|/=", "an in-place update"),
]
CALL = re.compile(r"\b([A-Za-z_][\w.]*)\(([^()]*)\)")


def code_in(text):
    """The first code-like fragment of `text` and what it looks like, or None."""
    for pattern, why in PATTERNS:
        found = re.search(pattern, text)
        if found:
            return found.group(0), why
    for found in CALL.finditer(text):
        name, args = found.groups()
        if not args.strip() or (name in MATH and not re.search(r"[.@\[=]", args)):
            continue
        return found.group(0), "a call with arguments"
    return None


def _squeeze(text):
    """text without whitespace, and // read as / (a hint's d_model / n_heads is the solution's d_model // n_heads)."""
    return re.sub(r"\s+", "", text).replace("//", "/")


def solution_lines(source):
    """The solution's code, line by line: every statement, and the right-hand side of each assignment and return.

    Whitespace removed; only fragments with an operator, an index or a call (a bare name is not a line of code).
    """
    tree = ast.parse(source)
    fragments = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.If, ast.For, ast.With)):
            fragments.add(ast.unparse(node))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Return, ast.Expr)) and node.value is not None:
            fragments.add(ast.unparse(node.value))
    return {_squeeze(f) for f in fragments if re.search(r"[-+*/@\[(<>=]", f) and len(_squeeze(f)) >= 6}


def solution_code_in(text, source):
    """The first line of the solution `source` that `text` contains (whitespace ignored), or None."""
    squeezed = _squeeze(text)
    return next((line for line in sorted(solution_lines(source)) if line in squeezed), None)


def _literal(node):
    """A message's text as written; each {placeholder} of an f-string becomes X."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left), _literal(node.right)
        return None if left is None or right is None else left + right
    return None


def mismatch_messages(path):
    """(line, text, code) of every `Mismatch(text, code)` written in the module at `path`."""
    tree = ast.parse(Path(path).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Mismatch":
            text = _literal(node.args[0]) if node.args else None
            code = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "code"), None)
            )
            yield node.lineno, text, code
