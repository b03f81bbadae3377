"""The HTML pictures the explorers draw, and the palette every picture shares."""

import re
from pathlib import Path
from xml.etree import ElementTree

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from colour_vision import contrast_ratio  # tools/
from matplotlib.colors import to_hex, to_rgb

from helpers import head_views, html_plots, plotting, widgets

ROOT = Path(__file__).resolve().parent.parent


def test_html_heatmap_has_one_cell_per_entry_and_escapes_labels():
    matrix = np.array([[0.0, 1.0, -np.inf], [0.5, 0.25, 2.0]])
    markup = html_plots.heatmap(matrix, ["<b>", "q"], ["k1", "k2", "&"], title="T<1>")
    assert markup.count("<td") == 6
    assert "&lt;b&gt;" in markup and "&amp;" in markup and "T&lt;1&gt;" in markup and "<b>" not in markup
    assert "−∞" in markup and "2.00" in markup and "0.25" in markup
    # the largest value gets the colour map's top colour, the smallest its bottom colour
    top, bottom = (matplotlib.colors.to_hex(plt.get_cmap("viridis")(x)) for x in (1.0, 0.0))
    assert re.search(rf"background:{top};color:\w+\">2\.00", markup)
    assert re.search(rf"background:{bottom};color:\w+\">0\.00", markup)


def test_html_heatmap_rejects_a_shape_mismatch():
    with pytest.raises(ValueError, match=r"\(2, 2\)"):
        html_plots.heatmap(np.ones((2, 3)), ["a", "b"], ["c", "d"])


# --- the palette: every picture's colours are defined once, in html_plots ----------------------------------------


def test_the_palette_keeps_tab10s_names_in_tab10s_order():
    named = (html_plots.BLUE, html_plots.ORANGE, html_plots.GREEN, html_plots.RED, html_plots.PURPLE)
    assert html_plots.TAB10[:5] == named and len(set(html_plots.TAB10)) == 10
    assert len(set(html_plots.HEAD_COLORS)) == 12
    assert [html_plots.head_color(h) for h in (0, 7, 12)] == [
        html_plots.HEAD_COLORS[0],
        "#000000",
        html_plots.HEAD_COLORS[0],
    ]
    assert [html_plots.head_dash(h) for h in (0, 1, 2, 3)] == ["", "6 3", "1.5 3", ""]  # a second cue beside the colour


def test_no_other_module_retypes_a_colour_of_the_palette():
    palette = {c.lower() for c in (*html_plots.TAB10, *html_plots.HEAD_COLORS, html_plots.MASKED)}
    retyped = []
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        if path.name == "html_plots.py":
            continue
        text = path.read_text(encoding="utf-8").lower()
        found = {c for c in palette if c in text} | set(re.findall(r"[\"'](?:tab10|tab:\w+|c\d)[\"']", text))
        retyped += [f"{path.relative_to(ROOT)}: {c}" for c in sorted(found)]
    assert retyped == [], "import the colour from helpers.html_plots instead"


def test_a_head_has_the_same_colour_in_the_figure_and_in_the_explorer(rng):
    weights = rng.dirichlet(np.ones(4), size=(12, 4))  # (12, 4, 4): every head of a layer
    labels = ["a", "b", "c", "d"]
    for head in (0, 7, 10, 11):
        ax = head_views.layer_lines(weights, labels, heads=[head], min_weight=0)
        drawn = {to_hex(c[:3]) for collection in ax.collections for c in collection.get_colors()}
        assert drawn == {html_plots.HEAD_COLORS[head]}
        svg = widgets.lines_svg(weights, labels, [head], min_weight=0)
        assert set(re.findall(r'stroke="(#\w+)"', svg)) == {html_plots.HEAD_COLORS[head]}


def test_a_masked_cell_is_the_same_grey_in_html_and_in_matplotlib():
    matrix = np.array([[0.5, -np.inf], [np.nan, 1.0]])
    markup = html_plots.heatmap(matrix, ["a", "b"], ["c", "d"])
    assert markup.count(f"background:{html_plots.MASKED}") == 2
    image = plotting.heatmap(matrix, ["a", "b"], ["c", "d"]).get_images()[0]
    assert to_hex(image.cmap.get_bad()) == html_plots.MASKED


def test_titled_puts_the_escaped_title_above_the_picture():
    markup = html_plots.titled("PE[p]·PE[p+k] <k>", "<svg></svg>")
    assert markup.index("PE[p]·PE[p+k] &lt;k&gt;") < markup.index("<svg></svg>")


