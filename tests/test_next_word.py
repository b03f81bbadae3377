"""helpers/next_word.py: the stream and its windows, checking a prompt and the sampling settings, sampling the next
word, and the judges of what a model writes (the grammar's shape, the bigram model, verb agreement)."""

import numpy as np
import pytest

from helpers import grammar
from helpers import next_word as nw


def test_prompt_ids_takes_words_or_a_string_and_names_what_is_wrong():
    assert nw.prompt_ids("the cat") == nw.prompt_ids(["the", "cat"]) == [nw.WORD_ID["the"], nw.WORD_ID["cat"]]
    with pytest.raises(ValueError, match=r"prompt has unknown words \['unicorn'\]"):
        nw.prompt_ids(["the", "unicorn"])
    with pytest.raises(ValueError, match="prompt must hold at least one word"):
        nw.prompt_ids("")
    with pytest.raises(TypeError, match="prompt must be a list of words"):
        nw.prompt_ids([1, 2])


@pytest.mark.parametrize(
    "temperature, top_k, words",
    [
        (-0.5, None, "temperature must be a number >= 0"),
        ("hot", None, "temperature"),
        (True, None, "temperature"),
        (np.inf, None, "temperature"),
        (1.0, 0, r"top_k must be None or an int in \[1, 9\]"),
        (1.0, 10, "top_k"),
        (1.0, 2.0, "top_k"),
    ],
)
def test_the_sampling_settings_are_checked_where_the_distribution_is_made(temperature, top_k, words):
    with pytest.raises(ValueError, match=words):
        nw.check_sampling(temperature, top_k, 9)
    with pytest.raises(ValueError, match=words):
        nw.next_word_distribution(np.zeros(9), temperature, top_k)


def test_next_word_distribution_temperature_and_top_k(rng):
    logits = rng.normal(size=9)
    assert np.allclose(nw.next_word_distribution(logits, 0.5), np.exp(2 * logits) / np.exp(2 * logits).sum())
    greedy = nw.next_word_distribution(logits, 0)
    assert greedy[np.argmax(logits)] == 1 and greedy.sum() == 1
    top3 = nw.next_word_distribution(logits, 1.0, top_k=3)
    assert np.count_nonzero(top3) == 3 and set(np.nonzero(top3)[0]) == set(np.argsort(-logits)[:3])
    assert np.isclose(top3.sum(), 1)


def test_sample_draws_each_word_as_often_as_its_probability():
    probs = np.array([0.5, 0.0, 0.3, 0.2])
    rng = np.random.default_rng(0)
    counts = np.bincount([nw.sample(probs, rng) for _ in range(20000)], minlength=4)
    assert counts[1] == 0 and np.allclose(counts / 20000, probs, atol=0.015)


def test_stream_and_windows():
    ids = nw.stream([["the", "cat", "meows"], ["the", "dogs", "bark"]])
    assert [nw.VOCAB[i] for i in ids] == "the cat meows . the dogs bark .".split()
    windows = nw.random_windows(np.arange(10), 4, 6, np.random.default_rng(0))
    assert windows.shape == (6, 4) and np.all(np.diff(windows, axis=1) == 1)
    with pytest.raises(ValueError, match="unknown words"):
        nw.encode(["the", "Cat"])


# --- judging what it writes --------------------------------------------------------------------------


def test_judge_accepts_exactly_what_the_grammar_parses():
    rng = np.random.default_rng(0)
    for _ in range(300):
        words = list(grammar.random_sentence(rng).words)
        assert nw.judge(words) == {"shape": True, "agrees": True, "distinct": True}
        broken = list(words)
        i = rng.integers(len(broken))
        broken[i] = nw.VOCAB[rng.integers(1, len(nw.VOCAB))]  # one word replaced by any word
        verdict = nw.judge(broken)
        try:
            grammar.parse(broken)
            parsed = True
        except ValueError:
            parsed = False
        assert parsed == (verdict["shape"] and verdict["agrees"] and verdict["distinct"]), broken


def test_judge_names_each_kind_of_mistake():
    assert nw.judge("the cat near the cat meows") == {"shape": True, "agrees": True, "distinct": False}
    assert nw.judge("the cats near the dog meows") == {"shape": True, "agrees": False, "distinct": True}
    assert nw.judge("the cat the meows") == {"shape": False, "agrees": False, "distinct": False}
    assert not nw.judge("the cat near the dog behind the cow with the bird meows")["shape"]  # 3 phrases before


def test_sentence_report_counts():
    sentences = [
        s.split() for s in ("the cat meows", "the cat meows", "the cat near the cat meows", "the dog meows", "cat")
    ]
    report = nw.sentence_report(sentences, corpus=[["the", "cat", "meows"]])
    assert report["sentences"] == 5 and report["different"] == 4 and report["new"] == 0
    assert report["shape"] == 0.8 and report["agrees"] == 0.6 and report["grammatical"] == 0.4
    assert nw.split_sentences("the cat . the dog barks . the cow moos . the".split()) == [
        ["the", "dog", "barks"],
        ["the", "cow", "moos"],
    ]
    with pytest.raises(ValueError, match="no finished sentence"):
        nw.sentence_report([])


def test_bigram_counts_and_loss():
    ids = np.array([0, 1, 2, 1, 2, 0])
    bigram = nw.Bigram(ids, 3)
    expected = np.array([[1, 2, 1], [1, 1, 3], [2, 2, 1]]) / np.array([[4], [5], [5]])
    assert np.allclose(bigram.probs, expected)
    loss = nw.held_out_loss(bigram.logits, ids, 5)
    assert np.isclose(loss, -np.mean(np.log([expected[a, b] for a, b in zip(ids[:-1], ids[1:], strict=True)])))
    assert len(bigram.generate([0], 10, rng=0)) == 11


def test_verb_agreement_of_an_oracle_and_of_a_constant():
    sentences = grammar.make_corpus(1, 40, rng=2)[1]
    verb_ids = [nw.WORD_ID[v] for v in grammar.VERBS]

    def oracle(ids):
        logits = np.zeros(ids.shape + (len(nw.VOCAB),))
        for n, s in enumerate(sentences):
            logits[n, s.verb, nw.WORD_ID[s.words[s.verb]]] = 5.0
        return logits

    assert nw.verb_agreement(oracle, sentences, nw.WORD_ID["."], nw.WORD_ID) == 1.0
    constant = nw.verb_agreement(
        lambda ids: np.zeros(ids.shape + (len(nw.VOCAB),)), sentences, nw.WORD_ID["."], nw.WORD_ID
    )
    right = np.mean([s.words[s.verb] == nw.VOCAB[verb_ids[0]] for s in sentences])
    assert constant == right
