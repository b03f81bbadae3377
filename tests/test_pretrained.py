"""helpers.pretrained.load_minilm against PyTorch + transformers reference outputs.

The reference (tests/data/minilm_reference.npz) was made by tests/data/make_minilm_reference.py
in a scratch venv with torch; torch is not a dependency of the project.
"""

import math
from pathlib import Path

import numpy as np
import pytest

from helpers.pretrained import erf, gelu, layer_norm, load_minilm
from helpers.pretrained.published import MODEL_CARD_EMBEDDINGS

REFERENCE = np.load(Path(__file__).parent / "data" / "minilm_reference.npz")
CASES = sorted(int(key.split("_")[1]) for key in REFERENCE.files if key.startswith("text_"))


@pytest.fixture(scope="module")
def model():
    return load_minilm()


def test_reference_file_has_cases():
    assert len(CASES) == 4


def test_published_embeddings_are_the_reference_files():
    texts = {str(REFERENCE[f"text_{i}"]): i for i in CASES}
    assert set(MODEL_CARD_EMBEDDINGS) == {"This is an example sentence", "Each sentence is converted"}
    for text, values in MODEL_CARD_EMBEDDINGS.items():
        assert np.array_equal(np.float32(values), REFERENCE[f"embedding_{texts[text]}"])  # 9 digits: exact


def test_model_card_sentences_match_the_published_embeddings(model):
    ours = model.encode(list(MODEL_CARD_EMBEDDINGS))
    np.testing.assert_allclose(ours, np.float32(list(MODEL_CARD_EMBEDDINGS.values())), atol=1e-6, rtol=0)


@pytest.mark.parametrize("i", CASES)
def test_tokens_match(model, i):
    assert model.tokenize(str(REFERENCE[f"text_{i}"])) == list(REFERENCE[f"tokens_{i}"])


@pytest.mark.parametrize("i", CASES)
def test_hidden_states_match_every_layer(model, i):
    ours = model.hidden_states(str(REFERENCE[f"text_{i}"]))
    theirs = REFERENCE[f"hidden_states_{i}"]
    assert ours.shape == theirs.shape == (7, len(REFERENCE[f"tokens_{i}"]), 384)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, atol=2e-5, rtol=0)  # measured max 2.4e-6


@pytest.mark.parametrize("i", CASES)
def test_attentions_match_every_head(model, i):
    ours = model.attentions(str(REFERENCE[f"text_{i}"]))
    theirs = REFERENCE[f"attentions_{i}"]
    T = len(REFERENCE[f"tokens_{i}"])
    assert ours.shape == theirs.shape == (6, 12, T, T)
    np.testing.assert_allclose(ours.sum(axis=-1), 1, atol=1e-5)
    np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)


@pytest.mark.parametrize("i", CASES)
def test_sentence_embedding_matches(model, i):
    ours = model.encode([str(REFERENCE[f"text_{i}"])])
    assert ours.shape == (1, 384)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=-1), 1, atol=1e-6)
    np.testing.assert_allclose(ours[0], REFERENCE[f"embedding_{i}"], atol=1e-6, rtol=0)  # measured 1.2e-7


def test_encode_takes_one_string_or_a_list(model):
    one = model.encode("a good novel")
    both = model.encode(["a good novel", "The cat sat on the mat."])
    assert one.shape == (1, 384) and both.shape == (2, 384)
    np.testing.assert_allclose(one[0], both[0], atol=1e-6)


def test_float32_erf_against_math_erf_over_a_wide_range():
    x = np.concatenate([np.linspace(-12, 12, 200_001), [0.0, 1e-30, -1e-30, 3.9, 40.0, -40.0]]).astype(np.float32)
    got = erf(x)
    assert got.dtype == np.float32
    exact = np.array([math.erf(v) for v in x.astype(np.float64)])
    assert np.abs(got - exact).max() < 4e-7  # measured 3.4e-7: 3 float32 steps (1.2e-7) near 1
    assert np.all(np.abs(got) <= 1) and erf(np.float32([0.0]))[0] == 0
    np.testing.assert_array_equal(erf(-x), -got)  # odd
    assert np.isnan(erf(np.float32([np.nan]))[0])
    np.testing.assert_allclose(erf(np.float32([np.inf, -np.inf])), [1, -1])


def test_erf_keeps_float64_exact_and_float16_as_float16():
    x = np.linspace(-5, 5, 1001)
    np.testing.assert_array_equal(erf(x), [math.erf(v) for v in x])
    assert erf(x.astype(np.float16)).dtype == np.float16


def test_float32_gelu_against_the_exact_one():
    x = np.linspace(-10, 10, 200_001).astype(np.float32)
    exact = gelu(x.astype(np.float64))
    got = gelu(x)
    assert got.dtype == np.float32
    error = np.abs(got - exact)
    assert error.max() < 1.1e-6  # measured 9.9e-7, at x = 5.23: two float32 steps of gelu(x) = 5.23
    assert error[x < 0].max() < 8e-7  # measured 7.5e-7: the 1 + erf(x) of a negative x loses digits


