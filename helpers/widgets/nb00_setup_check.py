"""Explorers of 00_setup_check: the softmax temperature slider.

Taught in 00_setup_check.
"""

import numpy as np

from helpers import html_plots
from helpers.attention import entropy, softmax
from helpers.widgets._explorer import explorer, show_html, temperature_slider

__all__ = ["softmax_explorer"]


def softmax_explorer(scores, labels=None, temperature=1.0):
    """A temperature slider over softmax(scores / temperature), drawn as HTML bars with the entropy.

    Low temperature sharpens the weights towards the largest score; high flattens them.
    Shapes: scores (T,) -> a widget.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1:
        raise ValueError(f"scores must be 1-D (T,), got shape {scores.shape}")
    labels = [str(i) for i in range(len(scores))] if labels is None else list(labels)

    def draw(temperature):
        weights = softmax(scores / temperature)
        title = (
            f"softmax(scores / {temperature:.2f}): entropy {entropy(weights):.2f} nats "
            f"(at most {np.log(len(scores)):.2f})"
        )
        show_html(html_plots.weight_bars(weights, labels, title))  # HTML, not an image: redraws in milliseconds

    return explorer({"temperature": temperature_slider(temperature)}, draw)


def demos():
    """softmax_explorer on 00's four scores, and temperatures to move to."""
    box = softmax_explorer([2.0, 1.0, 0.5, -1.0], ["cat", "sat", "on", "mat"])
    yield "softmax_explorer (00)", box, [("temperature", t) for t in (0.1, 0.5, 2.0, 10.0)]
