"""What 08_training_a_tiny_transformer adds: the training monitor, the masked-word explorer driven by code,
and the exercises' answers and targeted messages against the helpers."""

import re

import numpy as np
import pytest
from _answers import mistake_cases, reads_as_meant, solution

from helpers import checks, grammar, tiny_model, transformer, widgets

CONFIG = tiny_model.Config()


@pytest.fixture(scope="module")
def model():
    return tiny_model.init_params(CONFIG, rng=0)


# --- the training monitor ------------------------------------------------------------------------


def test_monitor_moves_each_bar_and_draws_one_curve_per_run():
    monitor = widgets.training_monitor(["full", "baseline"], steps=25, every=10)
    full, baseline = monitor.callback("full"), monitor.callback("baseline")
    for step in range(25):
        full(step, 3.0 - 0.1 * step)
    for step in range(12):
        baseline(step, 2.0)
    bars = {row.children[0].value: row.children[1] for row in monitor.children[:2]}
    assert bars["full"].value == 25 and bars["baseline"].value == 10
    assert [step for step, _ in monitor.curves["full"]] == [10, 20, 25]  # every 10 steps, and the last one
    assert monitor.curves["full"][0][1] == pytest.approx(np.mean([3.0 - 0.1 * s for s in range(10)]))
    assert monitor.curves["baseline"] == [(10, 2.0)]
    assert "step 25 of 25, loss 0.800" in monitor.children[0].children[2].value
    svg = monitor.children[-1].value
    assert svg.count("<polyline") == 2 and ">full<" in svg and ">baseline<" in svg


def test_loss_curve_svg_maps_steps_and_losses_into_the_plot():
    svg = widgets.loss_curve_svg({"a <b>": [(0, 2.0), (100, 1.0)], "empty": []}, steps=100)
    points = re.search(r'points="([^"]+)"', svg).group(1).split()
    (x0, y0), (x1, y1) = (tuple(map(float, p.split(","))) for p in points)
    assert x0 < x1 and y1 > y0  # later and lower loss: right and further down the picture
    assert "a &lt;b&gt;" in svg and svg.count("<polyline") == 1
    assert widgets.loss_curve_svg({}, steps=10).startswith("<svg")


# --- the explorer ------------------------------------------------------------------------------------


@pytest.mark.parametrize("sentence, position, expected, fixer", [
    ("the cat near the dogs meows", 5, "the verb is fixed by 'cat' (word 1, 4 away)", 1),
    ("the cat near the dogs meows", 1, "the subject is fixed by 'meows' (word 5, 4 away)", 5),
    ("the cat near the dogs meows", 4, "the grammar allows several words here", None),
    ("the cat near the dogs bark", 5, "not a sentence of the grammar", None),
])
def test_explain_masked_word(sentence, position, expected, fixer):
    text, found = widgets.explain_masked_word(sentence.split(), position)
    assert expected in text and found == fixer


def test_explorer_shows_the_models_guesses_and_each_heads_row(model, shown):
    _, test = grammar.make_corpus(30, 5, rng=1)
    box = widgets.masked_word_explorer(model, CONFIG, test)
    first = test[0]
    assert box.controls["word"].value == first.verb  # a sentence opens with its verb hidden
    box.controls["sentence"].value = "the cows near the cat moo"
    assert [label for label, _ in box.controls["word"].options] == ["0: the", "1: cows", "2: near", "3: the",
                                                                    "4: cat", "5: moo"]
    assert box.controls["word"].value == 5  # the new sentence's verb
    probabilities, rows = tiny_model.predict(model, CONFIG, "the cows near the cat moo".split(), 5)
    top = [grammar.VOCAB[i] for i in np.argsort(probabilities)[::-1][:5]]
    page = shown[-1]
    assert all(f">{word}<" in page for word in top) and f"{probabilities.max():.3f}" in page
    assert "head 0" in page and "head 1" in page and "[MASK]" in page and "cows ★" in page
    assert f"{rows[0, 1]:.2f}" in page
    box.controls["word"].value = 1
    assert "the subject is fixed by" in shown[-1] and "moo ★" in shown[-1]


def test_explorer_explains_words_it_does_not_know(model, shown):
    box = widgets.masked_word_explorer(model, CONFIG, [grammar.parse("the cat meows")])
    box.controls["sentence"].value = "the cat purrs"
    assert "Unknown words: 'purrs'." in shown[-1]
    box.controls["sentence"].value = "the cat near the dogs bark"
    assert "not a sentence of the grammar" in shown[-1] and "top 5 guesses" in shown[-1]


def test_explorer_reads_capitals_and_punctuation_as_the_grammars_words(model, shown):
    box = widgets.masked_word_explorer(model, CONFIG, [grammar.parse("the dog barks")])
    box.controls["sentence"].value = "The Cat, near the dogs, meows."
    assert "Unknown" not in shown[-1] and "top 5 guesses" in shown[-1]
    assert [label for label, _ in box.controls["word"].options][:2] == ["0: the", "1: cat"]
    assert box.controls["word"].value == 5 and "the verb is fixed by 'cat'" in shown[-1]