def test_gelu_is_the_exact_erf_form():
    x = np.array([-3.0, -1.0, 0.0, 0.5, 2.0])
    # Phi(x) from its closed values: Phi(0) = 1/2, and x*Phi(x) - (-x)*Phi(-x) = x
    np.testing.assert_allclose(gelu(x) - gelu(-x), x, atol=1e-12)
    assert gelu(np.array([0.0]))[0] == 0.0
    # the tanh approximation differs from the exact form by about 1e-4 at x = 2 (tolerance well below)
    tanh_form = 0.5 * 2 * (1 + np.tanh(np.sqrt(2 / np.pi) * (2 + 0.044715 * 8)))
    assert abs(gelu(np.array([2.0]))[0] - 1.9544997361036416) < 1e-12
    assert abs(tanh_form - 1.9544997361036416) > 1e-6


def test_layer_norm_rows_have_mean_zero_and_unit_variance():
    x = np.random.default_rng(0).normal(3, 2, size=(4, 16))
    y = layer_norm(x, np.ones(16), np.zeros(16))
    np.testing.assert_allclose(y.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=-1), 1, atol=1e-9)


# --- the batched model: padding, head masks, pooling ------------------------------------------------

TEXTS = ["Attention is a novel idea.", "The cat sat on the mat.", "He swung the baseball bat with precision."]


def test_a_padded_batch_gives_each_text_its_own_numbers(model):
    out = model.run(TEXTS)
    assert out.real.sum(axis=1).tolist() == [len(model.tokenize(t)) for t in TEXTS]
    for i, text in enumerate(TEXTS):
        T = out.real[i].sum()
        np.testing.assert_allclose(out.states[i, :, :T], model.hidden_states(text), atol=2e-5)
        np.testing.assert_allclose(out.weights[i, :, :, :T, :T], model.attentions(text), atol=1e-5)
        assert np.all(out.states[i, :, T:] == 0)  # padding positions hold zeros
        assert np.all(out.weights[i, :, :, T:] == 0) and np.all(out.weights[i, :, :, :, T:] == 0)


def test_encode_does_not_depend_on_the_batch(model):
    one_by_one = np.concatenate([model.encode(t) for t in TEXTS])
    for batch_size in (1, 2, 32):
        np.testing.assert_allclose(model.encode(TEXTS, batch_size=batch_size), one_by_one, atol=1e-6)


def test_a_switched_off_head_has_zero_weights_and_changes_only_later_layers(model):
    keep = np.ones((6, 12), dtype=bool)
    keep[2, 5] = False
    full, ablated = model.run(TEXTS), model.run(TEXTS, head_mask=keep)
    assert np.all(ablated.weights[:, 2, 5] == 0)
    np.testing.assert_array_equal(ablated.states[:, :3], full.states[:, :3])  # embeddings, layers 0 and 1
    np.testing.assert_array_equal(ablated.weights[:, :2], full.weights[:, :2])
    assert np.abs(ablated.states[:, 3] - full.states[:, 3]).max() > 1e-3  # layer 2's output moved


def test_a_switched_off_head_is_its_output_removed(model):
    # switching head h off = taking its columns of the concatenated heads out before W_o
    text, layer, head = "The cat sat on the mat.", 1, 8
    h = model.hidden_states(text)[layer]  # (T, 384): what enters the layer
    attention = model.layers[layer]["attention"]
    keep = np.ones(12, dtype=bool)
    keep[head] = False
    real = np.ones((1, len(h)), dtype=bool)
    ours, _ = model.layer(layer, h[None], real, keep)
    Q, K, V = (
        h @ W + b
        for W, b in ((attention.W_q, attention.b_q), (attention.W_k, attention.b_k), (attention.W_v, attention.b_v))
    )
    heads = []
    for i in range(12):
        cols = slice(32 * i, 32 * i + 32)
        scores = Q[:, cols] @ K[:, cols].T / np.sqrt(32)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        heads.append(0 * V[:, cols] if i == head else weights / weights.sum(-1, keepdims=True) @ V[:, cols])
    attended = np.concatenate(heads, axis=-1) @ attention.W_o + attention.b_o  # (T, 384)
    layer_params = model.layers[layer]
    x = layer_norm(h + attended, *layer_params["attention_norm"])
    x = layer_norm(
        x + gelu(x @ layer_params["W_1"] + layer_params["b_1"]) @ layer_params["W_2"] + layer_params["b_2"],
        *layer_params["output_norm"],
    )
    np.testing.assert_allclose(ours[0], x, atol=2e-5)


