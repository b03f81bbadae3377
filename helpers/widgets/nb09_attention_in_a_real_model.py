"""Explorer of 09_attention_in_a_real_model: any sentence through the real model, one head or a whole layer.

Taught in 09_attention_in_a_real_model.
"""

import functools
import html

import numpy as np

from helpers import html_plots
from helpers.head_views import hide_tokens
from helpers.pretrained import load_minilm
from helpers.widgets._explorer import explorer, ipw, show_html

__all__ = ["lines_svg", "attention_explorer"]

_MAX_TOKENS = 40  # a longer sentence is cut, and the explorer says so
_PUBLISHED_LIMIT = 256  # wordpieces: sentence-transformers' max_seq_length for all-MiniLM-L6-v2


def lines_svg(weights, labels, heads, *, min_weight=0.05, row_height=18):
    """Heads of one layer as lines from query (left) to key (right), as an inline SVG string.

    Width and opacity grow with the weight relative to the largest weight drawn; a colour per head.
    Shapes: weights (H, T, T); labels T strings; heads the head numbers to draw -> str.
    """
    weights = np.asarray(weights, dtype=float)
    T = len(labels)
    if weights.ndim != 3 or weights.shape[1:] != (T, T):
        raise ValueError(f"weights must be (H, T, T) with T = len(labels) = {T}, got {weights.shape}")
    top = max(float(weights[list(heads)].max()), 1e-12) if T else 1.0
    width, left, right = 420, 120, 300
    y = 14 + row_height * np.arange(T)  # (T,)
    lines = []
    for h in heads:
        color, dash = html_plots.head_color(h), _dash_attribute(h)
        for i, j in zip(*np.nonzero(weights[h] / top >= min_weight), strict=True):
            w = weights[h, i, j] / top
            lines.append(
                f'<line x1="{left}" y1="{y[i]}" x2="{right}" y2="{y[j]}" stroke="{color}"{dash} '
                f'stroke-width="{0.5 + 5 * w:.1f}" stroke-opacity="{0.15 + 0.8 * w:.2f}"/>'
            )
    text = "".join(
        f'<text x="{left - 6}" y="{y[i] + 4}" text-anchor="end">{html.escape(label)}</text>'
        f'<text x="{right + 6}" y="{y[i] + 4}">{html.escape(label)}</text>'
        for i, label in enumerate(labels)
    )
    height = 14 + row_height * T
    description = html.escape(_describe_lines(weights, labels, heads))
    return (
        f'<svg width="{width}" height="{height}" role="img" aria-label="{description}" '
        f'style="font:12px sans-serif;{html_plots.CHART_STYLE}"><title>{description}</title>'
        f"{''.join(lines)}{text}</svg>"
    )


def _describe_lines(weights, labels, heads, most=3):
    """lines_svg's text alternative: what it draws, and the strongest lines of the heads drawn. -> str."""
    which = f"head {heads[0]}" if len(heads) == 1 else f"{len(heads)} heads"
    if not len(labels) or not len(heads):
        return f"Attention lines of {which}: no tokens to draw"
    chosen = weights[list(heads)]  # (n_heads drawn, T, T)
    strongest = np.argsort(chosen, axis=None, kind="stable")[::-1][:most]
    named = []
    for h, i, j in zip(*np.unravel_index(strongest, chosen.shape), strict=True):
        named.append(f"{labels[i]} to {labels[j]} {chosen[h, i, j]:.2f} (head {heads[h]})")
    return (
        f"Attention lines of {which}, from each query token on the left to the keys on the right, "
        f"thicker for larger weights; strongest: " + ", ".join(named)
    )


def _dash_attribute(h):
    """Head h's dash (html_plots.head_dash) as an SVG attribute ("" when solid): heads differ in more than colour."""
    dash = html_plots.head_dash(h)
    return f' stroke-dasharray="{dash}"' if dash else ""


