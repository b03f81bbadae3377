"""What 06_multi_head_attention adds: the head explorer's numbers, and the exercises' answers against the helpers."""

import numpy as np
import pytest
from _answers import define, mistake_cases, reads_as_meant, solution

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


# each registered mistake, and words its message must contain: what the learner did, and what it should be
MESSAGES = {
    "split_heads_batched": {
        "plain-reshape": ["has the right shape, but a reshape straight to (..., h, T, d_head) mixes tokens into heads"],
        "no-swap": [
            "has shape (2, 5, 3, 4), (..., T, h, d_head): each token's columns are cut into heads, but the "
            "heads axis still comes after the tokens"
        ],
        "front-axes": [
            "has shape (2, 4, 3, 4, 2), expected (2, 3, 4, 4, 2): you exchanged the second and third axes "
            "counted from the front, which are the tokens and heads axes only when there is exactly one "
            "leading axis, and this X has 2 leading axes"
        ],
        "wrong-places": [
            "the right numbers in the wrong places: head i takes d_head neighbouring columns of each token"
        ],
        "last-two-axes": [
            "has shape (2, 5, 4, 3), (..., T, d_head, h): you exchanged the last two axes, the heads and "
            "d_head. The heads axis goes in front of the tokens"
        ],
        "heads-first": ["has shape (3, 2, 5, 4): the heads axis came first, in front of the leading axes"],
        "leading-axes-merged": [
            "has shape (6, 4, 4, 2): the heads are right, but the leading axes (2, 3) came back as (6,)"
        ],
    },
    "merge_heads_batched": {
        "plain-reshape": [
            "a reshape alone keeps the numbers in memory order: each row of your result holds "
            "consecutive tokens of one head"
        ],
        "not-joined": [
            "has shape (2, 5, 3, 4), (..., T, h, d_head): the tokens are back in front of the heads, but "
            "each token still has its 3 pieces on separate rows"
        ],
        "heads-added": ["has shape (2, 5, 4), (..., T, d_head): you added the heads up"],
        "front-axes": [
            "you exchanged the second and third axes counted from the front, which are the heads and tokens "
            "axes only when there is exactly one leading axis, and this H has 2 leading axes"
        ],
        "last-two-axes": ["you exchanged the last two axes, the tokens and d_head, before joining"],
        "first-axis": ["has shape (3, 5, 8): you joined the pieces along the first axis"],
        "wrong-places": [
            "the right numbers in the wrong places: each token's row holds head 0's d_head numbers, then head 1's"
        ],
    },
    "multi_head_cross_attention": {
        "keys-from-x": ["your keys and values come from x, so this is self-attention"],
        "no-output-projection": ["you merged the heads but did not apply the output projection W_o (8, 8)"],
        "scaled-by-d-model": ["divided by √d_model = √8. A head's queries and keys have d_head = 4 entries"],
        "not-scaled": ["the scores are not scaled; divide each head's scores by √d_head = √4"],
        "mask-ignored": ["a (3, 5) causal mask: the mask is not applied"],
        "tokens-mixed": ["your heads mix tokens. A reshape of (T, d_model) straight to (h, T, d_head)"],
        "mask-none": ["with mask=None every score was blocked, so your result is all NaN"],
        "queries-from-context": ["has shape (5, 8), one row per token of context: your queries come from context"],
        "wrong-axis": ["each head's softmax ran down the columns, over the queries"],
        "after-softmax": ["the blocked keys got weight 0 after the softmax"],
        "zero-fill": ["the blocked scores became 0"],
        "scaled-by-d-head": ["each head's scores are divided by d_head = 4; divide by its square root"],
        "one-head": ["your attention ran as one head over all 8 columns"],
        "true-means-blocked": ["each query attends to exactly the keys the mask blocks"],
    },
}


@pytest.mark.parametrize(("name", "code"), mistake_cases(MESSAGES))
def test_each_mistake_reads_as_meant(name, code):
    reads_as_meant(MESSAGES, name, code)


