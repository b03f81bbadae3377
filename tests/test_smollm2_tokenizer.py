"""SmolLM2's tokenizer: built with `tokenizers` from the GGUF, and the pure-Python stand-in used in the browser.

tests/data/smollm2_tokens.json holds transformers' ids for texts without digits (tests/data/make_smollm2_reference.py).
"""

import json
from pathlib import Path

import numpy as np
import pytest

from helpers.pretrained.bpe import ByteLevelBPE, bytes_to_unicode, pre_tokenize
from helpers.pretrained.smollm2 import Tokenizer, load_smollm2

CORPUS = json.loads((Path(__file__).parent / "data" / "smollm2_tokens.json").read_text(encoding="utf-8"))
# what transformers' GGUF tokenizer cannot check: digits one by one, and more of everything
MORE = [
    "In 2024, 1,234.56 people paid $78.90 for 3/4 of a pie (about 75%).",
    "Phone: +44 (0)20 7946 0958; ISBN 978-3-16-148410-0; v1.2.3-rc4",
    "Numbers of other scripts: ٣٤٥ (Arabic-Indic), ५६ (Devanagari), ½ ¾ Ⅻ ²",
    "x1y22z333 007 1e-5 0x1F",
    "",
    " ",
    "\n",
    "\n\n\n",
    "   \t  \n",
    "trailing space ",
    "a\u00a0non-breaking\u2003em space\u3000ideographic",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_end|><|im_start|><|endoftext|>",
    "almost <|im_start| special <|im_end|>x",
    "control \x00\x01\x1f and \x7f characters",
    "combining e\u0301 and precomposed é; Hangul 한국어; Thai ภาษาไทย; Hebrew עברית",
    "🏳️‍🌈 👩‍👩‍👧 flags 🇫🇷 and skin tones 👋🏽",
    "don't DON'T o'clock rock'n'roll 's 't",
    "CamelCaseWords and ALLCAPS and l33t sp34k",
    "    indented code\n\tfor i in range(10):\n\t\tprint(i)\n",
]


def random_texts(n, seed=0):
    """Texts drawn from a mixed alphabet: letters of several scripts, digits, spaces, punctuation, emoji."""
    alphabet = list("aAzZ éüß日本한ΩЖ0123456789٣ \n\t.,;:!?'\"()-_$€%&*/\\<>|") + [
        "  ",
        "🙂",
        "\u00a0",
        "'s",
        "<|im_end|>",
    ]
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(alphabet, size=rng.integers(1, 40))) for _ in range(n)]


@pytest.fixture(scope="module")
def model():
    return load_smollm2()


@pytest.fixture(scope="module")
def stand_in(model):
    """The pure-Python tokenizer, built from the same vocabulary and merges as the model's."""
    metadata = model.metadata
    return ByteLevelBPE(metadata["tokenizer.ggml.tokens"], metadata["tokenizer.ggml.merges"], model.tokenizer.special)


def test_the_corpus_has_texts():
    assert len(CORPUS) == 12 and all(case["ids"] for case in CORPUS)


@pytest.mark.parametrize("case", CORPUS, ids=range(len(CORPUS)))
def test_both_tokenizers_give_transformers_ids(model, stand_in, case):
    assert model.tokenizer.encode(case["text"]) == case["ids"]
    assert stand_in.encode(case["text"]) == case["ids"]


@pytest.mark.parametrize("text", MORE + random_texts(60), ids=range(len(MORE) + 60))
def test_the_stand_in_gives_the_ids_tokenizers_gives_and_both_decode_back(model, stand_in, text):
    ids = model.tokenizer.encode(text)
    assert stand_in.encode(text) == ids
    assert model.tokenizer.decode(ids) == text
    assert stand_in.decode(ids) == text


def test_digits_are_split_one_by_one(model):
    assert model.tokenizer.pieces("in 2024") == ["in", " ", "2", "0", "2", "4"]


def test_the_special_tokens_are_one_token_each_and_there_is_no_bos(model):
    tokenizer = model.tokenizer
    assert tokenizer.special[:3] == ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert [tokenizer.encode(t) for t in tokenizer.special[:3]] == [[0], [1], [2]]
    assert tokenizer.encode("Hello")[0] != 1  # nothing put in front
    assert tokenizer.decode([1, 2, 0]) == "<|im_start|><|im_end|><|endoftext|>"


def test_the_model_uses_the_stand_in_where_tokenizers_is_missing(model, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_tokenizers(name, *args, **kwargs):
        if name == "tokenizers" or name.startswith("tokenizers."):
            raise ImportError("No module named 'tokenizers'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tokenizers)
    metadata = model.metadata
    browser = Tokenizer(metadata["tokenizer.ggml.tokens"], metadata["tokenizer.ggml.merges"], model.tokenizer.special)
    assert isinstance(browser._backend, ByteLevelBPE)
    text = MORE[11]
    assert browser.encode(text) == model.tokenizer.encode(text)
    assert browser.decode(browser.encode(text)) == text


def test_pieces_show_each_token_as_text(model):
    assert model.tokenizer.pieces("Hello, world!") == ["Hello", ",", " world", "!"]
    assert "".join(model.tokenizer.pieces("naïve café")) == "naïve café"


def test_bytes_to_unicode_spells_every_byte_as_its_own_printable_character():
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256)) and len(set(table.values())) == 256
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("a")] == "a"
    assert all(c.isprintable() and not c.isspace() for c in table.values())


def test_pre_tokenize_keeps_every_character_and_cuts_where_gpt2_does():
    text = "Hello  world's 42\n\nend "
    words = pre_tokenize(text)
    assert "".join(words) == text
    # a run of spaces leaves its last one to the next word: "\n\nend" is "\n", "\n", "end"
    assert words == ["Hello", " ", " world", "'s", " ", "4", "2", "\n", "\n", "end", " "]


def test_bad_input_to_the_tokenizer(model):
    with pytest.raises(TypeError, match="text must be a string, got list"):
        model.tokenizer.encode(["a"])
    with pytest.raises(TypeError, match="ids must be a 1-D list or array of ints"):
        model.tokenizer.decode([[1, 2]])
    with pytest.raises(TypeError, match="ids must be a 1-D list or array of ints"):
        model.tokenizer.decode([1.5])
    with pytest.raises(ValueError, match=r"ids must be in \[0, 49152\), got values from -1 to 3"):
        model.tokenizer.decode([3, -1])