# --- line_chart_svg ---------------------------------------------------------------------------------------------

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg):
    """The chart's frame (x, y, width, height), its lines [(stroke, (n, 2) points)], its texts {text: (x, y)}, its
    dots (n, 2) and its other lines [(x1, y1, x2, y2)], all in pixels."""
    root = ElementTree.fromstring(svg)
    frame = tuple(float(root.find(f"{SVG}rect").get(k)) for k in ("x", "y", "width", "height"))
    lines = [
        (p.get("stroke"), np.array([[float(v) for v in xy.split(",")] for xy in p.get("points").split()]))
        for p in root.iter(f"{SVG}polyline")
    ]
    texts = {t.text or "": (float(t.get("x")), float(t.get("y"))) for t in root.iter(f"{SVG}text")}
    dots = np.array([[float(c.get("cx")), float(c.get("cy"))] for c in root.iter(f"{SVG}circle")]).reshape(-1, 2)
    rules = [tuple(float(r.get(k)) for k in ("x1", "y1", "x2", "y2")) for r in root.iter(f"{SVG}line")]
    return frame, lines, texts, dots, rules


def test_line_chart_puts_the_ranges_corners_at_the_frames_corners():
    svg = html_plots.line_chart_svg({"up": [(10, -1), (30, 3)], "flat": [(10, 1), (20, 1), (30, 1)]}, (10, 30), (-1, 3))
    (x, y, w, h), lines, _, _, _ = parse(svg)
    up, flat = (points for _, points in lines)
    np.testing.assert_allclose(up, [[x, y + h], [x + w, y]], atol=0.05)  # (10, -1) bottom left, (30, 3) top right
    np.testing.assert_allclose(flat, [[x, y + h / 2], [x + w / 2, y + h / 2], [x + w, y + h / 2]], atol=0.05)


def test_line_chart_draws_a_line_per_series_in_the_palettes_order_and_names_it():
    series = {f"run <{i}>": [(0, i), (1, i + 1)] for i in range(12)} | {"empty": []}
    svg = html_plots.line_chart_svg(series, (0, 1), (0, 13))
    _, lines, texts, _, _ = parse(svg)
    assert [stroke for stroke, _ in lines] == [html_plots.TAB10[i % 10] for i in range(12)]  # the 11th repeats
    assert set(series) <= set(texts) and "run &lt;0&gt;" in svg  # every name, the empty series' too, escaped
    # the legend: a swatch of the line's colour, then the name in the chart's dark ink (not in the line's colour)
    legend = re.findall(r'<rect [^>]*fill="(#\w+)"/><text [^>]*font-size="11">run &lt;(\d+)&gt;</text>', svg)
    assert all(color == html_plots.TAB10[int(i) % 10] for color, i in legend) and len(legend) == 12
    purple = html_plots.line_chart_svg({"a": [(0, 0), (1, 1)]}, (0, 1), (0, 1), colors=(html_plots.PURPLE,))
    assert parse(purple)[1][0][0] == html_plots.PURPLE


def test_line_chart_labels_its_axes_where_the_values_are():
    svg = html_plots.line_chart_svg(
        {"a": [(0, 0), (400, 2.3127)]}, (0, 400), (0, 4), x_label="step", y_ticks=(0, 2.3127, 4)
    )
    (x, y, w, h), _, texts, _, rules = parse(svg)
    assert {"0", "200", "400", "2.31", "4", "step"} <= set(texts)
    assert texts["200"][0] == pytest.approx(x + w / 2) and texts["400"][0] == pytest.approx(x + w)  # x ticks
    assert texts["400"][1] > y + h and texts["step"][1] > texts["400"][1]  # under the frame, the name lowest
    assert texts["4"][1] - 4 == pytest.approx(y) and texts["2.31"][1] - 4 == pytest.approx(
        y + h * (1 - 2.3127 / 4), abs=0.05
    )  # y ticks
    assert all(tx < x for tx, _ in (texts["4"], texts["2.31"]))  # left of the frame
    assert rules == []  # no zero line: 0 is the bottom edge
    fixed = html_plots.line_chart_svg({"a": [(0, 0)]}, (0, 400), (0, 4), y_ticks=(0, 2.3127), y_format=".2f")
    assert {"0.00", "2.31", "0", "200", "400"} <= set(parse(fixed)[2])  # y_format: the y ticks only


