"""Every picture the notebooks draw: heatmaps, token-to-token lines, bars, curves.

Each function draws on `ax` (a new figure when None) and returns the axes, so a notebook
can put several side by side. End a plotting cell with `plotting.show("what the figure shows")`:
it displays the figure with that text as its alternative, for a learner who cannot see it. The
colours are html_plots' palette, so an explorer and a figure colour the same thing alike.
"""

import matplotlib.pyplot as plt
import numpy as np

from helpers._labels import place_labels
from helpers._show import show
from helpers.html_plots import BLUE, MASKED, TAB10, dark_ink

__all__ = ["show", "heatmap", "token_lines", "bars", "arrows_2d", "labelled_scatter", "curves", "sweep", "head_grid"]


def _new_axes(ax, figsize):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def heatmap(
    matrix,
    query_labels=None,
    key_labels=None,
    *,
    ax=None,
    title=None,
    cmap="viridis",
    annotate=None,
    fmt=".2f",
    vmin=None,
    vmax=None,
    xlabel="key",
    ylabel="query",
    colorbar=True,
):
    """A labelled heatmap of a token x token matrix; -inf (written −∞) and NaN (blank) cells are grey.

    Shapes: matrix (T_q, T_k); query_labels T_q strings (rows); key_labels T_k strings (columns).
    annotate: write each value in its cell (default: when the matrix is at most 12 x 12).
    """
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2:
        raise ValueError(f"matrix must be 2-D (T_q, T_k), got shape {matrix.shape}")
    n_rows, n_cols = matrix.shape
    for labels, n, name in ((query_labels, n_rows, "query_labels"), (key_labels, n_cols, "key_labels")):
        if labels is not None and len(labels) != n:
            raise ValueError(f"{name} has {len(labels)} entries but the matrix has shape {matrix.shape}")
    ax = _new_axes(ax, (1.2 + 0.55 * n_cols, 0.8 + 0.5 * n_rows))
    shown = np.ma.masked_invalid(matrix)
    colormap = plt.get_cmap(cmap).with_extremes(bad=MASKED)
    image = ax.imshow(shown, cmap=colormap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(
        range(n_cols),
        key_labels if key_labels is not None else range(n_cols),
        rotation=45 if key_labels is not None else 0,
        ha="right" if key_labels is not None else "center",
    )
    ax.set_yticks(range(n_rows), query_labels if query_labels is not None else range(n_rows))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if annotate is None:
        annotate = n_rows <= 12 and n_cols <= 12
    if annotate:
        _annotate(ax, image, matrix, fmt)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def _annotate(ax, image, matrix, fmt):
    """Write each cell's value in black or white, whichever reads better on the cell."""
    for (i, j), value in np.ndenumerate(matrix):
        if not np.isfinite(value):
            text, color = ("−∞" if np.isneginf(value) else ""), "black"  # NaN: a masked-out cell
        else:
            text = format(value, fmt)
            color = "black" if dark_ink(image.cmap(image.norm(value))) else "white"
        ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color)


def token_lines(weights, query_labels, key_labels=None, *, ax=None, title=None, query=None, color=BLUE):
    """Queries on the left, keys on the right, a line from each query to each key.

    A line's width and opacity are its weight. `query` (an index) draws only that query's lines.
    Shapes: weights (T_q, T_k); query_labels T_q strings; key_labels T_k strings (default query_labels).
    """
    weights = np.asarray(weights, dtype=float)
    key_labels = query_labels if key_labels is None else key_labels
    if weights.ndim != 2 or weights.shape != (len(query_labels), len(key_labels)):
        raise ValueError(
            f"weights must have shape (len(query_labels), len(key_labels)) = "
            f"({len(query_labels)}, {len(key_labels)}), got {weights.shape}"
        )
    n_q, n_k = weights.shape
    ax = _new_axes(ax, (3.2, 0.45 * max(n_q, n_k) + 0.8))
    y_q, y_k = np.linspace(1, 0, n_q), np.linspace(1, 0, n_k)
    rows = range(n_q) if query is None else [query]
    for i in rows:
        for j in range(n_k):
            w = weights[i, j]
            if w > 1e-3:
                ax.plot(
                    [0, 1],
                    [y_q[i], y_k[j]],
                    color=color,
                    alpha=min(1.0, 0.15 + 0.85 * w),
                    linewidth=0.5 + 6 * w,
                    solid_capstyle="round",
                )
    for i, label in enumerate(query_labels):
        ax.text(-0.05, y_q[i], label, ha="right", va="center", fontweight="bold" if query == i else "normal")
    for j, label in enumerate(key_labels):
        ax.text(1.05, y_k[j], label, ha="left", va="center")
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(-0.08, 1.08)
    ax.axis("off")
    ax.set_title(title or "query → key (line width = weight)", fontsize=10)
    return ax


