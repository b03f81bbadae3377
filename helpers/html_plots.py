"""Pictures drawn as HTML strings (heatmap tables, bar tables, line charts), and the palette every picture draws with.

An explorer redraws these in milliseconds, where a matplotlib figure takes a tenth of a second.
Every function returns a str (pure functions, no widgets); `helpers.widgets` displays them.
The colours are defined here once, as hex strings that HTML and matplotlib both read, so a thing
drawn in an explorer and in a matplotlib figure has the same colour.
"""

import html

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import Normalize, to_hex, to_rgb

__all__ = [
    "TAB10",
    "BLUE",
    "ORANGE",
    "GREEN",
    "RED",
    "PURPLE",
    "HEAD_COLORS",
    "HEAD_DASHES",
    "MASKED",
    "head_color",
    "head_dash",
    "dark_ink",
    "heatmap",
    "bars",
    "weight_bars",
    "marked_rows",
    "side_by_side",
    "titled",
    "line_chart_svg",
    "CHART_STYLE",
]

# blue, orange, green, red, purple (the names below), then a grey: tab10's order of names, in shades moved apart so
# that the first six stay apart for colour-blind learners too, each with 3:1 contrast on white (tools/colour_vision.py)
TAB10 = (  # the line colours, in this order
    "#114490",
    "#d46600",
    "#55a277",
    "#992a22",
    "#b277ff",
    "#6e6e77",
    "#8811ff",
    "#663c4c",
    "#c380aa",
    "#337755",
)
BLUE = TAB10[0]
ORANGE = TAB10[1]
GREEN = TAB10[2]
RED = TAB10[3]
PURPLE = TAB10[4]
# twelve colours as far apart as twelve thin lines can be for colour-blind learners too, black for head 7: not far
# enough by colour alone, so a picture of every head must also dash head h's line by h % 3 (solid, dashed, dotted);
# no two heads of one dash are close (tools/colour_vision.py)
HEAD_COLORS = (  # one colour per head (12), all different
    "#889955",
    "#1aa2bb",
    "#6e9077",
    "#a22200",
    "#6611ee",
    "#77444c",
    "#aa55ff",
    "#000000",
    "#4c5580",
    "#1a776e",
    "#806e4c",
    "#ff5500",
)
HEAD_DASHES = ("", "6 3", "1.5 3")  # head h: HEAD_DASHES[h % 3] as SVG stroke-dasharray (solid, dashed, dotted)
MASKED = "#d9d9d9"  # the grey of a masked (-inf) or missing (NaN) cell, in HTML and in matplotlib

_CELL = "padding:2px 5px;text-align:center;font:11px monospace"


def head_color(h):
    """Head h's colour in every picture of heads: HEAD_COLORS[h], cycled past 12 heads. -> a hex str."""
    return HEAD_COLORS[h % len(HEAD_COLORS)]


def head_dash(h):
    """Head h's dash in every picture of heads as lines: HEAD_DASHES[h % 3] ("" is solid). -> an SVG dasharray str.

    matplotlib reads the same pattern as `linestyle=(0, tuple(map(float, dash.split())))`.
    """
    return HEAD_DASHES[h % len(HEAD_DASHES)]


def dark_ink(rgb):
    """True where black text has more contrast than white on a cell of colour `rgb` (WCAG's contrast ratio).

    WCAG's relative luminance L of the colour (sRGB, linearised) gives black text a contrast of
    (L + 0.05) / 0.05 and white text 1.05 / (L + 0.05); the better of the two is at least 4.58:1
    on any colour, above the 4.5:1 that small text needs.
    Shapes: rgb (..., 3) floats in [0, 1] (an alpha channel after them is ignored) -> (...) bool.
    """
    return _luminance(rgb) > _INK_SWITCH


def _luminance(rgb):
    """WCAG's relative luminance of sRGB colours. Shapes: (..., 3) floats in [0, 1] -> (...)."""
    c = np.asarray(rgb, dtype=float)[..., :3]
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


_INK_SWITCH = np.sqrt(1.05 * 0.05) - 0.05  # the luminance (0.179) where black and white text have equal contrast


