"""A tiny grammar of animal sentences, for a masked-word task whose answer one other word fixes.

    [today|tonight] the [adj] SUBJECT (prep the [adj] NOUN){0,2} VERB (prep the [adj] NOUN){0,1}

The verb agrees with the subject: its animal (cat -> meows, dog -> barks) and its number
(cat -> meows, cats -> meow). The subject is always the sentence's first noun; the other
nouns ("attractors") are different words, before or after the verb. So, by construction:
- the masked verb is fixed by one word, the subject, 1 to 9 words away;
- without order it is not fixed: swapping the subject with another noun gives an equally
  likely sentence with the same words and a different verb (on average at most 1 in k with k nouns);
- from its position alone it is not fixed: the subject is drawn independently (1 in 8).
Taught in 08_training_a_tiny_transformer.
"""

from collections import namedtuple

import numpy as np

from helpers._validate import as_rng, positive_int

PAD, MASK = "[PAD]", "[MASK]"
VERB_OF = {
    "cat": "meows",
    "cats": "meow",
    "dog": "barks",
    "dogs": "bark",
    "bird": "sings",
    "birds": "sing",
    "cow": "moos",
    "cows": "moo",
}
NOUNS = tuple(VERB_OF)
VERBS = tuple(VERB_OF.values())
ADJECTIVES = ("big", "small", "old", "young")
PREPOSITIONS = ("near", "behind", "with")
OPENINGS = ("today", "tonight")
VOCAB = (PAD, MASK, "the", *OPENINGS, *ADJECTIVES, *PREPOSITIONS, *NOUNS, *VERBS)
WORD_ID = {word: i for i, word in enumerate(VOCAB)}
MAX_PHRASES_BEFORE, MAX_PHRASES_AFTER = 2, 1
# how random_sentence draws: P(0, 1, 2 phrases between subject and verb), P(a phrase after the verb),
# P(an opening word), P(an adjective in a noun phrase); every choice of word within its kind is uniform
P_PHRASES_BEFORE, P_PHRASE_AFTER, P_OPENING, P_ADJECTIVE = (0.3, 0.4, 0.3), 0.4, 0.3, 0.5
T_MAX = 1 + 3 + 4 * MAX_PHRASES_BEFORE + 1 + 4 * MAX_PHRASES_AFTER  # 17 words at most

Sentence = namedtuple("Sentence", "words subject verb attractors")
Sentence.__doc__ = "words: tuple of str; subject, verb: their positions; attractors: the other nouns' positions."


def _noun_phrase(rng, noun):
    """'the [adjective] noun', the adjective present half the time."""
    adjective = [ADJECTIVES[rng.integers(len(ADJECTIVES))]] if rng.random() < P_ADJECTIVE else []
    return ["the", *adjective, noun]


def random_sentence(rng=None):
    """One sentence of the grammar, drawn at random.

    Shapes: -> Sentence(words tuple of 3..17 str, subject int, verb int, attractors tuple of int).
    """
    rng = as_rng(rng)
    n_before = rng.choice(MAX_PHRASES_BEFORE + 1, p=P_PHRASES_BEFORE)  # phrases between subject and verb
    n_after = int(rng.random() < P_PHRASE_AFTER)
    nouns = rng.permutation(NOUNS)[: 1 + n_before + n_after]  # different words: subject first
    words = [OPENINGS[rng.integers(len(OPENINGS))]] if rng.random() < P_OPENING else []
    words += _noun_phrase(rng, nouns[0])
    subject, attractors = len(words) - 1, []
    for i, noun in enumerate(nouns[1:]):
        if i == n_before:
            verb = len(words)
            words.append(VERB_OF[nouns[0]])
        words += [PREPOSITIONS[rng.integers(len(PREPOSITIONS))], *_noun_phrase(rng, noun)]
        attractors.append(len(words) - 1)
    if n_after == 0:
        verb = len(words)
        words.append(VERB_OF[nouns[0]])
    return Sentence(tuple(str(w) for w in words), subject, verb, tuple(attractors))


def _read_noun_phrase(words, i):
    """Read 'the [adjective] noun' at words[i:]; return the noun's position, or raise saying what is wrong."""
    if i >= len(words) or words[i] != "the":
        raise ValueError(f"expected 'the' at word {i} of {' '.join(words)!r}")
    i += 1 + (i + 1 < len(words) and words[i + 1] in ADJECTIVES)
    if i >= len(words) or words[i] not in NOUNS:
        raise ValueError(f"expected a noun ({', '.join(NOUNS)}) at word {i} of {' '.join(words)!r}")
    return i


