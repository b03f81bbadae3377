"""The explorer machinery: controls wired to a draw function, redrawn one update at a time.

Every explorer is built by `explorer(controls, draw)`: moving a control redraws its output.
The returned box carries `.controls` (name -> control) and `.refresh()`, so a notebook or a
test can drive it without a mouse. Works with ipywidgets 7.7 (Colab) and 8. Also here: what
several notebooks' explorers share (a temperature slider, naming the words a model does not know).
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
WIDE_LABEL = {"description_width": "initial"}  # a control's style that shows its whole description, uncut


def explorer(controls, draw, layout="vertical", alt=None):
    """Wire `controls` (name -> widget) to `draw(**values)`, which prints or plots.

    A matplotlib figure that draw leaves open is shown with a text alternative (plotting.show):
    alt(**values) -> str describes it; without alt, the description names the controls' values.
    Returns a VBox of the controls above an Output area, with `.controls` and `.refresh`.
    """
    out = ipw.Output()

    def refresh(change=None):
        # JupyterLab 4.4+ handles widget messages on a kernel subshell (a second thread), and
        # after every widget message the kernel redraws all open pyplot figures. Two threads
        # drawing one figure at once give a blank picture: draw one update at a time, with
        # pyplot's automatic redraw off until the figure is shown (and closed) by plotting.show.
        values = {name: control.value for name, control in controls.items()}
        with _DRAW_LOCK, out, plt.ioff():
            out.clear_output(wait=True)
            draw(**values)
            if plt.get_fignums():
                from helpers import plotting  # here: plotting imports html_plots, which imports nothing of widgets

                plotting.show(alt(**values) if alt is not None else describe_state(values))

    for control in controls.values():
        control.observe(refresh, names="value")
    row = ipw.HBox if layout == "horizontal" else ipw.VBox
    box = ipw.VBox([row(list(controls.values())), out])
    box.controls, box.refresh = controls, refresh
    refresh()
    return box


def describe_state(values):
    """A figure's default text alternative in an explorer: the controls' values. -> str.

    Shapes: values {name: value} ({"T": 8} -> "The explorer's figure, drawn for its current settings: T = 8").
    """
    shown = ", ".join(
        f"{name} = {value!r}" if isinstance(value, str) else f"{name} = {value}" for name, value in values.items()
    )
    return f"The explorer's figure, drawn for its current settings: {shown or 'none'}"


def show_html(markup):
    """Display an HTML string (an explorer's drawing: redraws in milliseconds, no image)."""
    from IPython.display import HTML, display

    display(HTML(markup))


def temperature_slider(value=1.0, powers=(-1.5, 1.5)):
    """A softmax temperature on a log scale, from 10**powers[0] to 10**powers[1]. -> a FloatLogSlider."""
    return ipw.FloatLogSlider(
        value=value, base=10, min=powers[0], max=powers[1], step=0.05, description="temperature", style=WIDE_LABEL
    )


def unknown_words(words, known, most=5):
    """The words not in `known`, each once in the order typed, named for a message ("" when there are none).

    Shapes: words, known: str sequences -> str ("'x', 'y'"; past `most` words: "'x', 'y' and 3 more").
    """
    unknown = list(dict.fromkeys(word for word in words if word not in known))
    more = f" and {len(unknown) - most} more" if len(unknown) > most else ""
    return ", ".join(repr(word) for word in unknown[:most]) + more
