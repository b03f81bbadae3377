"""The notebook source edits of the JupyterLite edition, applied to notebooks/ in place.

    python3 tools/lite_notebook_edits.py [--check]

Only sources change, never outputs: each edit replaces an exact piece of text and stops with an error when that
text is not found (someone changed the cell: look at it), and does nothing where the edit is already made, so it
can run again on re-executed notebooks. --check: exit 1 if an edit is still to make, change nothing.
The edits are 10_efficient_attention's, and only what the browser truly needs: Python there has one thread, so
the threaded step says so and is skipped (with the assert that reads its row), and it has no time.thread_time, so
the tile's time is read from time.perf_counter there (its one thread runs nothing else). No notebook asserts a
timing, so nothing else differs. On any other machine the cells run and print as before.
Every other notebook runs in the browser as it is: the site installs numpy, matplotlib, ipywidgets and the weights
as Python starts (tools/build_lite.py), so the first cell's `import helpers` finds them there too.
Any python3: the standard library only.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

NOTEBOOK_10 = [
    (
        "from helpers.threads import blas_controllable, blas_single_thread, default_threads",
        "from helpers.threads import IN_BROWSER, blas_controllable, blas_single_thread, default_threads",
    ),
    (
        "run_step(threads_step, lambda: tiled_attention(Q, K, V))\n"
        'print(f"({default_threads()} threads on this machine; BLAS could be held to one thread: '
        '{blas_controllable()})")',
        "if IN_BROWSER:  # JupyterLite: Python in the browser has one thread, so this step has nothing to show\n"
        '    print("in the browser Python has one thread: this step is skipped (on a laptop it runs on every core)")\n'
        "else:\n"
        "    run_step(threads_step, lambda: tiled_attention(Q, K, V))\n"
        '    print(f"({default_threads()} threads on this machine; BLAS could be held to one thread: '
        '{blas_controllable()})")',
    ),
    (
        'assert results[threads_step][2] <= default_threads() * results["tiled, 1 thread"][2]',
        'assert IN_BROWSER or results[threads_step][2] <= default_threads() * results["tiled, 1 thread"][2]',
    ),
    (
        "    times = []\n"
        "    for _ in range(repeats):\n"
        "        start = time.thread_time()\n"
        "        f()\n"
        "        times.append(time.thread_time() - start)\n",
        "    clock = time.perf_counter if IN_BROWSER else time.thread_time"
        "  # the browser: no thread_time, one thread\n"
        "    times = []\n"
        "    for _ in range(repeats):\n"
        "        start = clock()\n"
        "        f()\n"
        "        times.append(clock() - start)\n",
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
    # (cell, old, new): 10's edits, each in the one cell holding its text (or its edited text)
    edits = []
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
