"""Explorers of 06_multi_head_attention: one head or the mean of all heads.

Taught in 06_multi_head_attention.
"""

import numpy as np

from helpers import html_plots
from helpers._validate import as_float_array
from helpers.masking import causal_mask
from helpers.widgets._explorer import explorer, ipw, show_html

__all__ = ["head_weights", "head_explorer"]


def head_weights(weights, head):
    """What head_explorer draws: one head's weights, or their mean over heads when head == -1.

    Shapes: weights (n_heads, T_q, T_k) -> (T_q, T_k).
    """
    weights = as_float_array(weights, "weights")  # float32 stays float32
    if weights.ndim != 3:
        raise ValueError(f"weights must have shape (n_heads, T_q, T_k), got {weights.shape}")
    if head == -1:
        return weights.mean(axis=0)  # (n_heads, T_q, T_k) -> (T_q, T_k)
    if not 0 <= head < weights.shape[0]:
        raise ValueError(f"head must be -1 (mean) or in [0, {weights.shape[0]}), got {head}")
    return weights[head]


def head_explorer(weights, tokens, head_names=None):
    """Pick a head (or the mean of all heads) and a query token; see that head's weights.

    Shapes: weights (n_heads, T, T); tokens T labels; head_names n_heads strings.
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 3 or weights.shape[1:] != (len(tokens), len(tokens)):
        raise ValueError(f"weights must be (n_heads, T, T) with T = len(tokens) = {len(tokens)}, got {weights.shape}")
    n_heads = weights.shape[0]
    names = head_names or [f"head {i}" for i in range(n_heads)]
    controls = {
        "head": ipw.Dropdown(
            options=[(name, i) for i, name in enumerate(names)] + [("mean of all heads", -1)],
            value=0,
            description="head",
        ),
        "query": ipw.Dropdown(
            options=[("all queries", -1)] + [(f"{i}: {t}", i) for i, t in enumerate(tokens)],
            value=-1,
            description="query",
        ),
    }

    def draw(head, query):
        matrix = head_weights(weights, head)  # (T, T)
        title = "mean of all heads" if head == -1 else names[head]
        table = html_plots.heatmap(
            matrix, html_plots.marked_rows(tokens, query), tokens, title=title, cmap="Blues", vmin=0, vmax=1
        )
        bars = "" if query == -1 else html_plots.weight_bars(matrix[query], tokens, f"{title}: query {tokens[query]!r}")
        show_html(html_plots.side_by_side(table, bars))

    return explorer(controls, draw)


def demos():
    """head_explorer on four random causal heads."""
    heads = np.random.default_rng(0).dirichlet(np.ones(6), size=(4, 6)) * causal_mask(6)  # (4, 6, 6)
    box = head_explorer(heads, ["The", "cat", "sat", "on", "the", "mat"])
    yield "head_explorer (06)", box, [("head", 1), ("query", 2), ("head", 3), ("query", 5)]
