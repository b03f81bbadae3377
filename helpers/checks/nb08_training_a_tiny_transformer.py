"""The exercises of 08_training_a_tiny_transformer."""

import itertools

import numpy as np

from helpers.checks._core import Case, Mismatch, check_rng, exercise
from helpers.checks._expect import same
from helpers.checks._families import scores_divided_by, wrong_array_weighted
from helpers.checks._reference import multihead_loop

_NAMES = ("W_q", "W_k", "W_v", "W_o")


def _block_families(got, expected, case):
    """Projections by transposed weight matrices (any of the four), values taken from the keys, scores scaled wrong."""
    X, *W, n_heads = case.args
    for flips in list(itertools.product((False, True), repeat=4))[1:]:  # every choice of matrices transposed
        flipped = [w.T if flip else w for w, flip in zip(W, flips, strict=True)]
        if same(got, X + multihead_loop(X, X, *flipped, n_heads)) and not same(got, expected):
            names = [name for name, flip in zip(_NAMES, flips, strict=True) if flip]
            names = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
            raise Mismatch(
                f"{case.what}: you projected with the transpose of {names}. A word is a row and a projection is that "
                f"row times W as it is, ({X.shape[1]},) by {W[0].shape}: row i of W belongs to input dimension i",
                "transposed-weights",
            )
    keys = X + multihead_loop(X, X, W[0], W[1], W[1], W[3], n_heads)
    wrong_array_weighted(got, {"the keys (X times W_k)": keys}, case.what, "the values")
    d_model = X.shape[1]
    sizes = {"d_head": d_model // n_heads, "d_model": d_model, "n_heads": n_heads, "T": len(X)}
    scale = ("√d_head", np.sqrt(d_model // n_heads))
    scores_divided_by(got, lambda c: X + multihead_loop(X, X, *W, n_heads, scale=1 / c), case.what, sizes, scale)


@exercise(
    hint="Project X into queries, keys and values, split each into n_heads heads, run scaled dot-product attention "
    "in each head, put the heads side by side again and project them with W_o: that is the change ΔE. The "
    "block returns X + ΔE.",
    hint2="Check the shapes at each step: every projection (T, d_model), each head (T, d_head), the model's width "
    "shared out equally among the heads, each head's weights (T, T) with rows summing to 1 over the keys, and ΔE "
    "(T, d_model) again. A property to test: with W_o all zeros, ΔE is zero and the block gives back X "
    "unchanged. The helpers of notebook 06 do the splitting, the attention and the merging.",
    solution="""
        def residual_attention_block(X, W_q, W_k, W_v, W_o, n_heads):
            T, d_model = X.shape
            d_head = d_model // n_heads

            def split(M):  # (T, d_model) -> (h, T, d_head)
                return M.reshape(T, n_heads, d_head).transpose(1, 0, 2)

            Q, K, V = split(X @ W_q), split(X @ W_k), split(X @ W_v)
            scores = Q @ K.transpose(0, 2, 1) / np.sqrt(d_head)  # (h, T, T)
            weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
            weights /= weights.sum(axis=-1, keepdims=True)  # each row sums to 1
            heads = weights @ V  # (h, T, T) @ (h, T, d_head) -> (h, T, d_head)
            delta_E = heads.transpose(1, 0, 2).reshape(T, d_model) @ W_o  # (T, d_model)
            return X + delta_E  # the residual: E' = E + ΔE
    """,
    mistakes=r"""
        no-residual: `return X + delta_E` → `return delta_E`
            {what} returned ΔE, the change that attention proposes; the block returns E′ = X + ΔE: the input, with the
            change added to it
        no-output-projection: `reshape(T, d_model) @ W_o` → `reshape(T, d_model)`
            {what}: the heads, put side by side, were added to X as they are; ΔE is the merged heads projected by W_o, a
            ({d_model}, {d_model}) matrix, and then added
        scaled-by-d-model: `/ np.sqrt(d_head)` → `/ np.sqrt(d_model)`
            {what}: you scaled the scores by 1/√d_model; a head compares vectors of width d_head, the model's width
            shared among the heads ({d_head}), so its scores are scaled by 1/√d_head
        not-scaled: `/ np.sqrt(d_head)` → ``
            {what}: the scores were not scaled; each head divides its scores by √d_head = √{d_head} before the softmax
            (notebook 04)
        softmax-over-queries: `max(axis=-1` → `max(axis=-2`, `sum(axis=-1` → `sum(axis=-2`
            {what}: each head's softmax ran down each column, over the queries; it runs along each row, over the keys,
            so that every word's weights over the words it reads sum to 1
        one-wide-head: `d_head = d_model // n_heads` → `d_head = d_model; n_heads = 1`
            {what} is one head of width {d_model}: split the queries, keys and values into n_heads = {n_heads} heads of
            width {d_head}, attend in each, then put them side by side
        split-by-reshape: `M.reshape(T, n_heads, d_head).transpose(1, 0, 2)` → `M.reshape(n_heads, T, d_head)`
            {what}: your heads mix the words. Reshaping (T, d_model) straight into (n_heads, T, d_head) cuts across the
            rows; head i holds columns i·d_head to (i + 1)·d_head of every word's row: split the last axis into
            (n_heads, d_head) first, then bring the head axis to the front
        merge-by-reshape: `heads.transpose(1, 0, 2).reshape(T, d_model)` → `heads.reshape(T, d_model)`
            {what}: merging the heads by reshaping (n_heads, T, d_head) straight into (T, d_model) mixes the words; word
            t's row is head 0's row t, then head 1's row t, and so on: bring the word axis to the front first, then join
            each word's heads
        causal-mask:
            `weights = np.exp` → `scores = np.where(np.tri(T, dtype=bool), scores, -np.inf)\n    weights = np.exp`
            {what}: each word attended only to itself and the words before it, as 05's causal mask allows; in this block
            every word reads every word of the sentence, before and after it (no mask: there is no padding)
        residual-before-output-projection: `= heads.` → `= (X + heads.`, `d_model) @ W_o` → `d_model)) @ W_o`
            `X + delta_E` → `delta_E`
            {what}: you added X to the merged heads and projected the sum by W_o; W_o projects the heads alone, which
            gives ΔE, and X is added after, unchanged: E′ = X + ΔE
        values-not-projected: `split(X @ W_v)` → `split(X)`
            {what}: your values are the rows of X themselves; the values are X projected by W_v, as the queries are X
            projected by W_q and the keys by W_k
        transposed-weights: `X @ W_q)` → `X @ W_q.T)`, `X @ W_k)` → `X @ W_k.T)`, `X @ W_v)` → `X @ W_v.T)`
            `@ W_o  #` → `@ W_o.T  #`
        returned-weights-too: `return X + delta_E` → `return X + delta_E, weights`
            {what} returned 2 things (a tuple), E′ and more; the block returns only E′, one array of shape {shape}, (T,
            d_model): the attention weights stay inside it
    """,
    families=_block_families,
    forbid=("helpers.MultiHeadAttention", "helpers.transformer.self_attention"),
)
def residual_attention_block():
    rng = check_rng()
    for T, d_model, n_heads in ((4, 6, 2), (5, 8, 4), (3, 4, 1)):
        X = rng.normal(size=(T, d_model))
        W = [rng.normal(0, 0.7, (d_model, d_model)) for _ in range(4)]
        what = f"residual_attention_block(X of shape {X.shape}, ..., n_heads={n_heads})"
        facts = {"d_model": d_model, "d_head": d_model // n_heads, "n_heads": n_heads, "shape": X.shape}
        yield Case(what, (X, *W, n_heads), facts=facts, expected=X + multihead_loop(X, X, *W, n_heads))


@exercise(
    hint="Each place (b, t) of X is a copy of one row of E, the row of the word that sits there. So the gradient of "
    "a word's row collects the gradients of every place where that word sits: a sum, one term per place.",
    hint2="Try a batch in which one word sits in two places: its row of the result must be the sum of both "
    "places' gradients. If it holds only one of them, the addition wrote the repeated row once, as "
    "numpy's ordinary indexed addition does; np.add.at adds once per place. The result has E's shape, "
    "(vocab_size, d_model), whatever the batch.",
    solution="""
        def embedding_backward(d_X, ids, vocab_size):
            d_E = np.zeros((vocab_size, d_X.shape[-1]))  # (vocab_size, d_model)
            np.add.at(d_E, ids, d_X)  # row ids[b, t] collects d_X[b, t], once per place the word sits
            return d_E
    """,
    mistakes=r"""
        repeated-word-once: `np.add.at(d_E, ids, d_X)` → `d_E[ids] += d_X`
            {what}: word {repeated} sits in {count} places but its row got only one of their gradients. An indexed
            addition with the whole ids array writes a repeated word's row once; each place must add its own gradient
            (np.add.at does, once per place)
        averaged: `return d_E` → `return d_E / np.maximum(np.bincount(ids.ravel(), minlength=vocab_size), 1)[:, None]`
            {what}: word {repeated} sits in {count} places and its row is the mean of their gradients; the loss changes
            through every one of those places, so the row is the sum of their gradients
        transposed: `(vocab_size, d_X.shape[-1])` → `(d_X.shape[-1], vocab_size)`, `np.add.at(d_E,` → `np.add.at(d_E.T,`
            {what} has shape ({d_model}, {vocab_size}), (d_model, vocab_size): your table is transposed. dE has the
            shape of E, ({vocab_size}, {d_model}), one row per word
        rows-for-positions:
            `np.add.at(d_E, ids, d_X)` → `for b, t in np.ndindex(ids.shape):\n        d_E[t] += d_X[b, t]`
            {what}: row t of your result collects the gradients of position t of every sentence; row v belongs to word
            v, and collects the gradient of every place where word v sits, whatever its position
        summed-over-batch: `return d_E` → `return d_X.sum(axis=0)`
            {what} has shape ({T}, {d_model}): you added d_X up over the {B} sentences, which leaves one row per
            position. dE has one row per word of the vocabulary, ({vocab_size}, {d_model}): each word's row collects the
            gradients of the places where it sits
        integer-table: `d_X.shape[-1]))` → `d_X.shape[-1]), dtype=ids.dtype)`
            {what} holds whole numbers (dtype {got.dtype}): your table took the ids' integer type, so every gradient
            added into it was cut to a whole number; make a table of floats, like d_X
        divided-by-batch: `return d_E` → `return d_E / ids.shape[0]`
            {what} is the right sum divided by the batch size, {B}: a word's row adds up the gradients of its places,
            with no averaging (a loss that is a mean over the batch already put its 1/B inside d_X)
        width-from-sentence-length: `d_X.shape[-1]` → `d_X.shape[1]`
            {what}: your table has one column per position of a sentence, T = {T}, where dE has one per dimension of a
            word vector, d_model = {d_model}, the last axis of d_X: dE has the shape of E, ({vocab_size}, {d_model})
        width-from-sentence-length: `d_X.shape[-1]` → `d_X.shape[1]`, `np.add.at(d_E, ids, d_X)` → `d_E[ids] += d_X`
        flattened-ids-only: `np.add.at(d_E, ids, d_X)` → `np.add.at(d_E, ids.ravel(), d_X)`
            {what}: the gradients added do not fit the rows they go into. The ids name {n} places, and d_X holds one row
            of width d_model = {d_model} for each; if you flattened the ids to ({n},), flatten d_X the same way, to
            ({n}, {d_model}), one row per place in the same order
    """,
    forbid=("helpers.transformer.embed_backward",),
)
def embedding_backward():
    rng = check_rng()
    vocab_size, d_model = 6, 3
    for ids in (np.array([[1, 4, 4, 0], [2, 4, 1, 3]]), np.array([[0, 1, 2]]), np.array([[5, 5, 5], [5, 0, 5]])):
        d_X = rng.normal(size=ids.shape + (d_model,))  # (B, T, d_model)
        expected = np.zeros((vocab_size, d_model))
        for place in np.ndindex(ids.shape):
            expected[ids[place]] += d_X[place]
        counts = np.bincount(ids.ravel(), minlength=vocab_size)  # (vocab_size,): the places of each word
        facts = {"vocab_size": vocab_size, "d_model": d_model, "B": ids.shape[0], "T": ids.shape[1], "n": ids.size}
        facts.update(repeated=int(np.argmax(counts)), count=int(counts.max()))  # the word with the most places
        what = f"embedding_backward(d_X of shape {d_X.shape}, ids {ids.tolist()}, vocab_size={vocab_size})"
        yield Case(what, (d_X, ids, vocab_size), facts=facts, expected=expected)
