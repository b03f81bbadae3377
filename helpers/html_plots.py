"""Pictures drawn as HTML strings (heatmap tables, bar tables, line charts), and the palette every picture draws with.

An explorer redraws these in milliseconds, where a matplotlib figure takes a tenth of a second.
Every function returns a str (pure functions, no widgets); `helpers.widgets` displays them.
The colours are defined here once, as hex strings that HTML and matplotlib both read, so a thing
drawn in an explorer and in a matplotlib figure has the same colour.
"""

import html

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import Normalize, to_hex

__all__ = [
    "TAB10",
    "BLUE",
    "ORANGE",
    "GREEN",
    "RED",
    "PURPLE",
    "HEAD_COLORS",
    "MASKED",
    "head_color",
    "dark_ink",
    "heatmap",
    "bars",
    "weight_bars",
    "marked_rows",
    "side_by_side",
    "titled",
    "line_chart_svg",
]

# matplotlib's own category colours (tab10, its default line colours), written out for HTML
TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
BLUE = TAB10[0]
ORANGE = TAB10[1]
GREEN = TAB10[2]
RED = TAB10[3]
PURPLE = TAB10[4]
# tab10 with black in place of its grey, then a deep teal and a dark gold (hues tab10 lacks; navy beside black and a
# magenta beside tab10's purple were hard to tell apart as thin lines)
HEAD_COLORS = (*TAB10[:7], "#000000", *TAB10[8:], "#006d5b", "#b8860b")  # one colour per head (12), all different
MASKED = "#d9d9d9"  # the grey of a masked (-inf) or missing (NaN) cell, in HTML and in matplotlib

_CELL = "padding:2px 5px;text-align:center;font:11px monospace"


def head_color(h):
    """Head h's colour in every picture of heads: HEAD_COLORS[h], cycled past 12 heads. -> a hex str."""
    return HEAD_COLORS[h % len(HEAD_COLORS)]


def dark_ink(rgb):
    """True where black text reads better than white on a cell of colour `rgb` (its luminance > 0.5).

    Shapes: rgb (..., 3) floats in [0, 1] -> (...) bool.
    """
    return np.asarray(rgb, dtype=float)[..., :3] @ np.array([0.299, 0.587, 0.114]) > 0.5


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
    head = "".join(f'<th style="{_CELL};writing-mode:vertical-rl">{html.escape(c)}</th>' for c in key_labels)
    rgba = colormap(norm(np.where(np.isfinite(matrix), matrix, low)))  # (T_q, T_k, 4), in one call
    light = dark_ink(rgba)  # (T_q, T_k): dark ink on light cells
    rows = []
    for i, (label, values) in enumerate(zip(query_labels, matrix, strict=True)):
        cells = []
        for j, value in enumerate(values):
            if not np.isfinite(value):
                shown = "−∞" if np.isneginf(value) else value
                cells.append(f'<td style="{_CELL};background:{MASKED}">{shown}</td>')
                continue
            ink = "black" if light[i, j] else "white"
            cells.append(
                f'<td style="{_CELL};background:{to_hex(rgba[i, j, :3])};color:{ink}">{format(value, fmt)}</td>'
            )
        rows.append(f'<tr><th style="{_CELL};text-align:right">{html.escape(label)}</th>{"".join(cells)}</tr>')
    caption = f'<caption style="font-weight:bold;font-size:13px">{html.escape(title)}</caption>' if title else ""
    return (
        f'<table style="border-collapse:collapse;margin:4px">{caption}<tr><th></th>{head}</tr>{"".join(rows)}</table>'
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
):
    """Named lines as an SVG chart: a frame, tick labels on both axes, a line at y = 0 inside the range, a legend.

    Line i is drawn in colors[i] (default TAB10, cycled) and named in the legend on the right (legend=False: no
    legend, and no room kept for it); a series with no points is only named. x_ticks, y_ticks: the values labelled
    (default: the two ends and the middle of the range); a tick label has at most two decimals, or y_format's (".2f").
    dots: (x, y) points marked with a black dot.
    Shapes: series {name: (n, 2) points (x, y)}; x_range, y_range (low, high); dots (m, 2) -> str.
    """
    colors = TAB10 if colors is None else colors
    x_low, x_high = map(float, x_range)
    y_low, y_high = map(float, y_range)
    if not (x_low < x_high and y_low < y_high):
        raise ValueError(f"x_range and y_range must be (low, high) with low < high, got {x_range} and {y_range}")
    left, right, top, bottom = 44, 130 if legend else 12, 10, 28  # margins for the tick labels and the legend
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

    parts = [f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>']
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
        if legend:
            parts.append(
                f'<text x="{left + plot_w + 8}" y="{top + 14 + 14 * i}" font-size="11" fill="{color}">'
                f"{html.escape(name)}</text>"
            )
    parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="black"/>' for x, y in pixels(dots)]
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="10">{"".join(parts)}</svg>'
    )


def _tick(value, spec=None):
    """A tick label in the format `spec`, else with at most two decimals and no trailing zeros (2.3127 -> 2.31,
    200.0 -> 200)."""
    if spec is not None:
        return format(float(value), spec)
    return format(round(float(value), 2) + 0.0, "g")  # + 0.0: -0.0 reads 0
