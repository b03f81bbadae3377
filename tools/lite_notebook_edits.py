"""The notebook source edits of the JupyterLite edition (issue 23), applied to notebooks/ in place.

    python3 tools/lite_notebook_edits.py [--check]

Only sources change, never outputs: each edit replaces an exact piece of text and stops with an error when that
text is not found (someone changed the cell: look at it), and does nothing where the edit is already made, so it
can run again on re-executed notebooks. --check: exit 1 if an edit is still to make, change nothing.
The edits are 10_efficient_attention's: the cache-versus-main-memory timing is not asserted in the browser, and a
sentence says why; the threaded step says the browser has one thread and is skipped there; the tile's time is read
from time.perf_counter there (Pyodide has no time.thread_time, and its one thread runs nothing else), and the
matrix products' share of the fast tile is printed, not asserted (numpy there has no BLAS), nor are the steps' CPU
times compared (they did not hold there). On any other machine the cells run and print as before.
Every other notebook runs in the browser as it is: the site installs numpy, matplotlib, ipywidgets and the weights
as Python starts (tools/build_lite.py), so the first cell's `import helpers` finds them there too.
Any python3: the standard library only.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

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
    (
        "assert products_fast > 0.5 * whole_us[1]  # the two matrix products are most of the fast tile\n"
        'assert passes == {"taught": 7, "fast": 4}\n'
        'print("the two matrix products are most of the fast tile\'s time;")\n',
        'assert passes == {"taught": 7, "fast": 4}\n'
        "if IN_BROWSER:  # JupyterLite: numpy there is built without BLAS, so its matrix products are plain loops\n"
        '    print(f"in the browser the two matrix products take {products_fast / whole_us[1]:.0%} of the fast "\n'
        '          "tile\'s time (numpy there has no BLAS); on a laptop they are most of it;")\n'
        "else:\n"
        "    assert products_fast > 0.5 * whole_us[1]  # the two matrix products are most of the fast tile\n"
        '    print("the two matrix products are most of the fast tile\'s time;")\n',
    ),
    (
        'assert results["in place"][1] < results["naive"][1]'
        "  # CPU time: fewer passes over the (T, T) buffer, less work\n"
        'assert results["tiled, 1 thread"][1] < results["naive"][1] / 1.1  # CPU time: less work than naive\n',
        "if not IN_BROWSER:  # in the browser these CPU times are not compared: they did not hold there\n"
        '    assert results["in place"][1] < results["naive"][1]  # CPU time: fewer passes over the (T, T) buffer\n'
        '    assert results["tiled, 1 thread"][1] < results["naive"][1] / 1.1  # CPU time: less work than naive\n',
    ),
    (
        'print("every step gives the naive answer; in place and tiled_attention on one thread take less CPU time than '
        'naive;")\n',
        "if IN_BROWSER:\n"
        '    print("every step gives the naive answer (in the browser their CPU times are not compared);")\n'
        "else:\n"
        '    print("every step gives the naive answer; in place and tiled_attention on one thread take less CPU "\n'
        '          "time than naive;")\n',
    ),
    (
        'assert results[threads_step][2] <= default_threads() * results["tiled, 1 thread"][2]',
        'assert IN_BROWSER or results[threads_step][2] <= default_threads() * results["tiled, 1 thread"][2]',
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
