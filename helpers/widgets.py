"""Interactive explorers (ipywidgets 7.7 and 8): each is a function returning a widget.

Every explorer is built by `explorer(controls, draw)`: moving a control redraws its
output. The returned box carries `.controls` (name -> control) and `.refresh()`, so a
notebook or a test can drive it without a mouse.
"""

import threading

import matplotlib.pyplot as plt
import numpy as np

from helpers import plotting
from helpers.attention import softmax

try:
    import ipywidgets as widgets
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        "ipywidgets is not installed in this kernel's environment. Install it with:\n"
        '    pip install "ipywidgets>=7.7,<9"\n'
        "and restart the kernel. (In JupyterLab the front end comes with it, as jupyterlab_widgets.)"
    ) from exc


_DRAW_LOCK = threading.RLock()  # one explorer update at a time, whichever kernel thread runs it


def explorer(controls, draw, layout="vertical"):
    """Wire `controls` (name -> widget) to `draw(**values)`, which prints or plots.

    Returns a VBox of the controls above an Output area, with `.controls` and `.refresh`.
    """
    out = widgets.Output()

    def refresh(change=None):
        # JupyterLab 4.4+ handles widget messages on a kernel subshell (a second thread), and
        # after every widget message the kernel redraws all open pyplot figures. Two threads
        # drawing one figure at once give a blank picture: draw one update at a time, with
        # pyplot's automatic redraw off until the figure is shown (and closed) by plt.show().
        with _DRAW_LOCK, out, plt.ioff():
            out.clear_output(wait=True)
            draw(**{name: control.value for name, control in controls.items()})
            plt.show()

    for control in controls.values():
        control.observe(refresh, names="value")
    row = widgets.HBox if layout == "horizontal" else widgets.VBox
    box = widgets.VBox([row(list(controls.values())), out])
    box.controls, box.refresh, box.output = controls, refresh, out
    refresh()
    return box


def entropy(weights, axis=-1):
    """Shannon entropy in nats of each distribution along `axis` (0 log 0 counts as 0)."""
    weights = np.asarray(weights, dtype=float)
    logs = np.log(np.where(weights > 0, weights, 1))
    return -np.sum(weights * logs, axis=axis)


