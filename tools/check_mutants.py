"""Mutants of every exercise's solution, run through its check: how many the check rejects, and how it names them.

    python tools/check_mutants.py            # the table, one row per exercise
    python tools/check_mutants.py --list     # every mutant, with the verdict and the code the check gave it

A mutant is the solution with one small change, made with `ast`: a numeric constant changed (n → n ± 1, a float
doubled or halved), an axis argument changed (to a neighbouring axis, or None), a slice bound shifted by one,
a transpose dropped. A check must reject every mutant, or the mutant must be equivalent to the solution:
shown by running both on random inputs of many sizes (RANDOM_INPUTS below), where they must agree.
tests/test_check_mutants.py asserts it, with the equivalent mutants listed by name.
"""

import argparse
import ast
import contextlib
import copy
import io
import sys
import textwrap

import numpy as np

from helpers import checks
from helpers.checks import _core

TRANSPOSES = {"transpose", "swapaxes", "moveaxis"}  # np.f(X, ...) or X.f(...): replaced by X


def _number(node):
    """The value of a numeric literal (an int or float constant, or minus one), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def _changed_numbers(value):
    if isinstance(value, int):
        return [value + 1, value - 1]
    return [value * 2, value / 2] if value else [1.0]


def _changed_axes(value):
    if value is None:
        return [-1]
    near = [value - 1, value + 1] if value < 0 else [value + 1, value - 1]
    return [a for a in near if (a < 0) == (value < 0)] + [None]


def _shifted(bound, by):
    return ast.BinOp(bound, ast.Add() if by > 0 else ast.Sub(), ast.Constant(1))


def _sites(tree):
    """(label, replace) for every change a mutant makes; replace(node) -> the new node, applied to a copy."""
    axis_values = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "axis":
            axis_values.add(id(node.value))
            old = None if isinstance(node.value, ast.Constant) and node.value.value is None else _number(node.value)
            if old is None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
                continue
            for new in _changed_axes(old):
                yield node, f"axis={old} → axis={new}", ("value", ast.Constant(new))
    for node in ast.walk(tree):
        value = _number(node)
        if value is not None and id(node) not in axis_values and not _inside_number(node, tree):
            for new in _changed_numbers(value):
                yield node, f"{value} → {new}", ("replace", ast.Constant(new))
        if isinstance(node, ast.Slice):
            for field, default in (("lower", 1), ("upper", -1)):
                bound = getattr(node, field)
                if bound is None:
                    yield node, f"{field} bound of a slice: none → {default}", (field, ast.Constant(default))
                    continue
                for by in (1, -1):
                    text = f"{field} bound {ast.unparse(bound)} → {ast.unparse(_shifted(bound, by))}"
                    yield node, text, (field, _shifted(copy.deepcopy(bound), by))
        if isinstance(node, ast.Attribute) and node.attr == "T":
            yield node, f"transpose dropped: {ast.unparse(node)} → {ast.unparse(node.value)}", ("replace", node.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TRANSPOSES:
            is_numpy = isinstance(node.func.value, ast.Name) and node.func.value.id == "np"
            target = node.args[0] if is_numpy and node.args else None if is_numpy else node.func.value
            if target is not None:
                text = f"transpose dropped: {ast.unparse(node)} → {ast.unparse(target)}"
                yield node, text, ("replace", target)


SWAPPED_OPERATORS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.MatMult: ast.Mult}


def _is_size(node):
    """len(x), x.shape[i] or x.size: an expression that reads a size from an array."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args:
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
        return True
    return isinstance(node, ast.Attribute) and node.attr == "size"