def parse(words):
    """Read a sentence of the grammar (a string or a list of words) and say where its subject and verb are.

    Shapes: -> Sentence; a ValueError says where the words leave the grammar.
    """
    words = tuple(words.split() if isinstance(words, str) else words)
    i = 1 if words[:1] and words[0] in OPENINGS else 0
    subject = i = _read_noun_phrase(words, i)
    nouns = [i]
    i += 1
    while i < len(words) and words[i] in PREPOSITIONS:
        nouns.append(i := _read_noun_phrase(words, i + 1))
        i += 1
    verb = i
    if i >= len(words) or words[i] != VERB_OF[words[subject]]:
        raise ValueError(
            f"expected the verb {VERB_OF[words[subject]]!r} (it agrees with {words[subject]!r}) at "
            f"word {i} of {' '.join(words)!r}"
        )
    if i + 1 < len(words):
        if words[i + 1] not in PREPOSITIONS:
            raise ValueError(
                f"expected a preposition or the end after the verb, at word {i + 1} of {' '.join(words)!r}"
            )
        nouns.append(i := _read_noun_phrase(words, i + 2))
        if i + 1 < len(words):
            raise ValueError(f"expected the end after word {i} of {' '.join(words)!r}")
    phrases_before = len(nouns) - 1 - (verb < nouns[-1])
    if phrases_before > MAX_PHRASES_BEFORE or len({words[n] for n in nouns}) < len(nouns):
        raise ValueError(
            f"{' '.join(words)!r}: at most {MAX_PHRASES_BEFORE} phrases before the verb, and no noun twice"
        )
    return Sentence(words, subject, verb, tuple(nouns[1:]))


def make_corpus(n_train, n_test, rng=None):
    """Random sentences split into a training set and a held-out set that shares none of them.

    Shapes: -> (train, test): lists of n_train and n_test Sentence (held-out ones all distinct).
    """
    n_train, n_test = positive_int(n_train, "n_train"), positive_int(n_test, "n_test")
    rng = as_rng(rng)
    train = [random_sentence(rng) for _ in range(n_train)]
    seen, test = {s.words for s in train}, []
    for _ in range(100 * n_test):
        sentence = random_sentence(rng)
        if sentence.words not in seen:
            seen.add(sentence.words)
            test.append(sentence)
            if len(test) == n_test:
                return train, test
    raise ValueError(f"could not draw {n_test} held-out sentences unlike the {n_train} training ones")


def encode(sentences, T=None):
    """Word ids of each sentence, padded with [PAD] (id 0) to T words.

    Shapes: list of N Sentence (or of word lists) -> ids int (N, T), lengths int (N,).
    """
    word_lists = [s.words if isinstance(s, Sentence) else tuple(s) for s in sentences]
    lengths = np.array([len(words) for words in word_lists], dtype=int)
    T = int(lengths.max()) if T is None else positive_int(T, "T")
    if lengths.max() > T:
        raise ValueError(f"a sentence has {lengths.max()} words, more than T={T}")
    ids = np.zeros((len(word_lists), T), dtype=int)  # (N, T), 0 = [PAD]
    for n, words in enumerate(word_lists):
        unknown = [w for w in words if w not in WORD_ID]
        if unknown:
            raise ValueError(f"unknown words {unknown} in sentence {n}; the vocabulary is {VOCAB[2:]}")
        ids[n, : len(words)] = [WORD_ID[w] for w in words]
    return ids, lengths


def mask_positions(ids, positions):
    """Replace one word per sentence by [MASK]; return the new ids and the hidden words' ids.

    Shapes: ids int (N, T), positions int (N,) -> masked ids int (N, T), targets int (N,).
    """
    ids, positions = np.asarray(ids), np.asarray(positions)
    if positions.shape != ids.shape[:1]:
        raise ValueError(f"positions has shape {positions.shape}, expected one per sentence: ({ids.shape[0]},)")
    rows = np.arange(len(ids))
    targets = ids[rows, positions]  # (N,)
    if (targets == WORD_ID[PAD]).any():
        raise ValueError("a masked position falls on padding (past the end of its sentence)")
    masked = ids.copy()
    masked[rows, positions] = WORD_ID[MASK]
    return masked, targets


def determining_position(sentence, masked):
    """The position of the word that fixes the masked word: verb <-> subject; None for other words."""
    return {sentence.verb: sentence.subject, sentence.subject: sentence.verb}.get(masked)


def order_free_ceiling(sentences):
    """The accuracy on the masked verb expected, at most and on average, of a model that cannot see word order:
    the mean of 1/k (a finite sample can land slightly above it).

    A sentence with k nouns has k - 1 twins (subject swapped with another noun): as likely,
    the same words, another verb. Shapes: list of N Sentence -> float.
    """
    return float(np.mean([1 / (1 + len(s.attractors)) for s in sentences]))


def position_only_ceiling():
    """The accuracy on the masked verb expected, at most and on average, from its position alone: the subject is
    1 of 8 nouns, drawn independently of the sentence's shape."""
    return 1 / len(NOUNS)


def nearest_attractor(sentence):
    """The position of the attractor noun nearest to the verb (None without attractors).

    An attractor between the subject and the verb is always nearer than one after the verb.
    Taught in 09_attention_in_a_real_model.
    """
    if not sentence.attractors:
        return None
    return min(sentence.attractors, key=lambda position: abs(position - sentence.verb))


def with_verb_of(sentence, noun):
    """The same sentence with the verb that agrees with the noun at position `noun` instead (out of the grammar
    when `noun` is not the subject: a control for what the verb's meaning alone points at).

    Shapes: Sentence, int -> Sentence (same positions).
    Taught in 09_attention_in_a_real_model.
    """
    words = list(sentence.words)
    words[sentence.verb] = VERB_OF[words[noun]]
    return sentence._replace(words=tuple(words))
