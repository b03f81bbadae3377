"""Widgets of 08_training_a_tiny_transformer: a training monitor (progress bars and a live loss curve,
drawn as SVG so they work in JupyterLab, Notebook 7 and Colab alike) and the masked-word explorer.

Taught in 08_training_a_tiny_transformer.
"""

import html
import string

import numpy as np

from helpers import grammar, html_plots, tiny_model
from helpers.widgets._explorer import explorer, ipw, show_html, unknown_words

__all__ = ["loss_curve_svg", "training_monitor", "explain_masked_word", "typed_words", "masked_word_explorer"]

_MAX_WORDS = grammar.T_MAX  # the grammar's longest sentence; longer text is cut, so the rows fit the notebook's width


def loss_curve_svg(curves, steps, width=480, height=200):
    """Loss curves as an SVG line chart: x is the training step (0 to steps), y the loss (0 to the largest).

    Shapes: curves {name: list of (step, loss)}, steps int -> str.
    """
    largest = max([loss for points in curves.values() for _, loss in points] + [1e-9])
    return html_plots.line_chart_svg(
        curves,
        (0, steps),
        (0, largest * 1.05),
        x_label="step",
        x_ticks=(0, steps // 2, steps),
        y_ticks=(0, largest * 1.05 / 2, largest),
        y_format=".2f",
        width=width,
        height=height,
    )


def training_monitor(runs, steps, every=10):
    """A progress bar per training run and one loss curve for all of them, updated as training goes.

    Returns a VBox with .callback(run), a callback(step, loss) for tiny_model.train_masked_word (or
    tiny_gpt.train_next_word), and .curves {run: [(step, mean loss of the last `every` steps), ...]}.
    """
    label_style = ipw.Layout(width="120px")
    bars = {run: ipw.IntProgress(min=0, max=steps, value=0) for run in runs}
    status = {run: ipw.Label("waiting") for run in runs}
    curves, recent = {run: [] for run in runs}, {run: [] for run in runs}
    chart = ipw.HTML(loss_curve_svg(curves, steps))
    rows = [ipw.HBox([ipw.Label(run, layout=label_style), bars[run], status[run]]) for run in runs]
    box = ipw.VBox([*rows, chart])

    def callback(run):
        def on_step(step, loss):
            recent[run].append(loss)
            if (step + 1) % every == 0 or step + 1 == steps:
                curves[run].append((step + 1, float(np.mean(recent[run]))))
                recent[run].clear()
                bars[run].value = step + 1
                status[run].value = f"step {step + 1} of {steps}, loss {curves[run][-1][1]:.3f}"
                chart.value = loss_curve_svg(curves, steps)

        return on_step

    box.callback, box.curves = callback, curves
    return box


def explain_masked_word(words, position):
    """What the grammar says about the hidden word: (text, position of the word that fixes it or None)."""
    try:
        sentence = grammar.parse(words)
    except ValueError as exc:
        return f"not a sentence of the grammar ({exc}); the model answers anyway", None
    fixer = grammar.determining_position(sentence, position)
    if fixer is None:
        fits = _fitting_words(words, position)
        if fits == [words[position]]:
            return f"only {words[position]!r} fits here: its place in the sentence fixes it", None
        return f"the grammar allows several words here: {', '.join(repr(w) for w in fits)}", None
    role = "verb" if position == sentence.verb else "subject"
    return (
        f"the grammar says {words[position]!r}: the {role} is fixed by {words[fixer]!r} "
        f"(word {fixer}, {abs(fixer - position)} away)"
    ), fixer


def _fitting_words(words, position):
    """The words of the vocabulary that, put at `position`, make a sentence of the grammar."""
    fits = []
    for word in grammar.VOCAB[2:]:
        try:
            grammar.parse([*words[:position], word, *words[position + 1 :]])
            fits.append(word)
        except ValueError:
            pass
    return fits


def _sentence_words(text):
    """The words of typed text as the grammar writes them: lower case, without punctuation around each word.

    Shapes: str -> list of str ("The Cat meows." -> ["the", "cat", "meows"]).
    """
    words = (word.strip(string.punctuation) for word in text.lower().split())
    return [word for word in words if word]


def typed_words(text):
    """Typed text as the masked-word explorer reads it: lower case, no punctuation, the first 17 words at most.

    Shapes: str -> list of at most grammar.T_MAX str ("The Cat meows." -> ["the", "cat", "meows"]).
    """
    return _sentence_words(text)[:_MAX_WORDS]


def _word_options(words):
    return [(f"{i}: {word}", i) for i, word in enumerate(words)]


def _default_word(words):
    """The verb if the words are a sentence of the grammar, else the last word."""
    try:
        return grammar.parse(words).verb
    except ValueError:
        return len(words) - 1


def masked_word_explorer(params, config, sentences):
    """Pick or type a sentence and the word to hide: the model's top 5 guesses and each head's attention row.

    Shapes: params and config of a tiny_model; sentences a list of Sentence offered in the menu.
    """
    options = [" ".join(s.words) for s in sentences]
    first = options[0].split()
    controls = {
        "sentence": ipw.Combobox(
            value=options[0],
            options=options,
            description="sentence",
            ensure_option=False,
            continuous_update=False,
            layout=ipw.Layout(width="560px"),
        ),
        "word": ipw.Dropdown(options=_word_options(first), value=_default_word(first), description="hide word"),
    }
    refresh = []  # the explorer's redraw, known once it is built

    def new_sentence(change):  # runs before the redraw: new word choices, without a redraw of their own
        words = typed_words(change["new"])
        controls["word"].unobserve(refresh[0], names="value")
        controls["word"].options = _word_options(words)  # none for empty text: no stale words to pick
        controls["word"].value = _default_word(words) if words else None
        controls["word"].observe(refresh[0], names="value")

    def draw(sentence, word):
        n_typed, words = len(_sentence_words(sentence)), typed_words(sentence)
        if not words:
            show_html("<p>Type a sentence, in words of the grammar, and press Enter.</p>")
            return
        notice = (
            ""
            if n_typed <= _MAX_WORDS
            else (
                f"<p><b>Only the first {_MAX_WORDS} of its {n_typed} words are used</b>, "
                "as many as the grammar's longest sentence.</p>"
            )
        )
        unknown = unknown_words(words, grammar.VOCAB[2:])
        if unknown:
            show_html(
                f"{notice}<p>Unknown words: {html.escape(unknown, quote=False)}. Use words of the grammar: "
                f"{html.escape(', '.join(grammar.VOCAB[2:]))}.</p>"
            )
            return
        position = min(word or 0, len(words) - 1)
        probabilities, weights = tiny_model.predict(params, config, words, position)
        top = np.argsort(probabilities)[::-1][:5]
        guesses = html_plots.bars(
            probabilities[top],
            [grammar.VOCAB[i] for i in top],
            f"<b>top 5 guesses for word {position}</b>",
            html_plots.GREEN,
        )
        text, fixer = explain_masked_word(words, position)
        keys = [grammar.MASK if i == position else w + (" ★" if i == fixer else "") for i, w in enumerate(words)]
        rows = (
            ""
            if weights is None
            else html_plots.heatmap(
                weights,
                [f"head {h}" for h in range(len(weights))],
                keys,
                title="where the hidden word looks",
                cmap="Blues",
                vmin=0,
                vmax=1,
            )
        )
        show_html(notice + html_plots.side_by_side(guesses, rows) + f"<p>{html.escape(text, quote=False)}</p>")

    controls["sentence"].observe(new_sentence, names="value")
    box = explorer(controls, draw)
    refresh.append(box.refresh)
    return box


def demos():
    """masked_word_explorer on an untrained model and a few sentences of the grammar."""
    config = tiny_model.Config()
    _, test = grammar.make_corpus(50, 5, rng=0)
    box = masked_word_explorer(tiny_model.init_params(config, rng=0), config, test)
    yield (
        "masked_word_explorer (08)",
        box,
        [
            ("word", 0),
            ("sentence", " ".join(test[2].words)),
            ("sentence", "the cows near the cat moo"),
            ("word", 1),
            ("sentence", "the cat purrs"),
            ("sentence", ""),
            ("sentence", "The Cat meows."),
        ],
    )
