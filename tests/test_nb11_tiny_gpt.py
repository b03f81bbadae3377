"""What 11_tiny_gpt adds: its explorer (a prompt, temperature and top-k, two buttons) and its three exercises."""

import numpy as np
import pytest
from _answers import define, mistake_cases, reads_as_meant, solution

from helpers import checks, grammar, tiny_gpt, widgets
from helpers import next_word as nw
from helpers.attention import softmax
from helpers.checks import _reference as ref
from helpers.gpt_block import window_mask
from helpers.training import softmax_cross_entropy

CONFIG = tiny_gpt.Config()


@pytest.fixture(scope="module")
def params():
    return tiny_gpt.init_params(CONFIG, rng=0)  # untrained: the explorer draws the same way


# --- the explorer -------------------------------------------------------------------------------------


def test_prompt_words_are_lower_case_with_the_end_mark_a_word_of_its_own():
    assert widgets.gpt_prompt_words("The Cat meows. The dogs,") == ["the", "cat", "meows", ".", "the", "dogs"]
    assert widgets.gpt_prompt_words("  ") == [] and widgets.gpt_prompt_words("...") == [".", ".", "."]
    assert (
        widgets.gpt_prompt_words("the cat meows! the dogs bark? the") == "the cat meows . the dogs bark . the".split()
    )
    assert widgets.gpt_prompt_words("the cat's") == ["the", "cat's"]  # inside a word: kept, and unknown


def test_the_explorer_says_how_it_read_the_punctuation(params, shown):
    box = widgets.tiny_gpt_explorer(params, CONFIG, prompt="the cats meow! the")
    assert "&#x27;!&#x27; read as &#x27;.&#x27;" in shown[-1] and "Last sentence: <i>the cats meow</i>" in shown[-1]
    box.controls["prompt"].value = "the cat, near the dog? the"
    assert "&#x27;?&#x27; read as &#x27;.&#x27;; &#x27;,&#x27; left out." in shown[-1]
    box.controls["prompt"].value = "the cat near the"
    assert "punctuation" not in shown[-1]
    box.controls["prompt"].value = "the unicorn, meows"
    assert "Unknown words" in shown[-1] and "&#x27;,&#x27; left out" in shown[-1]
    box.buttons["next word"].click()  # nothing written after an unknown word; the box keeps what was typed
    box.controls["prompt"].value = "the cats meow! the"
    box.buttons["next word"].click()
    assert box.controls["prompt"].value.startswith("the cats meow . the ")  # the box now shows what the model read


def test_next_word_view_is_the_last_positions_softmax_and_the_last_words_attention_rows(params):
    words = ". today the cats near the".split()
    probs, rows, keys = widgets.gpt_next_word_view(params, CONFIG, words, temperature=0.5)
    logits, saved = tiny_gpt.forward_and_saved(params, CONFIG, nw.encode(words)[None])
    assert np.allclose(probs, softmax(logits[0, -1] / 0.5))
    assert rows.shape == (CONFIG.n_layers, CONFIG.n_heads, len(words)) and keys == words
    assert np.allclose(rows, np.stack([w[0, :, -1] for w in saved["weights"]]))
    greedy = widgets.gpt_next_word_view(params, CONFIG, words, temperature=0)[0]
    assert greedy.max() == 1 and greedy.argmax() == logits[0, -1].argmax()
    assert np.count_nonzero(widgets.gpt_next_word_view(params, CONFIG, words, top_k=3)[0]) == 3


def test_next_word_view_keeps_the_window_of_a_long_text(params):
    words = ("the cat meows . " * 20).split()  # 80 words: past the context
    probs, rows, keys = widgets.gpt_next_word_view(params, CONFIG, words)
    assert rows.shape[-1] == CONFIG.context and keys == words[-CONFIG.context :]
    assert np.allclose(rows.sum(axis=-1), 1)  # the window holds all of each row's weight


def test_explorer_redraws_on_each_control_and_names_unknown_words(params, shown):
    box = widgets.tiny_gpt_explorer(params, CONFIG, prompt="the cat near the")
    assert len(shown) == 1 and "the next word (temperature 1)" in shown[-1] and "layer 1 head 1" in shown[-1]
    box.controls["temperature"].value = 0.0
    assert len(shown) == 2 and "greedy" in shown[-1]
    box.controls["top_k"].value = 3
    box.controls["prompt"].value = "the unicorn meows"
    assert "Unknown words: &#x27;unicorn&#x27;" in shown[-1]
    box.controls["prompt"].value = ""
    assert "Type a prompt" in shown[-1]
    box.controls["prompt"].value = "the cats meow . the"
    assert "Last sentence: <i>the cats meow</i>: a sentence of the grammar." in shown[-1]
    box.controls["prompt"].value = "the cats meows . the"
    assert "its verb does not agree with its subject" in shown[-1]


