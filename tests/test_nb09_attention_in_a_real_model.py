"""What 09_attention_in_a_real_model adds: the exercises' answers and messages, and the attention explorer."""

import re

import numpy as np
import pytest
from _answers import define, solution

from helpers import checks, widgets


@pytest.fixture(scope="module")
def model():
    from helpers.pretrained import load_minilm

    return load_minilm()


# --- the exercises ------------------------------------------------------------------------------


def test_attention_row_solution_is_the_real_models_row(model):
    text = "Attention is a novel idea."
    attention_row = solution("attention_row")
    for layer, head, query in ((1, 8, 2), (0, 2, 5), (4, 5, 1)):
        X = model.hidden_states(text)[layer]  # (T, 384): what enters the layer
        got = attention_row(X, model.layers[layer]["attention"], head, query)
        np.testing.assert_allclose(got, model.attentions(text)[layer, head, query], atol=1e-5)


def test_sentence_embedding_solution_is_the_models_pooling(model):
    out = model.run(["The cat sat on the mat.", "A bat flew out of the cave at dusk.", "Hello."])
    H = out.states[:, -1]  # (3, T, 384): the last layer of a padded batch
    np.testing.assert_allclose(solution("sentence_embedding")(H, out.real), model.pool(H, out.real), atol=1e-6)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("no-biases", "you left out the biases"),
        ("sqrt-d-model", "you divided by √d_model"),
        ("unscaled", "the scores are not scaled"),
        ("every-column", "you used every column of W_q and W_k"),
        ("no-softmax", "you returned the scores themselves"),
        ("not-normalised", "did not divide by their sum over the keys"),
        ("softmax-over-queries", "your softmax ran down each column of the (T, T) scores, over the queries"),
        ("took-column", "you returned column 2 of the weights"),
        ("whole-matrix", "you returned the weights of every query"),
        ("called-the-layer", "you called the layer itself"),
        ("divided-by-d-head", "you divided the scores by d_head = 4; the scale is 1/√d_head"),
        ("columns-from-head-number", "start at column 1, the head's number"),
        ("whole-bias", "take this head's slice of the bias"),
        ("softmax-whole-matrix", "your softmax ran over the whole (T, T) matrix of scores at once"),
    ],
)
def test_attention_row_names_the_common_mistakes(code, words):
    result = checks.attention_row(define(checks.EXERCISES["attention_row"].mistakes[code], "attention_row"))
    assert not result and result.mistake == code and words in result.message


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("padding-averaged", "you averaged the padding positions too"),
        ("not-normalised", "the mean is right but its rows are not of length 1"),
        ("sum-not-mean", "stopped there, so the rows are not of length 1"),
        ("first-token", "you took each sentence's first token"),
        ("normalised-first", "you normalised each token before averaging"),
        ("one-length-for-all", "one length for all of them"),
        ("averaged-sentences", "you averaged over the sentences"),
        ("mask-without-axis", "real needs a last axis of length 1"),
    ],
)
def test_sentence_embedding_names_the_common_mistakes(code, words):
    answer = define(checks.EXERCISES["sentence_embedding"].mistakes[code], "sentence_embedding")
    result = checks.sentence_embedding(answer)
    assert not result and result.mistake == code and words in result.message


def test_a_sum_instead_of_a_mean_is_right_after_normalising():
    # the length is divided away: summing the real tokens gives the same unit vector
    answer = define(
        "def sentence_embedding(H, real):\n    pooled = (H * real[..., None]).sum(axis=1)\n"
        "    return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)\n",
        "sentence_embedding",
    )
    assert checks.sentence_embedding(answer)


def test_the_notebooks_invitation_compares_without_raising(model, capsys):
    # 09 invites the learner to compare their row with the model's in a cell of their own, with checks.compare
    text = "Attention is a novel idea."
    X = model.hidden_states(text)[1]
    expected = model.attentions(text)[1, 8, 2]
    assert checks.compare(solution("attention_row")(X, model.layers[1]["attention"], 8, 2), expected, "row")
    wrong = define(checks.EXERCISES["attention_row"].mistakes["unscaled"], "attention_row")
    result = checks.compare(wrong(X, model.layers[1]["attention"], 8, 2), expected, "layer 1, head 8, row 2")
    assert not result and capsys.readouterr().out.splitlines()[-1].startswith("✗ layer 1, head 8, row 2 differs")


