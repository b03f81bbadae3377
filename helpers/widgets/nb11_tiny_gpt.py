"""The explorer of 11_tiny_gpt: type a prompt, and the tiny GPT shows its next-word probabilities and where each
head of each layer looks from the last word; buttons write the next word, or a whole sentence.

Taught in 11_tiny_gpt.
"""

import html
import string

import numpy as np

from helpers import html_plots, next_word, tiny_gpt
from helpers.widgets._explorer import WIDE_LABEL, explorer, ipw, show_html, unknown_words

__all__ = ["gpt_prompt_words", "gpt_next_word_view", "tiny_gpt_explorer"]

_SHOWN_KEYS = 16  # the latest words drawn in the attention rows: wider tables stop fitting the notebook
_SHOWN_WORDS = 10  # the most likely next words drawn as bars
_MAX_SENTENCE = 24  # words "write a sentence" adds at most before it stops without a "."


_ENDS = "!?"  # typed sentence ends, read as the model's only punctuation, "."
_OTHER_PUNCTUATION = "".join(c for c in string.punctuation if c not in "." + _ENDS)


def _read(text):
    """The typed text as the model reads it: its words, and the punctuation read as "." or left out (sorted)."""
    text = str(text).lower()
    ends = sorted({c for c in text if c in _ENDS})
    for end in "." + _ENDS:
        text = text.replace(end, " . ")
    words = [word.strip(_OTHER_PUNCTUATION) for word in text.split()]
    dropped = sorted({c for word in text.split() for c in word if c in _OTHER_PUNCTUATION} - set("".join(words)))
    return [word for word in words if word], ends, dropped


def gpt_prompt_words(text):
    """The words of typed text as the model reads them: lower case, "." a word of its own, "!" and "?" read as
    ".", other punctuation at a word's ends left out.

    Shapes: str -> list of str ("The cat meows! The" -> ["the", "cat", "meows", ".", "the"]).
    """
    return _read(text)[0]


def _punctuation_note(text):
    """A sentence saying how the model read the typed punctuation ("" when it was "." only, or none)."""
    _, ends, dropped = _read(text)
    said = [f"{' and '.join(repr(c) for c in ends)} read as '.'"] if ends else []
    said += [f"{' '.join(repr(c) for c in dropped)} left out"] if dropped else []
    return f"The model knows no punctuation but '.': {'; '.join(said)}." if said else ""


def gpt_next_word_view(params, config, words, temperature=1.0, top_k=None):
    """What tiny_gpt_explorer draws: the next word's probabilities after `words`, and each head's attention row
    for the last word (over the latest words it may see).

    Shapes: words a list of T words -> probs (len(VOCAB),), rows (n_layers, n_heads, T_k), keys a list of T_k
            words (the last T_k of words, T_k = min(T, config.context)).
    """
    ids = [int(i) for i in next_word.encode(words)]
    if not ids:
        raise ValueError("words must hold at least one word")
    logits, rows = tiny_gpt.next_logits(params, config, ids)  # rows: [(n_heads, span)] per layer, 0 outside the window
    T_k = min(len(ids), config.context)
    rows = np.stack([r[:, -T_k:] for r in rows])  # (n_layers, n_heads, T_k)
    return next_word.next_word_distribution(logits, temperature, top_k), rows, list(words[-T_k:])


def _problem(words):
    """A message for words the model cannot read, or None."""
    if not words:
        return "Type a prompt: words of the grammar, a '.' between sentences (for example: the cat near the)."
    unknown = unknown_words(words, next_word.WORD_ID)
    if unknown:
        return f"Unknown words: {unknown}. The model knows only these: {' '.join(tiny_gpt.VOCAB)}"
    return None


def _verdict(words):
    """What the grammar says of the last finished sentence of the text, as a line of HTML ("" when none)."""
    finished = next_word.split_sentences(["."] + list(words))
    if not finished or not finished[-1]:
        return ""
    last = finished[-1]
    verdict = next_word.judge(last)
    if verdict["agrees"] and verdict["distinct"]:
        said = "a sentence of the grammar"
    elif verdict["agrees"]:
        said = "the grammar's shape and an agreeing verb, but a noun twice (the grammar never repeats one)"
    elif verdict["shape"]:
        said = "the grammar's shape, but its verb does not agree with its subject"
    else:
        said = "not the grammar's shape"
    return f"<p>Last sentence: <i>{html.escape(' '.join(last))}</i>: {said}.</p>"


