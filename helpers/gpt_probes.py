"""Measuring the tiny GPT: the grammar's own next-word probabilities (the loss no model can expect to beat),
how often a perfect sampler of the grammar writes a sentence a text lacks, how different the words' vectors
stay sublayer by sublayer, and what one head does (its row at a word replaced).

The grammar is helpers.grammar's: every probability here is computed from its rules, exactly, not sampled.
Taught in 11_tiny_gpt.
"""

import functools

import numpy as np

from helpers import grammar
from helpers.gpt_block import block, causal_self_attention, feed_forward
from helpers.multihead import split_heads
from helpers.next_word import END, VOCAB, WORD_ID, before_the_verb
from helpers.tiny_gpt import forward_and_saved, layer_params
from helpers.transformer import named_layer_norm

__all__ = [
    "grammar_next_word",
    "sentence_probability",
    "grammar_losses",
    "grammar_window_losses",
    "grammar_loss",
    "unseen_share",
    "spread",
    "sublayer_spreads",
    "forward_with_head_row",
    "verb_heads",
]

_KIND = dict.fromkeys(grammar.OPENINGS, "opening") | {"the": "the"} | dict.fromkeys(grammar.ADJECTIVES, "adjective")
_KIND |= dict.fromkeys(grammar.NOUNS, "noun") | dict.fromkeys(grammar.VERBS, "verb")
_KIND |= dict.fromkeys(grammar.PREPOSITIONS, "preposition")
_START = ("start", None, frozenset(), False)  # (kind of the last word, subject, other nouns, verb read yet?)


def _spread_over(words, total):
    return {w: total / len(words) for w in words}


@functools.cache
def _choices(state):
    """{next word: probability} after a sentence's words that led to `state` (what grammar.random_sentence draws)."""
    kind, subject, others, verb_read = state
    unused = [n for n in grammar.NOUNS if n != subject and n not in others]
    if kind == "start":
        return {**_spread_over(grammar.OPENINGS, grammar.P_OPENING), "the": 1 - grammar.P_OPENING}
    if kind in ("opening", "preposition"):
        return {"the": 1.0}
    if kind == "the":
        return {
            **_spread_over(grammar.ADJECTIVES, grammar.P_ADJECTIVE),
            **_spread_over(unused, 1 - grammar.P_ADJECTIVE),
        }
    if kind == "adjective":
        return _spread_over(unused, 1.0)
    if kind == "verb":
        return {END: 1 - grammar.P_PHRASE_AFTER, **_spread_over(grammar.PREPOSITIONS, grammar.P_PHRASE_AFTER)}
    if verb_read:  # the noun after the verb ends the sentence
        return {END: 1.0}
    p_more = grammar.P_PHRASES_BEFORE[len(others) :]  # P(this many phrases before the verb, or more)
    p_verb = p_more[0] / sum(p_more)
    return {grammar.VERB_OF[subject]: p_verb, **(_spread_over(grammar.PREPOSITIONS, 1 - p_verb) if p_verb < 1 else {})}


def _after(state, word):
    """The state after `word` (any word the grammar allows in `state`)."""
    if word == END:
        return _START
    kind, subject, others, verb_read = state
    if _KIND[word] == "noun":
        subject, others = (word, others) if subject is None else (subject, others | {word})
    return (_KIND[word], subject, others, verb_read or _KIND[word] == "verb")


def _state_of(prefix):
    state = _START
    for i, word in enumerate(prefix):
        if word not in _choices(state):
            raise ValueError(f"{' '.join(prefix)!r} leaves the grammar at word {i} ({word!r})")
        state = _after(state, word)
    return state


def grammar_next_word(prefix):
    """The grammar's probabilities for the next word after a sentence's first words (none: a sentence starts).

    Shapes: a list of words (or a string), without "." -> (len(VOCAB),), summing to 1; "." ends the sentence.
    """
    probs = np.zeros(len(VOCAB))  # (V,)
    for word, p in _choices(_state_of(prefix.split() if isinstance(prefix, str) else list(prefix))).items():
        probs[WORD_ID[word]] = p
    return probs


def sentence_probability(words):
    """How likely grammar.random_sentence is to draw exactly this sentence (0 for one outside the grammar).

    Shapes: a list of words (or a string) -> float.
    """
    words, state, p = (words.split() if isinstance(words, str) else list(words)) + [END], _START, 1.0
    for word in words:
        p *= _choices(state).get(word, 0.0)
        if p == 0:
            return 0.0
        state = _after(state, word)
    return p


