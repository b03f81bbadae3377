"""helpers/gpt_probes.py: the grammar's exact next-word probabilities against counts of sampled text, the loss
floor, the perfect sampler's share of unseen sentences, the spread of the words' vectors, and a head's row
replaced (against the model with that head silenced)."""

from collections import Counter

import numpy as np
import pytest

from helpers import gpt_probes as gp
from helpers import grammar
from helpers import next_word as nw
from helpers import tiny_gpt as tg


@pytest.fixture(scope="module")
def sampled():
    """20,000 sentences of the grammar, drawn as the notebooks draw them."""
    rng = np.random.default_rng(7)
    return [grammar.random_sentence(rng) for _ in range(20_000)]


def test_the_shortest_sentences_probability_is_the_product_of_the_grammars_choices():
    # no opening 0.7, no adjective 0.5, one of 8 subjects, no phrase before the verb 0.3, none after 0.6
    assert np.isclose(gp.sentence_probability("the cat meows"), 0.7 * 0.5 / 8 * 0.3 * 0.6)
    # an opening (0.3 / 2), an adjective (0.5 / 4), one phrase before (0.4, a preposition 1/3, no adjective, 1 of 7)
    expected = 0.15 * 0.5 / 4 / 8 * 0.4 * (1 / 3) * 0.5 / 7 * 0.6
    assert np.isclose(gp.sentence_probability("today the big dog near the cats barks"), expected)
    assert gp.sentence_probability("the cat near the cat meows") == 0  # a noun twice
    assert gp.sentence_probability("the cat meow") == 0


def test_sentence_probabilities_match_how_often_the_sampler_draws_them(sampled):
    counts = Counter(s.words for s in sampled)
    for words, count in counts.most_common(12):
        p = gp.sentence_probability(words)
        assert abs(count - p * len(sampled)) < 5 * np.sqrt(p * len(sampled)), (words, count, p)
    common = counts.most_common(100)  # together: a few percent off would show
    expected = len(sampled) * sum(gp.sentence_probability(words) for words, _ in common)
    assert abs(sum(count for _, count in common) - expected) < 4 * np.sqrt(expected)


def test_next_word_probabilities_sum_to_one_and_match_the_sampled_text(sampled):
    after_the = Counter(s.words[s.words.index("the") + 1] for s in sampled)  # the word after a sentence's first "the"
    probs = gp.grammar_next_word(["the"])
    assert np.isclose(probs.sum(), 1) and probs[nw.WORD_ID["cat"]] == pytest.approx(0.5 / 8)
    for word, count in after_the.items():
        assert abs(count / len(sampled) - probs[nw.WORD_ID[word]]) < 0.01, word
    for s in sampled[:200]:
        for t in range(len(s.words) + 1):
            probs = gp.grammar_next_word(s.words[:t])
            assert np.isclose(probs.sum(), 1)
            assert probs[nw.WORD_ID[(*s.words, ".")[t]]] > 0  # the word that came is possible


def test_a_prefix_outside_the_grammar_is_named():
    with pytest.raises(ValueError, match="leaves the grammar at word 2"):
        gp.grammar_next_word("the cat the")
    with pytest.raises(ValueError, match="probability 0"):
        gp.grammar_losses(nw.encode("the cat barks ."))


def test_the_losses_of_a_stream_add_up_to_its_sentences_probabilities(sampled):
    ids = nw.stream(sampled[:50])
    first = gp.grammar_next_word([])[ids[0]]  # the one word not scored: the first
    total = -sum(np.log(gp.sentence_probability(s.words)) for s in sampled[:50])
    assert np.isclose(gp.grammar_losses(ids).sum(), total + np.log(first))


def test_window_losses_match_the_text_after_a_cut_word(sampled):
    """Windows start anywhere in the stream: after a lone "cat", the next word's share in the sampled text."""
    ids = nw.stream(sampled)
    cat = np.flatnonzero(ids[:-1] == nw.WORD_ID["cat"])
    counts = np.bincount(ids[cat + 1], minlength=len(nw.VOCAB)) / len(cat)  # (V,): what followed each "cat"
    came = np.flatnonzero(counts)
    exact = np.exp([-gp.grammar_window_losses(np.array([nw.WORD_ID["cat"], w]))[0] for w in came])
    assert np.allclose(exact, counts[came], atol=0.02) and exact.sum() == pytest.approx(1)
    whole, end = gp.grammar_losses(ids[:2001]), int(np.argmax(ids == nw.WORD_ID["."]))
    assert np.allclose(gp.grammar_window_losses(ids[end : end + 33]), whole[end : end + 32])  # "." first: all known
    assert not np.allclose(gp.grammar_window_losses(ids[:33]), whole[:32])  # "the" first: maybe after "near"
    assert gp.grammar_loss(ids, 32) > gp.grammar_loss(ids, 32, whole_text=True) + 0.03  # the cut costs


