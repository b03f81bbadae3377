"""What 08_training_a_tiny_transformer adds: the training monitor, the masked-word explorer driven by code,
and the exercises' answers and targeted messages against the helpers."""

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
from _answers import define, mistake_cases, reads_as_meant, solution

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


@pytest.mark.parametrize(
    "sentence, position, expected, fixer",
    [
        ("the cat near the dogs meows", 5, "the verb is fixed by 'cat' (word 1, 4 away)", 1),
        ("the cat near the dogs meows", 1, "the subject is fixed by 'meows' (word 5, 4 away)", 5),
        (
            "the cat near the dogs meows",
            4,
            "the grammar allows several words here: 'cats', 'dog', 'dogs', 'bird', 'birds', 'cow', 'cows'",
            None,
        ),  # every noun but the subject, 'cat'
        ("the cat near the dogs meows", 2, "the grammar allows several words here: 'near', 'behind', 'with'", None),
        ("the small cat meows", 1, "'big', 'small', 'old', 'young'", None),
        ("the cat near the dogs meows", 3, "only 'the' fits here", None),  # after a preposition
        ("the cat meows", 0, "only 'the' fits here", None),  # "today" or "tonight" would need a "the" after them
        ("today the cat meows", 0, "several words here: 'today', 'tonight'", None),
        ("the cat near the dogs bark", 5, "not a sentence of the grammar", None),
    ],
)
def test_explain_masked_word(sentence, position, expected, fixer):
    text, found = widgets.explain_masked_word(sentence.split(), position)
    assert expected in text and found == fixer


def test_explorer_shows_the_models_guesses_and_each_heads_row(model, shown):
    _, test = grammar.make_corpus(30, 5, rng=1)
    box = widgets.masked_word_explorer(model, CONFIG, test)
    first = test[0]
    assert box.controls["word"].value == first.verb  # a sentence opens with its verb hidden
    box.controls["sentence"].value = "the cows near the cat moo"
    assert [label for label, _ in box.controls["word"].options] == [
        "0: the",
        "1: cows",
        "2: near",
        "3: the",
        "4: cat",
        "5: moo",
    ]
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
    assert "'word0', 'word1', 'word2', 'word3', 'word4' and 12 more." in shown[-1] and len(shown[-1]) < 800
    assert f"Only the first {grammar.T_MAX} of its 600 words are used" in shown[-1]
    assert len(box.controls["word"].options) == grammar.T_MAX
    # an unknown word past the cut is never read: the sentence's first 17 words are
    box.controls["sentence"].value = (
        "today the small cats near the dog behind the birds meow with the cow "
        "near the big cat purrs"
    )  # 'purrs' is word 19
    assert "Unknown" not in shown[-1] and "top 5 guesses" in shown[-1]
    box.controls["sentence"].value = " ".join(["the cat meows"] * 10)  # 30 words of the grammar
    assert f"Only the first {grammar.T_MAX} of its 30 words are used" in shown[-1] and "top 5 guesses" in shown[-1]
    assert len(box.controls["word"].options) == grammar.T_MAX


