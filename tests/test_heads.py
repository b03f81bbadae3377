"""helpers.heads (what heads do, measured) and helpers.head_views (their pictures)."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_hex, to_rgb

from helpers import embeddings, grammar, head_views, heads, html_plots

T = 6  # [CLS] w1 w2 w3 w4 [SEP]


def one_hot_rows(columns):
    """A (T, T) attention matrix whose row i puts all its weight on key columns[i]."""
    weights = np.zeros((len(columns), len(columns)))
    weights[np.arange(len(columns)), columns] = 1
    return weights


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        ([0] * T, {"[CLS]": 1}),
        ([T - 1] * T, {"[SEP]": 1}),
        ([0, 0, 1, 2, 3, 4], {"previous": 1, "[CLS]": 1 / 4}),  # the first word's previous token is [CLS]
        ([1, 2, 3, 4, 5, 5], {"next": 1, "[SEP]": 1 / 4}),  # the last word's next token is [SEP]
        (list(range(T)), {"self": 1}),
    ],
)
def test_target_weights_of_clean_heads(columns, expected):
    got = dict(zip(heads.TARGETS, heads.target_weights(one_hot_rows(columns)), strict=True))
    assert got == pytest.approx({name: expected.get(name, 0) for name in heads.TARGETS})


def test_target_weights_of_a_uniform_head_and_of_a_stack(rng):
    uniform = np.full((T, T), 1 / T)
    np.testing.assert_allclose(heads.target_weights(uniform), 1 / T)
    stack = rng.dirichlet(np.ones(T), size=(2, 3, T))  # (2, 3, T, T)
    got = heads.target_weights(stack)
    assert got.shape == (2, 3, 5)
    np.testing.assert_allclose(got[1, 2], heads.target_weights(stack[1, 2]))
    words = range(1, T - 1)
    assert np.isclose(got[0, 0, 2], np.mean([stack[0, 0, i, i - 1] for i in words if i > 1]))


@pytest.mark.parametrize(("shape", "message"), [((3, 3), "T >= 4"), ((4, 5), "T >= 4"), ((4,), "at least 2")])
def test_target_weights_refuses_too_short_or_non_square(shape, message):
    with pytest.raises(ValueError, match=message):
        heads.target_weights(np.ones(shape))


def test_head_profile_leaves_out_the_padding(rng):
    long, short = rng.dirichlet(np.ones(T), size=(2, 3, T)), rng.dirichlet(np.ones(4), size=(2, 3, 4))
    weights = np.zeros((2, 2, 3, T, T))
    weights[0] = long
    weights[1, ..., :4, :4] = short
    real = np.arange(T) < np.array([[T], [4]])
    profile = heads.head_profile(weights, real)
    expected = (heads.target_weights(long) + heads.target_weights(short)) / 2
    for i, name in enumerate(heads.TARGETS):
        np.testing.assert_allclose(profile[name], expected[..., i])
    assert profile["spread"].shape == (2, 3) and np.all((0 < profile["spread"]) & (profile["spread"] < 1))
    with pytest.raises(ValueError, match="real must have shape"):
        heads.head_profile(weights, real[:, :4])


def test_spread_is_one_for_uniform_rows_and_zero_for_one_hot_rows():
    weights = np.stack([np.full((T, T), 1 / T), one_hot_rows(range(T))])[None, None]  # (1, 1, 2, T, T)
    spread = heads.head_profile(weights, np.ones((1, T), dtype=bool))["spread"]
    np.testing.assert_allclose(spread, [[1, 0]], atol=1e-12)


def test_head_kinds_follow_the_thresholds():
    profile = {name: np.zeros((1, 4)) for name in heads.TARGETS}
    profile["previous"][0, 0] = 0.9
    profile["[CLS]"][0, 1] = 0.5
    profile["self"][0, 2], profile["next"][0, 3] = 0.49, 0.3
    profile["spread"] = np.array([[0.1, 0.1, 0.8, 0.5]])
    assert heads.head_kinds(profile).tolist() == [["previous", "[CLS]", "broad", "mixed"]]
    assert heads.head_kinds(profile, threshold=0.3).tolist() == [["previous", "[CLS]", "self", "next"]]
    assert set(heads.head_kinds(profile).ravel()) <= set(heads.KINDS)


def test_mean_cosine_and_nearest():
    A = np.array([[1.0, 0], [2.0, 0], [0, 3.0]])
    assert heads.mean_cosine(A) == pytest.approx(2 / 6)  # pairs: 1, 0, 0, twice each
    assert heads.mean_cosine(A[:2], A[2:]) == 0
    assert heads.nearest([1, 0.1], A, ["a", "b", "c"], k=2) == [
        ("a", pytest.approx(0.995, abs=1e-3)),
        ("b", pytest.approx(0.995, abs=1e-3)),
    ]
    assert heads.nearest([0, 1], A, ["a", "b", "c"], k=1)[0][0] == "c"
    with pytest.raises(ValueError, match="2 labels for 3 vectors"):
        heads.nearest([1, 0], A, ["a", "b"])
    assert heads.nearest is embeddings.nearest  # one implementation, also behind TokenEmbeddings.nearest


# --- on the real model -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model():
    from helpers.pretrained import load_minilm

    return load_minilm()


def test_ablated_embeddings_are_the_model_with_that_head_masked(model):
    sentences = ["The cat sat on the mat.", "A bat flew out of the cave at dusk."]
    ablated = heads.ablated_embeddings(model, sentences)
    assert ablated.shape == (6, 12, 2, 384)
    for layer, head in ((0, 2), (3, 7), (5, 11)):
        keep = np.ones((6, 12), dtype=bool)
        keep[layer, head] = False
        np.testing.assert_allclose(ablated[layer, head], model.encode(sentences, head_mask=keep), atol=1e-6)
    assert not np.allclose(ablated[5, 11], model.encode(sentences), atol=1e-3)


def test_ablated_embeddings_with_a_replacement_are_mean_ablation(model):
    sentences = ["The cat sat on the mat.", "A bat flew out of the cave at dusk."]
    typical = heads.mean_head_outputs(model, model.run(sentences))  # (6, 12, 384)
    ablated = heads.ablated_embeddings(model, sentences, replace=typical)
    for layer, head in ((1, 4), (5, 11)):
        keep = np.ones((6, 12), dtype=bool)
        keep[layer, head] = False
        np.testing.assert_allclose(
            ablated[layer, head], model.encode(sentences, head_mask=keep, replace=typical), atol=1e-6
        )


def test_masked_embeddings_run_each_group_of_heads_off_as_encode_does(model):
    sentences = ["The cat sat on the mat.", "A bat flew out of the cave at dusk.", "Hello."]
    typical = heads.mean_head_outputs(model, model.run(sentences))  # (6, 12, 384)
    masks = np.ones((3, 6, 12), dtype=bool)
    masks[0, 1:5, :6] = False  # a block of heads in layers 1 to 4
    masks[1, 5] = False  # the whole last layer
    # masks[2] keeps every head: the model itself
    for replace in (None, typical):
        got = heads.masked_embeddings(model, sentences, masks, replace)
        assert got.shape == (3, 3, 384)
        for k in range(3):
            np.testing.assert_allclose(got[k], model.encode(sentences, head_mask=masks[k], replace=replace), atol=1e-6)
    np.testing.assert_allclose(got[2], model.encode(sentences), atol=1e-6)
    with pytest.raises(ValueError, match="True = keep"):
        heads.masked_embeddings(model, sentences, masks[0])  # one mask without its group axis
    with pytest.raises(ValueError, match="True = keep"):
        heads.masked_embeddings(model, sentences, masks.astype(int))
    with pytest.raises(ValueError, match=r"head_masks must be a bool array of shape \(g, 6, 12\).*bool \(3, 6, 11\)"):
        heads.masked_embeddings(model, sentences, masks[:, :, :11])


def _head_outputs(model, text, layer, head):
    """One head's output through its rows of W_o, written out. Shapes: -> (T, 384)."""
    attention = model.layers[layer]["attention"]
    h = model.hidden_states(text)[layer].astype(np.float64)  # (T, 384)
    cols = slice(32 * head, 32 * head + 32)
    V = h @ attention.W_v[:, cols] + attention.b_v[cols]  # (T, 32)
    return model.attentions(text)[layer, head] @ V @ attention.W_o[cols]  # (T, T) @ (T, 32) @ (32, 384)


