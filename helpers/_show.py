"""plotting.show: a figure displayed with its text alternative (plotting re-exports it; see docs/style.md)."""

import base64

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["ALT_MIN_CHARS", "show"]

ALT_MIN_CHARS = 40  # a text alternative shorter than this names the figure, it does not describe it


def show(alt, fig=None):
    """Display a figure with a text alternative, then close it: the notebooks' plt.show().

    alt: what the figure shows and what to see in it, in a sentence or two ("Heatmap of the
    6 x 6 similarity matrix; the diagonal is brightest: every word is most similar to itself").
    It goes where a reader that cannot see the picture finds it: the output's metadata
    (image/png -> alt, which nbconvert's classic HTML template and screen-reader-aware front ends read) and the
    output's plain text (what a text-only front end prints instead of the image).
    fig: the figure to show (default: the current one). Outside a notebook it calls plt.show().
    """
    if not isinstance(alt, str):
        raise TypeError(f"alt must be a str that describes the figure, got {type(alt).__name__}")
    alt = " ".join(alt.split())
    if len(alt) < ALT_MIN_CHARS:
        raise ValueError(
            f"alt must describe the figure in at least {ALT_MIN_CHARS} characters (what it shows and what to "
            f"see in it), got {len(alt)}: {alt!r}"
        )
    fig = plt.gcf() if fig is None else fig
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure (or None for the current one), got {type(fig).__name__}")
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: matplotlib shows it its own way
        get_ipython = lambda: None  # noqa: E731
    if get_ipython() is None:
        plt.show()
        return
    from IPython.core.pylabtools import print_figure
    from IPython.display import display

    png = print_figure(fig, "png", bbox_inches="tight")  # what the inline backend would draw
    data = {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": alt}
    display(data, raw=True, metadata={"image/png": {"alt": alt}})
    plt.close(fig)  # shown once: the inline backend must not draw it again at the end of the cell
