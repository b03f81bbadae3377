"""Write docs/helpers-api.md: every public name of helpers/, its signature, summary and the notebook that teaches it.

    python tools/api_reference.py            # (re)write the page
    python tools/api_reference.py --check    # exit 1 with a diff if the page is not what this writes now

The page is read from the package itself (import + inspect): a module's public names are its
`__all__`, else the functions, classes and constants it defines (a package also counts what it
imports from its own private modules, as checks/ and widgets/ do). The notebook of a name is
parsed from its docstring's "Taught in NN_name" and "used in NN_name" wording; a name whose docstring
says neither takes its module's: a module docstring's "Taught in NN_name." (one notebook, perhaps with
"used in ...") applies to every public name the module defines. A module that names several notebooks
only sums them up, and each of its names says its own.
"""

import argparse
import ast
import difflib
import importlib
import inspect
import io
import pkgutil
import re
import sys
import tokenize
from pathlib import Path

import helpers  # installed in .venv by make setup (pip install --editable .)
from helpers import checks

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "helpers-api.md"
COMMAND = "python tools/api_reference.py"

# the contract (ARCHITECTURE's helpers API, helpers/__init__.py's docstring, tests/test_repository.py)
CONTRACT = [  # (module, [the name imported, then the contract methods of the object it makes])
    ("helpers", ["softmax"]),
    ("helpers", ["scaled_dot_product_attention"]),
    ("helpers", ["softmax_backward"]),
    ("helpers", ["attention_backward"]),
    ("helpers", ["causal_mask"]),
    ("helpers", ["padding_mask"]),
    ("helpers", ["MultiHeadAttention", "MultiHeadAttention.__call__"]),
    ("helpers", ["sinusoidal_positional_encoding"]),
    ("helpers.efficient", ["tiled_attention"]),
    ("helpers.positional", ["apply_rotary"]),
    (
        "helpers.pretrained",
        ["load_minilm", "MiniLM.tokenize", "MiniLM.encode", "MiniLM.hidden_states", "MiniLM.attentions"],
    ),
    ("helpers.tiny_gpt", ["VOCAB"]),
    ("helpers.tiny_gpt", ["train_default"]),
    ("helpers.tiny_gpt", ["forward"]),
    ("helpers.tiny_gpt", ["generate"]),
]

NOTEBOOK = r"\b\d\d_[a-z_]+[a-z]"  # 03_queries_keys_values (the pattern tests/test_repository.py reads)
TAUGHT = re.compile(r"(?<!be )\b[Tt]aught in ([^\n]*)")  # "to be taught in" is code ahead of its notebook
USED = re.compile(r"\b[Uu]sed (?:in|from) (" + NOTEBOOK + ")")
INSTANCE = {"MultiHeadAttention": "mha = MultiHeadAttention(d_model, n_heads)", "MiniLM": "model = load_minilm()"}


# --- reading the package ------------------------------------------------------------------------


def public_modules():
    """Every public module of helpers, sorted; the exercises' own modules are summed up in one table."""
    names = ["helpers"] + [m.name for m in pkgutil.walk_packages(helpers.__path__, "helpers.")]
    public = [n for n in names if not any(part.startswith("_") for part in n.split("."))]
    return sorted(n for n in public if not n.startswith("helpers.checks.nb"))


def defined_names(module):
    """Public names a module defines: its functions and classes, its top-level constants and,
    for a package, what it imports from its own private modules."""
    names = {
        n
        for n, obj in vars(module).items()
        if not n.startswith("_")
        and getattr(obj, "__module__", None) == module.__name__
        and (inspect.isfunction(obj) or inspect.isclass(obj))
    }
    tree = ast.parse(inspect.getsource(module))
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(module.__name__ + "._"):
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
    return sorted(n for n in names if not n.startswith("_"))


def public_names(module):
    names = getattr(module, "__all__", None)
    return sorted(names) if names is not None else defined_names(module)