def test_mean_head_outputs_average_each_heads_output_over_the_real_tokens(model):
    texts = ["The cat sat on the mat.", "Hi."]  # of different lengths: the second is padded
    means = heads.mean_head_outputs(model, model.run(texts))
    assert means.shape == (6, 12, 384)
    for layer, head in ((0, 2), (4, 5)):
        outputs = np.concatenate([_head_outputs(model, t, layer, head) for t in texts])  # every real token
        np.testing.assert_allclose(means[layer, head], outputs.mean(axis=0), atol=1e-5)


def test_norm_share_is_each_keys_share_of_the_weighted_lengths(model):
    text, layer, head = "The cat sat on the mat.", 3, 1
    attention = model.layers[layer]["attention"]
    h = model.hidden_states(text)[layer].astype(np.float64)
    cols = slice(32 * head, 32 * head + 32)
    f = (h @ attention.W_v[:, cols] + attention.b_v[cols]) @ attention.W_o[cols]  # (T, 384)
    weights = model.attentions(text)[layer, head]  # (T, T)
    T = len(weights)
    shares = [
        weights[i, 0] * np.linalg.norm(f[0]) / sum(weights[i, j] * np.linalg.norm(f[j]) for j in range(T))
        for i in range(1, T - 1)
    ]  # the words
    got = heads.norm_share(model, model.run([text, "A much longer sentence pads this one out."]))
    assert got.shape == (6, 12) and np.all((0 <= got) & (got <= 1))
    assert got[layer, head] == pytest.approx(
        (
            np.mean(shares)
            + heads.norm_share(model, model.run(["A much longer sentence pads this one out."]))[layer, head]
        )
        / 2,
        abs=1e-5,
    )
    assert heads.norm_share(model, model.run([text]))[layer, head] == pytest.approx(np.mean(shares), abs=1e-5)


