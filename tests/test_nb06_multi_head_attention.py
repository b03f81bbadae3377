"""What 06_multi_head_attention adds: the head explorer's numbers, and the exercises' answers against the helpers."""

import numpy as np
import pytest
from _answers import define, solution

import helpers
from helpers import widgets

TOKENS = ["The", "cat", "sat", "on", "the", "mat"]


def test_head_weights_picks_a_head_or_the_mean(rng):
    weights = rng.random(size=(3, 4, 4))
    for head in range(3):
        assert np.array_equal(widgets.head_weights(weights, head), weights[head])
    mean = (weights[0] + weights[1] + weights[2]) / 3
    assert np.allclose(widgets.head_weights(weights, -1), mean)


@pytest.mark.parametrize("head", [3, -2])
def test_head_weights_rejects_a_head_that_does_not_exist(head):
    with pytest.raises(ValueError, match="head"):
        widgets.head_weights(np.zeros((3, 2, 2)), head)


def test_head_explorer_draws_the_chosen_head(shown, rng):
    weights = np.stack([np.eye(6), np.full((6, 6), 1 / 6)])  # head 0: itself, head 1: uniform
    box = widgets.head_explorer(weights, TOKENS, head_names=["self", "uniform"])
    assert "self" in shown[-1] and "1.00" in shown[-1]
    box.controls["head"].value = 1
    assert "uniform" in shown[-1] and "1.00" not in shown[-1] and "0.17" in shown[-1]
    box.controls["query"].value = 2
    assert "▶ sat" in shown[-1] and "0.167" in shown[-1]
    box.controls["head"].value = -1
    assert "mean of all heads" in shown[-1] and "0.583" in shown[-1]  # (1 + 1/6) / 2


def test_explorers_reject_mismatched_tokens(rng):
    with pytest.raises(ValueError, match="tokens"):
        widgets.mask_explorer(rng.normal(size=(2, 6, 6)), [TOKENS], [6, 3])
    with pytest.raises(ValueError, match="len\\(tokens\\)"):
        widgets.head_explorer(np.zeros((2, 5, 5)), TOKENS)


@pytest.mark.parametrize(("shape", "n_heads"), [((5, 6), 3), ((2, 4, 8), 2), ((2, 3, 4, 6), 6)])
def test_split_and_merge_solutions_are_the_helpers(shape, n_heads, rng):
    X = rng.normal(size=shape)
    split = solution("split_heads_batched")(X, n_heads)
    assert np.array_equal(split, helpers.split_heads(X, n_heads))
    assert np.array_equal(solution("merge_heads_batched")(split), helpers.merge_heads(split))
    assert np.array_equal(solution("merge_heads_batched")(split), X)


@pytest.mark.parametrize("masked", [False, True])
def test_cross_attention_solution_is_the_helpers_class(masked, rng):
    layer = helpers.MultiHeadAttention(8, 4, bias=False, rng=rng)
    x, context = rng.normal(size=(3, 8)), rng.normal(size=(6, 8))
    mask = helpers.causal_mask(3, 6) if masked else None
    expected, _ = layer(x, context, mask=mask)
    got = solution("multi_head_cross_attention")(x, context, layer.W_q, layer.W_k, layer.W_v, layer.W_o, 4, mask)
    assert np.allclose(got, expected)


def test_explorer_numbers_keep_the_dtype(rng):
    scores = rng.normal(size=(1, 3, 3)).astype(np.float32)
    assert widgets.masked_weights(scores, [3])[1].dtype == np.float32
    assert widgets.head_weights(scores, -1).dtype == np.float32


# --- the exercises' targeted messages ---------------------------------------------------------


def mistake(name, code):
    from helpers import checks

    return define(checks.EXERCISES[name].mistakes[code], name)


@pytest.mark.parametrize(("code", "words"), [
    ("plain-reshape", "has the right shape, but a reshape straight to (..., h, T, d_head) mixes tokens into heads"),
    ("no-swap", "has shape (6, 2, 2), (..., T, h, d_head): each token's columns are cut into heads, but the heads "
                "axis still comes after the tokens"),
    ("front-axes", "you exchanged the second and third axes counted from the front, which are the tokens and heads "
                   "axes only when there is exactly one leading axis, and this X has no leading axes"),
    ("wrong-places", "the right numbers in the wrong places: head i takes d_head neighbouring columns of each token"),
])
def test_split_heads_batched_names_each_mistake(code, words):
    from helpers import checks

    result = checks.split_heads_batched(mistake("split_heads_batched", code))
    assert result.mistake == code and words in result.message, result.message


