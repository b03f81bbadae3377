"""Pictures drawn as HTML strings: heatmap tables and bar tables (pure functions, no widgets).

An explorer redraws these in milliseconds, where a matplotlib figure takes a tenth of a second.
Every function returns a str; `helpers.widgets` displays them.
"""

import html

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import Normalize, to_hex

CELL = "padding:2px 5px;text-align:center;font:11px monospace"
MASKED = "#d9d9d9"  # the grey of a masked (-inf) or missing (NaN) cell, in HTML and in matplotlib


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
        raise ValueError(f"matrix must have shape (len(query_labels), len(key_labels)) = "
                         f"({len(query_labels)}, {len(key_labels)}), got {matrix.shape}")
    finite = matrix[np.isfinite(matrix)]
    low = vmin if vmin is not None else (finite.min() if finite.size else 0.0)
    high = vmax if vmax is not None else (finite.max() if finite.size else 1.0)
    colormap, norm = plt.get_cmap(cmap), Normalize(low, high if high > low else low + 1)
    head = "".join(f'<th style="{CELL};writing-mode:vertical-rl">{html.escape(c)}</th>' for c in key_labels)
    rgba = colormap(norm(np.where(np.isfinite(matrix), matrix, low)))  # (T_q, T_k, 4), in one call
    light = dark_ink(rgba)  # (T_q, T_k): dark ink on light cells
    rows = []
    for i, (label, values) in enumerate(zip(query_labels, matrix, strict=True)):
        cells = []
        for j, value in enumerate(values):
            if not np.isfinite(value):
                cells.append(f'<td style="{CELL};background:{MASKED}">{"−∞" if np.isneginf(value) else value}</td>')
                continue
            ink = "black" if light[i, j] else "white"
            cells.append(f'<td style="{CELL};background:{to_hex(rgba[i, j, :3])};color:{ink}">'
                         f"{format(value, fmt)}</td>")
        rows.append(f'<tr><th style="{CELL};text-align:right">{html.escape(label)}</th>{"".join(cells)}</tr>')
    caption = f'<caption style="font-weight:bold;font-size:13px">{html.escape(title)}</caption>' if title else ""
    return (f'<table style="border-collapse:collapse;margin:4px">{caption}<tr><th></th>{head}</tr>'
            f'{"".join(rows)}</table>')


def bars(values, labels, caption_html, color):
    """Horizontal HTML bars, a row per label, under a caption (already HTML). Shapes: values (n,) -> str."""
    rows = "".join(
        f'<tr><td style="padding:0 6px;font:11px monospace;text-align:right">{html.escape(label)}</td>'
        f'<td><div style="background:{color};height:10px;width:{max(0.0, float(w)) * 150:.0f}px"></div></td>'
        f'<td style="padding:0 6px;font:11px monospace">{w:.3f}</td></tr>'
        for label, w in zip(labels, values, strict=True))
    return (f'<table style="margin:4px 12px"><caption style="white-space:nowrap;text-align:left">'
            f"{caption_html}</caption>{rows}</table>")


def weight_bars(values, labels, title):
    """One query's weights as horizontal HTML bars, a row per key, under a bold title. -> str."""
    return bars(values, labels, f"<b>{html.escape(title)}</b>", "#d62728")


def marked_rows(labels, query):
    """Token labels with a marker on the chosen query's row (query -1: no marker)."""
    return [("▶ " if i == query else "") + label for i, label in enumerate(labels)]


def side_by_side(*parts):
    """HTML pieces in one row, aligned at the top; they wrap to a new line (or scroll) rather than run off the page."""
    return (f'<div style="display:flex;flex-wrap:wrap;align-items:flex-start;max-width:100%;overflow-x:auto">'
            f'{"".join(parts)}</div>')
