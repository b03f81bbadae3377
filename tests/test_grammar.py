"""helpers/grammar.py: every sentence follows the grammar, and the three guarantees the 08 task rests on
hold by construction (the verb is fixed by the subject; not by the words without their order; not by its position)."""

from collections import Counter

import numpy as np
import pytest

from helpers import grammar as g


@pytest.fixture(scope="module")
def sentences():
    rng = np.random.default_rng(0)
    return [g.random_sentence(rng) for _ in range(4000)]


def _nouns(sentence):
    return [i for i, word in enumerate(sentence.words) if word in g.NOUNS]


def test_every_sentence_is_grammatical_and_its_verb_agrees_with_its_subject(sentences):
    for s in sentences:
        assert set(s.words) <= set(g.VOCAB[2:]) and 3 <= len(s.words) <= g.T_MAX
        assert s.words[s.verb] == g.VERB_OF[s.words[s.subject]]
        nouns = _nouns(s)
        assert nouns[0] == s.subject and tuple(nouns[1:]) == s.attractors  # the subject is the first noun
        assert len({s.words[i] for i in nouns}) == len(nouns)  # no noun twice
        assert [w for w in s.words if w in g.VERBS] == [s.words[s.verb]]  # exactly one verb
        assert g.parse(s.words) == s and g.parse(" ".join(s.words)) == s


def test_the_distance_to_the_subject_varies_and_attractors_sit_on_both_sides(sentences):
    distances = Counter(s.verb - s.subject for s in sentences)
    assert sorted(distances) == [1, 4, 5, 7, 8, 9]
    assert min(distances.values()) > 100
    assert sum(any(a < s.verb for a in s.attractors) for s in sentences) > 1000  # between subject and verb
    assert sum(any(a > s.verb for a in s.attractors) for s in sentences) > 1000  # after the verb
    assert max(len(s.words) for s in sentences) == g.T_MAX


def test_swapping_the_subject_with_any_other_noun_gives_a_sentence_with_the_same_words_and_another_verb(sentences):
    for s in sentences[:500]:
        visible = Counter(w for i, w in enumerate(s.words) if i != s.verb)
        for a in s.attractors:
            words = list(s.words)
            words[s.subject], words[a] = words[a], words[s.subject]
            words[s.verb] = g.VERB_OF[words[s.subject]]
            twin = g.parse(words)  # in the grammar
            assert Counter(w for i, w in enumerate(twin.words) if i != twin.verb) == visible
            assert twin.words[twin.verb] != s.words[s.verb]


def test_the_subject_is_drawn_independently_of_the_sentence_shape(sentences):
    # within every verb position, each of the 8 nouns is the subject about 1/8 of the time
    by_position = {}
    for s in sentences:
        by_position.setdefault(s.verb, Counter())[s.words[s.subject]] += 1
    for counts in by_position.values():
        n = sum(counts.values())
        if n >= 400:
            shares = np.array([counts[noun] for noun in g.NOUNS]) / n
            assert np.all(np.abs(shares - 1 / 8) < 4 * np.sqrt(1 / 8 * 7 / 8 / n))  # within 4 standard errors
    # and the swap twins are equally likely: a subject/attractor pair is as common as the reverse pair
    pairs = Counter((s.words[s.subject], s.words[s.attractors[0]]) for s in sentences if s.attractors)
    for (a, b), n in pairs.items():
        assert abs(n - pairs[(b, a)]) < 4 * np.sqrt(n + pairs[(b, a)])


def test_the_ceilings_follow_from_the_counts(sentences):
    assert g.position_only_ceiling() == 1 / 8
    assert g.order_free_ceiling(sentences[:3]) == pytest.approx(
        np.mean([1 / (1 + len(s.attractors)) for s in sentences[:3]])
    )
    single = g.parse("the cat meows")
    double = g.parse("the cat near the dogs meows")
    assert g.order_free_ceiling([single]) == 1.0 and g.order_free_ceiling([single, double]) == 0.75


def test_make_corpus_is_seeded_and_the_held_out_sentences_are_new():
    train, test = g.make_corpus(300, 100, rng=3)
    assert len(train) == 300 and len(test) == 100
    assert not {s.words for s in train} & {s.words for s in test}
    assert len({s.words for s in test}) == 100
    assert g.make_corpus(300, 100, rng=3) == (train, test)
    assert g.make_corpus(300, 100, rng=4) != (train, test)


def test_make_corpus_says_when_it_cannot_find_new_sentences(monkeypatch):
    monkeypatch.setattr(g, "random_sentence", lambda rng: g.parse("the cat meows"))
    with pytest.raises(ValueError, match="held-out"):
        g.make_corpus(5, 2, rng=0)


def test_encode_pads_and_mask_positions_hides_one_word_each():
    sentences = [g.parse("the cat meows"), g.parse("today the dogs near the cow bark")]
    ids, lengths = g.encode(sentences)
    assert ids.shape == (2, 7) and lengths.tolist() == [3, 7]
    assert [g.VOCAB[i] for i in ids[0]] == ["the", "cat", "meows"] + [g.PAD] * 4
    assert g.encode([["the", "cat", "meows"]], T=5)[0].shape == (1, 5)
    masked, targets = g.mask_positions(ids, np.array([2, 2]))
    assert [g.VOCAB[t] for t in targets] == ["meows", "dogs"]
    assert masked[0, 2] == masked[1, 2] == g.WORD_ID[g.MASK]
    assert (masked != ids).sum() == 2 and ids[0, 2] == g.WORD_ID["meows"]  # the input is left alone


def test_determining_position():
    s = g.parse("the cat near the dogs meows")
    assert g.determining_position(s, 5) == 1 and g.determining_position(s, 1) == 5
    assert g.determining_position(s, 4) is None


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: g.encode([["the", "cat", "purrs"]]), ValueError, "unknown words"),
        (lambda: g.encode([["the", "cat", "meows"]], T=2), ValueError, "more than T=2"),
        (lambda: g.mask_positions(np.ones((2, 3), int), np.array([0])), ValueError, "one per sentence"),
        (lambda: g.mask_positions(np.array([[3, 4, 0]]), np.array([2])), ValueError, "padding"),
        (lambda: g.make_corpus(0, 5), ValueError, "n_train"),
        (lambda: g.make_corpus(5, 2.5), TypeError, "n_test"),
        (lambda: g.parse("the cat near the dogs bark"), ValueError, "'meows'"),
        (lambda: g.parse("the cat meows loudly"), ValueError, "preposition or the end"),
    ],
)
def test_bad_input_raises_a_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_nearest_attractor_is_the_noun_closest_to_the_verb(sentences):
    assert g.nearest_attractor(g.parse("the dog barks")) is None
    assert g.nearest_attractor(g.parse("the dog near the cat behind the cows barks with the bird")) == 7  # cows
    assert g.nearest_attractor(g.parse("the dog barks with the big bird")) == 6
    for s in sentences[:500]:
        if s.attractors:
            nearest = g.nearest_attractor(s)
            assert nearest in s.attractors
            assert all(abs(nearest - s.verb) < abs(a - s.verb) for a in s.attractors if a != nearest)


def test_with_verb_of_puts_in_the_verb_of_another_noun():
    s = g.parse("the dog behind the young cats barks")
    swapped = g.with_verb_of(s, 5)
    assert swapped.words == ("the", "dog", "behind", "the", "young", "cats", "meow")
    assert swapped[1:] == s[1:]  # the same positions
    assert g.with_verb_of(s, s.subject) == s
    with pytest.raises(ValueError, match="expected the verb 'barks'"):
        g.parse(swapped.words)  # out of the grammar, on purpose