@pytest.mark.parametrize(("code", "words"), [
    ("plain-reshape", "a reshape alone keeps the numbers in memory order: each row of your result holds consecutive "
                      "tokens of one head"),
    ("not-joined", "has shape (6, 2, 2), (..., T, h, d_head): the tokens are back in front of the heads, but each "
                   "token still has its 2 pieces on separate rows"),
    ("heads-added", "has shape (6, 2), (..., T, d_head): you added the heads up"),
    ("front-axes", "you exchanged the second and third axes counted from the front"),
    ("wrong-places", "the right numbers in the wrong places: each token's row holds head 0's d_head numbers, then "
                     "head 1's"),
])
def test_merge_heads_batched_names_each_mistake(code, words):
    from helpers import checks

    result = checks.merge_heads_batched(mistake("merge_heads_batched", code))
    assert result.mistake == code and words in result.message, result.message


@pytest.mark.parametrize(("code", "words"), [
    ("keys-from-x", "your keys and values come from x, so this is self-attention"),
    ("no-output-projection", "you merged the heads but did not apply the output projection W_o (8, 8)"),
    ("scaled-by-d-model", "divided by √d_model = √8. A head's queries and keys have d_head = 4 entries"),
    ("not-scaled", "the scores are not scaled; divide each head's scores by √d_head = √4"),
    ("mask-ignored", "a (3, 5) causal mask: the mask is not applied"),
    ("tokens-mixed", "your heads mix tokens. A reshape of (T, d_model) straight to (h, T, d_head)"),
])
def test_cross_attention_names_each_mistake(code, words):
    from helpers import checks

    result = checks.multi_head_cross_attention(mistake("multi_head_cross_attention", code))
    assert result.mistake == code and words in result.message, result.message


def cross_attention_variant(change):
    """The solution with one line changed (`change` maps a line of the solution to its replacement)."""
    from helpers import checks

    source = checks.EXERCISES["multi_head_cross_attention"].solution
    for old, new in change.items():
        assert old in source
        source = source.replace(old, new)
    return define(source, "multi_head_cross_attention")


@pytest.mark.parametrize(("change", "code"), [
    ({"split(context @ W_k), split(context @ W_v)": "split(x @ W_k), split(x @ W_v)",
      "if mask is not None:": "if False:"}, "keys-from-x"),
    ({".reshape(x.shape[0], -1) @ W_o": ".reshape(x.shape[0], -1)"}, "no-output-projection"),
    ({"/ np.sqrt(d_head)": "/ np.sqrt(W_q.shape[1])"}, "scaled-by-d-model"),
    ({"/ np.sqrt(d_head)": ""}, "not-scaled"),
    ({"if mask is not None:": "if False:"}, "mask-ignored"),
    ({"M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2)": "M.reshape(n_heads, M.shape[0], d_head)"},
     "tokens-mixed"),
])
def test_cross_attention_names_the_common_mistakes_written_into_the_solution(change, code):
    """The solution with one mistake put in: the check names that mistake, whatever else the answer does."""
    from helpers import checks

    result = checks.multi_head_cross_attention(cross_attention_variant(change))
    assert result.mistake == code, result.message


def test_cross_attention_calling_an_unsolved_split_is_an_attempt_not_untouched():
    from helpers import checks

    def split_heads_batched(X, n_heads):
        # your code here
        raise NotImplementedError

    def multi_head_cross_attention(x, context, W_q, W_k, W_v, W_o, n_heads, mask=None):
        Q = split_heads_batched(x @ W_q, n_heads)  # the learner's own exercise, not done yet
        return Q

    result = checks.multi_head_cross_attention(multi_head_cross_attention)
    assert result.status == checks.INCORRECT
    assert "calls `split_heads_batched`, which still raises NotImplementedError" in result.message
