"""The explorer of 12_a_real_language_model: type a prompt, and SmolLM2 shows its ten likeliest next tokens and
where the heads of one layer look from the last token; buttons write the next token, or thirty.

The model runs once per new token: the explorer keeps a KV cache (one helpers.kv_cache.KVCache per layer) and the
ids it has read, so a prompt that extends the last one (a written token, a word typed at the end) runs only the
new tokens, and moving the temperature, top-k or layer runs nothing.

Taught in 12_a_real_language_model.
"""

import html

import numpy as np

from helpers import html_plots
from helpers.next_word import check_sampling, next_word_distribution, sample
from helpers.widgets._explorer import WIDE_LABEL, explorer, ipw, show_html

__all__ = ["smollm2_read", "smollm2_next_token_view", "smollm2_explorer"]

_MAX_TOKENS = 256  # the explorer's limit: reading a longer prompt from scratch takes seconds on a laptop
_WRITE = 30  # tokens "write 30 tokens" adds, at most
_SHOWN_TOKENS = 10  # the likeliest next tokens drawn as bars
_SHOWN_KEYS = 16  # keys in the head view: the first token and the latest 15
_TOP_K = [("1", 1), ("2", 2), ("3", 3), ("5", 5), ("10", 10), ("20", 20), ("50", 50), ("100", 100)]
_TOP_K += [("1000", 1000), ("off", 0)]  # 0: no cut (the model's whole vocabulary)
_MAX_TEMPERATURE = 2.0  # the temperature slider's end
_ENDS = ("<|im_end|>", "<|endoftext|>")  # writing stops after one of these: the model ended its text


def smollm2_read(model, ids, kv_caches=None):
    """Run the model over token ids: the next token's logits, and every layer's attention row from the last token.

    kv_caches: the model's cache (model.new_cache()) holding the first len(kv_caches[0]) of ids, extended here so
    that only the ids it has not seen run; None: every id runs.
    Shapes: ids (T,) -> logits (V,), rows (n_layers, n_heads, T).
    """
    logits, weights = model.read_next(ids, kv_caches, keep_weights=True)  # weights: (n_heads, T_new, T) each
    return logits, np.stack([w[:, -1, :] for w in weights])  # (V,), (n_layers, n_heads, T)


def smollm2_next_token_view(model, ids, temperature=0.0, top_k=None, kv_caches=None):
    """What smollm2_explorer draws: the next token's probabilities after ids (at the temperature, over the top_k
    likeliest) and each layer's and head's attention row from the last token.

    Shapes: ids (T,) -> probs (V,), rows (n_layers, n_heads, T).
    """
    check_sampling(temperature, top_k, model.config.vocab_size)
    logits, rows = smollm2_read(model, ids, kv_caches)
    return next_word_distribution(logits, temperature, top_k), rows


class _Reader:
    """The ids the explorer has read, their KV cache, and the last token's logits and attention rows."""

    def __init__(self, model):
        self.model, self.ids, self.caches, self.logits, self.rows = model, [], None, None, None

    def read(self, ids):
        """Bring the state to ids, running only what the cache has not seen when ids extend the ids read before."""
        if ids == self.ids:
            return
        if self.caches is None or ids[: len(self.ids)] != self.ids:
            self.caches = self.model.new_cache()  # another text: start again
        self.logits, self.rows = smollm2_read(self.model, ids, self.caches)
        self.ids = list(ids)


def _shown(text):
    """A text as the one-line prompt box shows it: a new line as the two characters \\n."""
    return text.replace("\n", "\\n")


def _label(piece):
    """A token's text as a table label: a leading space as ·, a new line as ⏎."""
    return piece.replace(" ", "·").replace("\n", "⏎") or "∅"


def _argument_problem(model, temperature, top_k, layer):
    """A message for a bad argument to smollm2_explorer (or one its sliders cannot show), or None."""
    try:
        check_sampling(temperature, top_k, model.config.vocab_size)
    except ValueError as exc:
        return f"{exc}. The explorer starts at temperature 0 with top-k off instead."
    if temperature > _MAX_TEMPERATURE or top_k not in (None, *dict(_TOP_K).values()):
        return (
            f"The sliders reach temperature {_MAX_TEMPERATURE:g} and top-k {', '.join(k for k, _ in _TOP_K)}; "
            f"got temperature {temperature!r}, top_k {top_k!r}. The explorer starts at temperature 0 with top-k off "
            "instead."
        )
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < model.config.n_layers:
        return f"layer must be an int in [0, {model.config.n_layers - 1}], got {layer!r}. The explorer starts at 0."
    return None


def _bars(model, probs, temperature, top_k):
    best = np.argsort(-probs, kind="stable")[:_SHOWN_TOKENS]
    how = "greedy" if temperature == 0 else f"temperature {temperature:g}" + (f", top-{top_k}" if top_k else "")
    labels = [_label(model.tokenizer.decode([i])) for i in best]
    return html_plots.bars(probs[best], labels, f"<b>the next token ({html.escape(how)})</b>", html_plots.GREEN)


def _head_view(model, reader, layer):
    """The chosen layer's 9 heads, their weights from the last token over the first token and the latest 15."""
    T, pieces = len(reader.ids), [model.tokenizer.decode([i]) for i in reader.ids]
    keys = list(range(T)) if T <= _SHOWN_KEYS else [0, *range(T - _SHOWN_KEYS + 1, T)]
    group = model.config.n_heads // model.config.n_kv_heads
    heads = [f"head {h} (kv {h // group})" for h in range(model.config.n_heads)]
    labels = [f"{k}: {_label(pieces[k])}" for k in keys]
    title = f"layer {layer}: where {_label(pieces[-1])!r} looks" + (
        " (first token, latest 15)" if T > len(keys) else ""
    )
    return html_plots.heatmap(reader.rows[layer][:, keys], heads, labels, title=title, cmap="Blues", vmin=0, vmax=1)