def softmax_explorer(scores, labels=None, temperature=1.0):
    """A temperature slider over softmax(scores / temperature), drawn as HTML bars with the entropy.

    Low temperature sharpens the weights towards the largest score; high flattens them.
    Shapes: scores (T,) -> a widget.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1:
        raise ValueError(f"scores must be 1-D (T,), got shape {scores.shape}")
    slider = widgets.FloatLogSlider(value=temperature, base=10, min=-1.5, max=1.5, step=0.05,
                                    description="temperature", continuous_update=True,
                                    style={"description_width": "initial"})

    labels = [str(i) for i in range(len(scores))] if labels is None else list(labels)

    def draw(temperature):
        weights = softmax(scores / temperature)
        title = (f"softmax(scores / {temperature:.2f}): entropy {entropy(weights):.2f} nats "
                 f"(at most {np.log(len(scores)):.2f})")
        _show_html(_weight_bars_html(weights, labels, title))  # HTML, not an image: redraws in milliseconds

    return explorer({"temperature": slider}, draw)


def _show_html(markup):
    from IPython.display import HTML, display

    display(HTML(markup))


def word_pair_summary(emb, word_a, word_b, k=10, cache=None):
    """What word_explorer shows: both words' wordpieces, dot product, cosine and k nearest neighbours.

    A word's vector is its row of the table (the mean of its pieces' rows when it is split).
    Returns a dict; for a blank word, its pieces are [] and every number involving it is None.
    cache: a dict word -> neighbours, so a word that did not change is not searched again.
    Shapes: emb.table (V, d_model).
    """
    from helpers.embeddings import cosine_similarity

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
    import html

    pieces = " ".join(tokens) or "(no wordpieces)"
    caption = f"<b>{html.escape(word)}</b> = [{html.escape(pieces)}]: nearest neighbours"
    return _bars_html([cos for _, cos in neighbours], [token for token, _ in neighbours], caption, "#1f77b4")


def word_pair_html(summary):
    """The HTML word_explorer shows for a word_pair_summary (a line of numbers, two neighbour tables)."""
    import html

    a, b = html.escape(summary["word_a"]), html.escape(summary["word_b"])
    if summary["cosine"] is None:
        line = "Type a word in each box."
    else:
        line = f"cos({a}, {b}) = <b>{summary['cosine']:.3f}</b> &nbsp; dot({a}, {b}) = {summary['dot']:.3f}"
    tables = "".join(_neighbour_table(summary[f"word_{k}"], summary[f"tokens_{k}"], summary[f"neighbours_{k}"])
                     for k in ("a", "b") if summary[f"word_{k}"])
    return f'<div style="font-size:13px">{line}</div><div style="display:flex;align-items:flex-start">{tables}</div>'


def word_explorer(emb, words, word_a="cat", word_b="dog", k=10):
    """Pick or type two words: see their cosine and each word's k nearest neighbours in the vocabulary.

    emb: a TokenEmbeddings (helpers.embeddings.load_token_embeddings()); words: the suggestions.
    Taught in 01_embeddings (the numbers come from word_pair_summary).
    """
    controls = {
        "word_a": widgets.Combobox(value=word_a, options=list(words), description="word A", ensure_option=False),
        "word_b": widgets.Combobox(value=word_b, options=list(words), description="word B", ensure_option=False),
    }

    cache = {}  # word -> its neighbours: changing one word searches the table once, not twice

    def draw(word_a, word_b):
        _show_html(word_pair_html(word_pair_summary(emb, word_a, word_b, k, cache)))

    return explorer(controls, draw, layout="horizontal")


def sentence_attention(emb, sentence, temperature=1.0, cosine=False, max_tokens=16):
    """What sentence_explorer shows: the similarity matrix S of a sentence and softmax(S / temperature).

    Parameter-free attention: S = X X^T (unit rows of X when cosine=True), weights = row softmax.
    Shapes: -> tokens (T labels), S (T, T), weights (T, T); T <= max_tokens.
    Taught in 02_similarity_matrix.
    """
    from helpers.embeddings import similarity_matrix

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
    Taught in 02_similarity_matrix (the numbers come from sentence_attention).
    """
    controls = {
        "sentence": widgets.Text(value=sentence, description="sentence", continuous_update=False,
                                 layout=widgets.Layout(width="420px")),
        "temperature": widgets.FloatLogSlider(value=temperature, base=10, min=-1.5, max=1.5, step=0.05,
                                              description="temperature"),
        "cosine": widgets.Checkbox(value=cosine, description="unit rows (cosine)"),
    }

    def draw(sentence, temperature, cosine):
        tokens, S, weights = sentence_attention(emb, sentence, temperature, cosine)
        if not tokens:
            _show_html("Type a sentence and press Enter.")
            return
        name = "cosine similarities" if cosine else "dot products X Xᵀ"
        left = plotting.html_heatmap(S, tokens, tokens, title=f"S: {name}", cmap="viridis")
        right = plotting.html_heatmap(weights, tokens, tokens, title=f"weights = softmax(S / {temperature:.2f})",
                                      cmap="Blues", vmin=0, vmax=1)
        self_weight = float(np.mean(np.diag(weights)))
        _show_html(f'<div style="display:flex;align-items:flex-start">{left}{right}</div>'
                   f"<div>rows are queries, columns are keys; mean weight on the diagonal: {self_weight:.2f}</div>")

    return explorer(controls, draw)


def snapshot_at(weights_by_step, steps, step, losses=None):
    """What attention_steps_explorer draws: the weights (and loss) recorded at training step `step`.

    Shapes: weights_by_step (n_snapshots, T, T); steps n_snapshots ints; losses n_snapshots floats or None
            -> weights (T, T), loss float or None.
    Taught in 03_queries_keys_values.
    """
    steps = [int(s) for s in steps]
    if step not in steps:
        raise ValueError(f"step {step} was not recorded; the recorded steps are {steps}")
    i = steps.index(step)
    return np.asarray(weights_by_step[i], dtype=float), (None if losses is None else float(losses[i]))