def notebooks_of(doc):
    """(taught, used): the notebooks a docstring says teach the name, and those that only use it."""
    taught, used = [], []
    doc = re.sub(r"(?<=\S)[ \t]*\n[ \t]*(?=\S)", " ", doc or "")  # a wrapped "Taught in" line, read whole
    for line in TAUGHT.findall(doc):
        head, _, tail = _split_used(line)
        taught += re.findall(NOTEBOOK, head)
        used += re.findall(NOTEBOOK, tail)
    used += USED.findall(doc)
    taught = sorted(set(taught))
    return taught, sorted(set(used) - set(taught))


def module_notebooks(obj):
    """(taught, used) that the docstring of the module defining obj gives all its names: ([], []) when it
    names no notebook, or several (then each name says its own)."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    taught, used = notebooks_of(getattr(module, "__doc__", None))
    return (taught, used) if len(taught) == 1 else ([], [])


def notebooks_of_name(obj, doc):
    """(taught, used) for a public name: its own docstring's, else its module's."""
    taught, used = notebooks_of(doc)
    return (taught, used) if taught or used else module_notebooks(obj)


def _split_used(line):
    """'03_x; used in 04_y' -> ('03_x; ', '', ' 04_y'): what follows "used in/from" is only used there."""
    match = re.search(r"\b[Uu]sed (?:in|from)\b", line)
    return (line, "", "") if match is None else (line[: match.start()], "", line[match.end() :])


def summary(doc):
    """The docstring's first line; its first paragraph when that line is a sentence cut in two."""
    paragraph = (doc or "").strip().split("\n\n")[0].splitlines()
    if not paragraph:
        return ""
    first = paragraph[0].strip()
    if first.endswith((",", ";", ":")) or re.search(r"\b(a|an|the|of|and|or|drawn|to)$", first):
        first = " ".join(line.strip() for line in paragraph)
    return re.split(r"\s*(?<!be )\b[Tt]aught in ", first)[0]  # the notebook has its own column


def own_doc(obj):
    """obj's own docstring: None for a method without one (not its parent's), or a dataclass's made-up one."""
    doc = getattr(obj, "__doc__", None)
    if inspect.isclass(obj) and doc and doc.startswith(obj.__name__ + "("):
        return None  # @dataclass writes "Name(field: type, ...)" when the class has none
    return inspect.cleandoc(doc) if doc else None


