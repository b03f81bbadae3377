"""Explorers of 03_queries_keys_values: attention weights through training.

Taught in 03_queries_keys_values.
"""

import numpy as np

from helpers import html_plots
from helpers.widgets._explorer import explorer, ipw, show_html

__all__ = ["snapshot_at", "attention_steps_explorer"]


def snapshot_at(weights_by_step, steps, step, losses=None):
    """What attention_steps_explorer draws: the weights (and loss) recorded at training step `step`.

    Shapes: weights_by_step (n_snapshots, T, T); steps n_snapshots ints; losses n_snapshots floats or None
            -> weights (T, T), loss float or None.
    """
    steps = [int(s) for s in steps]
    if step not in steps:
        raise ValueError(f"step {step} was not recorded; the recorded steps are {steps}")
    i = steps.index(step)
    return np.asarray(weights_by_step[i], dtype=float), (None if losses is None else float(losses[i]))


def attention_steps_explorer(weights_by_step, steps, labels, losses=None):
    """A slider over training steps showing the attention weights recorded at each step.

    Shapes: weights_by_step (n_snapshots, T, T); steps n_snapshots ints; labels T strings;
            losses n_snapshots floats or None. Drawn as an HTML table, so each update is fast.
    """
    weights_by_step = np.asarray(weights_by_step, dtype=float)
    steps = [int(s) for s in steps]
    T = len(labels)
    if weights_by_step.shape != (len(steps), T, T):
        raise ValueError(
            f"weights_by_step must have shape (len(steps), T, T) = ({len(steps)}, {T}, {T}), "
            f"got {weights_by_step.shape}"
        )
    slider = ipw.SelectionSlider(options=steps, value=steps[0], description="step", continuous_update=True)

    def draw(step):
        weights, loss = snapshot_at(weights_by_step, steps, step, losses)
        title = f"attention weights at step {step}" + ("" if loss is None else f" (loss {loss:.3f})")
        table = html_plots.heatmap(weights, labels, labels, title=title, cmap="Blues", vmin=0, vmax=1)
        show_html(f"{table}<div>rows are queries, columns are keys</div>")

    return explorer({"step": slider}, draw)


def demos():
    """attention_steps_explorer on 21 random snapshots of 6 x 6 weights."""
    steps = list(range(0, 201, 10))
    snapshots = np.random.default_rng(0).dirichlet(np.ones(6), size=(len(steps), 6))  # (21, 6, 6), rows sum to 1
    box = attention_steps_explorer(snapshots, steps, ["The", "cat", "sat", "on", "the", "mat"])
    yield "attention_steps_explorer (03)", box, [("step", s) for s in (50, 100, 150, 200)]