def attention_steps_explorer(weights_by_step, steps, labels, losses=None):
    """A slider over training steps showing the attention weights recorded at each step.

    Shapes: weights_by_step (n_snapshots, T, T); steps n_snapshots ints; labels T strings;
            losses n_snapshots floats or None. Drawn as an HTML table, so each update is fast.
    Taught in 03_queries_keys_values.
    """
    weights_by_step = np.asarray(weights_by_step, dtype=float)
    steps = [int(s) for s in steps]
    T = len(labels)
    if weights_by_step.shape != (len(steps), T, T):
        raise ValueError(f"weights_by_step must have shape (len(steps), T, T) = ({len(steps)}, {T}, {T}), "
                         f"got {weights_by_step.shape}")
    slider = widgets.SelectionSlider(options=steps, value=steps[0], description="step", continuous_update=True)

    def draw(step):
        weights, loss = snapshot_at(weights_by_step, steps, step, losses)
        title = f"attention weights at step {step}" + ("" if loss is None else f" (loss {loss:.3f})")
        table = plotting.html_heatmap(weights, labels, labels, title=title, cmap="Blues", vmin=0, vmax=1)
        _show_html(f"{table}<div>rows are queries, columns are keys</div>")

    return explorer({"step": slider}, draw)


SCALING_MAX_D_K = 1024


def scaling_weights(d_k, temperature=1.0, scaled=False, T=8, seed=0):
    """What scaling_explorer draws: one random query's softmax weights over T random keys.

    q and the keys have unit-variance entries, cut from one fixed draw of SCALING_MAX_D_K
    dimensions, so a larger d_k adds dimensions to the same vectors. The scores are
    q·k / temperature, also divided by sqrt(d_k) when `scaled`.
    Shapes: -> weights (T,), entropy float (nats).
    Taught in 04_scaling.
    """
    if not 1 <= d_k <= SCALING_MAX_D_K:
        raise ValueError(f"d_k must be in [1, {SCALING_MAX_D_K}], got {d_k}")
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(SCALING_MAX_D_K)  # (max_d_k,)
    K = rng.standard_normal((T, SCALING_MAX_D_K))  # (T, max_d_k)
    scores = K[:, :d_k] @ q[:d_k]  # (T, d_k) @ (d_k,) -> (T,)
    if scaled:
        scores = scores / np.sqrt(d_k)
    weights = softmax(scores / temperature)
    return weights, float(entropy(weights))


def scaling_explorer(T=8, seed=0, d_k=64, temperature=1.0, scaled=False):
    """Sliders for d_k and temperature and a 'divide by √d_k' box: one query's weights as bars, and their entropy.

    Shapes: -> a widget (T keys). The numbers come from scaling_weights.
    Taught in 04_scaling.
    """
    controls = {
        "d_k": widgets.SelectionSlider(options=[2**i for i in range(11)], value=d_k, description="d_k"),
        "temperature": widgets.FloatLogSlider(value=temperature, base=10, min=-1, max=2, step=0.05,
                                              description="temperature"),
        "scaled": widgets.Checkbox(value=scaled, description="divide by √d_k"),
    }
    labels = [f"key {j}" for j in range(T)]

    def draw(d_k, temperature, scaled):
        weights, h = scaling_weights(d_k, temperature, scaled, T, seed)
        divisor = f"({temperature:.2f} · √{d_k})" if scaled else f"{temperature:.2f}"
        bars = _weight_bars_html(weights, labels, f"softmax(q·k / {divisor})")
        _show_html(f"{bars}<div>largest weight {weights.max():.3f} · entropy {h:.3f} nats "
                   f"(uniform: {np.log(T):.3f}, one-hot: 0)</div>")

    return explorer(controls, draw)


def masked_weights(scores, lengths, sentence=0, causal=True, padding=True):
    """What mask_explorer draws: softmax over one sentence's scores with the chosen masks.

    Padding masks keys only: a padding query still attends to the sentence's real tokens.
    Shapes: scores (B, T, T), lengths (B,) -> mask (T, T) bool, weights (T, T).
    """
    from helpers._validate import as_float_array
    from helpers.masking import causal_mask, padding_mask

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