def comment_of(module, name):
    """The comment on a constant's first or last line (`NAME = ...  # what it is`), or the comment line above it."""
    source = inspect.getsource(module)
    comments = {
        tok.start[0]: tok.string.lstrip("# ").strip()
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    code_lines = source.splitlines()
    for node in ast.parse(source).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            above = node.lineno - 1
            own_line_above = above in comments and code_lines[above - 1].lstrip().startswith("#")
            for line in (node.lineno, node.end_lineno, above if own_line_above else None):
                if line in comments and not comments[line].startswith("noqa"):
                    return comments[line]
    return ""


def default_text(value):
    """A default value as it would be written in code: np.float32, not <class 'numpy.float32'>."""
    if inspect.isclass(value) or inspect.isfunction(value):
        module = {"numpy": "np", "builtins": ""}.get(value.__module__, value.__module__)
        return f"{module}.{value.__qualname__}" if module else value.__qualname__
    text = repr(value)
    return re.sub(r" at 0x[0-9a-f]+", "", text)  # an address differs on every run


def signature(obj, drop_self=False):
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return ""  # an exception: raised with a message, never called by a learner
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    params = list(sig.parameters.values())
    if drop_self and params and params[0].name == "self":
        params = params[1:]
    parts, star_done = [], False
    for p in params:
        if p.kind is p.KEYWORD_ONLY and not star_done:
            parts.append("*")
        star_done = star_done or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.default is not p.empty:
            text += "=" + default_text(p.default)
        parts.append(text)
    return "(" + ", ".join(parts) + ")"


def home(obj, module_name, name):
    """The module that defines obj (where the page describes it), or module_name for a constant."""
    defined = getattr(obj, "__module__", None)
    if (inspect.isfunction(obj) or inspect.isclass(obj) or callable(obj)) and defined:
        return defined if not defined.split(".")[-1].startswith("_") else module_name
    return module_name


def entry(module, name):
    obj = getattr(module, name)
    callable_ = inspect.isfunction(obj) or inspect.isclass(obj) or hasattr(obj, "__wrapped__")
    doc = own_doc(obj) if callable_ else None
    taught, used = notebooks_of_name(obj, doc) if callable_ else ([], [])
    kind = "class" if inspect.isclass(obj) else "function" if callable_ else "constant"
    methods = []
    if inspect.isclass(obj):
        for mname, member in sorted(vars(obj).items()):
            if inspect.isfunction(member) and (not mname.startswith("_") or mname == "__call__"):
                mt, mu = notebooks_of(own_doc(member))
                methods.append(
                    dict(
                        name=f"{name}.{mname}",
                        signature=signature(member, drop_self=True),
                        summary=summary(own_doc(member)),
                        taught=mt,
                        used=mu,
                    )
                )
            elif isinstance(member, classmethod | staticmethod) and not mname.startswith("_"):
                fn = getattr(obj, mname)
                mt, mu = notebooks_of(own_doc(fn))
                methods.append(
                    dict(
                        name=f"{name}.{mname}",
                        signature=signature(fn),
                        summary=summary(own_doc(fn)),
                        taught=mt,
                        used=mu,
                    )
                )
    return dict(
        name=name,
        kind=kind,
        obj=obj,
        doc=doc,
        summary=summary(doc) if callable_ else comment_of(module, name),
        signature=signature(obj) if callable_ else "",
        taught=taught,
        used=used,
        methods=methods,
        home=home(obj, module.__name__, name) if callable_ else module.__name__,
    )


def collect():
    """{module name: (module, [entries])} for every public module."""
    modules = {}
    for name in public_modules():
        module = importlib.import_module(name)
        modules[name] = (module, [entry(module, n) for n in public_names(module)])
    return modules


def widget_notebook(module_name):
    """helpers.widgets.nb03_queries_keys_values -> 03_queries_keys_values."""
    return module_name.rsplit(".", 1)[-1][2:]


def notebook_names():
    return sorted(path.stem for path in (ROOT / "notebooks").glob("*.ipynb"))


# --- writing the page ---------------------------------------------------------------------------


def cell(text):
    return text.replace("|", "\\|")


def notebook_cell(e):
    text = ", ".join(e["taught"]) or "—"
    if e["used"]:
        text += " (used in " + ", ".join(e["used"]) + ")"
    return text


def contract_block(module_name, names):
    """A contract name (and the contract methods of what it makes) as a code block of their docstrings."""
    module = importlib.import_module(module_name)
    if not callable(getattr(module, names[0])):  # a constant: its value, and the module that teaches it
        value = getattr(module, names[0])
        taught, _ = notebooks_of(module.__doc__)
        shown = ", ".join(repr(v) for v in value[:6]) + (", ..." if len(value) > 6 else "")
        return [
            f"- `from {module_name} import {names[0]}`" + (f" — taught in {', '.join(taught)}" if taught else ""),
            "",
            "  ```text",
            f"  {names[0]} = ({shown})",
            f"      a {type(value).__name__} of {len(value)} {type(value[0]).__name__}",
            "  ```",
            "",
        ]
    taught, _ = notebooks_of_name(getattr(module, names[0]), own_doc(getattr(module, names[0])))
    lines = [
        f"- `from {module_name} import {names[0]}`" + (f" — taught in {', '.join(taught)}" if taught else ""),
        "",
        "  ```text",
    ]
    for name in names:
        owner, _, method = name.partition(".")
        obj = getattr(getattr(module, owner), method) if method else getattr(module, owner)
        if method:
            made = INSTANCE[owner]  # "model = load_minilm()"
            instance = made.split(" = ")[0]
            call = instance + ("" if method == "__call__" else f".{method}") + signature(obj, drop_self=True)
            if f"  {made}" not in lines:
                lines.append(f"  {made}")
        else:
            call = name + signature(obj)
        doc = own_doc(obj) or ""
        body = [line for line in doc.splitlines()[1:] if line.strip() and not TAUGHT.search(line)]
        said = summary(doc) or ("(as Call: above says)" if method == "__call__" else "(no docstring)")
        lines += [f"  {call}", f"      {said}"] + [f"      {line}" for line in body]
    return lines + ["  ```", ""]


def contract_section():
    lines = [
        "## The contract",
        "",
        "Notebooks, tests and outside checks call these names. **These names stay stable; if one must "
        "change, keep the old name working** (and say so where the change is discussed). "
        "`tests/test_repository.py` pins their parameters. Shapes as the docstrings give them.",
        "",
    ]
    for module_name, names in CONTRACT:
        lines += contract_block(module_name, names)
    return lines


def table(entries, with_notebook=True):
    head = ["| name | summary | notebook |", "|---|---|---|"] if with_notebook else ["| name | summary |", "|---|---|"]
    lines = list(head)
    for e in entries:
        for row in [e] + e["methods"]:
            is_method = row is not e
            cells = [f"`{cell(row['name'] + row['signature'])}`", cell(row["summary"]) or "—"]
            if with_notebook:
                cells.append(notebook_cell(row) if not is_method or row["taught"] or row["used"] else "")
            lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def module_section(name, module, entries):
    lines = [f"### `{name}`", "", summary(module.__doc__), ""]
    widget_module = name.startswith("helpers.widgets.nb")
    taught, _ = notebooks_of(module.__doc__)
    if taught and not widget_module:
        lines += ["Taught in " + ", ".join(taught) + ".", ""]
    own = [e for e in entries if e["home"] == name and e["kind"] != "constant"]
    if own:
        lines += table(own, with_notebook=not widget_module)
    constants = [e for e in entries if e["kind"] == "constant"]
    if constants:
        lines.append(
            "Constants: "
            + "; ".join(f"`{e['name']}`" + (f" ({e['summary']})" if e["summary"] else "") for e in constants)
            + "."
        )
        lines.append("")
    again = [e for e in entries if e["home"] != name and e["kind"] != "constant"]
    if again:
        lines.append(
            "Also importable from here: " + ", ".join(f"`{e['name']}` (from `{e['home']}`)" for e in again) + "."
        )
        lines.append("")
    return lines


def checks_section(module):
    engine = [entry(module, n) for n in public_names(module)]
    lines = [
        "## `helpers.checks`: the exercise checks",
        "",
        summary(module.__doc__),
        "",
        "The engine (defined in `helpers/checks/_core.py`, imported as `from helpers import checks`):",
        "",
        "| name | summary |",
        "|---|---|",
    ]
    for e in engine:
        shown = e["name"] + e["signature"]
        lines.append(f"| `{cell(shown)}` | {cell(e['summary']) or '—'} |")
    lines += [
        "",
        "Every registered exercise: `checks.<name>(answer)` runs its check; its module is "
        "`helpers/checks/nbNN_<notebook>.py`. The mistakes are the codes of the wrong answers it registers, "
        "each named by its own message (`Result.mistake`).",
        "",
        "| exercise | notebook | mistakes it names |",
        "|---|---|---|",
    ]
    for name, ex in sorted(module.EXERCISES.items(), key=lambda item: (item[1].notebook, item[0])):
        lines.append(f"| `{name}` | {ex.notebook} | " + ", ".join(f"`{code}`" for code in ex.mistakes) + " |")
    return lines + [""]


def inverse_index(modules):
    """notebook -> ([helpers it teaches], [its exercises], [its explorers])."""
    index = {nb: ([], [], []) for nb in notebook_names()}
    for name, (_, entries) in modules.items():
        short = name.removeprefix("helpers.")
        for e in entries:
            if e["home"] != name or e["kind"] == "constant":
                continue
            if name.startswith("helpers.widgets.nb"):
                index.setdefault(widget_notebook(name), ([], [], []))[2].append(e["name"])
                continue
            for row in [e] + e["methods"]:
                for nb in row["taught"]:
                    index.setdefault(nb, ([], [], []))[0].append(f"{short}.{row['name']}")
    for ex_name, ex in checks.EXERCISES.items():
        index.setdefault(ex.notebook, ([], [], []))[1].append(ex_name)
    lines = [
        "## Notebook → what it owns",
        "",
        'The helpers each notebook teaches (their docstrings\' "Taught in"; module names without `helpers.`), '
        "its exercises (`checks.<name>`) and its explorers (`widgets.<name>`).",
        "",
        "| notebook | teaches | exercises | explorers |",
        "|---|---|---|---|",
    ]
    for nb, (taught, exercises, explorers) in sorted(index.items()):
        cols = [", ".join(f"`{n}`" for n in sorted(names)) or "—" for names in (taught, exercises, explorers)]
        lines.append(f"| {nb} | " + " | ".join(cols) + " |")
    return lines + [""]


def generate():
    modules = collect()
    count = sum(len(entries) for _, entries in modules.values())
    again = sum(e["home"] != name for name, (_, entries) in modules.items() for e in entries if e["kind"] != "constant")
    concept = [n for n in modules if not n.startswith(("helpers.widgets", "helpers.checks"))]
    lines = [
        "# The helpers API, and which notebook teaches each name",
        "",
        f"This page is generated: `{COMMAND}` writes it from the `helpers` package itself (each public "
        "name's signature and the first line of its docstring; the notebook from the docstring's "
        '"Taught in NN_name", else from its module\'s). Do not edit it by hand: change the docstring and run the '
        "command again. "
        f"`tests/test_api_reference.py` fails when the page is not what the command writes now, and "
        f"when a public helper names no notebook. It lists {count} public names in {len(modules)} modules "
        f"({again} of them re-exported from another module) and {len(checks.EXERCISES)} exercises.",
        "",
        "A helper is written in the notebook that teaches it (the learner sees its code there) and "
        "imported from `helpers` in every notebook after it. Plotting, widgets and checks are never the "
        "lesson: they name a notebook only when they belong to one.",
        "",
        "Contents: [the contract](#the-contract) · [modules](#modules) · "
        "[checks](#helperschecks-the-exercise-checks) · [widgets](#helperswidgets-the-explorers) · "
        "[notebook → what it owns](#notebook--what-it-owns)",
        "",
    ]
    lines += contract_section()
    lines += [
        "## Modules",
        "",
        "A module's public names are its `__all__`, else what it defines. "
        "A method row names its notebook only where its own docstring does.",
        "",
    ]
    for name in concept:
        module, entries = modules[name]
        lines += module_section(name, module, entries)
    lines += checks_section(modules["helpers.checks"][0])
    lines += [
        "## `helpers.widgets`: the explorers",
        "",
        "Each notebook's explorers are in "
        "`helpers/widgets/nbNN_<notebook>.py` (its `__all__`) and are reached as `widgets.<name>`.",
        "",
    ]
    for name in (n for n in modules if n.startswith("helpers.widgets")):
        module, entries = modules[name]
        lines += module_section(name, module, entries)
    lines += inverse_index(modules)
    return "\n".join(lines).rstrip() + "\n"


def write_or_check(path, page, check, command):
    """Write `page` to `path`, or with check=True compare them and show the difference; the exit code."""
    if not check:
        path.write_text(page, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
        return 0
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if old == page:
        print(f"{path.relative_to(ROOT)} is up to date")
        return 0
    diff = difflib.unified_diff(old.splitlines(), page.splitlines(), "committed", "generated now", lineterm="", n=1)
    print(f"{path.relative_to(ROOT)} is out of date: run `{command}` and commit it. The difference:")
    print("\n".join(list(diff)[:60]))
    return 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/helpers-api.md is out of date")
    return write_or_check(PAGE, generate(), parser.parse_args(argv).check, COMMAND)


if __name__ == "__main__":
    sys.exit(main())