def test_the_unseen_share_is_what_a_sampler_finds(sampled):
    seen = sampled[:3000]
    known = {s.words for s in seen}
    assert gp.unseen_share([]) == 1 and gp.unseen_share(["the cat meows".split()]) == pytest.approx(1 - 0.007875)
    found = np.mean([s.words not in known for s in sampled[3000:]])
    assert abs(gp.unseen_share(seen) - found) < 0.02


def test_spread_is_zero_for_one_vector_and_does_not_depend_on_scale(rng):
    x = rng.normal(size=(4, 5, 8))
    assert gp.spread(np.broadcast_to(x[0, 0], x.shape)) == pytest.approx(0, abs=1e-12)
    assert gp.spread(3 * x) == pytest.approx(gp.spread(x))
    assert gp.spread(np.array([[1.0, 0.0], [-1.0, 0.0]])) == pytest.approx(1)


SMALL = tg.Config(d_model=8, n_heads=2, n_layers=2, d_ff=12, context=6)


def test_sublayer_spreads_follow_the_blocks(rng):
    params = tg.init_params(SMALL, rng)
    ids = rng.integers(SMALL.vocab_size, size=(3, 6))
    spreads = gp.sublayer_spreads(tg.forward_and_saved(params, SMALL, ids)[1])
    assert len(spreads) == 2 * SMALL.n_layers + 1 and spreads[0] == gp.spread(params["E"][ids])


def test_a_zeroed_row_in_the_last_layer_is_that_head_silenced_at_that_word(rng):
    params = tg.init_params(SMALL, rng)
    ids, rows = rng.integers(SMALL.vocab_size, size=(4, 6)), np.array([5, 2, 3, 0])
    last, every = SMALL.n_layers - 1, np.arange(4)
    logits, saved = tg.forward_and_saved(params, SMALL, ids)
    unchanged = gp.forward_with_head_row(params, SMALL, ids, last, 1, rows, saved["weights"][last][every, 1, rows])
    assert np.allclose(unchanged, logits, atol=1e-12)
    silenced = dict(params)
    silenced[f"{last}.W_v"] = params[f"{last}.W_v"].copy()
    silenced[f"{last}.W_v"][:, 4:] = 0  # head 1's values: it adds nothing anywhere
    edited = gp.forward_with_head_row(params, SMALL, ids, last, 1, rows, np.zeros(ids.shape))
    assert np.allclose(edited[every, rows], tg.forward(silenced, SMALL, ids)[every, rows])
    assert not np.allclose(edited[every, rows], logits[every, rows])
    others = np.ones(ids.shape, dtype=bool)
    others[every, rows] = False
    assert np.allclose(edited[others], logits[others])  # the last layer: no other word reads the edited one
    with pytest.raises(ValueError, match="pre-LN"):
        gp.forward_with_head_row(params, tg.Config(norm="post"), ids, 0, 0, rows, np.zeros(ids.shape))


def test_verb_heads_chooses_as_verb_agreement_does_and_its_rows_add_up(rng):
    params = tg.init_params(SMALL, rng)
    sentences = grammar.make_corpus(1, 30, rng=1)[1]
    found = gp.verb_heads(params, SMALL, sentences)
    model = lambda ids: tg.forward(params, SMALL, ids)  # noqa: E731
    assert np.mean(found["chosen"] == found["verbs"]) == nw.verb_agreement(model, sentences, 0, nw.WORD_ID)
    parts = found["on_subject"] + found["on_between"] + found["on_end"]
    assert parts.shape == (2, 2, 30) and np.all(parts <= 1 + 1e-12)
    assert found["zeroed"].shape == found["onto_end"].shape == (2, 2, 30)
    assert set(np.unique(found["zeroed"])) <= {nw.WORD_ID[v] for v in grammar.VERBS}