def _legend(heads):
    """A swatch of each drawn head's line (its colour and dash) and its name. -> str"""
    items = "".join(
        f'<span style="white-space:nowrap;margin-right:8px"><svg width="18" height="6" aria-hidden="true" '
        f'style="margin:0 3px 1px 0"><line x1="0" y1="3" x2="18" y2="3" stroke="{html_plots.head_color(h)}" '
        f'stroke-width="2.5"{_dash_attribute(h)}/></svg>head {h}</span> '
        for h in heads
    )
    return f'<div style="max-width:420px;font:11px sans-serif">{items}</div>'


def attention_explorer(model, sentence="The cat sat on the mat.", layer=0, head=2):
    """Type a sentence, pick a layer and a head; see that head's lines and weights, or all heads of the layer.

    "hide [CLS] / [SEP]" drops those two tokens, so the rest of the weight becomes visible
    (lines are scaled to the largest weight drawn; the rows no longer sum to 1).
    """

    @functools.lru_cache(maxsize=32)
    def run(text):
        return model.tokenize(text), model.attentions(text)  # T strings, (6, 12, T, T)

    controls = {
        "sentence": ipw.Text(
            value=sentence, description="sentence", continuous_update=False, layout=ipw.Layout(width="460px")
        ),
        "layer": ipw.IntSlider(value=layer, min=0, max=model.n_layers - 1, description="layer"),
        "head": ipw.IntSlider(value=head, min=0, max=model.n_heads - 1, description="head"),
        # a Dropdown lines its label up with the sliders' (ToggleButtons' label sits out of line)
        "view": ipw.Dropdown(options=["one head", "whole layer"], value="one head", description="view"),
        "hide_special": ipw.Checkbox(value=False, description="hide [CLS] / [SEP]"),
    }

    def draw(sentence, layer, head, view, hide_special):
        controls["head"].disabled = view == "whole layer"  # the whole layer draws every head
        n_tokens, rows = len(model.tokenizer.encode(sentence).ids), model.position_embeddings.shape[0]
        if n_tokens > rows:  # the model could not run it: there is no position vector past the table's last row
            show_html(
                f"<p>This text has {n_tokens} wordpieces. The model's position table has {rows} rows, so no "
                f"text may be longer than {rows} wordpieces (and the library the model was published "
                f"for, sentence-transformers, cuts its input at {_PUBLISHED_LIMIT}). Type a shorter text.</p>"
            )
            return
        tokens, weights = run(sentence)
        note = ""
        if len(tokens) > _MAX_TOKENS:
            note = f"<p>This sentence has {len(tokens)} tokens: the picture shows the first {_MAX_TOKENS}.</p>"
            tokens, weights = tokens[:_MAX_TOKENS], weights[..., :_MAX_TOKENS, :_MAX_TOKENS]
        weights = weights[layer]  # (12, T, T)
        if hide_special:
            weights, tokens = hide_tokens(weights, tokens)
        if not sentence.strip():
            if hide_special:
                show_html(
                    "<p>Type a sentence in the box (and press Enter): with [CLS] and [SEP] hidden, "
                    "an empty box leaves nothing to draw.</p>"
                )
                return
            note += "<p>Type a sentence in the box (and press Enter): an empty one has only [CLS] and [SEP].</p>"
        heads = [head] if view == "one head" else list(range(model.n_heads))
        what = f"layer {layer}, head {head}" if view == "one head" else f"layer {layer}, all {model.n_heads} heads"
        title = f"<b>{html.escape(what)}</b>: query (left) → key (right)"
        # the lines, their title and legend on their own white background: black head lines stay visible in a dark theme
        picture = (
            f'<div style="{html_plots.CHART_STYLE};padding:4px">{title}{lines_svg(weights, tokens, heads)}'
            f"{_legend(heads)}</div>"
        )
        table = ""
        if view == "one head" and tokens:
            table = html_plots.heatmap(weights[head], tokens, tokens, title=what, cmap="Blues", vmin=0)
        show_html(note + html_plots.side_by_side(picture, table))

    return explorer(controls, draw)


def demos():
    """attention_explorer on the real model (needs the weights package)."""
    box = attention_explorer(load_minilm())
    yield (
        "attention_explorer (09)",
        box,
        [
            ("layer", 1),
            ("head", 8),
            ("view", "whole layer"),
            ("hide_special", True),
            ("sentence", "Attention is a novel idea."),
        ],
    )
