"""Pictures of a real model's attention: a layer's heads as lines, every head in one grid, head kinds.

Drawn with matplotlib in the kernel (no JavaScript): they work offline, on Binder and in Colab.
One head as lines is helpers.plotting.token_lines.
Taught in 09_attention_in_a_real_model.
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.colors import ListedColormap, to_rgba
from matplotlib.lines import Line2D

from helpers._validate import as_float_array
from helpers.html_plots import head_color, head_dash

__all__ = ["KIND_COLORS", "KIND_LETTERS", "hide_tokens", "layer_lines", "attention_grid", "kinds_grid"]

# a hue per kind (light, so the numbers written on them stay readable); the two kinds that are not a target are greys.
# Each cell also carries its kind's letter (KIND_LETTERS), so no reader needs the colour to tell kinds apart.
KIND_COLORS = {
    "[CLS]": "#00b2ff",
    "[SEP]": "#ffe63c",
    "previous": "#ddaa66",
    "next": "#f65ec3",
    "self": "#ccffbb",
    "broad": "#eeeeee",
    "mixed": "#b2b2b2",
}
KIND_LETTERS = {"[CLS]": "C", "[SEP]": "S", "previous": "P", "next": "N", "self": "=", "broad": "B", "mixed": "M"}


def hide_tokens(weights, labels, hide=("[CLS]", "[SEP]")):
    """Drop the rows and columns of the tokens in `hide` (their weight can dwarf the rest).

    Shapes: weights (..., T, T); labels T strings -> weights (..., T', T'), labels T' strings.
    """
    keep = [i for i, label in enumerate(labels) if label not in hide]
    return weights[..., keep, :][..., keep], [labels[i] for i in keep]


def layer_lines(weights, labels, *, ax=None, title=None, heads=None, min_weight=0.05):
    """Every head of one layer drawn as lines from query (left) to key (right), a colour per head.

    Line width and opacity grow with the weight, relative to the largest weight drawn;
    weights below `min_weight` of it are left out.
    Shapes: weights (H, T, T); labels T strings; heads: the head numbers to draw (default all).
    """
    weights = as_float_array(weights, "weights", min_ndim=3)
    H, T, _ = weights.shape
    if weights.shape != (H, len(labels), len(labels)):
        raise ValueError(f"weights must be (H, T, T) with T = len(labels) = {len(labels)}, got {weights.shape}")
    heads = range(H) if heads is None else list(heads)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.2, 0.42 * T + 0.9))
    top = max(weights[list(heads)].max(), 1e-12)  # the largest weight drawn sets the scale
    y = np.linspace(1, 0, T)  # (T,): token i at height y[i], on both sides
    for h in heads:
        w = weights[h] / top  # (T, T) in [0, 1]
        i, j = np.nonzero(w >= min_weight)  # the lines worth drawing: query i -> key j
        segments = np.stack([np.stack([np.zeros(len(i)), y[i]], -1), np.stack([np.ones(len(j)), y[j]], -1)], 1)
        color = np.tile(to_rgba(head_color(h)), (len(i), 1))  # (n, 4)
        color[:, 3] = 0.1 + 0.8 * w[i, j]  # opacity follows the weight
        lines = LineCollection(segments, colors=color, linewidths=0.3 + 4 * w[i, j], linestyles=_line_style(h))
        ax.add_collection(lines)
    for side, align in ((-0.04, "right"), (1.04, "left")):
        for label, height in zip(labels, y, strict=True):
            ax.text(side, height, label, ha=align, va="center", fontsize=9)
    ax.set_xlim(-0.7, 1.7)
    ax.set_ylim(-0.06, 1.06)
    ax.axis("off")
    ax.set_title(title or "query → key, a colour and a dash per head", fontsize=10)
    if len(heads) > 1:
        handles = [Line2D([], [], color=head_color(h), linewidth=2, linestyle=_line_style(h)) for h in heads]
        ax.legend(
            handles,
            [f"head {h}" for h in heads],
            loc="center left",
            bbox_to_anchor=(1.0, 0.5),
            fontsize=7,
            frameon=False,
            handlelength=2.5,
        )
    return ax


def _line_style(h):
    """Head h's dash (html_plots.head_dash) as matplotlib's linestyle."""
    dash = head_dash(h)
    return (0, tuple(float(n) for n in dash.split())) if dash else "solid"


def attention_grid(weights, *, title=None, cmap="Blues", size=0.17, width=10.0):
    """Every head of every layer in one picture: a T x T heatmap per head, layers down, heads across.

    All heads share one colour scale from 0 to the largest weight. Rows are queries, columns keys.
    size: inches per cell, reduced so that the figure is at most `width` inches wide (a notebook
    shows a wider figure shrunk, and its labels with it).
    Shapes: weights (L, H, T, T) -> the axes.
    """
    weights = as_float_array(weights, "weights")
    if weights.ndim != 4 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must be (L, H, T, T), got shape {weights.shape}")
    L, H, T, _ = weights.shape
    mosaic = np.full((L * (T + 1) - 1, H * (T + 1) - 1), np.nan)  # a blank line between tiles
    for layer in range(L):
        for head in range(H):
            mosaic[layer * (T + 1) : layer * (T + 1) + T, head * (T + 1) : head * (T + 1) + T] = weights[layer, head]
    size = min(size, (width - 1.6) / mosaic.shape[1])
    _, ax = plt.subplots(figsize=(size * mosaic.shape[1] + 1.6, size * mosaic.shape[0] + 1.0))
    colormap = plt.get_cmap(cmap).with_extremes(bad="white")
    image = ax.imshow(mosaic, cmap=colormap, vmin=0, vmax=np.nanmax(mosaic), interpolation="nearest")
    centres = (T - 1) / 2 + (T + 1) * np.arange(max(L, H))
    ax.set_xticks(centres[:H], [f"{h}" for h in range(H)], fontsize=11)
    ax.set_yticks(centres[:L], [f"layer {layer}" for layer in range(L)], fontsize=11)
    ax.xaxis.tick_top()
    ax.set_xlabel("head", fontsize=11)
    ax.xaxis.set_label_position("top")
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    plt.colorbar(image, ax=ax, fraction=0.025, pad=0.01, label="weight")
    if title:
        ax.set_title(title, fontsize=12, pad=28)
    return ax


def kinds_grid(kinds, values, *, ax=None, title=None):
    """One cell per head, coloured by its kind and marked with its letter, with a number written in
    (e.g. its largest mean weight); the legend names each letter.

    Shapes: kinds (L, H) strings from helpers.heads.KINDS; values (L, H) -> the axes.
    """
    kinds, values = np.asarray(kinds), as_float_array(values, "values", min_ndim=2)
    if kinds.shape != values.shape or kinds.ndim != 2:
        raise ValueError(f"kinds and values must both be (L, H), got {kinds.shape} and {values.shape}")
    names = list(KIND_COLORS)
    codes = np.vectorize(names.index)(kinds)  # (L, H) ints
    if ax is None:
        _, ax = plt.subplots(figsize=(0.55 * kinds.shape[1] + 2.2, 0.6 * kinds.shape[0] + 0.9))
    ax.imshow(codes, cmap=ListedColormap(list(KIND_COLORS.values())), vmin=-0.5, vmax=len(names) - 0.5)
    for (layer, head), value in np.ndenumerate(values):
        ax.text(head, layer, f"{KIND_LETTERS[kinds[layer, head]]}\n{value:.2f}", ha="center", va="center", fontsize=6.5)
    ax.set_xticks(range(kinds.shape[1]))
    ax.set_yticks(range(kinds.shape[0]))
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    handles = [plt.Rectangle((0, 0), 1, 1, color=color) for color in KIND_COLORS.values()]
    labels = [f"{KIND_LETTERS[name]}  {name}" for name in names]
    ax.legend(handles, labels, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    ax.set_title(title or "what each head does (its kind's letter and its largest mean weight written in)", fontsize=10)
    return ax