def test_verb_subject_weights_read_the_verbs_row(model):
    sentences = [grammar.parse("the dog behind the young cats barks"), grammar.parse("the cats near the cow meow")]
    found = heads.verb_subject_weights(model, sentences)
    assert set(found) == {"subject", "attractor", "others"} and found["subject"].shape == (2, 6, 12)
    weights = model.attentions("the dog behind the young cats barks.")  # [CLS] the dog behind the young cats bark ##s
    tokens = model.tokenize("the dog behind the young cats barks.")
    verb, dog, cats = [7, 8], tokens.index("dog"), tokens.index("cats")
    assert [tokens[i] for i in verb] == ["bark", "##s"]
    np.testing.assert_allclose(found["subject"][0], weights[:, :, verb, dog].mean(axis=-1), atol=1e-6)
    np.testing.assert_allclose(found["attractor"][0], weights[:, :, verb, cats].mean(axis=-1), atol=1e-6)
    others = [1, 3, 4, 5, 6]  # the behind the young cats
    np.testing.assert_allclose(found["others"][0], weights[:, :, others, dog].mean(axis=-1), atol=1e-6)
    with pytest.raises(ValueError, match="attractor"):
        heads.verb_subject_weights(model, [grammar.parse("the dog barks")])


def test_token_states_finds_the_word_or_its_plural(model):
    out = model.run(["Bats are essential.", "He swung the bat."])
    states = heads.token_states(out, "bat")
    assert states.shape == (2, 7, 384)
    np.testing.assert_array_equal(states[0], out.states[0, :, 1])  # [CLS] bats ...
    np.testing.assert_array_equal(states[1], out.states[1, :, 4])  # [CLS] he swung the bat
    with pytest.raises(ValueError, match="text 1 has no token 'cave'"):
        heads.token_states(model.run(["a cave", "a bat"]), "cave")


# --- pictures ----------------------------------------------------------------------------------


def test_hide_tokens_drops_rows_and_columns(rng):
    weights = rng.random((2, 4, 4))
    kept, labels = head_views.hide_tokens(weights, ["[CLS]", "a", "b", "[SEP]"])
    assert labels == ["a", "b"]
    np.testing.assert_array_equal(kept, weights[:, 1:3, 1:3])


def test_layer_lines_draws_one_collection_per_head_with_weights_above_the_cut(rng):
    weights = np.stack([one_hot_rows(range(T)), np.full((T, T), 1 / T)])  # (2, T, T)
    ax = head_views.layer_lines(weights, [f"t{i}" for i in range(T)])
    collections = ax.collections
    assert len(collections) == 2
    assert len(collections[0].get_segments()) == T  # one line per query: itself
    assert len(collections[1].get_segments()) == T * T  # 1/6 of the largest weight (1) is above 0.05
    assert [t.get_text() for t in ax.texts[:2]] == ["t0", "t1"]
    ax = head_views.layer_lines(weights, [f"t{i}" for i in range(T)], heads=[1], min_weight=0.5)
    assert len(ax.collections) == 1 and len(ax.collections[0].get_segments()) == T * T  # scaled to its own max
    with pytest.raises(ValueError, match="len\\(labels\\)"):
        head_views.layer_lines(weights, ["a", "b"])