def test_line_chart_draws_the_zero_line_and_the_dots_inside_the_range():
    svg = html_plots.line_chart_svg({"a": [(0, -2), (10, 2)]}, (0, 10), (-2, 2), dots=[(5, 0), (10, 2)], legend=False)
    (x, y, w, h), _, texts, dots, rules = parse(svg)
    assert rules == [(x, y + h / 2, x + w, y + h / 2)]
    np.testing.assert_allclose(dots, [[x + w / 2, y + h / 2], [x + w, y]], atol=0.05)
    assert set(texts) == {"-2", "0", "2", "5", "10", ""}  # ticks only: no legend
    assert x + w > 480 - 20  # no room kept for a legend


@pytest.mark.parametrize(("x_range", "y_range"), [((1, 1), (0, 1)), ((0, 1), (2, 1))])
def test_line_chart_rejects_an_empty_range(x_range, y_range):
    with pytest.raises(ValueError, match="low < high"):
        html_plots.line_chart_svg({}, x_range, y_range)


# --- accessibility: what a screen reader reads, and contrast in light and dark themes ----------------------------


def contrast(a, b):
    """WCAG 2's contrast ratio of two colours (hex strings, names or RGB floats): tools/colour_vision.py's, which
    tests/test_palettes.py checks against known values, and which shares no code with html_plots.dark_ink."""
    return float(contrast_ratio(np.array(to_rgb(a)), np.array(to_rgb(b))))


def test_dark_ink_picks_the_text_colour_with_at_least_4_5_to_1_contrast_on_any_cell():
    grid = np.stack(np.meshgrid(*[np.linspace(0, 1, 18)] * 3), axis=-1).reshape(-1, 3)  # 5832 colours
    colours = np.concatenate([grid, *(plt.get_cmap(m)(np.linspace(0, 1, 256))[:, :3] for m in ("viridis", "Blues"))])
    ink = html_plots.dark_ink(colours)
    ratios = np.array([contrast(c, "black" if dark else "white") for c, dark in zip(colours, ink, strict=True)])
    assert ratios.min() >= 4.5
    # it is the better of the two: the other ink never has more contrast
    others = np.array([contrast(c, "white" if dark else "black") for c, dark in zip(colours, ink, strict=True)])
    assert np.all(ratios >= others - 1e-12)
    # viridis' green #26ad81: white text had 2.9:1 under the old rule (luminance 0.299 R + 0.587 G + 0.114 B > 0.5)
    assert html_plots.dark_ink(to_rgb("#26ad81")) and contrast("#26ad81", "black") > 7
    assert html_plots.dark_ink(np.ones((2, 3, 4))).shape == (2, 3)


def test_html_heatmap_has_header_cells_and_readable_numbers_everywhere():
    matrix = np.array([[0.0, 0.5, -np.inf], [0.25, 0.75, 1.0]])
    markup = html_plots.heatmap(matrix, ["q1", "q2"], ["k1", "k2", "k3"], cmap="viridis")
    assert re.findall(r'<th scope="col"[^>]*>(?:<span[^>]*>)?([^<]+)', markup) == ["rows: queries, columns: keys"] + [
        "k1",
        "k2",
        "k3",
    ]
    assert re.findall(r'<th scope="row"[^>]*>([^<]+)', markup) == ["q1", "q2"]
    cells = re.findall(r"background:(#\w+);color:(\w+)\">([^<]+)</td>", markup)
    assert len(cells) == 6  # the masked one too has its own ink: a dark theme's light text would vanish on grey
    assert all(contrast(bg, ink) >= 4.5 for bg, ink, _ in cells)


def test_line_chart_is_an_image_named_for_a_screen_reader_with_its_own_background():
    svg = html_plots.line_chart_svg({"train": [(0, 2.0), (10, 0.5)], "test": []}, (0, 10), (0, 2), x_label="step")
    root = ElementTree.fromstring(svg)
    label = root.get("aria-label")
    assert root.get("role") == "img" and root.find(f"{SVG}title").text == label
    assert "step from 0 to 10" in label and "train ends at 0.5" in label and "test has no points yet" in label
    assert html_plots.CHART_STYLE in root.get("style") and "background:#fff" in html_plots.CHART_STYLE
    # every text is drawn in the default ink (black) on that white background: none takes a line's colour
    assert all(t.get("fill") is None for t in root.iter(f"{SVG}text"))
    told = html_plots.line_chart_svg({"a": [(0, 0), (1, 1)]}, (0, 1), (0, 1), description='a "quoted" <b>')
    assert 'aria-label="a &quot;quoted&quot; &lt;b&gt;"' in told
