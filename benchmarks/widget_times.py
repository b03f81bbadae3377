"""Time one redraw of every explorer in helpers.widgets, in a real kernel, against the 100 ms budget.

    python benchmarks/widget_times.py

A learner drags a slider and expects the picture to follow: the workshop's budget is
100 ms per update. The script starts a fresh kernel (so each redraw goes through the
kernel's display machinery, as in a notebook), builds each explorer on inputs like its
notebook's, moves each control several times and prints the median and slowest update,
and the median as a share of the budget.
"""

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BUDGET_SECONDS = 0.1


def explorers():
    """(name, widget, [(control, value), ...]) for every explorer."""
    from helpers import causal_mask, widgets
    from helpers.embeddings import load_token_embeddings

    rng = np.random.default_rng(0)
    emb = load_token_embeddings()
    tokens = ["The", "cat", "sat", "on", "the", "mat"]
    steps = list(range(0, 201, 10))
    snapshots = rng.dirichlet(np.ones(6), size=(len(steps), 6))  # (21, 6, 6), rows summing to 1
    padded = [tokens, ["a", "good", "novel", "[PAD]", "[PAD]", "[PAD]"]]
    heads = rng.dirichlet(np.ones(6), size=(4, 6)) * causal_mask(6)  # (4, 6, 6)
    new_words = ["paris", "river", "money", "horse", "queen", "apple", "music", "green", "table", "house",
                 "water", "night"]  # each searched once: no cached neighbours
    yield ("softmax_explorer (00)", widgets.softmax_explorer([2.0, 1.0, 0.5, -1.0], tokens[:4]),
           [("temperature", t) for t in (0.1, 0.5, 2.0, 10.0)])
    yield ("word_explorer (01)", widgets.word_explorer(emb, ["cat", "dog", "king"]),
           [("word_b", w) for w in new_words])
    yield ("sentence_explorer (02)", widgets.sentence_explorer(emb),
           [("temperature", 0.2), ("temperature", 5.0), ("cosine", True), ("sentence", "The bat flew out")])
    yield ("attention_steps_explorer (03)", widgets.attention_steps_explorer(snapshots, steps, tokens),
           [("step", s) for s in (50, 100, 150, 200)])
    yield ("scaling_explorer (04)", widgets.scaling_explorer(),
           [("d_k", 1), ("d_k", 1024), ("scaled", True), ("temperature", 10.0)])
    yield ("mask_explorer (05)", widgets.mask_explorer(rng.normal(size=(2, 6, 6)), padded, [6, 3]),
           [("causal", False), ("padding", False), ("query", 5), ("sentence", 1)])
    yield ("head_explorer (06)", widgets.head_explorer(heads, tokens),
           [("head", 1), ("query", 2), ("head", 3), ("query", 5)])


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
    rows = [(name, time_updates(box, moves * (1 if name.startswith("word") else 3)))
            for name, box, moves in explorers()]
    width = max(len(name) for name, _ in rows)
    print(f"{'explorer':<{width}}  {'median ms':>9}  {'slowest ms':>10}  {'median / budget':>15}")
    for name, seconds in rows:
        median = np.median(seconds)
        print(f"{name:<{width}}  {median * 1e3:9.1f}  {seconds.max() * 1e3:10.1f}  {median / BUDGET_SECONDS:15.0%}")


def main():
    """Start a fresh kernel, run measure_here() in it, print what it printed."""
    import nbformat
    from nbclient import NotebookClient

    cell = nbformat.v4.new_code_cell(f"%run {Path(__file__).resolve()} --here")
    nb = nbformat.v4.new_notebook(cells=[cell])
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    for output in nb.cells[0].outputs:
        if output.output_type == "stream" and output.name == "stdout":
            print(output.text, end="")


if __name__ == "__main__":
    measure_here() if "--here" in sys.argv else main()