def test_attention_grid_tiles_every_head(rng):
    weights = rng.dirichlet(np.ones(4), size=(2, 3, 4))  # (2, 3, 4, 4)
    ax = head_views.attention_grid(weights)
    mosaic = ax.images[0].get_array()
    assert mosaic.shape == (2 * 5 - 1, 3 * 5 - 1)
    np.testing.assert_allclose(mosaic[5:9, 10:14], weights[1, 2])
    assert np.ma.getmaskarray(mosaic)[4].all()  # the blank line between layers
    assert [t.get_text() for t in ax.get_yticklabels()] == ["layer 0", "layer 1"]
    plt.close("all")
    with pytest.raises(ValueError, match=r"\(L, H, T, T\)"):
        head_views.attention_grid(weights[0])


def test_attention_grid_fits_a_notebooks_width_with_readable_labels(rng):
    weights = rng.dirichlet(np.ones(20), size=(6, 12, 20))  # 20 tokens: about 40 inches at the default size
    ax = head_views.attention_grid(weights)
    assert ax.figure.get_size_inches()[0] <= 10.01
    assert all(t.get_fontsize() >= 10 for t in ax.get_xticklabels() + ax.get_yticklabels())


def test_every_head_and_every_kind_has_a_colour_of_its_own():
    assert len({to_hex(c) for c in html_plots.HEAD_COLORS}) == 12
    assert "#7f7f7f" not in {to_hex(c) for c in html_plots.HEAD_COLORS}  # no two greys (tab10's and another)
    head_rgb = np.array([to_rgb(c) for c in html_plots.HEAD_COLORS])
    assert (head_rgb @ [0.2126, 0.7152, 0.0722] < 0.2).sum() == 1  # one near-black line (black), not navy beside it
    purples = (head_rgb[:, 0] > head_rgb[:, 1] + 0.15) & (head_rgb[:, 2] > head_rgb[:, 1] + 0.15)  # red + blue
    assert purples.sum() <= 2  # tab10's purple and pink only: a third magenta beside them was hard to tell apart
    rgb = np.array([to_rgb(c) for c in head_views.KIND_COLORS.values()])
    gaps = np.linalg.norm(rgb[:, None] - rgb[None], axis=-1)[np.triu_indices(len(rgb), 1)]
    assert gaps.min() > 0.2  # [CLS] and [SEP] were two light blues 0.18 apart
    cls, sep = (np.array(to_rgb(head_views.KIND_COLORS[k])) for k in ("[CLS]", "[SEP]"))
    assert np.linalg.norm(cls - sep) > 0.4


def test_kinds_grid_colours_each_head_by_its_kind_and_writes_its_letter():
    kinds = np.array([["previous", "[CLS]"], ["mixed", "broad"]], dtype=object)
    ax = head_views.kinds_grid(kinds, np.array([[0.9, 0.8], [0.3, 0.2]]))
    codes = ax.images[0].get_array()
    names = list(head_views.KIND_COLORS)
    assert codes.tolist() == [
        [names.index("previous"), names.index("[CLS]")],
        [names.index("mixed"), names.index("broad")],
    ]
    assert [t.get_text() for t in ax.texts] == ["P\n0.90", "C\n0.80", "M\n0.30", "B\n0.20"]  # the kind, not only a hue
    assert sorted(head_views.KIND_LETTERS) == sorted(names) and len(set(head_views.KIND_LETTERS.values())) == len(names)
    assert [t.get_text() for t in ax.get_legend().get_texts()][:2] == ["C  [CLS]", "S  [SEP]"]
    with pytest.raises(ValueError, match="both be"):
        head_views.kinds_grid(kinds, np.zeros((2, 3)))


def test_layer_lines_dash_each_head_by_its_number_and_the_legend_shows_it():
    weights = np.full((4, 3, 3), 1 / 3)
    ax = head_views.layer_lines(weights, ["a", "b", "c"])
    styles = [collection.get_linestyle()[0] for collection in ax.collections]
    assert styles[0] == styles[3] and len({str(s) for s in styles[:3]}) == 3  # solid, dashed, dotted, then again
    legend = [str(line._dash_pattern) for line in ax.get_legend().get_lines()]  # matplotlib has no public getter
    assert legend[0] == legend[3] != legend[1] != legend[2] != legend[0]
    plt.close("all")