def _bars_html(values, labels, caption_html, color):
    """Horizontal HTML bars, a row per label, under a caption (fast to redraw: no image)."""
    import html

    rows = "".join(
        f'<tr><td style="padding:0 6px;font:11px monospace;text-align:right">{html.escape(label)}</td>'
        f'<td><div style="background:{color};height:10px;width:{max(0.0, float(w)) * 150:.0f}px"></div></td>'
        f'<td style="padding:0 6px;font:11px monospace">{w:.3f}</td></tr>'
        for label, w in zip(labels, values, strict=True))
    return (f'<table style="margin:4px 12px"><caption style="white-space:nowrap;text-align:left">'
            f"{caption_html}</caption>{rows}</table>")


def _weight_bars_html(values, labels, title):
    """One query's weights as horizontal HTML bars, a row per key, under a bold title."""
    import html

    return _bars_html(values, labels, f"<b>{html.escape(title)}</b>", "#d62728")


def _row_labels(tokens, query):
    """Token labels with a marker on the chosen query's row (query -1: no marker)."""
    return [("▶ " if i == query else "") + token for i, token in enumerate(tokens)]


def mask_explorer(scores, tokens, lengths, query=0):
    """Toggle the causal and padding masks, pick a sentence and a query, see that query's row.

    Shapes: scores (B, T, T) raw scores; tokens B lists of T labels (padded); lengths (B,).
    Drawn as HTML tables, so each update is fast. The numbers come from masked_weights.
    """
    B, T = np.shape(scores)[:2]
    if len(tokens) != B or any(len(row) != T for row in tokens):
        raise ValueError(f"tokens must be {B} lists of {T} labels to match scores of shape {np.shape(scores)}")
    controls = {
        "sentence": widgets.Dropdown(options=[(" ".join(tokens[b][: lengths[b]]), b) for b in range(B)],
                                     value=0, description="sentence"),
        "query": widgets.IntSlider(value=query, min=0, max=T - 1, description="query"),
        "causal": widgets.Checkbox(value=True, description="causal mask"),
        "padding": widgets.Checkbox(value=True, description="padding mask"),
    }

    def draw(sentence, query, causal, padding):
        mask, weights = masked_weights(scores, lengths, sentence, causal, padding)
        labels = tokens[sentence]
        rows = _row_labels(labels, query)
        left = plotting.html_heatmap(np.where(mask, np.asarray(scores)[sentence], -np.inf), rows, labels,
                                     title="scores (−∞ = masked)")
        middle = plotting.html_heatmap(weights, rows, labels, title="weights", cmap="Blues", vmin=0, vmax=1)
        bars = _weight_bars_html(weights[query], labels, f"query {query} {labels[query]!r}: "
                                 f"row sum {weights[query].sum():.2f}")
        _show_html(f'<div style="display:flex;align-items:flex-start">{left}{middle}{bars}</div>'
                   "<div>rows are queries, columns are keys</div>")

    return explorer(controls, draw)


def head_weights(weights, head):
    """What head_explorer draws: one head's weights, or their mean over heads when head == -1.

    Shapes: weights (n_heads, T_q, T_k) -> (T_q, T_k).
    """
    from helpers._validate import as_float_array

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
        "head": widgets.Dropdown(options=[(name, i) for i, name in enumerate(names)] + [("mean of all heads", -1)],
                                 value=0, description="head"),
        "query": widgets.Dropdown(options=[("all queries", -1)] + [(f"{i}: {t}", i) for i, t in enumerate(tokens)],
                                  value=-1, description="query"),
    }

    def draw(head, query):
        matrix = head_weights(weights, head)  # (T, T)
        title = "mean of all heads" if head == -1 else names[head]
        table = plotting.html_heatmap(matrix, _row_labels(tokens, query), tokens, title=title, cmap="Blues",
                                      vmin=0, vmax=1)
        bars = "" if query == -1 else _weight_bars_html(matrix[query], tokens, f"{title}: query {tokens[query]!r}")
        _show_html(f'<div style="display:flex;align-items:flex-start">{table}{bars}</div>')

    return explorer(controls, draw)