def test_explorer_asks_for_a_sentence_when_the_text_is_empty(model, shown):
    box = widgets.masked_word_explorer(model, CONFIG, [grammar.parse("the dog barks")])
    for empty in ("", "  ...  "):
        box.controls["sentence"].value = empty
        assert "Type a sentence" in shown[-1]
        assert box.controls["word"].options == () and box.controls["word"].value is None  # no stale words
    box.controls["sentence"].value = "the cows moo"
    assert box.controls["word"].value == 2 and "top 5 guesses" in shown[-1]


def test_explorer_cuts_long_text(model, shown):
    box = widgets.masked_word_explorer(model, CONFIG, [grammar.parse("the dog barks")])
    box.controls["sentence"].value = " ".join(f"word{i}" for i in range(600))
    assert "'word0', 'word1', 'word2', 'word3', 'word4' and 595 more." in shown[-1] and len(shown[-1]) < 600
    assert len(box.controls["word"].options) == grammar.T_MAX
    box.controls["sentence"].value = " ".join(["the cat meows"] * 10)  # 30 words of the grammar
    assert f"Only the first {grammar.T_MAX} of its 30 words are used" in shown[-1] and "top 5 guesses" in shown[-1]
    assert len(box.controls["word"].options) == grammar.T_MAX


def test_predict_rejects_a_position_outside_the_sentence(model):
    with pytest.raises(ValueError, match="position"):
        tiny_model.predict(model, CONFIG, ["the", "cat", "meows"], 3)


# --- the exercises ----------------------------------------------------------------------------------


def test_block_solution_is_the_helpers_attention_plus_the_residual(rng):
    X = rng.normal(size=(5, 8))
    params = {name: rng.normal(0, 0.5, (8, 8)) for name in ("W_q", "W_k", "W_v", "W_o")}
    delta_E, _ = transformer.self_attention(params, X[None], np.array([5]), 4)
    got = solution("residual_attention_block")(X, params["W_q"], params["W_k"], params["W_v"], params["W_o"], 4)
    np.testing.assert_allclose(got, X + delta_E[0], rtol=1e-12, atol=1e-12)


def test_embedding_solution_is_the_helpers(rng):
    ids = rng.integers(0, 7, size=(3, 5))
    d_X = rng.normal(size=(3, 5, 4))
    np.testing.assert_array_equal(solution("embedding_backward")(d_X, ids, 7), transformer.embed_backward(d_X, ids, 7))


# each registered mistake's message, read once: what it says is what we meant (test_checks reads its code)
MESSAGES = {
    "residual_attention_block": {
        "no-residual": ["returned ΔE, the change that attention proposes"],
        "no-output-projection": ["ΔE is the merged heads projected by W_o, a (6, 6) matrix"],
        "scaled-by-d-model": ["you scaled the scores by 1/√d_model"],
        "not-scaled": ["divides its scores by √d_head = √3"],
        "softmax-over-queries": ["softmax ran down each column, over the queries"],
        "one-wide-head": ["is one head of width 6: split"],
        "split-by-reshape": ["your heads mix the words"],
        "merge-by-reshape": ["word t's row is head 0's row t, then head 1's row t"],
    },
    "embedding_backward": {
        "repeated-word-once": ["word 4 sits in 3 places but its row got only one"],
        "averaged": ["word 4 sits in 3 places and its row is the mean"],
        "transposed": ["has shape (3, 6), (d_model, vocab_size): your table is transposed"],
        "rows-for-positions": ["row t of your result collects the gradients of position t"],
        "summed-over-batch": ["you added d_X up over the 2 sentences"],
    },
}


@pytest.mark.parametrize("name, code", mistake_cases(MESSAGES))
def test_each_mistake_is_named_in_words(name, code):
    reads_as_meant(MESSAGES, name, code)


def test_block_built_from_the_helpers_is_right_and_its_mistakes_are_named():
    from helpers import merge_heads, scaled_dot_product_attention, split_heads

    def block(X, W_q, W_k, W_v, W_o, n_heads, residual=True, transpose_weights=False):
        Q, K, V = split_heads(X @ W_q, n_heads), split_heads(X @ W_k, n_heads), split_heads(X @ W_v, n_heads)
        if transpose_weights:  # a softmax over the queries, written with the helpers' softmax
            from helpers import softmax
            scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
            heads = softmax(scores, axis=-2) @ V
        else:
            heads, _ = scaled_dot_product_attention(Q, K, V)
        delta_E = merge_heads(heads) @ W_o
        return X + delta_E if residual else delta_E

    assert checks.residual_attention_block(block)
    assert checks.residual_attention_block(lambda *a: block(*a, residual=False)).mistake == "no-residual"
    assert checks.residual_attention_block(
        lambda *a: block(*a, transpose_weights=True)).mistake == "softmax-over-queries"


def test_embedding_check_forbids_the_helper():
    def embedding_backward(d_X, ids, vocab_size):
        return transformer.embed_backward(d_X, ids, vocab_size)

    result = checks.embedding_backward(embedding_backward)
    assert not result and "embed_backward" in result.message


def test_a_loop_over_the_places_is_right():
    def embedding_backward(d_X, ids, vocab_size):
        d_E = np.zeros((vocab_size, d_X.shape[-1]))
        for b in range(ids.shape[0]):
            for t in range(ids.shape[1]):
                d_E[ids[b, t]] += d_X[b, t]
        return d_E

    assert checks.embedding_backward(embedding_backward)
