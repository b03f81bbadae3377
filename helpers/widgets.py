"""Interactive explorers (ipywidgets 7.7 and 8): each is a function returning a widget.

Every explorer is built by `explorer(controls, draw)`: moving a control redraws its
output. The returned box carries `.controls` (name -> control) and `.refresh()`, so a
notebook or a test can drive it without a mouse.
"""

import matplotlib.pyplot as plt
import numpy as np

from helpers import plotting
from helpers.attention import softmax

try:
    import ipywidgets as widgets
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        "ipywidgets is not installed in this kernel's environment. Install it with:\n"
        '    pip install "ipywidgets>=7.7,<9"\n'
        "and restart the kernel. (In JupyterLab the front end comes with it, as jupyterlab_widgets.)"
    ) from exc


def explorer(controls, draw, layout="vertical"):
    """Wire `controls` (name -> widget) to `draw(**values)`, which prints or plots.

    Returns a VBox of the controls above an Output area, with `.controls` and `.refresh`.
    """
    out = widgets.Output()

    def refresh(change=None):
        with out:
            out.clear_output(wait=True)
            draw(**{name: control.value for name, control in controls.items()})
            plt.show()

    for control in controls.values():
        control.observe(refresh, names="value")
    row = widgets.HBox if layout == "horizontal" else widgets.VBox
    box = widgets.VBox([row(list(controls.values())), out])
    box.controls, box.refresh, box.output = controls, refresh, out
    refresh()
    return box


def entropy(weights, axis=-1):
    """Shannon entropy in nats of each distribution along `axis` (0 log 0 counts as 0)."""
    weights = np.asarray(weights, dtype=float)
    logs = np.log(np.where(weights > 0, weights, 1))
    return -np.sum(weights * logs, axis=axis)


def softmax_explorer(scores, labels=None, temperature=1.0):
    """A temperature slider over softmax(scores / temperature), drawn as bars with the entropy.

    Low temperature sharpens the weights towards the largest score; high flattens them.
    Shapes: scores (T,) -> a widget.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1:
        raise ValueError(f"scores must be 1-D (T,), got shape {scores.shape}")
    slider = widgets.FloatLogSlider(value=temperature, base=10, min=-1.5, max=1.5, step=0.05,
                                    description="temperature", continuous_update=True)

    def draw(temperature):
        weights = softmax(scores / temperature)
        ax = plotting.bars(weights, labels, title=f"softmax(scores / {temperature:.2f})   "
                           f"entropy = {entropy(weights):.2f} nats (max {np.log(len(scores)):.2f})")
        ax.figure.set_size_inches(6, 2.6)

    return explorer({"temperature": slider}, draw)