def smollm2_explorer(model=None, prompt="The cat sat on the", temperature=0.7, top_k=50, layer=1, seed=0):
    """A prompt box, temperature, top-k and layer sliders, and two buttons: "next token" appends one token the
    model chooses, "write 30 tokens" thirty (fewer if it ends its text). Draws the ten likeliest next tokens as
    bars and the chosen layer's heads' attention from the last token. In the box, \\n stands for a new line.
    model None: load_smollm2(), and a message instead of the drawing if the weights are missing.

    Shapes: an SmolLM2 model -> a widget with .controls, .buttons and .reader (the ids read and their cache).
    """
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a string, got {type(prompt).__name__}")
    problem = None
    if model is None:
        from helpers.pretrained import load_smollm2

        try:
            model = load_smollm2()
        except (ImportError, ValueError) as exc:  # the weights are missing (an ImportError) or not the pinned file
            problem = str(exc)
    n_layers = 30 if model is None else model.config.n_layers
    if model is not None and (problem := _argument_problem(model, temperature, top_k, layer)):
        temperature, top_k, layer = 0.0, 0, 0
    controls = {
        "prompt": ipw.Text(
            value=_shown(prompt), description="prompt", continuous_update=False, layout=ipw.Layout(width="560px")
        ),
        "temperature": ipw.FloatSlider(
            value=temperature, min=0.0, max=_MAX_TEMPERATURE, step=0.05, description="temperature", style=WIDE_LABEL
        ),
        "top_k": ipw.SelectionSlider(
            options=_TOP_K, value=top_k if top_k in dict(_TOP_K).values() else 0, description="top-k"
        ),
        "layer": ipw.IntSlider(value=layer, min=0, max=n_layers - 1, description="layer"),
    }
    reader = None if model is None else _Reader(model)
    written = {}  # the text the buttons last wrote -> its ids (encoding that text again could give other ids)
    rng = np.random.default_rng(seed)
    notes = [problem] if problem else []

    def ids_of(prompt):
        """The prompt's token ids, or a message saying why the explorer cannot read it."""
        text = prompt.replace("\\n", "\n")
        ids = written.get(prompt) or model.tokenizer.encode(text)
        if not ids:
            return None, "Type a prompt (and press Enter): the model needs at least one token to continue."
        if len(ids) > _MAX_TOKENS:
            return None, f"This prompt has {len(ids)} tokens; the explorer reads at most {_MAX_TOKENS}. Shorten it."
        return ids, None

    def draw(prompt, temperature, top_k, layer):
        note = notes.pop() if notes else None
        if model is None:
            show_html(f"<p>{html.escape(problem)}</p>".replace("\n", "<br>"))
            return
        ids, message = ids_of(prompt)
        if message:
            show_html(f"<p>{html.escape(message)}</p>")
            return
        reader.read(ids)
        probs = next_word_distribution(reader.logits, temperature, top_k or None)
        status = f"<p>{len(ids)} tokens read; the last: {html.escape(repr(model.tokenizer.decode(ids[-1:])))}</p>"
        head = f"<p>{html.escape(note)}</p>" if note else ""
        show_html(
            head
            + html_plots.side_by_side(_bars(model, probs, temperature, top_k), _head_view(model, reader, layer))
            + status
        )

    box = explorer(controls, draw)

    def write(n_max):
        if model is None or ids_of(controls["prompt"].value)[1]:
            box.refresh()  # the message again: there is nothing to write after
            return
        ends = model.stop_ids(list(_ENDS))
        for _ in range(n_max):
            ids, message = ids_of(controls["prompt"].value)
            if message or len(ids) >= _MAX_TOKENS:
                notes.append(f"The explorer reads at most {_MAX_TOKENS} tokens: it stops writing here.")
                box.refresh()
                return
            reader.read(ids)
            probs = next_word_distribution(
                reader.logits, controls["temperature"].value, controls["top_k"].value or None
            )
            token = int(np.argmax(probs)) if controls["temperature"].value == 0 else sample(probs, rng)
            new = [*ids, token]
            text = _shown(model.tokenizer.decode(new))
            written.clear()
            written[text] = new
            if text == controls["prompt"].value:
                box.refresh()
            controls["prompt"].value = text  # redraws: the model runs on the new token only
            if token in ends:
                break

    buttons = {label: ipw.Button(description=label) for label in ("next token", "write 30 tokens")}
    for button, n_max in zip(buttons.values(), (1, _WRITE), strict=True):
        button.on_click(lambda _, n_max=n_max: write(n_max))
    box.children = (box.children[0], ipw.HBox(list(buttons.values())), *box.children[1:])
    box.buttons, box.reader = buttons, reader
    return box


def demos():
    """smollm2_explorer on the real model (needs the weights package), and its moves."""
    box = smollm2_explorer()
    yield (
        "smollm2_explorer (12)",
        box,
        [
            ("layer", 20),
            ("temperature", 1.0),
            ("top_k", 5),
            ("prompt", "The cat sat on the mat. The dog"),
            ("prompt", ""),
        ],
    )
