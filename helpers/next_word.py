"""The next-word task: the grammar's sentences as one stream of words, windows of it to train on, a bigram
model to beat, judges of what a model writes (its loss, and its sentences against the grammar), and
sampling the next word (temperature, top-k).

Taught in 11_tiny_gpt.
"""

import re

import numpy as np

from helpers import grammar
from helpers._validate import as_rng, positive_int
from helpers.attention import softmax
from helpers.training import softmax_cross_entropy

END = "."
VOCAB = (END, "the", *grammar.OPENINGS, *grammar.ADJECTIVES, *grammar.PREPOSITIONS, *grammar.NOUNS, *grammar.VERBS)
WORD_ID = {word: i for i, word in enumerate(VOCAB)}

__all__ = [
    "END",
    "VOCAB",
    "WORD_ID",
    "encode",
    "prompt_ids",
    "stream",
    "random_windows",
    "default_corpus",
    "judge",
    "split_sentences",
    "sentence_report",
    "Bigram",
    "held_out_loss",
    "before_the_verb",
    "verb_agreement",
    "check_sampling",
    "next_word_distribution",
    "sample",
]


def encode(words):
    """Word ids of a list of words (or a string), each checked against VOCAB.

    Shapes: n words -> ids int (n,).
    """
    words = words.split() if isinstance(words, str) else list(words)
    unknown = [w for w in words if w not in WORD_ID]
    if unknown:
        raise ValueError(f"unknown words {unknown}: the vocabulary is {' '.join(VOCAB)}")
    return np.array([WORD_ID[w] for w in words], dtype=int)


def prompt_ids(prompt):
    """The word ids of a prompt to write after: a list of words (or a string), at least one, each in VOCAB.

    Shapes: n words -> a list of n ints.
    """
    words = prompt.split() if isinstance(prompt, str) else prompt
    if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) for w in words):
        raise TypeError(f"prompt must be a list of words (str), got {type(prompt).__name__} {prompt!r}")
    if not words:
        raise ValueError("prompt must hold at least one word (a sentence may start after '.')")
    try:
        return [int(i) for i in encode(words)]
    except ValueError as exc:
        raise ValueError(f"prompt has {exc}") from None


def stream(sentences):
    """The sentences one after another, each followed by ".": the text the model reads.

    Shapes: list of N Sentence (or of word lists) -> ids int (total words + N,).
    """
    words = [w for s in sentences for w in (*(s.words if isinstance(s, grammar.Sentence) else s), END)]
    return encode(words)


def random_windows(ids, length, batch_size, rng):
    """batch_size windows of `length` consecutive words, from random places in the stream.

    Shapes: ids int (N,) -> (batch_size, length).
    """
    starts = rng.integers(len(ids) - length + 1, size=batch_size)  # (B,)
    return ids[starts[:, None] + np.arange(length)]  # (B, 1) + (length,) -> (B, length)


def default_corpus(seed=0):
    """The notebook's sentences: 4,000 to train on and 500 held out (none of them in the training set).

    Shapes: -> (train, test) lists of Sentence.
    """
    return grammar.make_corpus(4000, 500, rng=np.random.default_rng(seed))


# the grammar's shape as a pattern over word kinds: [opening] the [adj] NOUN (prep the [adj] NOUN){0,2} VERB
# (prep the [adj] NOUN){0,1}; it says nothing of agreement or of repeated nouns, which judge() checks apart
_KIND = {
    **{w: "O" for w in grammar.OPENINGS},
    "the": "D",
    **{w: "A" for w in grammar.ADJECTIVES},
    **{w: "P" for w in grammar.PREPOSITIONS},
    **{w: "N" for w in grammar.NOUNS},
    **{w: "V" for w in grammar.VERBS},
}
_SHAPE = re.compile(f"O?DA?N(PDA?N){{0,{grammar.MAX_PHRASES_BEFORE}}}V(PDA?N){{0,{grammar.MAX_PHRASES_AFTER}}}")


def judge(words):
    """Three verdicts on one written sentence (without its "."): does it have the grammar's shape, does
    its verb agree with its subject (the first noun), and are its nouns all different?

    grammar.parse accepts a sentence exactly when all three hold.
    Shapes: a list of words (or a string) -> dict(shape=bool, agrees=bool, distinct=bool).
    """
    words = words.split() if isinstance(words, str) else list(words)
    kinds = "".join(_KIND.get(w, "?") for w in words)
    shape = _SHAPE.fullmatch(kinds) is not None
    nouns = [w for w in words if _KIND.get(w) == "N"]
    verbs = [w for w in words if _KIND.get(w) == "V"]
    agrees = shape and grammar.VERB_OF[nouns[0]] == verbs[0]
    return {"shape": shape, "agrees": agrees, "distinct": shape and len(set(nouns)) == len(nouns)}


def split_sentences(words, end="."):
    """The finished sentences of a written text: the words between one end mark and the next.

    Words before the first end mark (the prompt's sentence, perhaps cut) and after the last are left out.
    Shapes: a list of words -> a list of word lists.
    """
    ends = [i for i, w in enumerate(words) if w == end]
    return [list(words[a + 1 : b]) for a, b in zip(ends, ends[1:], strict=False)]


