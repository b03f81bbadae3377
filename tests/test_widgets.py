"""Every explorer of every notebook, built as its demo and driven by its controls; what the explorers share."""

import ast
import importlib.util
import inspect
import re
from pathlib import Path

import numpy as np
import pytest
from colour_vision import contrast_ratio  # tools/

from helpers import head_views, html_plots, plotting, widgets
from helpers.widgets._explorer import temperature_slider, unknown_words

DEMOS = list(widgets.demos())


def test_every_notebook_module_has_explorers():
    assert [m.__name__.rsplit(".", 1)[1][:4] for m in widgets.MODULES] == sorted(
        m.__name__.rsplit(".", 1)[1][:4] for m in widgets.MODULES
    )
    assert len(DEMOS) >= len(widgets.MODULES)
    for module in widgets.MODULES:
        for name in module.__all__:
            assert getattr(widgets, name) is getattr(module, name)


@pytest.mark.parametrize(("name", "box", "moves"), DEMOS, ids=[d[0] for d in DEMOS])
def test_each_move_redraws_what_the_explorer_shows(name, box, moves, shown):
    assert set(box.controls) >= {control for control, _ in moves}
    assert not hasattr(box, "output")  # the drawing area is reached through refresh(), not kept as an attribute
    for control, value in moves:
        before = len(shown)
        box.controls[control].value = value
        assert box.controls[control].value == value
        assert len(shown) == before + 1, f"{name}: moving {control} to {value!r} did not redraw"
    box.refresh()
    assert len(shown) == before + 2


