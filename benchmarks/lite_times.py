"""Seconds per notebook in the browser (JupyterLite) against a kernel on this machine, with the ratio.

    make lite-test                                   # writes screenshots/lite-times.json
    .venv/bin/python benchmarks/lite_times.py        # runs every notebook in a fresh kernel, prints the table

The browser's time runs from opening the notebook (Pyodide starting, its packages and the weights loading) to
the last cell's answer, in headless Chromium; the kernel's is benchmarks/notebook_times.py's (from a started
kernel). The ratio is therefore an upper bound on how much slower the browser computes.
"""

import json
import sys
from pathlib import Path

from notebook_times import time_notebook  # benchmarks/

ROOT = Path(__file__).resolve().parent.parent


def main():
    recorded = ROOT / "screenshots" / "lite-times.json"
    if not recorded.is_file():
        sys.exit(f"no {recorded.relative_to(ROOT)}: run make lite-test first")
    browser = json.loads(recorded.read_text(encoding="utf-8"))
    rows = [(name, seconds, time_notebook(ROOT / "notebooks" / name)[0]) for name, seconds in sorted(browser.items())]
    width = max(len(name) for name, *_ in rows)
    print(f"{'notebook':<{width}}  {'browser s':>9}  {'kernel s':>8}  {'ratio':>6}")
    for name, in_browser, in_kernel in rows:
        print(f"{name:<{width}}  {in_browser:9.0f}  {in_kernel:8.1f}  {in_browser / in_kernel:5.1f}x")
    total_browser, total_kernel = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"{'total':<{width}}  {total_browser:9.0f}  {total_kernel:8.1f}  {total_browser / total_kernel:5.1f}x")


if __name__ == "__main__":
    main()
