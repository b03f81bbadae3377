"""helpers.pretrained.load_minilm against PyTorch + transformers reference outputs.

The reference (tests/data/minilm_reference.npz) was made by tests/data/make_minilm_reference.py
in a scratch venv with torch; torch is not a dependency of the project.
"""

from pathlib import Path

import numpy as np
import pytest

from helpers.pretrained import gelu, layer_norm, load_minilm

REFERENCE = np.load(Path(__file__).parent / "data" / "minilm_reference.npz")
CASES = sorted(int(key.split("_")[1]) for key in REFERENCE.files if key.startswith("text_"))


@pytest.fixture(scope="module")
def model():
    return load_minilm()


def test_reference_file_has_cases():
    assert len(CASES) == 3


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
