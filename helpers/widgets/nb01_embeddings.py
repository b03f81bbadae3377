"""Explorers of 01_embeddings: two words, their cosine and nearest neighbours.

Taught in 01_embeddings.
"""

import html

from helpers import html_plots
from helpers.embeddings import cosine_similarity, load_token_embeddings
from helpers.widgets._explorer import explorer, ipw, show_html

__all__ = ["word_pair_summary", "word_pair_html", "word_explorer"]


def word_pair_summary(emb, word_a, word_b, k=10, cache=None):
    """What word_explorer shows: both words' wordpieces, dot product, cosine and k nearest neighbours.

    A word's vector is its row of the table (the mean of its pieces' rows when it is split).
    Returns a dict; for a blank word, its pieces are [] and every number involving it is None.
    cache: a dict word -> neighbours, so a word that did not change is not searched again.
    Shapes: emb.table (V, d_model).
    """
    summary = {"word_a": word_a.strip(), "word_b": word_b.strip()}
    vectors = {}
    for key in ("a", "b"):
        word = summary[f"word_{key}"]
        summary[f"tokens_{key}"] = emb.tokenize(word) if word else []
        vectors[key] = emb.vector(word) if summary[f"tokens_{key}"] else None  # (d_model,)
        if vectors[key] is None:
            summary[f"neighbours_{key}"] = []
        elif cache is not None and word in cache:
            summary[f"neighbours_{key}"] = cache[word]
        else:  # one pass over the whole table: the slow part of an update
            summary[f"neighbours_{key}"] = emb.nearest(word, k)
            if cache is not None:
                cache[word] = summary[f"neighbours_{key}"]
    both = vectors["a"] is not None and vectors["b"] is not None
    summary["dot"] = float(vectors["a"] @ vectors["b"]) if both else None
    summary["cosine"] = float(cosine_similarity(vectors["a"], vectors["b"])) if both else None
    return summary


def _neighbour_table(word, tokens, neighbours):
    """One word's nearest neighbours as HTML bars, captioned with the word's wordpieces."""
    pieces = " ".join(tokens) or "(no wordpieces)"
    caption = f"<b>{html.escape(word)}</b> = [{html.escape(pieces)}]: nearest neighbours"
    return html_plots.bars([cos for _, cos in neighbours], [token for token, _ in neighbours], caption, html_plots.BLUE)


def word_pair_html(summary):
    """The HTML word_explorer shows for a word_pair_summary (a line of numbers, two neighbour tables)."""
    a, b = html.escape(summary["word_a"]), html.escape(summary["word_b"])
    if summary["cosine"] is None:
        line = "Type a word in each box."
    else:
        line = f"cos({a}, {b}) = <b>{summary['cosine']:.3f}</b> &nbsp; dot({a}, {b}) = {summary['dot']:.3f}"
    tables = "".join(
        _neighbour_table(summary[f"word_{k}"], summary[f"tokens_{k}"], summary[f"neighbours_{k}"])
        for k in ("a", "b")
        if summary[f"word_{k}"]
    )
    return f'<div style="font-size:13px">{line}</div>' + html_plots.side_by_side(tables)


def word_explorer(emb, words, word_a="cat", word_b="dog", k=10):
    """Pick or type two words: see their cosine and each word's k nearest neighbours in the vocabulary.

    emb: a TokenEmbeddings (helpers.embeddings.load_token_embeddings()); words: the suggestions.
    Its numbers come from word_pair_summary.
    """
    controls = {
        "word_a": ipw.Combobox(value=word_a, options=list(words), description="word A", ensure_option=False),
        "word_b": ipw.Combobox(value=word_b, options=list(words), description="word B", ensure_option=False),
    }

    cache = {}  # word -> its neighbours: changing one word searches the table once, not twice

    def draw(word_a, word_b):
        show_html(word_pair_html(word_pair_summary(emb, word_a, word_b, k, cache)))

    return explorer(controls, draw, layout="horizontal")


def demos():
    """word_explorer on the real table; each new word is searched once (no cached neighbours)."""
    new_words = [
        "paris",
        "river",
        "money",
        "horse",
        "queen",
        "apple",
        "music",
        "green",
        "table",
        "house",
        "water",
        "night",
    ]
    box = word_explorer(load_token_embeddings(), ["cat", "dog", "king"])
    yield "word_explorer (01)", box, [("word_b", word) for word in new_words]