def heatmap(matrix, query_labels, key_labels, *, title=None, cmap="viridis", fmt=".2f", vmin=None, vmax=None):
    """A labelled heatmap as an HTML table: rows are queries, columns are keys; -inf cells read −∞.

    Shapes: matrix (T_q, T_k); query_labels T_q strings; key_labels T_k strings -> str.
    """
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2 or matrix.shape != (len(query_labels), len(key_labels)):
        raise ValueError(
            f"matrix must have shape (len(query_labels), len(key_labels)) = "
            f"({len(query_labels)}, {len(key_labels)}), got {matrix.shape}"
        )
    finite = matrix[np.isfinite(matrix)]
    low = vmin if vmin is not None else (finite.min() if finite.size else 0.0)
    high = vmax if vmax is not None else (finite.max() if finite.size else 1.0)
    colormap, norm = plt.get_cmap(cmap), Normalize(low, high if high > low else low + 1)
    head = "".join(
        f'<th scope="col" style="{_CELL};writing-mode:vertical-rl">{html.escape(c)}</th>' for c in key_labels
    )
    rgba = colormap(norm(np.where(np.isfinite(matrix), matrix, low)))  # (T_q, T_k, 4), in one call
    light = dark_ink(rgba)  # (T_q, T_k): dark ink on light cells
    masked_ink = "black" if dark_ink(to_rgb(MASKED)) else "white"  # its own ink: a dark theme's text is light
    rows = []
    for i, (label, values) in enumerate(zip(query_labels, matrix, strict=True)):
        cells = []
        for j, value in enumerate(values):
            if not np.isfinite(value):
                shown = "−∞" if np.isneginf(value) else value
                cells.append(f'<td style="{_CELL};background:{MASKED};color:{masked_ink}">{shown}</td>')
                continue
            ink = "black" if light[i, j] else "white"
            cells.append(
                f'<td style="{_CELL};background:{to_hex(rgba[i, j, :3])};color:{ink}">{format(value, fmt)}</td>'
            )
        rows.append(
            f'<tr><th scope="row" style="{_CELL};text-align:right">{html.escape(label)}</th>{"".join(cells)}</tr>'
        )
    caption = f'<caption style="font-weight:bold;font-size:13px">{html.escape(title)}</caption>' if title else ""
    corner = f'<th scope="col" style="{_CELL}">{_HIDDEN_CORNER}</th>'
    return f'<table style="border-collapse:collapse;margin:4px">{caption}<tr>{corner}{head}</tr>{"".join(rows)}</table>'


_HIDDEN_CORNER = (  # the corner cell, the row labels' header: read by a screen reader, not shown
    '<span style="position:absolute;width:1px;height:1px;overflow:hidden">rows: queries, columns: keys</span>'
)


def bars(values, labels, caption_html, color):
    """Horizontal HTML bars, a row per label, under a caption (already HTML). Shapes: values (n,) -> str."""
    rows = "".join(
        f'<tr><td style="padding:0 6px;font:11px monospace;text-align:right">{html.escape(label)}</td>'
        f'<td><div style="background:{color};height:10px;width:{max(0.0, float(w)) * 150:.0f}px"></div></td>'
        f'<td style="padding:0 6px;font:11px monospace">{w:.3f}</td></tr>'
        for label, w in zip(labels, values, strict=True)
    )
    return (
        f'<table style="margin:4px 12px"><caption style="white-space:nowrap;text-align:left">'
        f"{caption_html}</caption>{rows}</table>"
    )


def weight_bars(values, labels, title):
    """One query's weights as horizontal HTML bars, a row per key, under a bold title. -> str."""
    return bars(values, labels, f"<b>{html.escape(title)}</b>", RED)


def marked_rows(labels, query):
    """Token labels with a marker on the chosen query's row (query -1: no marker)."""
    return [("▶ " if i == query else "") + label for i, label in enumerate(labels)]


def side_by_side(*parts):
    """HTML pieces in one row, aligned at the top; they wrap to a new line (or scroll) rather than run off the page."""
    return (
        f'<div style="display:flex;flex-wrap:wrap;align-items:flex-start;max-width:100%;overflow-x:auto">'
        f"{''.join(parts)}</div>"
    )


def titled(title, markup):
    """A picture (HTML or SVG) under a bold title, with a margin around both. -> str."""
    return (
        f'<div style="margin:4px 12px"><div style="font:bold 13px sans-serif">{html.escape(title)}</div>{markup}</div>'
    )