def test_the_invitation_written_with_a_lambda_reports_a_crash_instead_of_raising(model, capsys):
    # the notebook's snippet passes `lambda: attention_row(...)`, so a crashing answer (or the untouched stub) is
    # reported by checks.compare and Run All goes on
    def attention_row(X, attention, head, i):
        raise NotImplementedError

    X = model.hidden_states("Attention is a novel idea.")[1]
    result = checks.compare(
        lambda: attention_row(X, model.layers[1]["attention"], 8, 2),
        model.attentions("Attention is a novel idea.")[1, 8, 2],
        "layer 1, head 8, row 2",
    )
    assert not result and "✗" in capsys.readouterr().out


# --- the explorer -------------------------------------------------------------------------------


def n_lines(markup):
    """The attention lines drawn (the legend's swatches, lines from x = 0, are not counted)."""
    return len(re.findall(r'<line x1="(?!0")', markup))


def test_lines_svg_draws_a_line_per_weight_above_the_cut():
    weights = np.stack([np.eye(4), np.full((4, 4), 0.25)])  # head 0: itself, head 1: uniform
    labels = ["[CLS]", "a", "b", "[SEP]"]
    assert n_lines(widgets.lines_svg(weights, labels, [0])) == 4
    assert n_lines(widgets.lines_svg(weights, labels, [0, 1])) == 4 + 16
    assert n_lines(widgets.lines_svg(weights, labels, [1], min_weight=1.5)) == 0
    assert widgets.lines_svg(weights, ["<b>", "a", "b", "c"], [0]).count("&lt;b&gt;") == 2  # labels escaped
    with pytest.raises(ValueError, match="len\\(labels\\)"):
        widgets.lines_svg(weights, labels[:3], [0])


def test_explorer_shows_one_head_then_the_layer_then_hides_cls_and_sep(model, shown):
    box = widgets.attention_explorer(model, sentence="The cat sat on the mat.", layer=0, head=2)
    T = len(model.tokenize("The cat sat on the mat."))
    first = shown[-1]
    assert "layer 0, head 2" in first and n_lines(first) == T  # a previous-token head: one line per query
    assert "[CLS]" in first and "<table" in first  # the head's weights as a table too
    box.controls["view"].value = "whole layer"
    assert "all 12 heads" in shown[-1] and shown[-1].count("head ") >= 12 and "<table" not in shown[-1]
    box.controls["hide_special"].value = True
    assert "[CLS]" not in shown[-1] and "[SEP]" not in shown[-1]
    box.controls["layer"].value = 5
    box.controls["view"].value = "one head"
    box.controls["head"].value = 11
    assert "layer 5, head 11" in shown[-1] and "<table" in shown[-1] and "[CLS]" not in shown[-1]


def test_explorer_follows_the_sentence_box_and_says_when_it_cuts(model, shown):
    box = widgets.attention_explorer(model)
    box.controls["sentence"].value = "Attention is a novel idea."
    assert "novel" in shown[-1] and "mat" not in shown[-1]
    long = " ".join(["word"] * 60)
    box.controls["sentence"].value = long
    assert "62 tokens" in shown[-1] and "the first 40" in shown[-1]
    box.controls["sentence"].value = "word " * 600
    assert "602 wordpieces" in shown[-1] and "512 rows" in shown[-1] and "<svg" not in shown[-1]
    assert "cuts its input at 256" in shown[-1]
    box.controls["sentence"].value = ""
    assert "[CLS]" in shown[-1] and "Type a sentence" in shown[-1]  # an empty box still draws [CLS] and [SEP]
    box.controls["hide_special"].value = True
    assert "Type a sentence" in shown[-1] and "nothing to draw" in shown[-1] and "<svg" not in shown[-1]


def test_the_head_slider_is_off_while_the_whole_layer_is_shown(model, shown):
    box = widgets.attention_explorer(model)
    assert not box.controls["head"].disabled
    box.controls["view"].value = "whole layer"
    assert box.controls["head"].disabled and "all 12 heads" in shown[-1]
    box.controls["view"].value = "one head"
    assert not box.controls["head"].disabled
    assert box.controls["view"].description == "view" and type(box.controls["view"]).__name__ == "Dropdown"