def _more_sites(tree):
    """The changes beyond the four kinds: an arithmetic operator swapped; a size read from the wrong place."""
    function = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef))
    params = [a.arg for a in function.args.args]
    sizes = {ast.unparse(node) for node in ast.walk(tree) if _is_size(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in SWAPPED_OPERATORS:
            swapped = ast.BinOp(node.left, SWAPPED_OPERATORS[type(node.op)](), node.right)
            yield node, f"operator swapped: {ast.unparse(node)} → {ast.unparse(swapped)}", ("replace", swapped)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in params:
            for other in params:
                if other != node.id:
                    yield node, f"argument swapped: {node.id} → {other}", ("replace", ast.Name(other, ast.Load()))
        if _is_size(node):
            for other in sorted(sizes - {ast.unparse(node)}) + [p for p in params if p not in ast.unparse(node)]:
                yield (
                    node,
                    f"size from elsewhere: {ast.unparse(node)} → {other}",
                    ("replace", ast.parse(other).body[0].value),
                )


def _inside_number(node, tree):
    """True for the constant inside a negative literal (-1 is changed as a whole)."""
    for parent in ast.walk(tree):
        if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub) and parent.operand is node:
            return True
    return False


class _Apply(ast.NodeTransformer):
    def __init__(self, target, change):
        self.target, (self.how, self.new) = target, change

    def visit(self, node):
        if node is self.target:
            if self.how == "replace":
                return copy.deepcopy(self.new)
            node = copy.copy(node)
            setattr(node, self.how, copy.deepcopy(self.new))
            return node
        return self.generic_visit(node)


def mutants(source):
    """[(label, mutant source)] of `source`, each differing from it; labels are unique."""
    tree = ast.parse(textwrap.dedent(source))
    plain = ast.unparse(tree)
    found, seen = [], {plain}
    order = list(ast.walk(tree))
    for target, label, change in [*_sites(tree), *_more_sites(tree)]:
        twin = copy.deepcopy(tree)
        twin_target = list(ast.walk(twin))[order.index(target)]  # the same node in the copy
        changed = ast.unparse(ast.fix_missing_locations(_Apply(twin_target, change).visit(twin)))
        if changed in seen:
            continue
        seen.add(changed)
        where = _line_of(target, textwrap.dedent(source))
        name = f"{label}, in `{where}`"
        while name in dict(found):
            name += " (again)"
        found.append((name, changed))
    return found


def _line_of(node, source):
    line = source.splitlines()[getattr(node, "lineno", 1) - 1].split("  #")[0].strip()
    return line if len(line) <= 70 else line[:67] + "..."


def define(source, name):
    """The function `source` defines as `name`, with only numpy in its namespace (as a learner's fresh cell)."""
    namespace = {"np": np}
    exec(source, namespace)  # noqa: S102 - the registered solution, changed by this module
    return namespace[name]


def verdict(name, answer):
    """The check's Result for `answer`, its printing swallowed, as a learner who asked for no hint."""
    _core.HINTS_SHOWN.pop(name, None)
    with contextlib.redirect_stdout(io.StringIO()):
        result = getattr(checks, name)(answer)
    _core.LATEST.pop(name, None)
    return result


# ---- random inputs of many sizes, to show a mutant the check accepts equivalent to the solution (or not)


def _project(d, vocab=9, seed=0):
    from helpers.checks._reference import toy_projection

    return toy_projection(d=d, vocab=vocab, seed=seed)


def _cached_step_inputs(rng):
    d, window = int(rng.choice([2, 4, 6, 8])), int(rng.integers(1, 7))
    project, words = _project(d, seed=int(rng.integers(100))), rng.integers(9, size=8)
    n = int(rng.integers(0, window + 1))
    position = int(rng.integers(n, 8))
    cached = [project(int(w), p) for p, w in zip(range(position - n, position), words, strict=False)]
    K = np.array([c[1] for c in cached]).reshape(n, d)
    V = np.array([c[2] for c in cached]).reshape(n, d)
    return (int(words[-1]), position, K, V, project, window), {}


def _attention_row_inputs(rng):
    from helpers.multihead import MultiHeadAttention

    n_heads = int(rng.choice([2, 3, 4]))
    d_model = n_heads * int(rng.choice([2, 3, 5]))
    layer = MultiHeadAttention.from_weights(
        *(rng.normal(0, 0.4, (d_model, d_model)) for _ in range(4)),
        n_heads,
        biases=[rng.normal(0, 0.5, d_model) for _ in range(4)],
    )
    T = int(rng.integers(2, 9))
    return (rng.normal(size=(T, d_model)), layer, int(rng.integers(n_heads)), int(rng.integers(T))), {}


def _sizes(rng, n, low=1, high=9):
    return [int(x) for x in rng.integers(low, high, size=n)]


def _mha_inputs(rng, self_attention=False):
    n_heads = int(rng.choice([1, 2, 3]))
    d_model = n_heads * int(rng.choice([2, 3, 4]))
    T_q, T_k = _sizes(rng, 2, 1, 7)
    if self_attention:
        T_k = T_q
    x, context = rng.normal(size=(T_q, d_model)), rng.normal(size=(T_k, d_model))
    W = [rng.normal(0, 0.6, (d_model, d_model)) for _ in range(4)]
    if self_attention:
        return (x, *W, n_heads), {}
    mask = rng.random((T_q, T_k)) < 0.7 if rng.random() < 0.5 else None
    if mask is not None:
        mask[:, 0] = True  # every query sees a key (the solution's answer for a blind row is NaN)
    return (x, context, *W, n_heads, mask), {}


def _loss_inputs(rng):
    B, T, V = int(rng.integers(1, 4)), int(rng.integers(2, 8)), int(rng.integers(2, 9))
    return (rng.normal(size=(B, T, V)) * rng.choice([1, 300]), rng.integers(V, size=(B, T))), {}


def _update_inputs(rng):
    b_k, d_v = _sizes(rng, 2, 1, 6)
    m = -np.inf if rng.random() < 0.3 else float(rng.normal())
    l = 0.0 if m == -np.inf else float(rng.uniform(0.5, 4))
    acc = np.zeros(d_v) if m == -np.inf else rng.normal(size=d_v)
    return (m, l, acc, rng.normal(size=b_k) * 2, rng.normal(size=(b_k, d_v))), {}


def _kv_step_inputs(rng):
    T, t, d_k, d_v = int(rng.integers(0, 5)), *_sizes(rng, 3, 1, 6)
    return tuple(rng.normal(size=s) for s in ((T, d_k), (T, d_v), (t, d_k), (t, d_k), (t, d_v))), {}


def _masked_softmax_inputs(rng):
    shape = tuple(_sizes(rng, int(rng.integers(2, 4)), 1, 6))
    mask = rng.random(shape) < 0.6
    return (rng.normal(size=shape) * rng.choice([1, 300]), mask), {}


def _embedding_backward_inputs(rng):
    B, T, d, vocab = *_sizes(rng, 3, 1, 6), int(rng.integers(2, 8))
    return (rng.normal(size=(B, T, d)), rng.integers(vocab, size=(B, T)), vocab), {}


def _sentence_embedding_inputs(rng):
    n, T, d = _sizes(rng, 3, 1, 7)
    real = np.arange(T) < rng.integers(1, T + 1, size=n)[:, None]
    return (rng.normal(size=(n, T, d)), real), {}


def _positions(rng):
    return rng.integers(0, 600, size=int(rng.integers(1, 7))) if rng.random() < 0.5 else rng.uniform(0, 60, size=3)


def _q8_0_inputs(rng):
    n = int(rng.integers(1, 6))
    scales = np.asarray(rng.uniform(-0.05, 0.05, size=(n, 1)), dtype="<f2")  # (n, 1): each block's float16 scale
    numbers = rng.integers(-128, 128, size=(n, 32)).astype(np.int8)  # (n, 32): signed bytes
    return (np.concatenate([scales.view(np.uint8), numbers.view(np.uint8)], axis=1),), {}  # (n, 34) uint8


def _gqa_inputs(rng):
    n_kv, group, T, d = (
        int(rng.integers(1, 4)),
        int(rng.integers(1, 4)),
        int(rng.integers(1, 7)),
        int(rng.integers(1, 7)),
    )
    q, k, v = rng.normal(size=(n_kv * group, d)), rng.normal(size=(n_kv, d)), rng.normal(size=(n_kv, d))
    return (q, k, v, rng.normal(size=(n_kv, T, d)), rng.normal(size=(n_kv, T, d))), {}


RANDOM_INPUTS = {  # exercise -> rng -> (args, kwargs): inputs of many sizes, none of them equal by design
    "cosine_similarity": lambda rng: ((rng.normal(size=(d := int(rng.integers(2, 9)))), rng.normal(size=d)), {}),
    "nearest_neighbours": lambda rng: (
        (rng.normal(size=(d := int(rng.integers(2, 6)))), rng.normal(size=(n := int(rng.integers(2, 12)), d))),
        {"k": int(rng.integers(1, n + 1))},
    ),
    "similarity_matrix": lambda rng: ((rng.normal(size=tuple(_sizes(rng, 2))),), {"cosine": bool(rng.random() < 0.5)}),
    "row_softmax": lambda rng: ((rng.normal(size=tuple(_sizes(rng, 2))) * rng.choice([1, 500]),), {}),
    "attention_without_weights": lambda rng: ((rng.normal(size=tuple(_sizes(rng, 2))),), {}),
    "qkv_scores": lambda rng: (
        (
            rng.normal(size=(int(rng.integers(1, 7)), d := int(rng.integers(1, 7)))),
            rng.normal(size=(d, k := int(rng.integers(1, 7)))),
            rng.normal(size=(d, k)),
            rng.normal(size=(d, int(rng.integers(1, 7)))),
        ),
        {},
    ),
    "softmax_backward": lambda rng: (
        (rng.normal(size=(s := tuple(_sizes(rng, int(rng.integers(1, 4)))))), _softmax(rng.normal(size=s))),
        {},
    ),
    "score_variance": lambda rng: ((int(rng.integers(1, 500)), *rng.uniform(0.1, 4, size=2)), {}),
    "scaled_scores": lambda rng: (
        (rng.normal(size=(int(rng.integers(1, 7)), d := int(rng.integers(1, 70)))), rng.normal(size=(5, d))),
        {},
    ),
    "build_causal_mask": lambda rng: ((T_q := int(rng.integers(1, 8)), T_q + int(rng.integers(0, 5))), {}),
    "masked_softmax": _masked_softmax_inputs,
    "split_heads_batched": lambda rng: (
        (rng.normal(size=(*_sizes(rng, int(rng.integers(1, 4))), (h := int(rng.integers(1, 4))) * 3)), h),
        {},
    ),
    "merge_heads_batched": lambda rng: ((rng.normal(size=tuple(_sizes(rng, int(rng.integers(3, 6)), 1, 5))),), {}),
    "multi_head_cross_attention": _mha_inputs,
    "sinusoidal_table": lambda rng: ((_positions(rng), 2 * int(rng.integers(1, 40))), {}),
    "added_length": lambda rng: ((float(rng.uniform(0, 50)), 2 * int(rng.integers(1, 300))), {}),
    "score_from_offset": lambda rng: (
        (rng.normal(size=2), rng.normal(size=2), int(rng.integers(-9, 10)), float(rng.uniform(-2, 2))),
        {},
    ),
    "residual_attention_block": lambda rng: _mha_inputs(rng, self_attention=True),
    "embedding_backward": _embedding_backward_inputs,
    "attention_row": _attention_row_inputs,
    "sentence_embedding": _sentence_embedding_inputs,
    "online_softmax_update": _update_inputs,
    "kv_cache_step": _kv_step_inputs,
    "next_word_loss": _loss_inputs,
    "sample_next_word": lambda rng: (
        (rng.normal(size=int(rng.integers(2, 9))) * 3, float(rng.choice([0, 0.3, 1, 2.5])), float(rng.random())),
        {},
    ),
    "cached_attention_step": _cached_step_inputs,
    "unpack_q8_0": _q8_0_inputs,
    "decoder_parameters": lambda rng: (
        (int(rng.integers(2, 500)), (h := int(rng.integers(1, 9))) * int(rng.integers(1, 9)), int(rng.integers(1, 9)))
        + (h, h // int(rng.choice([d for d in range(1, h + 1) if h % d == 0])), int(rng.integers(1, 50))),
        {},
    ),
    "gqa_step": _gqa_inputs,
}


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _agree(a, b):
    """Two outcomes agree: the same exception type, or equal results (arrays to 1e-9, tuples part by part)."""
    if isinstance(a, Exception) or isinstance(b, Exception):
        return type(a) is type(b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_agree(x, y) for x, y in zip(a, b, strict=True))
    try:
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    except (TypeError, ValueError):
        return False
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True))


