"""Time one redraw of every explorer in helpers.widgets, in a real kernel, against the 100 ms budget.

    python benchmarks/widget_times.py

A learner drags a slider and expects the picture to follow: the workshop's budget is
100 ms per update. The script starts a fresh kernel (so each redraw goes through the
kernel's display machinery, as in a notebook), builds each explorer on inputs like its
notebook's (each notebook's module of helpers.widgets has a `demos()` listing its explorers
and the moves to try), moves each control several times and prints the median and slowest update,
and the median as a share of the budget.
"""

import sys
import time

import numpy as np

BUDGET_SECONDS = 0.1


def explorers():
    """(name, widget, [(control, value), ...]) for every explorer: each notebook's module lists its own."""
    from helpers import widgets

    yield from widgets.demos()


def time_updates(box, moves):
    """Seconds per control change; each change redraws the explorer through its observer."""
    seconds = []
    for name, value in moves:
        initial = box.controls[name].value
        start = time.perf_counter()
        box.controls[name].value = value
        seconds.append(time.perf_counter() - start)
        box.controls[name].value = initial
    return np.array(seconds)


def measure_here():
    """Runs inside the kernel: print the table."""
    rows = [
        (name, time_updates(box, moves * (1 if name.startswith("word") else 3))) for name, box, moves in explorers()
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'explorer':<{width}}  {'median ms':>9}  {'slowest ms':>10}  {'median / budget':>15}")
    for name, seconds in rows:
        median = np.median(seconds)
        print(f"{name:<{width}}  {median * 1e3:9.1f}  {seconds.max() * 1e3:10.1f}  {median / BUDGET_SECONDS:15.0%}")


def main():
    """Start a fresh kernel, run measure_here() in it, print what it printed."""
    from fresh_kernel import print_from_fresh_kernel

    print_from_fresh_kernel(__file__)


if __name__ == "__main__":
    measure_here() if "--here" in sys.argv else main()
