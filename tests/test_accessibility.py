"""Every committed figure carries a text alternative, and plotting.show refuses one that is missing.

A figure is shown by `plotting.show(alt)`, which puts `alt` in the output's metadata (image/png -> alt:
nbconvert's classic HTML template writes it as the <img> alt; its default lab template does not) and in
its plain text (what a text-only front end prints instead of the image). JupyterLab 4.6 does not read
that metadata, so where a figure carries the lesson the prose or a printed line says it too; that is
read by people, not by this test.
"""

import json
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from helpers import plotting  # noqa: E402
from helpers._show import ALT_MIN_CHARS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def figures(path):
    """(cell index, output) for every image output of a committed notebook."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [
        (i, output)
        for i, cell in enumerate(cells)
        for output in cell.get("outputs", [])
        if any(kind.startswith("image/") for kind in output.get("data", {}))
    ]


def alt_of(output):
    kinds = [kind for kind in output["data"] if kind.startswith("image/")]
    return [output.get("metadata", {}).get(kind, {}).get("alt") for kind in kinds]


def test_the_notebooks_have_figures():
    assert sum(len(figures(path)) for path in NOTEBOOKS) >= 40


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_committed_figure_has_a_text_alternative(path):
    missing, short, not_plain = [], [], []
    for i, output in figures(path):
        for alt in alt_of(output):
            if not isinstance(alt, str) or not alt.strip():
                missing.append(i)
            elif len(alt) < ALT_MIN_CHARS:
                short.append((i, alt))
            elif "".join(output["data"].get("text/plain", "")) != alt:
                not_plain.append(i)
    assert not missing, f"{path.name}: the figures of cells {missing} have no alt (draw them with plotting.show)"
    assert not short, f"{path.name}: these alts name the figure but do not describe it: {short}"
    assert not not_plain, f"{path.name}: cells {not_plain} print something other than their alt as plain text"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_two_figures_of_a_notebook_share_a_description(path):
    alts = [alt for _, output in figures(path) for alt in alt_of(output)]
    repeated = sorted({alt for alt in alts if alts.count(alt) > 1})
    assert not repeated, f"{path.name}: two figures, one description: {repeated}"


def test_show_refuses_a_missing_or_empty_description():
    plt.figure()
    try:
        with pytest.raises(TypeError, match="alt must be a str"):
            plotting.show(None)
        with pytest.raises(ValueError, match="at least 40 characters"):
            plotting.show("a heatmap")
        with pytest.raises(ValueError, match="got 0"):
            plotting.show("   ")
        with pytest.raises(TypeError, match="fig must be a matplotlib Figure"):
            plotting.show("a heatmap of the similarity matrix, brightest on the diagonal", fig=plt.gca())
    finally:
        plt.close("all")


def test_show_puts_the_description_in_the_metadata_and_the_plain_text(monkeypatch):
    shown = []

    class Shell:  # what get_ipython() returns in a kernel; show only asks whether there is one
        pass

    import IPython
    import IPython.display

    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell())
    monkeypatch.setattr(IPython.display, "display", lambda data, raw, metadata: shown.append((data, metadata)))
    fig = plt.figure()
    plt.plot([0, 1], [1, 0])
    alt = "A line falling from 1 at step 0 to 0 at step 1, the loss going down."
    plotting.show("  A line falling from 1 at step 0\n to 0 at step 1, the loss going down. ")
    ((data, metadata),) = shown
    assert data["text/plain"] == alt and metadata == {"image/png": {"alt": alt}}
    assert data["image/png"].startswith("iVBORw0KGgo")  # base64 of a PNG's signature
    assert not plt.fignum_exists(fig.number), "show must close the figure, or the cell's end draws it again"
