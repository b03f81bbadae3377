"""Explorers of 02_similarity_matrix: a sentence's similarity matrix and softmax weights.

Taught in 02_similarity_matrix.
"""

import html

import numpy as np

from helpers import html_plots
from helpers.attention import softmax
from helpers.embeddings import load_token_embeddings, similarity_matrix
from helpers.widgets._explorer import explorer, ipw, show_html, temperature_slider

__all__ = ["MAX_TOKENS", "sentence_attention", "sentence_explorer"]

MAX_TOKENS = 16  # two 16 x 16 tables side by side still fit a notebook's width


def sentence_attention(emb, sentence, temperature=1.0, cosine=False, max_tokens=MAX_TOKENS):
    """What sentence_explorer shows: the similarity matrix S of a sentence and softmax(S / temperature).

    Parameter-free attention: S = X X^T (unit rows of X when cosine=True), weights = row softmax.
    Shapes: -> tokens (T labels), S (T, T), weights (T, T); T <= max_tokens.
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    tokens = emb.tokenize(sentence)[:max_tokens]
    if not tokens:
        return [], np.zeros((0, 0)), np.zeros((0, 0))
    X = emb.vectors(sentence)[:max_tokens]  # (T, d_model)
    S = similarity_matrix(X, cosine=cosine)  # (T, d_model) @ (d_model, T) -> (T, T)
    return tokens, S, softmax(S / temperature)  # each row of the weights sums to 1


def sentence_explorer(emb, sentence="The cat sat on the mat", temperature=1.0, cosine=False):
    """Type a sentence; see its similarity matrix and its attention weights side by side, with a temperature.

    emb: a TokenEmbeddings. Drawn as HTML tables, so each update is fast.
    Its numbers come from sentence_attention.
    """
    controls = {
        "sentence": ipw.Text(
            value=sentence, description="sentence", continuous_update=False, layout=ipw.Layout(width="420px")
        ),
        "temperature": temperature_slider(temperature),
        "cosine": ipw.Checkbox(value=cosine, description="unit rows (cosine)"),
    }

    def draw(sentence, temperature, cosine):
        tokens, S, weights = sentence_attention(emb, sentence, temperature, cosine, MAX_TOKENS)
        if not tokens:
            show_html("Type a sentence and press Enter.")
            return
        n_tokens = len(emb.tokenize(sentence))
        cut = (
            f"<div><b>Only the first {MAX_TOKENS} of its {n_tokens} tokens are shown</b> "
            f"(cut after “{html.escape(tokens[-1])}”): type a shorter sentence to see all of it.</div>"
            if n_tokens > MAX_TOKENS
            else ""
        )
        name = "cosine similarities" if cosine else "dot products X Xᵀ"
        left = html_plots.heatmap(S, tokens, tokens, title=f"S: {name}", cmap="viridis")
        right = html_plots.heatmap(
            weights, tokens, tokens, title=f"weights = softmax(S / {temperature:.2f})", cmap="Blues", vmin=0, vmax=1
        )
        self_weight = float(np.mean(np.diag(weights)))
        show_html(
            cut
            + html_plots.side_by_side(left, right)
            + f"<div>rows are queries, columns are keys; mean weight on the diagonal: {self_weight:.2f}</div>"
        )

    return explorer(controls, draw)


def demos():
    """sentence_explorer on the real table: temperature, cosine and a new sentence."""
    box = sentence_explorer(load_token_embeddings())
    long = "The bat flew out of the dark cave at night and the boy swung his baseball bat at a ball"  # 20 tokens
    yield (
        "sentence_explorer (02)",
        box,
        [
            ("temperature", 0.2),
            ("temperature", 5.0),
            ("cosine", True),
            ("sentence", "The bat flew out"),
            ("sentence", long),
        ],
    )
