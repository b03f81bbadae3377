"""The explorer machinery: controls wired to a draw function, redrawn one update at a time.

Every explorer is built by `explorer(controls, draw)`: moving a control redraws its output.
The returned box carries `.controls` (name -> control) and `.refresh()`, so a notebook or a
test can drive it without a mouse. Works with ipywidgets 7.7 (Colab) and 8.
"""

import threading

import matplotlib.pyplot as plt

try:
    import ipywidgets as ipw
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        "ipywidgets is not installed in this kernel's environment. Install it with:\n"
        '    %pip install "ipywidgets>=7.7,<9"\n'
        "in a notebook cell, and restart the kernel. (In JupyterLab the front end comes with it, "
        "as jupyterlab_widgets.)"
    ) from exc


_DRAW_LOCK = threading.RLock()  # one explorer update at a time, whichever kernel thread runs it


def explorer(controls, draw, layout="vertical"):
    """Wire `controls` (name -> widget) to `draw(**values)`, which prints or plots.

    Returns a VBox of the controls above an Output area, with `.controls` and `.refresh`.
    """
    out = ipw.Output()

    def refresh(change=None):
        # JupyterLab 4.4+ handles widget messages on a kernel subshell (a second thread), and
        # after every widget message the kernel redraws all open pyplot figures. Two threads
        # drawing one figure at once give a blank picture: draw one update at a time, with
        # pyplot's automatic redraw off until the figure is shown (and closed) by plt.show().
        with _DRAW_LOCK, out, plt.ioff():
            out.clear_output(wait=True)
            draw(**{name: control.value for name, control in controls.items()})
            plt.show()

    for control in controls.values():
        control.observe(refresh, names="value")
    row = ipw.HBox if layout == "horizontal" else ipw.VBox
    box = ipw.VBox([row(list(controls.values())), out])
    box.controls, box.refresh = controls, refresh
    refresh()
    return box


def show_html(markup):
    """Display an HTML string (an explorer's drawing: redraws in milliseconds, no image)."""
    from IPython.display import HTML, display

    display(HTML(markup))