def test_typed_words_are_what_the_explorer_reads():
    assert widgets.typed_words("The Cat, near the dogs, meows.") == ["the", "cat", "near", "the", "dogs", "meows"]
    assert widgets.typed_words("  ...  ") == [] and len(widgets.typed_words("the " * 40)) == grammar.T_MAX


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
        "causal-mask": ["only to itself and the words before it, as 05's causal mask allows"],
        "residual-before-output-projection": ["added X to the merged heads and projected the sum by W_o"],
        "values-not-projected": ["your values are the rows of X themselves"],
        "transposed-weights": ["the transpose of W_q, W_k, W_v and W_o"],
        "returned-weights-too": ["returned 2 things (a tuple), E′ and more; the block returns only E′"],
    },
    "embedding_backward": {
        "repeated-word-once": ["word 4 sits in 3 places but its row got only one"],
        "averaged": ["word 4 sits in 3 places and its row is the mean"],
        "transposed": ["has shape (3, 6), (d_model, vocab_size): your table is transposed"],
        "rows-for-positions": ["row t of your result collects the gradients of position t"],
        "summed-over-batch": ["you added d_X up over the 2 sentences"],
        "integer-table": ["holds whole numbers (dtype int", "took the ids' integer type"],
        "divided-by-batch": ["the right sum divided by the batch size, 2"],
        "width-from-sentence-length": ["one column per position of a sentence, T = 4", "d_model = 3"],
        "flattened-ids-only": ["flatten d_X the same way, to (8, 3)"],
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
    assert (
        checks.residual_attention_block(lambda *a: block(*a, transpose_weights=True)).mistake == "softmax-over-queries"
    )


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


def test_some_transposed_weights_are_named():
    solution_source = checks.EXERCISES["residual_attention_block"].solution
    source = solution_source.replace("split(X @ W_k)", "split(X @ W_k.T)")
    result = checks.residual_attention_block(define(source, "residual_attention_block"))
    assert result.mistake == "transposed-weights" and "the transpose of W_k." in result.message


def test_an_embedding_table_of_t_columns_or_flattened_ids_are_explained_not_numpys_message():
    def as_many_columns_as_words(d_X, ids, vocab_size):
        d_E = np.zeros((vocab_size, d_X.shape[1]))
        d_E[ids] += d_X  # a broadcast error of another kind, from the same wrong table
        return d_E

    result = checks.embedding_backward(as_many_columns_as_words)
    assert result.mistake == "width-from-sentence-length" and "not broadcastable" not in result.message


# --- the numbers the notebook quotes from benchmarks/tiny_transformer.py (slow: 60 trainings, about a minute) --
# The models without LayerNorm train to the same printed digits on every CPU kernel tried (OpenBLAS's Haswell,
# Sandybridge, Nehalem and SkylakeX kernels, numpy's AVX2 and SSE4.2 loops) and after nudges of 1e-12 to their
# starting weights: their numbers are asserted as printed. With LayerNorm the last bits matter (a held-out verb
# more or less, a head's weight on the subject from 0.87 to 0.96 on one seed): those are asserted with margins,
# and `make chaotic` runs them again with other CPU types' kernels (docs/reproducible-outputs.md).


def _benchmark():
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "tiny_transformer.py"
    spec = importlib.util.spec_from_file_location("tiny_transformer_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ranges(rows):
    """{model: (lowest, highest) held-out accuracy over the seeds} and {model: each seed's best head share}."""
    return (
        {name: (round(min(r[0] for r in v), 3), round(max(r[0] for r in v), 3)) for name, v in rows.items()},
        {name: [r[2] for r in v] for name, v in rows.items()},
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "n_train, quoted",
    [
        (2000, {"full": (1, 1), "no attention": (0.076, 0.094), "no positions": (0.374, 0.420)}),
        (500, {"full": (1, 1), "no attention": (0.058, 0.120), "no positions": (0.390, 0.436)}),
    ],
)
def test_the_baselines_ranges_over_five_seeds(n_train, quoted):
    bench = _benchmark()
    rows, expected = bench.measure(bench.MODELS, 5, n_train=n_train)
    accuracy, shares = _ranges(rows)
    assert accuracy == quoted
    if n_train == 2000:  # the best head's weight on the subject of a hidden verb, on every seed
        assert all(share >= 0.99 for share in shares["full"])
    above = [
        (round(row[0], 3), round(level, 3))
        for row, (level, _) in zip(rows["no positions"], expected, strict=True)
        if row[0] > level
    ]
    assert above == {2000: [(0.420, 0.404)], 500: [(0.436, 0.429), (0.434, 0.415)]}[n_train]


@pytest.mark.slow
def test_the_residual_over_five_seeds():
    bench = _benchmark()
    rows, _ = bench.measure(bench.RESIDUAL, 5)
    accuracy, shares = _ranges(rows)
    assert accuracy == {"with residual": (1, 1), "without": (1, 1)}
    assert all(share >= 0.99 for name in shares for share in shares[name])


@pytest.mark.slow
@pytest.mark.chaotic
def test_layer_norm_and_feed_forward_over_five_seeds():
    # the notebook's table: worst seed's held-out accuracy, and the best head's weight on the subject (the mean
    # over the seeds). Measured on 7 kernel set-ups and 6 nudges: with LayerNorm the worst seed lands at 0.994 to
    # 1.000 and the mean weight at 0.968 to 0.983; with the feed-forward layer alone 1.000 and 0.998
    bench = _benchmark()
    rows, _ = bench.measure(bench.PARTS, 5)
    worst = {name: min(r[0] for r in v) for name, v in rows.items()}
    mean_share = {name: float(np.mean([r[2] for r in v])) for name, v in rows.items()}
    assert worst["attention only"] == 1 and round(mean_share["attention only"], 2) == 1  # every kernel: 0.997
    for name in ("+ LayerNorm", "+ feed-forward", "+ both"):
        assert worst[name] >= 0.98, name  # the table's "0.98 or more"
        assert sum(r[0] == 1 for r in rows[name]) >= 3, name  # "most runs get every verb right"
    assert mean_share["+ feed-forward"] >= 0.99  # "0.99 or more"
    assert mean_share["+ LayerNorm"] >= 0.95 and mean_share["+ both"] >= 0.95  # "0.95 or more"


@pytest.mark.slow
def test_attention_alone_gets_every_verb_after_150_steps_too():
    # the notebook: "with 150 steps instead of 400, the attention-only block still gets 1.000 on every seed"
    # (the same on every kernel tried, and after nudges)
    bench = _benchmark()
    rows, _ = bench.measure({"attention only": bench.PARTS["attention only"]}, 5, steps=150)
    assert [r[0] for r in rows["attention only"]] == [1] * 5