def _outcome(fn, args, kwargs):
    try:
        with np.errstate(all="ignore"):
            return fn(*copy.deepcopy(args), **kwargs)
    except Exception as exc:  # a mutant may crash where the solution does not
        return exc


def equivalent(name, mutant, draws=300, seed=0):
    """True when the mutant and the solution agree on `draws` random inputs (RANDOM_INPUTS) of many sizes."""
    right = define(checks.EXERCISES[name].solution, name)
    rng = np.random.default_rng(seed)
    for _ in range(draws):
        args, kwargs = RANDOM_INPUTS[name](rng)
        if not _agree(_outcome(right, args, kwargs), _outcome(mutant, args, kwargs)):
            return False
    return True


def judge(name):
    """[(label, status, mistake code)] for every mutant of exercise `name`'s solution."""
    ex = checks.EXERCISES[name]
    rows = []
    for label, source in mutants(ex.solution):
        result = verdict(name, define(source, name))
        status = result.status
        if status == checks.CORRECT:
            status = "equivalent" if equivalent(name, define(source, name)) else "accepted"
        rows.append((label, status, result.mistake))
    return rows


def kind_of(name, code):
    """How a rejected mutant was named: by a registered mistake, a family of mistakes, its crash, or generically."""
    from helpers.checks._families import FAMILY_CODES

    if code in checks.EXERCISES[name].mistakes:
        return "registered"
    return "family" if code in FAMILY_CODES else "crash" if code in ("crash", "not-finished") else "generic"


