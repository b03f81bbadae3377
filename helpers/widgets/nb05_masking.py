"""Explorers of 05_masking: causal and padding masks on a padded batch.

Taught in 05_masking.
"""

import numpy as np

from helpers import html_plots
from helpers._validate import as_float_array
from helpers.attention import softmax
from helpers.masking import causal_mask, padding_mask
from helpers.widgets._explorer import explorer, ipw, show_html

__all__ = ["masked_weights", "mask_explorer"]


def masked_weights(scores, lengths, sentence=0, causal=True, padding=True):
    """What mask_explorer draws: softmax over one sentence's scores with the chosen masks.

    Padding masks keys only: a padding query still attends to the sentence's real tokens.
    Shapes: scores (B, T, T), lengths (B,) -> mask (T, T) bool, weights (T, T).
    """
    scores = as_float_array(scores, "scores")  # float32 stays float32
    if scores.ndim != 3 or scores.shape[1] != scores.shape[2]:
        raise ValueError(f"scores must have shape (B, T, T), got {scores.shape}")
    T = scores.shape[-1]
    mask = np.ones((T, T), dtype=bool)
    if causal:
        mask &= causal_mask(T)
    if padding:
        mask &= padding_mask(lengths, T)[sentence][None, :]  # (1, T): blocks the padding key columns
    weights = softmax(np.where(mask, scores[sentence], -np.inf))  # (T, T)
    return mask, weights


def mask_explorer(scores, tokens, lengths, query=0):
    """Toggle the causal and padding masks, pick a sentence and a query, see that query's row.

    Shapes: scores (B, T, T) raw scores; tokens B lists of T labels (padded); lengths (B,).
    Drawn as HTML tables, so each update is fast. The numbers come from masked_weights.
    """
    B, T = np.shape(scores)[:2]
    if len(tokens) != B or any(len(row) != T for row in tokens):
        raise ValueError(f"tokens must be {B} lists of {T} labels to match scores of shape {np.shape(scores)}")
    controls = {
        "sentence": ipw.Dropdown(
            options=[(" ".join(tokens[b][: lengths[b]]), b) for b in range(B)], value=0, description="sentence"
        ),
        "query": ipw.IntSlider(value=query, min=0, max=T - 1, description="query"),
        "causal": ipw.Checkbox(value=True, description="causal mask"),
        "padding": ipw.Checkbox(value=True, description="padding mask"),
    }

    def draw(sentence, query, causal, padding):
        mask, weights = masked_weights(scores, lengths, sentence, causal, padding)
        labels = tokens[sentence]
        rows = html_plots.marked_rows(labels, query)
        left = html_plots.heatmap(
            np.where(mask, np.asarray(scores)[sentence], -np.inf), rows, labels, title="scores (−∞ = masked)"
        )
        middle = html_plots.heatmap(weights, rows, labels, title="weights", cmap="Blues", vmin=0, vmax=1)
        bars = html_plots.weight_bars(
            weights[query], labels, f"query {query} {labels[query]!r}: row sum {weights[query].sum():.2f}"
        )
        show_html(html_plots.side_by_side(left, middle, bars) + "<div>rows are queries, columns are keys</div>")

    return explorer(controls, draw)


def demos():
    """mask_explorer on a padded batch of two sentences with random scores."""
    padded = [["The", "cat", "sat", "on", "the", "mat"], ["a", "good", "novel", "[PAD]", "[PAD]", "[PAD]"]]
    scores = np.random.default_rng(0).normal(size=(2, 6, 6))  # (B, T, T)
    box = mask_explorer(scores, padded, [6, 3])
    yield "mask_explorer (05)", box, [("causal", False), ("padding", False), ("query", 5), ("sentence", 1)]