def test_buttons_write_one_word_or_a_sentence_and_survive_a_bad_prompt(params, shown):
    box = widgets.tiny_gpt_explorer(params, CONFIG, prompt="the cat", seed=1)
    box.buttons["next word"].click()
    words = box.controls["prompt"].value.split()
    assert words[:2] == ["the", "cat"] and len(words) == 3 and words[2] in tiny_gpt.VOCAB
    before = len(shown)
    box.buttons["write a sentence"].click()
    written = box.controls["prompt"].value.split()[3:]
    assert written and (written[-1] == "." or len(written) == 24) and "." not in written[:-1]
    assert len(shown) == before + 1  # one redraw for the whole sentence
    box.controls["prompt"].value = "the xyz"
    box.buttons["next word"].click()  # nothing to write after an unknown word: the message again, no error
    assert box.controls["prompt"].value == "the xyz" and "Unknown words" in shown[-1]


def test_greedy_buttons_follow_the_likeliest_word(params):
    box = widgets.tiny_gpt_explorer(params, CONFIG, prompt=". the", temperature=0.0)
    box.buttons["next word"].click()
    expected = tiny_gpt.generate(params, CONFIG, [".", "the"], 1, temperature=0)
    assert box.controls["prompt"].value.split() == expected


# --- the exercises ----------------------------------------------------------------------------------


def test_next_word_loss_solution_is_the_cross_entropy_with_shifted_targets(rng):
    logits, ids = rng.normal(size=(3, 9, 27)), rng.integers(27, size=(3, 9))
    expected = softmax_cross_entropy(logits[:, :-1], ids[:, 1:])[0]
    assert np.isclose(solution("next_word_loss")(logits, ids), expected)
    params = tiny_gpt.init_params(CONFIG, rng=1)
    window = tiny_gpt.random_windows(np.arange(27).repeat(3), 10, 2, rng)  # (2, 10)
    model_logits = tiny_gpt.forward(params, CONFIG, window)  # (2, 10, V): every position
    loss = tiny_gpt.loss_and_grads(params, CONFIG, window)[0]  # runs the first 9 and scores them
    assert np.isclose(solution("next_word_loss")(model_logits, window), loss)


def test_sample_next_word_solution_is_the_helpers_sampling(rng):
    sample = solution("sample_next_word")
    for _ in range(50):
        logits, temperature, u = rng.normal(size=27) * 3, rng.choice([0.3, 1.0, 2.5]), rng.random()
        probs = nw.next_word_distribution(logits, temperature)
        assert sample(logits, temperature, u) == nw.sample(probs, _Fixed(u))
    assert sample(np.array([0.0, 5.0, 1.0]), 0, 0.99) == 1


class _Fixed:
    """A stand-in generator whose random() is u: nw.sample with the learner's u."""

    def __init__(self, u):
        self.u = u

    def random(self):
        return self.u


def _answer(rest):
    return define("def sample_next_word" + rest, "sample_next_word")


_HEAD = """(logits, temperature, u):
    if temperature == 0:
        return int(np.argmax(logits))
    z = logits / temperature
    p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
"""
# wrong answers that give the greedy word on some case but not on every one: none is "always greedy"
NOT_ALWAYS_GREEDY = {
    "from the end": _HEAD + '    return int(len(p) - 1 - np.searchsorted(np.cumsum(p[::-1]), u, side="right"))',
    "one minus u": _HEAD + '    return int(np.searchsorted(np.cumsum(p), 1 - u, side="right"))',
    "sorted first": _HEAD + '    return int(np.searchsorted(np.cumsum(np.sort(p)[::-1]), u, side="right"))',
}


@pytest.mark.parametrize("label", NOT_ALWAYS_GREEDY)
def test_sample_next_word_names_always_greedy_only_when_every_case_is_greedy(label, capsys):
    result = checks.sample_next_word(_answer(NOT_ALWAYS_GREEDY[label]))
    assert result.mistake == "wrong-values" and "u falls on word" in result.message


def test_sample_next_word_cases_put_the_right_word_off_the_greedy_one():
    logits = np.array([0.3, -1.2, 1.5, 0.9, -0.4, 1.1])
    for temperature, u in ((1.0, 0.87), (0.5, 0.71), (2.0, 0.53)):  # the check's cases: greedy below 1 fails too
        assert ref.pick(softmax(logits / temperature), u) != np.argmax(logits)


def test_sample_next_word_argmin_at_temperature_0_is_not_told_it_divided_by_0(capsys):
    last = '    return int(np.searchsorted(np.cumsum(p), u, side="right"))'
    argmin = _answer(_HEAD.replace("argmax", "argmin") + last)
    result = checks.sample_next_word(argmin)
    assert result.mistake == "wrong-values" and "temperature 0 is greedy" in result.message
    assert "dividing" not in result.message


