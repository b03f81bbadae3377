"""Time 12's explorer (widgets.smollm2_explorer) in a real kernel: its budget is a second per written token.

    python benchmarks/smollm2_explorer.py

A learner clicks "next token" or "write 30 tokens" and waits for the model: each token runs SmolLM2 once, on that
token alone (the explorer keeps a KV cache), then redraws the bars and the head view. The script starts a fresh
kernel (so each redraw goes through the kernel's display machinery, as in a notebook, like widget_times.py), loads
the model, builds the explorer, and prints the median and slowest milliseconds of: a "next token" click, each token
of a "write 30 tokens" click, a new prompt read from scratch (20 tokens), and a move of the temperature, top-k or
layer (which runs no model: its budget is widget_times.py's 100 ms). Timings depend on the machine's load, which
it prints.
"""

import os
import sys
import time

import numpy as np

TOKEN_BUDGET, MOVE_BUDGET = 1.0, 0.1  # seconds


def timed(action):
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def measure_here():
    """Runs inside the kernel: print the table."""
    from helpers import widgets
    from helpers.pretrained import load_smollm2

    load = timed(load_smollm2)
    model = load_smollm2()
    box = None

    def build():
        nonlocal box
        box = widgets.smollm2_explorer(model, prompt="Once upon a time,", temperature=0.7, top_k=50)

    rows = [("load the model (fresh kernel)", [load], None), ("build the explorer (5 tokens)", [timed(build)], None)]
    rows.append(("next token, one click", [timed(box.buttons["next token"].click) for _ in range(10)], TOKEN_BUDGET))
    before = len(box.reader.ids)
    seconds = timed(box.buttons["write 30 tokens"].click)
    written = len(box.reader.ids) - before
    rows.append((f"write 30 tokens, per token ({written} written)", [seconds / max(written, 1)], TOKEN_BUDGET))
    prompts = [f"{word} the cat sat on the mat and looked at the birds in the garden all day long." for word in "ABC"]
    rows.append(
        (
            "a new 20-token prompt",
            [timed(lambda p=p: setattr(box.controls["prompt"], "value", p)) for p in prompts],
            None,
        )
    )
    moves = [("temperature", 1.2), ("top_k", 5), ("layer", 23), ("temperature", 0.3), ("top_k", 0), ("layer", 2)]
    rows.append(
        (
            "temperature / top-k / layer",
            [timed(lambda m=m: setattr(box.controls[m[0]], "value", m[1])) for m in moves],
            MOVE_BUDGET,
        )
    )
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    print(f"{'what':<42} {'median ms':>9} {'slowest ms':>10} {'budget ms':>9}")
    for what, values, budget in rows:
        shown = f"{budget * 1e3:9.0f}" if budget else f"{'':>9}"
        print(f"{what:<42} {np.median(values) * 1e3:9.0f} {max(values) * 1e3:10.0f} {shown}")


def main():
    """Start a fresh kernel, run measure_here() in it, print what it printed."""
    from fresh_kernel import print_from_fresh_kernel

    print_from_fresh_kernel(__file__)


if __name__ == "__main__":
    measure_here() if "--here" in sys.argv else main()