def _moved(belief, word):
    """P(state, then `word`), moved on to the state after the word: not normalised."""
    moved = {}
    for state, mass in belief.items():
        if p := _choices(state).get(word, 0.0):
            after = _after(state, word)
            moved[after] = moved.get(after, 0.0) + mass * p
    return moved


def _added(*beliefs):
    total = {}
    for belief in beliefs:
        for state, mass in belief.items():
            total[state] = total.get(state, 0.0) + mass
    return total


def _normalised(belief):
    total = sum(belief.values())
    return {state: mass / total for state, mass in belief.items()}


@functools.cache
def _stationary():
    """P(the state before a word), for a word drawn from anywhere in an endless stream of the grammar's sentences:
    how often a sentence passes through each state, over the words per sentence (9.7 with its ".")."""
    visits, frontier = {_START: 1.0}, {_START: 1.0}
    while frontier:  # a sentence's states form no cycle: each step reads one more word
        frontier = _added(*(_moved(frontier, word) for word in VOCAB if word != END))
        visits = _added(visits, frontier)
    return _normalised(visits)


def _observe(belief, word):
    """P(state) after reading `word`, from P(state) before it: each state weighted by how likely it makes the word."""
    return _normalised(_moved(belief, word))


@functools.cache
def _window_belief(words):
    """P(state | a window's first words), the window cut from anywhere in the stream (words: a tuple)."""
    return _observe(_stationary() if len(words) == 1 else _window_belief(words[:-1]), words[-1])


def _probability(belief, word):
    p = sum(mass * _choices(state).get(word, 0.0) for state, mass in belief.items())
    if p == 0:
        raise ValueError(f"the text leaves the grammar at {word!r}: the grammar gives it probability 0")
    return p


def _losses(belief, words):
    """-ln P(each word | the words before it), P(state) being `belief` before the first of them."""
    losses = []
    for word in words:
        losses.append(-np.log(_probability(belief, word)))
        belief = _observe(belief, word)
    return losses


def grammar_losses(ids):
    """-ln P(word t + 1 | the text up to word t) by the grammar, for every word of a stream but the first.

    The grammar knows each sentence from its start (next_word.stream starts with a sentence).
    Shapes: ids int (N,) -> (N - 1,).
    """
    words = [VOCAB[i] for i in ids]
    return np.array(_losses(_observe({_START: 1.0}, words[0]), words[1:]))


def grammar_window_losses(window):
    """-ln P(word t + 1 | the window's words 0 to t) by the grammar, reading only the window, as a model does.

    The words before it are unknown, so a sentence cut by the window's start is guessed from what remains of it.
    Shapes: window int (T + 1,) -> (T,).
    """
    words = tuple(VOCAB[i] for i in window)
    known = words.index(END) + 1 if END in words else len(words)  # after the first ".", a sentence starts
    cut = [-np.log(_probability(_window_belief(words[:t]), words[t])) for t in range(1, known)]
    return np.array(cut + _losses({_START: 1.0}, words[known:]))


def grammar_loss(ids, length, whole_text=False):
    """The grammar's own mean next-word loss: the best any model can expect on text of the grammar.

    On the windows next_word.held_out_loss scores, each read alone, as a model reads it; whole_text=True: the
    grammar knows the text before each window too (each sentence from its start).
    Shapes: ids int (N,) -> float.
    """
    n = (len(ids) - 1) // length  # held_out_loss's windows: ids[k*length : (k+1)*length + 1]
    if whole_text:
        return float(grammar_losses(ids[: n * length + 1]).mean())
    return float(np.mean([grammar_window_losses(ids[k * length : (k + 1) * length + 1]) for k in range(n)]))


def unseen_share(sentences):
    """How often a perfect sampler of the grammar draws a sentence that is not among `sentences`.

    Math: 1 - the sum of P(s) over their different sentences s.
    Shapes: a list of Sentence (or of word lists) -> float.
    """
    distinct = {tuple(s.words if isinstance(s, grammar.Sentence) else s) for s in sentences}
    return 1 - sum(sentence_probability(list(s)) for s in distinct)


def spread(x):
    """How different the words' vectors are: their distance from the mean vector, over their size (0: all one).

    Shapes: x (..., d) -> float. Math: ||x - mean|| / ||x||, over every vector of x.
    """
    flat = np.reshape(x, (-1, np.shape(x)[-1]))  # (N, d): every word of every window
    return float(np.linalg.norm(flat - flat.mean(axis=0)) / np.linalg.norm(flat))