def cross_attention_variant(change):
    """The solution with one line changed (`change` maps a line of the solution to its replacement)."""
    from helpers import checks

    source = checks.EXERCISES["multi_head_cross_attention"].solution
    for old, new in change.items():
        assert old in source
        source = source.replace(old, new)
    return define(source, "multi_head_cross_attention")


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (
            {
                "split(context @ W_k), split(context @ W_v)": "split(x @ W_k), split(x @ W_v)",
                "if mask is not None:": "if False:",
            },
            "keys-from-x",
        ),
        ({".reshape(x.shape[0], -1) @ W_o": ".reshape(x.shape[0], -1)"}, "no-output-projection"),
        ({"/ np.sqrt(d_head)": "/ np.sqrt(W_q.shape[1])"}, "scaled-by-d-model"),
        ({"/ np.sqrt(d_head)": ""}, "not-scaled"),
        ({"if mask is not None:": "if False:"}, "mask-ignored"),
        (
            {"M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2)": "M.reshape(n_heads, M.shape[0], d_head)"},
            "tokens-mixed",
        ),
    ],
)
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


def test_split_and_merge_name_the_last_two_axes_swapped_with_no_leading_axis_too():
    """On a 2-D X this was once told it counted axes from the front, with "no leading axes"."""
    from helpers import checks

    def split(X, n_heads):
        if X.ndim > 2:  # right with leading axes, so the check reaches its case without any
            *batch, T, d_model = X.shape
            return np.swapaxes(X.reshape(*batch, T, n_heads, d_model // n_heads), -3, -2)
        return np.swapaxes(X.reshape(X.shape[0], n_heads, -1), -2, -1)

    result = checks.split_heads_batched(split)
    assert result.mistake == "last-two-axes" and "(6, 4)" in result.message, result.message
    assert "leading axes" not in result.message


def test_cross_attention_names_other_ways_of_masking_and_a_tuple():
    from helpers import checks

    def variant(masked_weights):
        def multi_head_cross_attention(x, context, W_q, W_k, W_v, W_o, n_heads, mask=None):
            d_head = W_q.shape[1] // n_heads
            Q, K, V = (
                M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2)
                for M in (x @ W_q, context @ W_k, context @ W_v)
            )
            scores = Q @ K.transpose(0, 2, 1) / np.sqrt(d_head)  # (h, T_q, T_k)
            weights = masked_weights(scores, mask)
            return (weights @ V).transpose(1, 0, 2).reshape(x.shape[0], -1) @ W_o

        return multi_head_cross_attention

    after = variant(lambda s, mask: helpers.softmax(s) * (True if mask is None else mask))
    zero = variant(lambda s, mask: helpers.softmax(s if mask is None else s * mask))
    inverted = variant(lambda s, mask: helpers.softmax(s if mask is None else np.where(mask, -np.inf, s)))
    for answer, code in ((after, "after-softmax"), (zero, "zero-fill"), (inverted, "true-means-blocked")):
        result = checks.multi_head_cross_attention(answer)
        assert result.mistake == code, result.message
    with_weights = variant(lambda s, mask: helpers.softmax(s))

    def returns_a_tuple(*args):
        return with_weights(*args), None, np.zeros(3)

    result = checks.multi_head_cross_attention(returns_a_tuple)
    assert result.mistake == "not-an-array" and "returned 3 things (a tuple)" in result.message


def test_cross_attention_accepts_a_right_answer_in_float32():
    """A float32 answer was once refused, "got -4.537, expected -4.537"."""
    from helpers import checks

    def multi_head_cross_attention(x, context, W_q, W_k, W_v, W_o, n_heads, mask=None):
        x, context, W_q, W_k, W_v, W_o = (a.astype(np.float32) for a in (x, context, W_q, W_k, W_v, W_o))
        d_head = W_q.shape[1] // n_heads
        Q, K, V = (
            M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2) for M in (x @ W_q, context @ W_k, context @ W_v)
        )
        scores = Q @ K.transpose(0, 2, 1) / np.sqrt(np.float32(d_head))  # stays float32
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = weights / weights.sum(axis=-1, keepdims=True)
        out = (weights @ V).transpose(1, 0, 2).reshape(x.shape[0], -1) @ W_o
        assert out.dtype == np.float32
        return out

    assert checks.multi_head_cross_attention(multi_head_cross_attention).status == checks.CORRECT