@pytest.mark.parametrize(
    "module", [*widgets.MODULES, html_plots, head_views, plotting], ids=lambda m: m.__name__.rsplit(".", 1)[1]
)
def test_each_module_exports_what_it_defines_in_its_all(module):
    """__all__ lists each public name the module defines once, and nothing else (widgets.<name> reaches a widgets
    module's; docs/helpers-api.md lists them); every other name it defines starts with _."""
    assert len(module.__all__) == len(set(module.__all__))
    tree = ast.parse(inspect.getsource(module))
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    defined |= {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    imported = {
        alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names
    }
    defined |= imported & set(module.__all__)  # a name it imports and lists is public there too (plotting.show)
    assert {name for name in defined if not name.startswith("_")} - {"demos"} == set(module.__all__)


def test_unknown_words_names_each_once_in_order_and_counts_the_rest():
    assert unknown_words(["the", "cat"], {"the", "cat"}) == ""
    assert unknown_words(["x", "the", "y", "x"], {"the"}) == "'x', 'y'"
    assert unknown_words([str(i) for i in range(8)], set(), most=5) == "'0', '1', '2', '3', '4' and 3 more"


def test_the_temperature_slider_runs_from_the_powers_of_ten_given():
    slider = temperature_slider(2.0, powers=(-1, 2))
    assert (slider.value, slider.base, slider.min, slider.max, slider.description) == (2.0, 10, -1, 2, "temperature")


def test_the_training_monitor_draws_each_run_in_its_own_colour():
    runs = [f"run {i}" for i in range(6)]  # 11's six variants
    monitor = widgets.training_monitor(runs, steps=10, every=5)
    for run in runs:
        on_step = monitor.callback(run)
        for step in range(10):
            on_step(step, 1.0)
    strokes = re.findall(r'<polyline [^>]*stroke="(#\w+)"', monitor.children[-1].value)
    assert strokes == list(html_plots.TAB10[:6])


def test_the_offset_curve_of_07_has_a_point_per_offset_and_a_dot_at_this_one(shown):
    box = widgets.position_explorer(d_model=64, p=10, q=13)
    for q, k in ((13, 3), (10, 0), (200, 190)):
        box.controls["q"].value = q
        chart = re.search(r"<svg xmlns.*?</svg>", shown[-1]).group(0)
        points = re.search(r'<polyline points="([^"]+)" fill="none" stroke="(#\w+)"', chart)
        xy = [tuple(map(float, p.split(","))) for p in points.group(1).split()]
        assert len(xy) == widgets.POSITION_MAX_OFFSET + 1 and points.group(2) == html_plots.PURPLE
        dot = re.search(r'<circle cx="([\d.]+)" cy="([\d.]+)"', chart).groups()
        assert tuple(map(float, dot)) == xy[k]
        assert ">offset k</text>" in chart and ">200</text>" in chart


def test_the_loss_chart_of_08_labels_its_losses_with_two_decimals():
    svg = widgets.loss_curve_svg({"a": [(0, 2.0), (100, 1.0)]}, steps=200)
    assert re.findall(r'text-anchor="end">([^<]+)</text>', svg) == ["0.00", "1.05", "2.00"]  # 0, middle, top
    assert re.findall(r'text-anchor="middle">([^<]+)</text>', svg) == ["0", "100", "200", "step"]


# --- accessibility: what the explorers draw is described for a screen reader and readable in any theme ----------


def _contrast(a, b):
    """WCAG 2's contrast ratio of two colours (tools/colour_vision.py's, checked in tests/test_palettes.py)."""
    from matplotlib.colors import to_rgb

    return float(contrast_ratio(np.array(to_rgb(a)), np.array(to_rgb(b))))


@pytest.mark.parametrize(("name", "box", "moves"), DEMOS, ids=[d[0] for d in DEMOS])
def test_every_picture_an_explorer_draws_is_described_and_readable(name, box, moves, shown):
    for control, value in moves:
        box.controls[control].value = value
    box.refresh()
    for markup in shown:
        for svg in re.findall(r"<svg\b[^>]*>", markup):  # an image to a screen reader, named, on its own background
            if 'aria-hidden="true"' in svg:  # a legend's swatch: its name is the text beside it
                continue
            assert 'role="img"' in svg and re.search(r'aria-label="[^"]{20,}"', svg), f"{name}: {svg[:200]}"
            assert html_plots.CHART_STYLE in svg, f"{name}: an SVG without its own background: {svg[:200]}"
        assert "<th></th>" not in markup and not re.search(r"<th [^>]*></th>", markup), f"{name}: an empty header"
        for background, ink in re.findall(r"background:(#\w+);color:(\w+)", markup):  # numbers on coloured cells
            assert _contrast(background, ink) >= 4.5, f"{name}: {ink} on {background}"
        for fill in re.findall(r'<text [^>]*fill="([^"]+)"', markup):  # text in the charts: on their white
            assert _contrast(fill, "white") >= 4.5, f"{name}: SVG text in {fill} on white"


def test_a_figure_an_explorer_draws_is_shown_with_a_text_alternative(monkeypatch):
    import matplotlib.pyplot as plt

    shown_alts = []
    monkeypatch.setattr(plotting, "show", lambda alt, fig=None: (shown_alts.append(alt), plt.close("all")))

    def draw(n):
        plt.plot(range(n))

    box = widgets.explorer({"n": widgets._explorer.ipw.IntSlider(value=3, min=1, max=9, description="n")}, draw)
    assert shown_alts == ["The explorer's figure, drawn for its current settings: n = 3"]
    box.controls["n"].value = 5
    assert shown_alts[-1].endswith("n = 5") and not plt.get_fignums()
    described = widgets.explorer(
        {"n": widgets._explorer.ipw.IntSlider(value=4)}, draw, alt=lambda n: f"A straight line through {n} points"
    )
    assert shown_alts[-1] == "A straight line through 4 points" and described.controls["n"].value == 4
    before = len(shown_alts)
    widgets.explorer({"n": widgets._explorer.ipw.IntSlider(value=2)}, lambda n: None)  # HTML only: no figure to show
    assert len(shown_alts) == before


def test_the_browser_tests_know_every_explorer_with_a_text_box(tmp_path):
    """Both browser tests fail a notebook whose explorer should have a text box when they find none; the list they
    use is read from the widget modules, and finds each of those that makes a Text or Combobox."""
    spec = importlib.util.spec_from_file_location("controls", Path(__file__).parent / "browser" / "controls.py")
    controls = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(controls)
    with_boxes = {"01_embeddings", "02_similarity_matrix", "08_training_a_tiny_transformer"}
    with_boxes |= {"09_attention_in_a_real_model", "11_tiny_gpt", "12_a_real_language_model"}
    assert controls.notebooks_with_a_text_box() == with_boxes
    (tmp_path / "nb99_scratch.py").write_text("box = ipw.Combobox(options=[])\n")
    assert controls.notebooks_with_a_text_box(tmp_path) == {"99_scratch"}