def _choose(params, config, words, temperature, top_k, rng):
    probs = gpt_next_word_view(params, config, words, temperature, top_k)[0]
    return tiny_gpt.VOCAB[int(np.argmax(probs)) if temperature == 0 else next_word.sample(probs, rng)]


def tiny_gpt_explorer(params, config, prompt="the cats near the old dog", temperature=1.0, top_k=None, seed=0):
    """A prompt box, temperature and top-k sliders, and two buttons: "next word" appends one word the model
    samples, "write a sentence" words until a "." (at most 24). Draws the next word's probabilities as bars
    and each head's attention row for the last word. The default prompt ends just before a verb: the head that
    chooses it looks back at the subject. top-k at its largest, len(VOCAB), keeps every word (no cut).

    Shapes: params and config of tiny_gpt -> a widget with .controls and .buttons.
    """
    V = len(tiny_gpt.VOCAB)
    controls = {
        "prompt": ipw.Text(
            value=prompt, description="prompt", continuous_update=False, layout=ipw.Layout(width="560px")
        ),
        "temperature": ipw.FloatSlider(
            value=temperature, min=0.0, max=2.0, step=0.1, description="temperature", style=WIDE_LABEL
        ),
        "top_k": ipw.IntSlider(
            value=V if top_k is None else top_k, min=1, max=V, description=f"top-k ({V}: off)", style=WIDE_LABEL
        ),
    }
    rng = np.random.default_rng(seed)

    def draw(prompt, temperature, top_k):
        words, note = gpt_prompt_words(prompt), _punctuation_note(prompt)
        note = f"<p>{html.escape(note)}</p>" if note else ""
        problem = _problem(words)
        if problem:
            show_html(f"<p>{html.escape(problem)}</p>" + note)
            return
        probs, rows, keys = gpt_next_word_view(params, config, words, temperature, None if top_k >= V else top_k)
        best = np.argsort(-probs, kind="stable")[:_SHOWN_WORDS]
        how = "greedy" if temperature == 0 else f"temperature {temperature:g}" + (f", top-{top_k}" if top_k < V else "")
        bars = html_plots.bars(
            probs[best],
            [tiny_gpt.VOCAB[i] for i in best],
            f"<b>the next word ({html.escape(how)})</b>",
            html_plots.GREEN,
        )
        shown = rows[..., -_SHOWN_KEYS:].reshape(-1, min(len(keys), _SHOWN_KEYS))  # (n_layers * n_heads, keys shown)
        labels = [f"layer {layer} head {head}" for layer in range(len(rows)) for head in range(rows.shape[1])]
        title = f"where {keys[-1]!r} looks" + (f" (its latest {_SHOWN_KEYS} words)" if len(keys) > _SHOWN_KEYS else "")
        heat = html_plots.heatmap(shown, labels, keys[-_SHOWN_KEYS:], title=title, cmap="Blues", vmin=0, vmax=1)
        show_html(html_plots.side_by_side(bars, heat) + note + _verdict(words))

    box = explorer(controls, draw)

    def write(n_max):
        words = gpt_prompt_words(controls["prompt"].value)
        if _problem(words):
            box.refresh()  # the message again: there is nothing to write after
            return
        for _ in range(n_max):
            words.append(
                _choose(
                    params,
                    config,
                    words,
                    controls["temperature"].value,
                    None if controls["top_k"].value >= V else controls["top_k"].value,
                    rng,
                )
            )
            if words[-1] == next_word.END:
                break
        controls["prompt"].value = " ".join(words)  # redraws once

    buttons = {
        "next word": ipw.Button(description="next word"),
        "write a sentence": ipw.Button(description="write a sentence"),
    }
    buttons["next word"].on_click(lambda _: write(1))
    buttons["write a sentence"].on_click(lambda _: write(_MAX_SENTENCE))
    box.children = (box.children[0], ipw.HBox(list(buttons.values())), *box.children[1:])
    box.buttons = buttons
    return box


def demos():
    """tiny_gpt_explorer on an untrained model (its words are random; the drawing is the same), and its moves."""
    config = tiny_gpt.Config()
    box = tiny_gpt_explorer(tiny_gpt.init_params(config, rng=0), config)
    yield (
        "tiny_gpt_explorer (11)",
        box,
        [
            ("temperature", 0.5),
            ("top_k", 3),
            ("prompt", "today the cats near the"),
            ("prompt", "the unicorn meows"),
            ("prompt", ""),
            ("temperature", 0.0),
            ("prompt", "The cat meows. The dogs"),
            ("prompt", "the cats meow! the dog, near the cow?"),
            ("prompt", " ".join(["the cat meows ."] * 6)),
        ],
    )
