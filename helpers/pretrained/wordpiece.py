"""A pure-Python BERT WordPiece tokenizer, used only where the `tokenizers` package is missing (in the browser).

It reads the model's tokenizer.json and reproduces what `tokenizers.Tokenizer` does for all-MiniLM-L6-v2
(tests/test_lite_fallbacks.py compares the two on a corpus): the BertNormalizer (clean the text, put spaces
around CJK ideographs, lowercase, strip accents), the BertPreTokenizer (split on whitespace, each
punctuation character a word of its own), greedy longest-match WordPiece with the "##" prefix and
[UNK] for a word with no match or longer than 100 characters, then the template [CLS] $A [SEP].
Only what the helpers use is here: encode, encode_batch, get_vocab, no_padding, no_truncation;
an encoding has .ids, .tokens and .word_ids.

In the browser only: used from 01_embeddings on, through helpers.pretrained; the whole encoder is taught in
09_attention_in_a_real_model.
"""

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

# the BERT code-point ranges of CJK ideographs (not Hangul, Hiragana or Katakana)
_CJK = [
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
]


def _is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp):
    return any(lo <= cp <= hi for lo, hi in _CJK)


@dataclass
class Encoding:
    """One encoded text: the wordpieces, their ids, and for each the index of its word (None for [CLS]/[SEP])."""

    ids: list
    tokens: list
    word_ids: list


class WordPieceTokenizer:
    """A BERT WordPiece tokenizer read from a tokenizer.json file (see the module's docstring)."""

    def __init__(self, config):
        if not isinstance(config, dict):
            raise TypeError(f"config must be the parsed tokenizer.json (a dict), got {type(config).__name__}")
        model = config.get("model") or {}
        if model.get("type") != "WordPiece":
            raise ValueError(f"tokenizer.json must describe a WordPiece model, got {model.get('type')!r}")
        self.vocab = dict(model["vocab"])
        self.unk_token = model["unk_token"]
        self.prefix = model["continuing_subword_prefix"]
        self.max_chars = model["max_input_chars_per_word"]
        normalizer = config.get("normalizer") or {}
        self.lowercase = normalizer.get("lowercase", True)
        strip = normalizer.get("strip_accents")
        self.strip_accents = self.lowercase if strip is None else strip
        self.added = [t["content"] for t in config.get("added_tokens", [])]
        self._added = re.compile("(" + "|".join(re.escape(t) for t in self.added) + ")") if self.added else None
        self.cls, self.sep = "[CLS]", "[SEP]"

    @classmethod
    def from_file(cls, path):
        """The tokenizer of a tokenizer.json file (as tokenizers.Tokenizer.from_file)."""
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def no_padding(self):
        """Nothing to do: this tokenizer never pads (kept so it can stand in for tokenizers.Tokenizer)."""

    def no_truncation(self):
        """Nothing to do: this tokenizer never truncates."""

    def get_vocab(self):
        """wordpiece -> id, a copy."""
        return dict(self.vocab)

    def normalize(self, text):
        out = []
        for ch in text:
            cp = ord(ch)
            if cp in (0, 0xFFFD) or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
                continue
            if ch in "\t\n\r" or unicodedata.category(ch) == "Zs":
                out.append(" ")
            elif _is_cjk(cp):
                out.append(f" {ch} ")
            else:
                out.append(ch)
        text = "".join(out)
        if self.strip_accents:
            text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        return text.lower() if self.lowercase else text

    @staticmethod
    def pre_tokenize(text):
        words, current = [], ""
        for ch in text:
            if ch.isspace() or _is_punctuation(ch):
                if current:
                    words.append(current)
                    current = ""
                if not ch.isspace():
                    words.append(ch)
            else:
                current += ch
        if current:
            words.append(current)
        return words

    def word_pieces(self, word):
        """The longest start of `word` in the vocabulary, then the longest "##" piece of the rest, and so on:
        a list of pieces, or [UNK] alone when at some point no piece fits (or the word is too long)."""
        if len(word) > self.max_chars:
            return [self.unk_token]
        pieces, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    break
            else:
                return [self.unk_token]
            pieces.append(piece)
            start = end
        return pieces

    def encode(self, text, add_special_tokens=True):
        """The Encoding of one text (with [CLS] ... [SEP] unless add_special_tokens=False)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        tokens, word_ids, word = [], [], 0
        parts = self._added.split(text) if self._added else [text]
        for k, part in enumerate(parts):
            if k % 2:  # a special token written in the text is matched before normalizing: one token, one word
                tokens.append(part)
                word_ids.append(word)
                word += 1
                continue
            for w in self.pre_tokenize(self.normalize(part)):
                for piece in self.word_pieces(w):
                    tokens.append(piece)
                    word_ids.append(word)
                word += 1
        if add_special_tokens:
            tokens, word_ids = [self.cls, *tokens, self.sep], [None, *word_ids, None]
        return Encoding(ids=[self.vocab[t] for t in tokens], tokens=tokens, word_ids=word_ids)

    def encode_batch(self, texts, add_special_tokens=True):
        """One Encoding per text."""
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings, got one string: use encode()")
        return [self.encode(t, add_special_tokens=add_special_tokens) for t in texts]