def sublayer_spreads(saved):
    """The spread at each block's input, after its attention sublayer, and after the last block.

    saved: what tiny_gpt.forward_and_saved keeps. Shapes: -> a list of 2 * n_layers + 1 floats.
    """
    spreads = [spread(s) for part in saved["blocks"] for s in (part["x"], part["x1"])]
    return spreads + [spread(saved["x"])]


def forward_with_head_row(params, config, ids, layer, head, rows, new_rows):
    """tiny_gpt.forward with one head's attention row replaced at one word of each window.

    In `layer`, `head` at word rows[b] of window b takes new_rows[b] as its weights (zeros: the head adds nothing
    there). Pre-LN with residuals only.

    Shapes: ids int (B, T), rows int (B,), new_rows (B, T) -> logits (B, T, V).
    """
    if config.norm != "pre" or not config.residual:
        raise ValueError(f"forward_with_head_row runs the pre-LN model with residuals, got {config}")
    every, d_head = np.arange(len(ids)), config.d_model // config.n_heads
    x = params["E"][ids]  # (B, T, d)
    for l in range(config.n_layers):
        p = layer_params(params, l)
        if l != layer:
            x = block(p, x, config.n_heads, window=config.context)[0]
            continue
        h = named_layer_norm(p, "ln1", x)  # (B, T, d): what the attention reads
        delta, weights = causal_self_attention(p, h, config.n_heads, window=config.context)
        values = split_heads(h @ p["W_v"], config.n_heads)[:, head]  # (B, T, d_head)
        change = np.asarray(new_rows) - weights[every, head, rows]  # (B, T): the new row minus the old
        columns = slice(head * d_head, (head + 1) * d_head)  # the head's rows of W_o
        delta[every, rows] += np.einsum("bt,btd->bd", change, values) @ p["W_o"][columns]  # (B, d)
        x = x + delta
        x = x + feed_forward(p, named_layer_norm(p, "ln2", x))[0]
    z = named_layer_norm(params, "ln_f", x)  # (B, T, d)
    return z @ params["W_out"] + params["b_out"]  # (B, T, V)


def verb_heads(params, config, sentences):
    """Where each head looks at the word before each sentence's verb, and what the model chooses without it.

    At that word the model chooses the verb: which verb it ranks first, as it is and with a head's row there zeroed
    or put all on the "." before the sentence.

    Shapes: N Sentence -> dict: "verbs", "chosen" (N,) the right verb's id and the model's likeliest verb;
            "on_subject", "on_between", "on_end" (n_layers, n_heads, N) each head's weight on the subject, on the
            nouns between it and the verb, on the "."; "zeroed", "onto_end" (n_layers, n_heads, N) the likeliest verb.
    """
    ids, rows, verbs = before_the_verb(sentences, WORD_ID[END], WORD_ID)  # (N, T): each sentence after a "."
    every, verb_ids = np.arange(len(sentences)), np.array([WORD_ID[v] for v in grammar.VERBS])

    def likeliest(logits):  # (N, T, V) -> (N,): the verb ranked first at the word before the verb
        return verb_ids[np.argmax(logits[every, rows][:, verb_ids], axis=-1)]

    logits, saved = forward_and_saved(params, config, ids)
    weights = np.stack([w[every, :, rows] for w in saved["weights"]]).transpose(0, 2, 1, 3)  # (L, h, N, T)
    between = np.zeros(ids.shape, dtype=bool)  # (N, T): the nouns between subject and verb (+ 1: the ".")
    for n, s in enumerate(sentences):
        between[n, [a + 1 for a in s.attractors if a < s.verb]] = True
    found = {"verbs": verbs, "chosen": likeliest(logits), "on_end": weights[..., 0]}
    found["on_subject"] = weights[..., every, [s.subject + 1 for s in sentences]]  # (L, h, N)
    found["on_between"] = (weights * between).sum(axis=-1)  # (L, h, N)
    shape = (config.n_layers, config.n_heads, len(sentences))
    found["zeroed"], found["onto_end"] = np.zeros(shape, dtype=int), np.zeros(shape, dtype=int)
    for layer in range(config.n_layers):
        for head in range(config.n_heads):
            for name, row in (("zeroed", np.zeros(ids.shape)), ("onto_end", np.eye(ids.shape[1])[[0] * len(ids)])):
                edited = forward_with_head_row(params, config, ids, layer, head, rows, row)
                found[name][layer, head] = likeliest(edited)
    return found
