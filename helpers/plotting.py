"""Every picture the notebooks draw: heatmaps, token-to-token lines, bars, curves.

Each function draws on `ax` (a new figure when None) and returns the axes, so a notebook
can put several side by side. End a plotting cell with plt.show() or `;`.
"""

import matplotlib.pyplot as plt
import numpy as np


def _new_axes(ax, figsize):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def heatmap(matrix, row_labels=None, col_labels=None, *, ax=None, title=None, cmap="viridis",
            annotate=None, fmt=".2f", vmin=None, vmax=None, xlabel="key", ylabel="query",
            colorbar=True):
    """A labelled heatmap of a token x token matrix; -inf (written −∞) and NaN (blank) cells are grey.

    Shapes: matrix (T_q, T_k); row_labels T_q strings; col_labels T_k strings.
    annotate: write each value in its cell (default: when the matrix is at most 12 x 12).
    """
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2:
        raise ValueError(f"matrix must be 2-D (T_q, T_k), got shape {matrix.shape}")
    n_rows, n_cols = matrix.shape
    for labels, n, name in ((row_labels, n_rows, "row_labels"), (col_labels, n_cols, "col_labels")):
        if labels is not None and len(labels) != n:
            raise ValueError(f"{name} has {len(labels)} entries but the matrix has shape {matrix.shape}")
    ax = _new_axes(ax, (1.2 + 0.55 * n_cols, 0.8 + 0.5 * n_rows))
    shown = np.ma.masked_invalid(matrix)
    colormap = plt.get_cmap(cmap).copy()
    colormap.set_bad("#d9d9d9")
    image = ax.imshow(shown, cmap=colormap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(n_cols), col_labels if col_labels is not None else range(n_cols),
                  rotation=45 if col_labels is not None else 0, ha="right" if col_labels is not None else "center")
    ax.set_yticks(range(n_rows), row_labels if row_labels is not None else range(n_rows))
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
            red, green, blue, _ = image.cmap(image.norm(value))
            color = "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white"
        ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color)


def token_lines(weights, tokens, query_tokens=None, *, ax=None, title=None, query=None, color="tab:blue"):
    """Queries on the left, keys on the right, a line from each query to each key.

    A line's width and opacity are its weight. `query` (an index) draws only that query's lines.
    Shapes: weights (T_q, T_k); tokens T_k key labels; query_tokens T_q labels (default tokens).
    """
    weights = np.asarray(weights, dtype=float)
    query_tokens = tokens if query_tokens is None else query_tokens
    if weights.ndim != 2 or weights.shape != (len(query_tokens), len(tokens)):
        raise ValueError(f"weights must have shape (len(query_tokens), len(tokens)) = "
                         f"({len(query_tokens)}, {len(tokens)}), got {weights.shape}")
    n_q, n_k = weights.shape
    ax = _new_axes(ax, (3.2, 0.45 * max(n_q, n_k) + 0.8))
    y_q, y_k = np.linspace(1, 0, n_q), np.linspace(1, 0, n_k)
    rows = range(n_q) if query is None else [query]
    for i in rows:
        for j in range(n_k):
            w = weights[i, j]
            if w > 1e-3:
                ax.plot([0, 1], [y_q[i], y_k[j]], color=color, alpha=min(1.0, 0.15 + 0.85 * w),
                        linewidth=0.5 + 6 * w, solid_capstyle="round")
    for i, label in enumerate(query_tokens):
        ax.text(-0.05, y_q[i], label, ha="right", va="center",
                fontweight="bold" if query == i else "normal")
    for j, label in enumerate(tokens):
        ax.text(1.05, y_k[j], label, ha="left", va="center")
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(-0.08, 1.08)
    ax.axis("off")
    ax.set_title(title or "query → key (line width = weight)", fontsize=10)
    return ax


def bars(values, labels=None, *, ax=None, title=None, ylabel="weight", ylim=(0, 1), color="tab:blue"):
    """A bar per entry, e.g. one query's attention weights over the keys."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {values.shape}")
    ax = _new_axes(ax, (0.5 * len(values) + 1.5, 2.5))
    ax.bar(range(len(values)), values, color=color)
    ax.set_xticks(range(len(values)), labels if labels is not None else range(len(values)),
                  rotation=45 if labels is not None else 0)
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
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