def test_a_replaced_head_adds_its_vector_at_every_token_instead(model):
    # mean-ablation: the switched-off head's output is a given vector (through W_o) at every token
    text, layer, head = "The cat sat on the mat.", 2, 4
    h = model.hidden_states(text)[layer][None]  # (1, T, 384): what enters the layer
    real = np.ones(h.shape[:2], dtype=bool)
    keep = np.ones(12, dtype=bool)
    keep[head] = False
    vector = np.linspace(-1, 1, 384, dtype=np.float32)
    replace = np.zeros((12, 384), dtype=np.float32)
    replace[head] = vector
    replace[head + 1] = 100.0  # a head that is kept: its vector is not used
    ours, _ = model.layer(layer, h, real, keep, replace)
    attended, _ = model.layers[layer]["attention"](
        h, mask=np.stack([np.ones((12, h.shape[1], h.shape[1]), bool) * keep[:, None, None]])
    )
    params = model.layers[layer]
    x = layer_norm(h + attended + vector, *params["attention_norm"])
    x = layer_norm(x + gelu(x @ params["W_1"] + params["b_1"]) @ params["W_2"] + params["b_2"], *params["output_norm"])
    np.testing.assert_allclose(ours, x, atol=2e-5)
    np.testing.assert_array_equal(
        model.layer(layer, h, real, np.ones(12, bool), replace)[0], model.layer(layer, h, real)[0]
    )  # no head off: nothing replaced


def test_run_and_encode_take_the_replacement_per_layer_and_head(model):
    keep = np.ones((6, 12), dtype=bool)
    keep[3, 7] = False
    replace = np.zeros((6, 12, 384), dtype=np.float32)
    np.testing.assert_array_equal(
        model.encode(TEXTS, head_mask=keep, replace=replace), model.encode(TEXTS, head_mask=keep)
    )  # a zero vector: zero-ablation
    replace[3, 7] = np.linspace(-1, 1, 384)  # not a constant: LayerNorm would take a constant away
    moved = model.run(TEXTS, head_mask=keep, replace=replace)
    np.testing.assert_array_equal(moved.states[:, :4], model.run(TEXTS, head_mask=keep).states[:, :4])
    assert not np.allclose(moved.states[:, 4], model.run(TEXTS, head_mask=keep).states[:, 4], atol=1e-3)
    np.testing.assert_allclose(
        model.encode(TEXTS, head_mask=keep, replace=replace), model.pool(moved.states[:, -1], moved.real), atol=1e-6
    )
    with pytest.raises(ValueError, match=r"replace must be floats of shape \(6, 12, 384\)"):
        model.encode(TEXTS, head_mask=keep, replace=np.zeros((12, 384)))


@pytest.mark.parametrize("head_mask", [np.ones((6, 11), dtype=bool), np.ones((6, 12)), [[True] * 12] * 5])
def test_bad_head_mask_is_refused(model, head_mask):
    with pytest.raises(ValueError, match=r"head_mask must be a bool array of shape \(6, 12\)"):
        model.run(TEXTS, head_mask=head_mask)


def test_the_head_mask_and_replace_checks_are_the_models_public_ones(model):
    np.testing.assert_array_equal(model.check_head_mask(None), np.ones((6, 12), dtype=bool))  # None keeps every head
    groups = np.ones((2, 6, 12), dtype=bool)
    assert model.check_head_mask(groups, "head_masks", groups=True) is not None
    with pytest.raises(ValueError, match=r"head_masks must be a bool array of shape \(g, 6, 12\)"):
        model.check_head_mask(groups[0], "head_masks", groups=True)  # one mask without its group axis
    with pytest.raises(ValueError, match=r"head_mask must be a bool array of shape \(6, 12\).*bool \(2, 6, 12\)"):
        model.check_head_mask(groups)
    assert model.check_replace(None) == [None] * 6
    layers = model.check_replace(np.zeros((6, 12, 384)))
    assert len(layers) == 6 and all(r.shape == (12, 384) and r.dtype == model.dtype for r in layers)


@pytest.mark.parametrize("texts", [[], [1, 2], None])
def test_bad_texts_are_refused(model, texts):
    with pytest.raises(TypeError, match="texts must be"):
        model.run(texts)


def test_a_text_longer_than_512_tokens_is_refused(model):
    with pytest.raises(ValueError, match="at most 512"):
        model.run(["word " * 600])


def test_gelu_in_blocks_equals_gelu_of_each_piece(rng):
    x = rng.normal(0, 3, size=(70, 1000)).astype(np.float32)  # 70,000 elements: three blocks of 32k
    whole = gelu(x)
    np.testing.assert_array_equal(whole, np.stack([gelu(row) for row in x]))
    np.testing.assert_array_equal(gelu(x.T), whole.T)  # a non-contiguous input keeps its shape
    np.testing.assert_array_equal(erf(x), np.stack([erf(row) for row in x]))