def sentence_report(sentences, corpus=()):
    """Shares of the sentences that have the grammar's shape, that also agree, that are fully grammatical
    (distinct nouns too); how many differ from each other, and how many are in no sentence of `corpus`.

    Shapes: a list of N word lists -> dict of floats (shares) and ints (counts).
    """
    if not sentences:
        raise ValueError("no finished sentence to judge: write more words")
    verdicts = [judge(s) for s in sentences]
    seen = {tuple(s.words if isinstance(s, grammar.Sentence) else s) for s in corpus}
    distinct = {tuple(s) for s in sentences}
    return {
        "sentences": len(sentences),
        "shape": float(np.mean([v["shape"] for v in verdicts])),
        "agrees": float(np.mean([v["agrees"] for v in verdicts])),
        "grammatical": float(np.mean([v["agrees"] and v["distinct"] for v in verdicts])),
        "different": len(distinct),
        "new": sum(s not in seen and judge(s)["agrees"] and judge(s)["distinct"] for s in distinct),
    }


class Bigram:
    """The next word from the previous word alone: counts over the training text, plus one (Laplace).

    Shapes: fit on ids int (N,); probs (V, V): row a is the distribution of the word after word a.
    """

    def __init__(self, ids, vocab_size):
        ids = np.asarray(ids)
        counts = np.ones((positive_int(vocab_size, "vocab_size"),) * 2)  # (V, V): every pair seen once more
        np.add.at(counts, (ids[:-1], ids[1:]), 1)
        self.probs = counts / counts.sum(axis=1, keepdims=True)

    def logits(self, ids):
        """Log-probabilities of the next word at every position. Shapes: ids (B, T) -> (B, T, V)."""
        return np.log(self.probs[np.asarray(ids)])

    def generate(self, prompt_ids, n_new, rng=None):
        """The prompt's ids, then n_new ids sampled one after another. Shapes: list -> list."""
        rng, ids = as_rng(rng), list(prompt_ids)
        for _ in range(n_new):
            cumulative = np.cumsum(self.probs[ids[-1]])
            ids.append(
                int(min(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"), len(cumulative) - 1))
            )
        return ids


def held_out_loss(logits_fn, ids, length):
    """Mean next-word cross-entropy over consecutive windows of the held-out stream.

    logits_fn(windows (B, length)) -> (B, length, V). Shapes: ids int (N,) -> float.
    """
    n = (len(ids) - 1) // length
    inputs = ids[: n * length].reshape(n, length)  # (n, length)
    targets = ids[1 : n * length + 1].reshape(n, length)  # the same words, one later
    return float(softmax_cross_entropy(logits_fn(inputs), targets)[0])


def before_the_verb(sentences, end_id, word_id):
    """Each sentence after an end mark, padded with end marks; where its verb is to be predicted, and the verb.

    The word before the verb is where a next-word model chooses the verb: position verb (the end mark
    shifts the words by one). Shapes: list of N Sentence -> ids int (N, T), rows int (N,), verbs int (N,).
    """
    T = 1 + max(len(s.words) for s in sentences)
    ids = np.full((len(sentences), T), end_id)  # (N, T): padding after a sentence changes nothing before it
    for n, s in enumerate(sentences):
        ids[n, 1 : 1 + len(s.words)] = [word_id[w] for w in s.words]
    rows = np.array([s.verb for s in sentences])  # the word before the verb sits at index verb
    verbs = np.array([word_id[s.words[s.verb]] for s in sentences])
    return ids, rows, verbs


def verb_agreement(logits_fn, sentences, end_id, word_id):
    """How often the model, about to write the verb of a held-out sentence, ranks the right verb above the
    other seven (the verb agrees with the subject, maybe words away, past other nouns).

    logits_fn(ids (N, T)) -> (N, T, V). Shapes: list of N Sentence -> float.
    """
    ids, rows, verbs = before_the_verb(sentences, end_id, word_id)
    verb_ids = np.array([word_id[v] for v in grammar.VERBS])
    logits = logits_fn(ids)[np.arange(len(ids)), rows]  # (N, V): at the word before each verb
    return float(np.mean(verb_ids[np.argmax(logits[:, verb_ids], axis=-1)] == verbs))


def check_sampling(temperature, top_k, vocab_size):
    """Raise unless temperature is a number >= 0 (0 = greedy) and top_k None or an int in [1, vocab_size].

    Shapes: two numbers (top_k may be None) and the vocabulary's size -> None, or a ValueError naming the argument.
    """
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float, np.number))
        or not 0 <= temperature < np.inf
    ):
        raise ValueError(f"temperature must be a number >= 0 (0 = greedy), got {temperature!r}")
    if top_k is not None and (
        isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or not 1 <= top_k <= vocab_size
    ):
        raise ValueError(f"top_k must be None or an int in [1, {vocab_size}], got {top_k!r}")


def next_word_distribution(logits, temperature=1.0, top_k=None):
    """The probabilities to sample the next word from: softmax(logits / temperature) over the top_k best.

    temperature=0 puts all the probability on the best word (greedy). Shapes: logits (V,) -> (V,).
    """
    logits = np.asarray(logits, dtype=float)
    check_sampling(temperature, top_k, len(logits))
    if top_k is not None:
        kept = np.argsort(-logits, kind="stable")[:top_k]  # the k best words
        logits = np.where(np.isin(np.arange(len(logits)), kept), logits, -np.inf)
    if temperature == 0:
        probs = np.zeros(len(logits))
        probs[np.argmax(logits)] = 1.0
        return probs
    return softmax(logits / temperature)


def sample(probs, rng):
    """Draw a word id from `probs` with one uniform number (the same number gives the same word).

    The word drawn is the first whose running sum of probabilities passes the number.

    Shapes: probs (V,), rng a Generator -> int.
    """
    cumulative = np.cumsum(probs)
    return int(min(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"), len(probs) - 1))