def table(names=None):
    """The markdown table: per exercise, the mutants, how many the check rejects, and how it names them."""
    lines = [
        "| exercise | mutants | rejected | named: registered | named: family | its crash | generic | equivalent "
        "| accepted |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    totals = np.zeros(8, dtype=int)
    for name in names or checks.EXERCISES:
        rows = judge(name)
        rejected = [r for r in rows if r[1] == checks.INCORRECT]
        kinds = [kind_of(name, code) for _, _, code in rejected]
        counts = [
            len(rows),
            len(rejected),
            kinds.count("registered"),
            kinds.count("family"),
            kinds.count("crash"),
            kinds.count("generic"),
            sum(r[1] == "equivalent" for r in rows),
            sum(r[1] == "accepted" for r in rows),
        ]
        totals += counts
        lines.append(f"| `{name}` | " + " | ".join(map(str, counts)) + " |")
    lines.append("| all | " + " | ".join(map(str, totals)) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="every mutant with its verdict and code")
    parser.add_argument("names", nargs="*", help="exercises (default: all)")
    args = parser.parse_args(argv)
    if args.list:
        for name in args.names or checks.EXERCISES:
            for label, status, code in judge(name):
                print(f"{name}\t{status}\t{code}\t{label}")
        return 0
    print(table(args.names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
