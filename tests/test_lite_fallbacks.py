"""The browser's stand-ins for `tokenizers` and `safetensors` (helpers.pretrained.wordpiece, .safetensors_numpy),
compared with the real packages on this machine: the same ids, tokens and word ids; the same tensors."""

import json
import struct

import numpy as np
import pytest
from safetensors import safe_open as real_safe_open
from safetensors.numpy import load_file as real_load_file
from safetensors.numpy import save_file

from helpers import pretrained
from helpers.pretrained import safetensors_numpy
from helpers.pretrained.wordpiece import WordPieceTokenizer

CORPUS = [
    "The cat sat on the mat.",
    "The keys to the cabinet are on the table.",
    "bat baseball bat animal",
    "tokenization",
    "Café naïve résumé Ångström",
    "東京は日本の首都です。",
    "北京欢迎你!",
    "don't stop—believing…",
    "e-mail: a.b@c.com (50%) #hashtag $3.50",
    "supercalifragilisticexpialidocious",
    "x" * 150,
    "a " + "b" * 101,
    "Ünïcödé ﬁ ligature ½ ™ ①",
    "emoji 😀 test 👍🏽",
    "tabs\tand\nnewlines\r\n",
    "",
    "   ",
    "[UNK] [CLS] literal [SEP][MASK]x[PAD]",
    "Привет мир",
    "مرحبا بالعالم",
    "שלום",
    "ﾊﾝｶｸ full-width ＡＢＣ",
    "\u200bzero\u200dwidth",
    "Straße",
    "İstanbul",
    "ǅ titlecase",
    "control\x07bell\x00nul",
    "한국어 문장",
]


@pytest.fixture(scope="module")
def tokenizers_pair():
    from tokenizers import Tokenizer

    path = pretrained.model_dir() / "tokenizer.json"
    real = Tokenizer.from_file(str(path))
    real.no_padding()
    real.no_truncation()
    return real, WordPieceTokenizer.from_file(path)


@pytest.mark.parametrize("special", [True, False])
@pytest.mark.parametrize("text", CORPUS)
def test_wordpiece_gives_the_real_tokenizers_ids_tokens_and_word_ids(tokenizers_pair, text, special):
    real, ours = tokenizers_pair
    a, b = real.encode(text, add_special_tokens=special), ours.encode(text, add_special_tokens=special)
    assert (b.ids, b.tokens, b.word_ids) == (a.ids, a.tokens, list(a.word_ids))


def test_wordpiece_batch_and_vocab_match(tokenizers_pair):
    real, ours = tokenizers_pair
    assert ours.get_vocab() == real.get_vocab()
    assert [e.ids for e in ours.encode_batch(CORPUS)] == [e.ids for e in real.encode_batch(CORPUS)]


def test_wordpiece_is_what_load_tokenizer_falls_back_to(tokenizers_pair, monkeypatch):
    """With `tokenizers` missing, load_tokenizer gives the WordPiece stand-in, and the same tokens."""
    import sys

    monkeypatch.setitem(sys.modules, "tokenizers", None)  # `import tokenizers` now raises ImportError
    pretrained.load_tokenizer.cache_clear()
    try:
        tokenizer = pretrained.load_tokenizer()
        assert isinstance(tokenizer, WordPieceTokenizer)
        assert tokenizer.encode("tokenization").tokens == ["[CLS]", "token", "##ization", "[SEP]"]
    finally:
        pretrained.load_tokenizer.cache_clear()


def test_wordpiece_rejects_bad_input(tokenizers_pair):
    _, ours = tokenizers_pair
    with pytest.raises(TypeError, match="text must be a string"):
        ours.encode(["a list"])
    with pytest.raises(TypeError, match="one string"):
        ours.encode_batch("one string")
    with pytest.raises(ValueError, match="WordPiece"):
        WordPieceTokenizer({"model": {"type": "BPE"}})
    with pytest.raises(TypeError, match="dict"):
        WordPieceTokenizer("tokenizer.json")


def test_safetensors_reader_gives_the_models_tensors():
    path = str(pretrained.model_dir() / "model.safetensors")
    ours, real = safetensors_numpy.load_file(path), real_load_file(path)
    assert sorted(ours) == sorted(real) and len(ours) > 100  # the order of the names differs between versions
    for name in real:
        assert ours[name].dtype == real[name].dtype and np.array_equal(ours[name], real[name]), name
    with safetensors_numpy.safe_open(path, framework="np") as f, real_safe_open(path, framework="np") as g:
        assert sorted(f.keys()) == sorted(g.keys())
        name = "embeddings.position_embeddings.weight"
        assert np.array_equal(f.get_tensor(name), g.get_tensor(name))


def test_safetensors_reader_on_every_dtype(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {
        "f64": rng.normal(size=(2, 3)),
        "f32": rng.normal(size=(4,)).astype(np.float32),
        "f16": rng.normal(size=(3, 1, 2)).astype(np.float16),
        "i64": np.arange(-3, 3, dtype=np.int64).reshape(2, 3),
        "i8": np.array([-128, 0, 127], dtype=np.int8),
        "u8": np.array([0, 255], dtype=np.uint8),
        "bool": np.array([[True, False]]),
        "scalar": np.array(1.5, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    path = tmp_path / "t.safetensors"
    save_file(tensors, str(path), metadata={"note": "a test"})
    ours, real = safetensors_numpy.load_file(path), real_load_file(str(path))
    assert set(ours) == set(real) == set(tensors)
    for name, array in tensors.items():
        assert ours[name].dtype == real[name].dtype and ours[name].shape == array.shape, name
        assert np.array_equal(ours[name], real[name]), name
    ours["f32"][0] = 0.0  # a writable copy, as the real load_file gives


def test_safetensors_reader_rejects_a_file_that_is_not_one(tmp_path):
    short = tmp_path / "short.safetensors"
    short.write_bytes(b"abc")
    with pytest.raises(ValueError, match="fewer than 8 bytes"):
        safetensors_numpy.load_file(short)
    lying = tmp_path / "lying.safetensors"
    lying.write_bytes(struct.pack("<Q", 10**6) + b"{}")
    with pytest.raises(ValueError, match="exceeds the file"):
        safetensors_numpy.load_file(lying)
    odd = tmp_path / "odd.safetensors"
    header = json.dumps({"x": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}).encode()
    odd.write_bytes(struct.pack("<Q", len(header)) + header + bytes(8))
    with pytest.raises(ValueError, match="C64"):
        safetensors_numpy.load_file(odd)
    with pytest.raises(ValueError, match="framework"):
        safetensors_numpy.safe_open(short, framework="pt")


def notebook_texts():
    """Every string literal of the notebooks' code (their sentences, words and prompts) and every markdown cell."""
    import ast
    from pathlib import Path

    texts = set()
    for path in sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                texts.add(source)
                continue
            try:
                tree = ast.parse(source)
            except SyntaxError:  # a cell with IPython syntax (%pip, !cmd): its strings are not sentences
                continue
            texts |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return sorted(texts)


def test_wordpiece_equals_the_real_tokenizer_on_every_text_of_the_notebooks(tokenizers_pair):
    real, ours = tokenizers_pair
    texts = notebook_texts()
    assert len(texts) > 1000  # the notebooks' sentences, words, prompts, messages and prose
    mismatched = [
        text[:60]
        for text, a, b in zip(texts, real.encode_batch(texts), ours.encode_batch(texts), strict=True)
        if (a.ids, a.tokens, list(a.word_ids)) != (b.ids, b.tokens, b.word_ids)
    ]
    assert not mismatched, mismatched[:5]
