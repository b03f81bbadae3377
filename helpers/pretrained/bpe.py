"""Byte-level BPE in pure Python, used only where the `tokenizers` package is missing (in the browser).

It reproduces what `tokenizers` does for SmolLM2 (tests/test_smollm2_tokenizer.py compares the two on a corpus):
the special tokens are matched first, whole; the rest of the text is split into words, every digit a word of
its own, then GPT-2's pattern (a word is an optional space and letters, or digits, or other symbols; runs of
spaces stay apart from the next word); each word's UTF-8 bytes are spelled as printable characters (a space
is "Ġ"), and the merges, best-ranked first, join neighbouring pieces until no listed pair is left.

In the browser only; taught in 12_a_real_language_model.
"""

import functools
import math
import re
import unicodedata

__all__ = ["bytes_to_unicode", "pre_tokenize", "join_pair", "ByteLevelBPE"]

# Unicode's White_Space characters: the `\s` of the pattern (Python's own `\s` adds \x1c-\x1f)
_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


@functools.cache
def bytes_to_unicode():
    """Each byte 0..255 as one printable character: printable bytes stand for themselves, the rest shift past 255.

    Shapes: -> {byte: character}, 256 entries (a space, byte 32, is "Ġ").
    """
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, shifted = {}, 0
    for byte in range(256):
        if byte in kept:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + shifted)
            shifted += 1
    return table


def _classes(text):
    """(letters, numbers): regex class bodies for the text's letters (Unicode L*) and numbers (N*).

    Python's `re` has no \\p{L} or \\p{N}: ASCII's are written out, and any other character of the text is
    looked up, so a pattern is built for the characters that occur (a scan of every code point takes seconds
    in the browser).
    """
    others = sorted({c for c in text if ord(c) > 127})
    letters = "A-Za-z" + "".join(re.escape(c) for c in others if unicodedata.category(c)[0] == "L")
    numbers = "0-9" + "".join(re.escape(c) for c in others if unicodedata.category(c)[0] == "N")
    return letters, numbers


@functools.lru_cache(maxsize=256)
def _patterns(letters, numbers):
    """(one number character, GPT-2's word pattern) as compiled regexes, for these letter and number classes."""
    word = (
        rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{letters}]+| ?[{numbers}]+| ?[^{_SPACE}{letters}{numbers}]+"
        rf"|[{_SPACE}]+(?![^{_SPACE}])|[{_SPACE}]+"
    )
    return re.compile(f"([{numbers}])"), re.compile(word)


def pre_tokenize(text):
    """The words BPE works on, each on its own: every digit alone, then GPT-2's pattern on the rest.

    Shapes: a string -> a list of strings that join back to it.
    """
    digit, word = _patterns(*_classes(text))
    words = []
    for piece in digit.split(text):  # the digits land at odd indices, each alone
        words.extend(word.findall(piece))
    return words


def join_pair(pieces, pair):
    """pieces with every occurrence of the neighbouring pair joined into one piece, left to right."""
    joined, i = [], 0
    while i < len(pieces):
        if i + 1 < len(pieces) and (pieces[i], pieces[i + 1]) == pair:
            joined.append(pieces[i] + pieces[i + 1])
            i += 2
        else:
            joined.append(pieces[i])
            i += 1
    return joined


class ByteLevelBPE:
    """A byte-level BPE tokenizer from a vocabulary (id order), its merges ("a b", best first) and special tokens.

    encode(text) -> list of ids; decode(ids) -> str. Special tokens written in the text are matched whole.
    """

    def __init__(self, tokens, merges, special):
        self.tokens = list(tokens)
        self.ids = {token: i for i, token in enumerate(self.tokens)}
        self.ranks = {tuple(merge.split(" ")): rank for rank, merge in enumerate(merges)}
        self.special = list(special)
        longest_first = sorted(self.special, key=len, reverse=True)
        self._special = re.compile("(" + "|".join(map(re.escape, longest_first)) + ")") if special else None
        self.spell = bytes_to_unicode()
        self.unspell = {char: byte for byte, char in self.spell.items()}
        self._cache = {}

    def merge(self, word):
        """A word's pieces: its characters, with the best-ranked neighbouring pair joined until none is listed."""
        if word not in self._cache:
            pieces = list(word)
            while len(pieces) > 1:
                best = min(zip(pieces, pieces[1:], strict=False), key=lambda pair: self.ranks.get(pair, math.inf))
                if best not in self.ranks:  # no neighbouring pair is a merge
                    break
                pieces = join_pair(pieces, best)
            self._cache[word] = pieces
        return self._cache[word]

    def encode(self, text):
        """The token ids of a text. Shapes: a string -> a list of ints."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        ids = []
        parts = self._special.split(text) if self._special else [text]
        for k, part in enumerate(parts):
            if k % 2:  # a special token, matched whole
                ids.append(self.ids[part])
                continue
            for word in pre_tokenize(part):
                spelled = "".join(self.spell[b] for b in word.encode("utf-8"))
                ids.extend(self.ids[piece] for piece in self.merge(spelled))
        return ids

    def decode(self, ids):
        """The text of token ids (bytes that are not valid UTF-8 become "�"). Shapes: a list of ints -> a string."""
        out, pending = [], bytearray()
        for i in ids:
            token = self.tokens[int(i)]
            if token in self.special:
                out.append(pending.decode("utf-8", errors="replace") + token)
                pending = bytearray()
            else:
                pending.extend(self.unspell[char] for char in token)
        return "".join(out) + pending.decode("utf-8", errors="replace")