def bars(values, labels=None, *, ax=None, title=None, ylabel="weight", ylim=(0, 1), color=BLUE):
    """A bar per entry, e.g. one query's attention weights over the keys."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {values.shape}")
    ax = _new_axes(ax, (0.5 * len(values) + 1.5, 2.5))
    ax.bar(range(len(values)), values, color=color)
    ax.set_xticks(
        range(len(values)),
        labels if labels is not None else range(len(values)),
        rotation=45 if labels is not None else 0,
    )
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if title:
        ax.set_title(title)
    return ax


def arrows_2d(vectors, labels, *, ax=None, title=None):
    """Each 2-D vector drawn as an arrow from the origin, labelled at its tip, on equal axes.

    Shapes: vectors (n, 2); labels n strings.
    """
    vectors = np.asarray(vectors, dtype=float)
    if vectors.ndim != 2 or vectors.shape[1] != 2:
        raise ValueError(f"vectors must have shape (n, 2), got {vectors.shape}")
    if len(labels) != len(vectors):
        raise ValueError(f"labels has {len(labels)} entries but vectors has shape {vectors.shape}")
    ax = _new_axes(ax, (4, 4))
    for i, ((x, y), label) in enumerate(zip(vectors, labels, strict=True)):
        color = TAB10[i % len(TAB10)]
        ax.annotate("", xy=(x, y), xytext=(0, 0), arrowprops={"arrowstyle": "-|>", "color": color, "lw": 2})
        ax.text(x, y, f" {label} ", color=color, ha="left" if x >= 0 else "right", va="bottom")
    margin = 0.25 * max(np.abs(vectors).max(), 1e-9)  # room for the labels
    ax.set_xlim(min(0, vectors[:, 0].min()) - margin, max(0, vectors[:, 0].max()) + margin)
    ax.set_ylim(min(0, vectors[:, 1].min()) - margin, max(0, vectors[:, 1].max()) + margin)
    ax.set_aspect("equal")  # angles on screen are the true angles
    ax.axhline(0, color="grey", lw=0.5)
    ax.axvline(0, color="grey", lw=0.5)
    if title:
        ax.set_title(title)
    return ax


def labelled_scatter(points, labels, groups=None, *, ax=None, title=None):
    """A dot per point with its label next to it, coloured by group (with a legend).

    Labels are placed where they overlap no other label and no dot (a thin line joins a label
    pushed away from its dot to it).
    Shapes: points (n, 2); labels n strings; groups n group names (or None: one colour).
    """
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[1] != 2:
        raise ValueError(f"points must have shape (n, 2), got {points.shape}")
    groups = ["points"] * len(points) if groups is None else list(groups)
    if len(labels) != len(points) or len(groups) != len(points):
        raise ValueError(
            f"labels ({len(labels)}) and groups ({len(groups)}) need one entry per point; "
            f"points has shape {points.shape}"
        )
    ax = _new_axes(ax, (7.5, 5.5))
    order = list(dict.fromkeys(groups))  # first-seen order, so the legend reads like the input
    colors = [TAB10[order.index(g) % len(TAB10)] for g in groups]  # (n,): each point its group's colour
    for group in order:
        rows = [i for i, g in enumerate(groups) if g == group]
        ax.scatter(points[rows, 0], points[rows, 1], s=18, color=colors[rows[0]], label=group)
    span = np.ptp(points, axis=0) + 1e-9  # (2,): room around the dots for the labels
    ax.set_xlim(points[:, 0].min() - 0.08 * span[0], points[:, 0].max() + 0.15 * span[0])
    ax.set_ylim(points[:, 1].min() - 0.08 * span[1], points[:, 1].max() + 0.08 * span[1])
    place_labels(ax, points, labels, colors)
    if len(set(groups)) > 1:
        ax.legend(fontsize=8, loc="best")
    if title:
        ax.set_title(title)
    return ax


def curves(series, *, ax=None, title=None, xlabel="step", ylabel="loss", logy=False):
    """One line per named series: {"label": values}."""
    ax = _new_axes(ax, (5, 3))
    for label, values in series.items():
        ax.plot(np.asarray(values, dtype=float), label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    if len(series) > 1:
        ax.legend()
    return ax


def sweep(x, series, *, ax=None, title=None, xlabel="d_k", ylabel=None, logx=True, logy=False, dashed=()):
    """One line with markers per named series against x, e.g. a measured quantity against d_k.

    Shapes: x (n,); series {label: (n,) values}; labels listed in `dashed` are drawn as dashed
    reference lines without markers (e.g. the prediction the measurements should follow).
    """
    x = np.asarray(x, dtype=float)
    ax = _new_axes(ax, (4.5, 3.2))
    for label, values in series.items():
        values = np.asarray(values, dtype=float)
        if values.shape != x.shape:
            raise ValueError(f"series {label!r} has shape {values.shape} but x has shape {x.shape}")
        style = {"linestyle": "--", "color": "grey"} if label in dashed else {"marker": "o", "markersize": 4}
        ax.plot(x, values, label=label, **style)
    # plain-text tick labels: matplotlib's default 2^k / 10^k labels need mathtext, slow to start
    if logx:
        ax.set_xscale("log", base=2)
        ax.set_xticks(x[::2], [f"{v:g}" for v in x[::2]])
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
    if logy:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return ax


def head_grid(weights, query_labels, key_labels=None, *, titles=None, ncols=4, annotate=False, size=2.4):
    """One heatmap per attention head in a grid, all on the same 0..1 colour scale.

    Shapes: weights (n_heads, T_q, T_k); query_labels T_q strings; key_labels T_k strings
    (default query_labels); titles n_heads strings (default "head 0", "head 1", ...).
    Returns the (rows, cols) array of axes. Used from 06_multi_head_attention on.
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 3:
        raise ValueError(f"weights must be 3-D (n_heads, T_q, T_k), got shape {weights.shape}")
    n_heads, n_q, n_k = weights.shape
    key_labels = query_labels if key_labels is None else key_labels
    if len(key_labels) != n_k or len(query_labels) != n_q:
        raise ValueError(
            f"weights has shape {weights.shape} (n_heads, T_q, T_k) but got "
            f"{len(query_labels)} query labels and {len(key_labels)} key labels"
        )
    titles = [f"head {i}" for i in range(n_heads)] if titles is None else list(titles)
    if len(titles) != n_heads:
        raise ValueError(f"titles has {len(titles)} entries but weights has {n_heads} heads (shape {weights.shape})")
    ncols = max(1, min(ncols, n_heads))
    nrows = -(-n_heads // ncols)  # ceiling division
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols + 0.6, size * nrows), squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= n_heads:
            ax.axis("off")  # an empty slot in the last row
            continue
        first_col, last_row = i % ncols == 0, i // ncols == nrows - 1
        heatmap(
            weights[i],
            query_labels,
            key_labels,
            ax=ax,
            title=titles[i],
            vmin=0,
            vmax=1,
            colorbar=False,
            annotate=annotate,
            xlabel="key" if last_row else "",
            ylabel="query" if first_col else "",
        )
        if not first_col:
            ax.set_yticklabels([])
    fig.tight_layout()
    return axes