def line_chart_svg(
    series,
    x_range,
    y_range,
    *,
    x_label="",
    x_ticks=None,
    y_ticks=None,
    y_format=None,
    dots=(),
    colors=None,
    legend=True,
    width=480,
    height=200,
    description=None,
):
    """Named lines as an SVG chart: a frame, tick labels on both axes, a line at y = 0 inside the range, a legend.

    Line i is drawn in colors[i] (default TAB10, cycled) and named in the legend on the right (legend=False: no
    legend, and no room kept for it); a series with no points is only named. x_ticks, y_ticks: the values labelled
    (default: the two ends and the middle of the range); a tick label has at most two decimals, or y_format's (".2f").
    dots: (x, y) points marked with a black dot.
    The chart is an image to a screen reader (role="img"), named by `description` (default: the lines' names, the
    axes' ranges and where each line ends). It has its own white background and dark ink, so it reads the same in
    a dark theme (JupyterLab's, Colab's) as in a light one.
    Shapes: series {name: (n, 2) points (x, y)}; x_range, y_range (low, high); dots (m, 2) -> str.
    """
    colors = TAB10 if colors is None else colors
    x_low, x_high = map(float, x_range)
    y_low, y_high = map(float, y_range)
    if not (x_low < x_high and y_low < y_high):
        raise ValueError(f"x_range and y_range must be (low, high) with low < high, got {x_range} and {y_range}")
    left, right, top, bottom = 44, 146 if legend else 12, 10, 28  # margins for the tick labels and the legend
    plot_w, plot_h = width - left - right, height - top - bottom

    def pixels(points):  # (n, 2) data -> (n, 2) pixels; SVG's y axis points down
        points = np.asarray(points, dtype=float).reshape(-1, 2)
        return np.stack(
            [
                left + plot_w * (points[:, 0] - x_low) / (x_high - x_low),
                top + plot_h * (y_high - points[:, 1]) / (y_high - y_low),
            ],
            axis=1,
        )

    parts = [f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#767676"/>']
    if y_low < 0 < y_high:
        zero = pixels([(x_low, 0)])[0, 1]
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{zero:.1f}" y2="{zero:.1f}" stroke="#bbb"/>')
    for value in (y_low, (y_low + y_high) / 2, y_high) if y_ticks is None else y_ticks:
        y = pixels([(x_low, value)])[0, 1]
        parts.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{_tick(value, y_format)}</text>')
    for value in (x_low, (x_low + x_high) / 2, x_high) if x_ticks is None else x_ticks:
        x = pixels([(value, y_low)])[0, 0]
        parts.append(f'<text x="{x:.1f}" y="{height - 14}" text-anchor="middle">{_tick(value)}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 2}" text-anchor="middle">{html.escape(x_label)}</text>')
    for i, (name, points) in enumerate(series.items()):
        color = colors[i % len(colors)]
        if len(points):
            line = " ".join(f"{x:.1f},{y:.1f}" for x, y in pixels(points))
            parts.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        if legend:  # a swatch of the line's colour, then its name in dark ink (thin coloured text is hard to read)
            parts.append(
                f'<rect x="{left + plot_w + 8}" y="{top + 8 + 14 * i}" width="12" height="4" fill="{color}"/>'
                f'<text x="{left + plot_w + 24}" y="{top + 14 + 14 * i}" font-size="11">{html.escape(name)}</text>'
            )
    parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="black"/>' for x, y in pixels(dots)]
    if description is None:
        description = _describe_lines(series, (x_low, x_high), (y_low, y_high), x_label, y_format)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{html.escape(description)}" style="{CHART_STYLE}" font-family="sans-serif" font-size="10">'
        f"<title>{html.escape(description)}</title>{''.join(parts)}</svg>"
    )


CHART_STYLE = "background:#fff;color:#222"  # a drawn chart's own background and ink: the same in light and dark themes


def _describe_lines(series, x_range, y_range, x_label, y_format):
    """A chart's text alternative: its lines' names, its axes' ranges and where each line ends. -> str."""
    ends = [
        f"{name} ends at {_tick(points[-1][1], y_format)}" if len(points) else f"{name} has no points yet"
        for name, points in series.items()
    ]
    axis = f"{x_label} " if x_label else "x "
    return (
        f"Line chart, {axis}from {_tick(x_range[0])} to {_tick(x_range[1])}, y from {_tick(y_range[0], y_format)} "
        f"to {_tick(y_range[1], y_format)}" + (": " + "; ".join(ends) if ends else "")
    )


def _tick(value, spec=None):
    """A tick label in the format `spec`, else with at most two decimals and no trailing zeros (2.3127 -> 2.31,
    200.0 -> 200)."""
    if spec is not None:
        return format(float(value), spec)
    return format(round(float(value), 2) + 0.0, "g")  # + 0.0: -0.0 reads 0
