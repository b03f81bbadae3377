"""What 05_masking and 06_multi_head_attention add to helpers: the mask and head explorers' numbers,
the per-head heatmap grid, and the exercises' reference answers checked against the helpers."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import helpers  # noqa: E402
from helpers import checks, plotting, widgets  # noqa: E402

TOKENS = ["The", "cat", "sat", "on", "the", "mat"]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture
def shown(monkeypatch):
    """Record the HTML the explorers display instead of sending it to a front end."""
    markup = []
    monkeypatch.setattr(widgets, "_show_html", markup.append)
    return markup


def softmax_over_allowed(row, allowed):
    """One row by hand: softmax over the allowed entries, zeros elsewhere (all zeros if none allowed)."""
    out = np.zeros_like(row)
    if allowed.any():
        e = np.exp(row[allowed] - row[allowed].max())
        out[allowed] = e / e.sum()
    return out


# --- masked_weights (the mask explorer's numbers) ---------------------------------------


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("padding", [True, False])
def test_masked_weights_equals_a_loop_over_queries_and_keys(causal, padding, rng):
    scores = rng.normal(size=(3, 5, 5)) * 3
    lengths = np.array([5, 2, 0])
    for b in range(3):
        mask, weights = widgets.masked_weights(scores, lengths, b, causal, padding)
        for i in range(5):
            allowed = np.array([(j <= i or not causal) and (j < lengths[b] or not padding) for j in range(5)])
            assert np.array_equal(mask[i], allowed)
            assert np.allclose(weights[i], softmax_over_allowed(scores[b, i], allowed))


def test_masked_weights_matches_batched_attention_with_the_combined_mask(rng):
    q, k, v = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3))
    lengths = np.array([4, 2])
    combined = helpers.padding_mask(lengths, 4)[:, None, :] & helpers.causal_mask(4)[None]  # (2, 4, 4)
    _, expected = helpers.scaled_dot_product_attention(q, k, v, mask=combined)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(3)
    for b in range(2):
        assert np.allclose(widgets.masked_weights(scores, lengths, b)[1], expected[b])


def test_masked_weights_gives_zeros_for_a_sentence_of_length_zero():
    _, weights = widgets.masked_weights(np.ones((1, 3, 3)), [0], 0, causal=True, padding=True)
    assert np.array_equal(weights, np.zeros((3, 3)))


def test_masked_weights_rejects_scores_that_are_not_square_per_sentence():
    with pytest.raises(ValueError, match=r"\(B, T, T\)"):
        widgets.masked_weights(np.ones((2, 3, 4)), [3, 3])


# --- head_weights (the head explorer's numbers) ------------------------------------------


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


# --- the explorers, driven without a mouse -------------------------------------------------


def test_mask_explorer_draws_the_chosen_query_row(shown, rng):
    scores = rng.normal(size=(2, 6, 6))
    tokens = [TOKENS, ["The", "dog", "sat", "[PAD]", "[PAD]", "[PAD]"]]
    box = widgets.mask_explorer(scores, tokens, [6, 3], query=2)
    assert "▶ sat" in shown[-1]
    assert shown[-1].count("−∞</td>") == 15  # the causal mask blocks the 15 cells above the diagonal
    box.controls["sentence"].value = 1
    box.controls["query"].value = 4
    _, expected = widgets.masked_weights(scores, [6, 3], 1, True, True)
    assert "▶ [PAD]" in shown[-1]
    assert f"{expected[4, 0]:.3f}" in shown[-1]  # the bars show the chosen row's numbers
    box.controls["causal"].value = False
    box.controls["padding"].value = False
    assert shown[-1].count("−∞</td>") == 0  # nothing is masked any more


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


# --- head_grid ------------------------------------------------------------------------------


def test_head_grid_draws_each_head_in_its_own_panel(rng):
    weights = rng.random(size=(5, 3, 4))
    axes = plotting.head_grid(weights, ["a", "b", "c", "d"], ["x", "y", "z"], ncols=3)
    assert axes.shape == (2, 3)
    for i in range(5):
        image = axes.flat[i].get_images()[0]
        assert np.allclose(image.get_array(), weights[i])
        assert image.get_clim() == (0, 1)  # one colour scale for every head
        assert axes.flat[i].get_title() == f"head {i}"
    assert not axes.flat[5].axison  # the unused slot is blank


@pytest.mark.parametrize(
    ("weights", "kwargs", "match"),
    [
        (np.zeros((3, 3)), {}, "3-D"),
        (np.zeros((2, 3, 4)), {}, "key labels"),
        (np.zeros((2, 3, 3)), {"titles": ["only one"]}, "titles"),
    ],
)
def test_head_grid_rejects_bad_shapes(weights, kwargs, match):
    with pytest.raises(ValueError, match=match):
        plotting.head_grid(weights, ["a", "b", "c"], **kwargs)


# --- the exercises' reference answers agree with the helpers -------------------------------


def reference(name):
    return checks.reference(name)


@pytest.mark.parametrize(("T_q", "T_k"), [(1, 1), (3, 3), (1, 7), (4, 9), (6, 6)])
def test_build_causal_mask_solution_is_the_helpers_causal_mask(T_q, T_k):
    assert np.array_equal(reference("build_causal_mask")(T_q, T_k), helpers.causal_mask(T_q, T_k))


def test_masked_softmax_solution_is_the_helpers_attention_weights(rng):
    q, k, v = rng.normal(size=(3, 4, 2)), rng.normal(size=(3, 5, 2)), rng.normal(size=(3, 5, 2))
    mask = helpers.padding_mask([5, 1, 0], 5)[:, None, :] & helpers.causal_mask(4, 5)[None]  # (3, 4, 5)
    _, expected = helpers.scaled_dot_product_attention(q, k, v, mask=mask)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(2)
    assert np.allclose(reference("masked_softmax")(scores, mask), expected)
    assert np.array_equal(expected[2], np.zeros((4, 5)))  # sentence 2 is all padding


@pytest.mark.parametrize(("shape", "n_heads"), [((5, 6), 3), ((2, 4, 8), 2), ((2, 3, 4, 6), 6)])
def test_split_and_merge_solutions_are_the_helpers(shape, n_heads, rng):
    X = rng.normal(size=shape)
    split = reference("split_heads_batched")(X, n_heads)
    assert np.array_equal(split, helpers.split_heads(X, n_heads))
    assert np.array_equal(reference("merge_heads_batched")(split), helpers.merge_heads(split))
    assert np.array_equal(reference("merge_heads_batched")(split), X)


@pytest.mark.parametrize("masked", [False, True])
def test_cross_attention_solution_is_the_helpers_class(masked, rng):
    layer = helpers.MultiHeadAttention(8, 4, bias=False, rng=rng)
    x, context = rng.normal(size=(3, 8)), rng.normal(size=(6, 8))
    mask = helpers.causal_mask(3, 6) if masked else None
    expected, _ = layer(x, context, mask=mask)
    got = reference("multi_head_cross_attention")(x, context, layer.W_q, layer.W_k, layer.W_v, layer.W_o, 4, mask)
    assert np.allclose(got, expected)


def test_explorer_numbers_keep_the_dtype(rng):
    scores = rng.normal(size=(1, 3, 3)).astype(np.float32)
    assert widgets.masked_weights(scores, [3])[1].dtype == np.float32
    assert widgets.head_weights(scores, -1).dtype == np.float32