def test_the_workshop_functions_that_are_the_answer_are_forbidden(capsys):
    def uses_the_loss(logits, ids):
        return softmax_cross_entropy(logits[:, :-1], ids[:, 1:])[0]

    def uses_softmax(logits, temperature, u):
        return int(np.searchsorted(np.cumsum(softmax(logits / max(temperature, 1e-9))), u, side="right"))

    assert checks.next_word_loss(uses_the_loss).mistake == "forbidden"
    assert checks.sample_next_word(uses_softmax).mistake == "forbidden"


def test_cached_attention_step_solution_is_windowed_causal_attention():
    project, window, words = ref.toy_projection(), 3, [2, 7, 1, 8, 2, 8, 1]
    step = solution("cached_attention_step")
    cache_K = cache_V = np.zeros((0, 4))
    outs = []
    for position, word in enumerate(words):
        out, cache_K, cache_V = step(word, position, cache_K, cache_V, project, window)
        outs.append(out)
        assert len(cache_K) == min(position + 1, window)
    Q, K, V = (np.array(x) for x in zip(*(project(w, p) for p, w in enumerate(words)), strict=True))  # (T, d) each
    scores = np.where(window_mask(len(words), window), Q @ K.T / 2, -np.inf)  # (T, T): √d = 2
    assert np.allclose(outs, softmax(scores) @ V)


MESSAGES = {  # exercise -> mistake code -> words its message must hold
    "next_word_loss": {
        "targets-not-shifted": ["its own word"],
        "wraps-around": ["the window's first word"],
        "shifted-wrong-way": ["the word before it"],
        "logits-not-cut": ["all 6 positions with the 5 targets"],
        "softmax-over-positions": ["along the positions"],
        "softmax-over-batch": ["across the B windows"],
        "summed": ["the sum over the B·(T − 1) = 10 positions"],
        "divided-by-all-positions": ["B·T = 12"],
        "minus-forgotten": ["minus the loss"],
        "probabilities-not-logs": ["minus their logarithms"],
        "no-max-shift": ["overflows"],
        "one-max-for-all": ["underflows to 0", "log 0 is −∞"],
        "every-word-averaged": ["all 7 words", "only the target's"],
    },
    "sample_next_word": {
        "always-greedy": ["every time"],
        "greedy-below-one": ["only temperature 0 is greedy"],
        "temperature-multiplied": ["multiplied by the temperature"],
        "temperature-ignored": ["whatever the temperature"],
        "probabilities-divided": ["after the softmax"],
        "probability-against-u": ["running sum"],
        "off-by-one": ["each one before"],
        "u-ignored": ["different words for the same"],
        "no-max-shift": ["overflows"],
        "zero-temperature-divides": ["dividing the logits by 0"],
        "not-normalised": ["not divided by their sum", "add up to 1"],
    },
    "cached_attention_step": {
        "cache-not-appended": ["the cache you were given"],
        "own-key-left-out": ["the cached words only"],
        "no-window": ["has 4 rows", "keep the latest 3"],
        "window-after-attending": ["cut first"],
        "kept-oldest": ["kept the oldest 3 rows"],
        "new-row-first": ["the new word's row first"],
        "position-from-cache-length": ["its position in the text"],
        "no-square-root": ["√d = 2"],
        "divided-by-d": ["by d = 4"],
    },
}


@pytest.mark.parametrize("name, code", mistake_cases(MESSAGES))
def test_each_mistake_reads_as_meant(name, code, capsys):
    reads_as_meant(MESSAGES, name, code)


def test_the_grammar_and_the_vocabulary_agree():
    assert set(tiny_gpt.VOCAB) == set(grammar.VOCAB[2:]) | {"."}


def test_a_sampler_that_draws_its_own_numbers_is_named_even_when_its_first_draws_land_right(capsys):
    right, calls, first_run = solution("sample_next_word"), [], []
    for case in checks.EXERCISES["sample_next_word"].check.cases():  # how many calls one run of the cases makes
        case.outcome(lambda *args: first_run.append(1) or right(*args))

    def lucky_then_random(logits, temperature, u):  # right on the check's first run of its cases, then its own draws
        calls.append(1)
        if len(calls) <= len(first_run):
            return right(logits, temperature, u)
        return int(np.random.default_rng(len(calls)).integers(len(logits)))

    result = checks.sample_next_word(lucky_then_random)
    assert len(calls) > len(first_run) > 0  # the check ran it again after a first run that was right
    assert result.mistake == "u-ignored" and "different words for the same" in result.message
