"""The exercises of 08_training_a_tiny_transformer."""

import itertools

import numpy as np

from helpers.checks._core import Mismatch, as_array, call, check_rng, edited, exercise, expect_close
from helpers.checks._families import scores_divided_by, wrong_array_weighted
from helpers.checks._reference import multihead_loop

_BLOCK_SOLUTION = """
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
"""


@exercise(
    notebook="08_training_a_tiny_transformer",
    hint="Project X into queries, keys and values, split each into n_heads heads, run scaled dot-product attention "
    "in each head, put the heads side by side again and project them with W_o: that is the change ΔE. The "
    "block returns X + ΔE.",
    hint2=(
        "Check the shapes at each step: every projection (T, d_model), each head (T, d_head) with d_head = "
        "d_model / n_heads, each head's weights (T, T) with rows summing to 1 over the keys, and ΔE (T, "
        "d_model) again. A property to test: with W_o all zeros, ΔE is zero and the block gives back X "
        "unchanged. The helpers of notebook 06 do the splitting, the attention and the merging."
    ),
    solution=_BLOCK_SOLUTION,
    mistakes={
        "no-residual": edited(_BLOCK_SOLUTION, ("return X + delta_E", "return delta_E")),
        "no-output-projection": edited(_BLOCK_SOLUTION, ("reshape(T, d_model) @ W_o", "reshape(T, d_model)")),
        "scaled-by-d-model": edited(_BLOCK_SOLUTION, ("/ np.sqrt(d_head)", "/ np.sqrt(d_model)")),
        "not-scaled": edited(_BLOCK_SOLUTION, ("/ np.sqrt(d_head)", "")),
        "softmax-over-queries": edited(
            _BLOCK_SOLUTION,
            ("max(axis=-1, keepdims=True)", "max(axis=-2, keepdims=True)"),
            ("sum(axis=-1, keepdims=True)", "sum(axis=-2, keepdims=True)"),
        ),
        "one-wide-head": edited(_BLOCK_SOLUTION, ("d_head = d_model // n_heads", "d_head = d_model; n_heads = 1")),
        "split-by-reshape": edited(
            _BLOCK_SOLUTION, ("M.reshape(T, n_heads, d_head).transpose(1, 0, 2)", "M.reshape(n_heads, T, d_head)")
        ),
        "merge-by-reshape": edited(
            _BLOCK_SOLUTION, ("heads.transpose(1, 0, 2).reshape(T, d_model)", "heads.reshape(T, d_model)")
        ),
        "causal-mask": edited(
            _BLOCK_SOLUTION,
            (
                "np.sqrt(d_head)  # (h, T, T)",
                "np.sqrt(d_head)\n        scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)",
            ),
        ),
        "residual-before-output-projection": edited(
            _BLOCK_SOLUTION,
            ("= heads.", "= (X + heads."),
            ("d_model) @ W_o", "d_model)) @ W_o"),
            ("X + delta_E", "delta_E"),
        ),
        "values-not-projected": edited(_BLOCK_SOLUTION, ("split(X @ W_v)", "split(X)")),
        "transposed-weights": edited(
            _BLOCK_SOLUTION,
            ("X @ W_q), split(X @ W_k), split(X @ W_v)", "X @ W_q.T), split(X @ W_k.T), split(X @ W_v.T)"),
            ("@ W_o  #", "@ W_o.T  #"),
        ),
        "returned-weights-too": edited(_BLOCK_SOLUTION, ("return X + delta_E", "return X + delta_E, weights")),
    },
    forbid=("helpers.MultiHeadAttention", "helpers.multihead.MultiHeadAttention", "helpers.transformer.self_attention"),
)
def residual_attention_block(answer):
    rng = check_rng()
    for T, d_model, n_heads in ((4, 6, 2), (5, 8, 4), (3, 4, 1)):
        X = rng.normal(size=(T, d_model))
        W_q, W_k, W_v, W_o = (rng.normal(0, 0.7, (d_model, d_model)) for _ in range(4))
        what = f"residual_attention_block(X of shape {X.shape}, ..., n_heads={n_heads})"
        got = call(answer, X, W_q, W_k, W_v, W_o, n_heads)
        if isinstance(got, tuple) and any(isinstance(item, np.ndarray) and item.shape == X.shape for item in got):
            raise Mismatch(
                f"{what} returned {len(got)} things (a tuple), E′ and more; the block returns only E′, "
                f"one array of shape {X.shape}, (T, d_model): the attention weights stay inside it",
                "returned-weights-too",
            )
        got = as_array(got, what)
        _block_mistakes(got, X, (W_q, W_k, W_v, W_o), n_heads, what)
        expected = X + multihead_loop(X, X, W_q, W_k, W_v, W_o, n_heads)  # a loop over heads, then the residual
        keys = X + multihead_loop(X, X, W_q, W_k, W_k, W_o, n_heads)
        wrong_array_weighted(got, {"the keys (X times W_k)": keys}, what, "the values")
        sizes = {"d_head": d_model // n_heads, "d_model": d_model, "n_heads": n_heads, "T": T}
        scale = ("√d_head", np.sqrt(d_model // n_heads))
        divided = lambda c: _variant(X, W_q, W_k, W_v, W_o, n_heads, scale_width=c * c)  # noqa: E731, B023
        scores_divided_by(got, divided, what, sizes, scale)
        expect_close(got, expected, what)


def _variant(
    X,
    W_q,
    W_k,
    W_v,
    W_o,
    n_heads,
    *,
    residual=True,
    project=True,
    scale_width=None,
    softmax_axis=-1,
    split_by_reshape=False,
    merge_by_reshape=False,
    causal=False,
):
    """The block with one part done the usual wrong way (the defaults give the right block).

    scale_width: scale the scores by 1/sqrt(scale_width) instead of 1/sqrt(d_head), 0 for no scaling;
    project="before": the residual added before W_o, (X + heads) W_o; causal: 05's causal mask on the scores.
    Shapes: X (T, d_model), W_* (d_model, d_model) -> (T, d_model).
    """
    T, d_model = X.shape
    d_head = d_model // n_heads

    def split(M):  # (T, d_model) -> (h, T, d_head)
        return M.reshape(n_heads, T, d_head) if split_by_reshape else M.reshape(T, n_heads, d_head).transpose(1, 0, 2)

    Q, K, V = split(X @ W_q), split(X @ W_k), split(X @ W_v)
    scale = 1.0 if scale_width == 0 else 1 / np.sqrt(d_head if scale_width is None else scale_width)
    scores = Q @ K.transpose(0, 2, 1) * scale  # (h, T, T)
    if causal:
        scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=softmax_axis, keepdims=True))
    weights = weights / weights.sum(axis=softmax_axis, keepdims=True)
    heads = weights @ V  # (h, T, d_head)
    merged = heads.reshape(T, d_model) if merge_by_reshape else heads.transpose(1, 0, 2).reshape(T, d_model)
    if project == "before":
        return (X + merged) @ W_o
    delta_E = merged @ W_o if project else merged  # (T, d_model)
    return X + delta_E if residual else delta_E


def _block_mistakes(got, X, W, n_heads, what):
    """Name the block's usual mistakes, most specific first; return quietly when none matches."""

    def same(heads=n_heads, weights=W, **mistake):
        candidate = _variant(X, *weights, heads, **mistake)
        return got.shape == candidate.shape and np.allclose(got, candidate)

    d_model = X.shape[1]
    d_head = d_model // n_heads
    if same(residual=False):
        raise Mismatch(
            f"{what} returned ΔE, the change that attention proposes; the block returns E′ = X + ΔE: "
            "the input, with the change added to it",
            "no-residual",
        )
    if same(project=False):
        raise Mismatch(
            f"{what}: the heads, put side by side, were added to X as they are; ΔE is the merged heads "
            f"projected by W_o, a ({d_model}, {d_model}) matrix, and then added",
            "no-output-projection",
        )
    if same(softmax_axis=-2):
        raise Mismatch(
            f"{what}: each head's softmax ran down each column, over the queries; it runs along each row, "
            "over the keys, so that every word's weights over the words it reads sum to 1",
            "softmax-over-queries",
        )
    if same(scale_width=0):
        raise Mismatch(
            f"{what}: the scores were not scaled; each head divides its scores by √d_head = √{d_head} "
            "before the softmax (notebook 04)",
            "not-scaled",
        )
    if same(causal=True):
        raise Mismatch(
            f"{what}: each word attended only to itself and the words before it, as 05's causal mask "
            "allows; in this block every word reads every word of the sentence, before and after it "
            "(no mask: there is no padding)",
            "causal-mask",
        )
    if same(project="before"):
        raise Mismatch(
            f"{what}: you added X to the merged heads and projected the sum by W_o; W_o projects the "
            "heads alone, which gives ΔE, and X is added after, unchanged: E′ = X + ΔE",
            "residual-before-output-projection",
        )
    if same(weights=(*W[:2], np.eye(d_model), W[3])):
        raise Mismatch(
            f"{what}: your values are the rows of X themselves; the values are X projected by W_v, "
            "as the queries are X projected by W_q and the keys by W_k",
            "values-not-projected",
        )
    for flips in list(itertools.product((False, True), repeat=4))[1:]:  # every choice of matrices transposed
        if same(weights=tuple(w.T if flip else w for w, flip in zip(W, flips, strict=True))):
            names = [name for name, flip in zip(("W_q", "W_k", "W_v", "W_o"), flips, strict=True) if flip]
            names = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
            raise Mismatch(
                f"{what}: you projected with the transpose of {names}. A word is a row "
                f"and a projection is that row times W as it is, ({d_model},) by ({d_model}, "
                f"{d_model}): row i of W belongs to input dimension i",
                "transposed-weights",
            )
    if n_heads == 1:
        return
    if same(scale_width=d_model):
        raise Mismatch(
            f"{what}: you scaled the scores by 1/√d_model; a head compares vectors of width "
            f"d_head = d_model / n_heads = {d_head}, so its scores are scaled by 1/√d_head",
            "scaled-by-d-model",
        )
    if same(heads=1):
        raise Mismatch(
            f"{what} is one head of width {d_model}: split the queries, keys and values into "
            f"n_heads = {n_heads} heads of width {d_head}, attend in each, then put them side by side",
            "one-wide-head",
        )
    if same(split_by_reshape=True):
        raise Mismatch(
            f"{what}: your heads mix the words. Reshaping (T, d_model) straight into (n_heads, T, d_head) "
            "cuts across the rows; head i holds columns i·d_head to (i + 1)·d_head of every word's row: "
            "split the last axis into (n_heads, d_head) first, then bring the head axis to the front",
            "split-by-reshape",
        )
    if same(merge_by_reshape=True):
        raise Mismatch(
            f"{what}: merging the heads by reshaping (n_heads, T, d_head) straight into (T, d_model) "
            "mixes the words; word t's row is head 0's row t, then head 1's row t, and so on: bring the "
            "word axis to the front first, then join each word's heads",
            "merge-by-reshape",
        )


_EMBED_SOLUTION = """
    def embedding_backward(d_X, ids, vocab_size):
        d_E = np.zeros((vocab_size, d_X.shape[-1]))  # (vocab_size, d_model)
        np.add.at(d_E, ids, d_X)  # row ids[b, t] collects d_X[b, t], once per place the word sits
        return d_E
"""
_ADD_AT = "np.add.at(d_E, ids, d_X)"


@exercise(
    notebook="08_training_a_tiny_transformer",
    hint="Each place (b, t) of X is a copy of one row of E, the row of the word that sits there. So the gradient of "
    "a word's row collects the gradients of every place where that word sits: a sum, one term per place.",
    hint2=(
        "Try a batch in which one word sits in two places: its row of the result must be the sum of both "
        "places' gradients. If it holds only one of them, the addition wrote the repeated row once, as "
        "numpy's ordinary indexed addition does; np.add.at adds once per place. The result has E's shape, "
        "(vocab_size, d_model), whatever the batch."
    ),
    solution=_EMBED_SOLUTION,
    mistakes={
        "repeated-word-once": edited(_EMBED_SOLUTION, (_ADD_AT, "d_E[ids] += d_X")),
        "averaged": edited(
            _EMBED_SOLUTION,
            ("return d_E", "return d_E / np.maximum(np.bincount(ids.ravel(), minlength=vocab_size), 1)[:, None]"),
        ),
        "transposed": edited(
            _EMBED_SOLUTION,
            ("(vocab_size, d_X.shape[-1])", "(d_X.shape[-1], vocab_size)"),
            ("np.add.at(d_E,", "np.add.at(d_E.T,"),
        ),
        "rows-for-positions": edited(
            _EMBED_SOLUTION, (_ADD_AT, "for b, t in np.ndindex(ids.shape):\n            d_E[t] += d_X[b, t]")
        ),
        "summed-over-batch": edited(_EMBED_SOLUTION, ("return d_E", "return d_X.sum(axis=0)")),
        "integer-table": edited(_EMBED_SOLUTION, ("d_X.shape[-1]))", "d_X.shape[-1]), dtype=ids.dtype)")),
        "divided-by-batch": edited(_EMBED_SOLUTION, ("return d_E", "return d_E / ids.shape[0]")),
        "width-from-sentence-length": edited(_EMBED_SOLUTION, ("d_X.shape[-1]", "d_X.shape[1]")),
        "flattened-ids-only": edited(_EMBED_SOLUTION, (_ADD_AT, "np.add.at(d_E, ids.ravel(), d_X)")),
    },
    forbid=("helpers.transformer.embed_backward",),
)
def embedding_backward(answer):
    rng = check_rng()
    vocab_size, d_model = 6, 3
    for ids in (np.array([[1, 4, 4, 0], [2, 4, 1, 3]]), np.array([[0, 1, 2]]), np.array([[5, 5, 5], [5, 0, 5]])):
        d_X = rng.normal(size=ids.shape + (d_model,))  # (B, T, d_model)
        expected = np.zeros((vocab_size, d_model))
        for place in np.ndindex(ids.shape):
            expected[ids[place]] += d_X[place]
        what = f"embedding_backward(d_X of shape {d_X.shape}, ids {ids.tolist()}, vocab_size={vocab_size})"
        got = as_array(_call_embedding(answer, d_X, ids, vocab_size, what), what)
        _embedding_mistakes(got, d_X, ids, expected, what)
        expect_close(got, expected, what)


def _call_embedding(answer, d_X, ids, vocab_size, what):
    """The answer's result; numpy's broadcast error, from adding d_X into a table it does not fit, said in shapes."""
    try:
        return call(answer, d_X, ids, vocab_size)
    except ValueError as exc:
        if "broadcast" not in str(exc):
            raise
        error = exc
    (B, T, d_model), n = d_X.shape, ids.size
    try:  # sentences as long as d_model: a table with one column per position would fit them
        call(answer, np.ones((B, d_model, d_model)), np.zeros((B, d_model), dtype=int), vocab_size)
    except Exception:
        raise Mismatch(
            f"{what}: the gradients added do not fit the rows they go into. The ids name {n} places, "
            f"and d_X holds one row of width d_model = {d_model} for each; if you flattened the ids to "
            f"({n},), flatten d_X the same way, to ({n}, {d_model}), one row per place in the same order",
            "flattened-ids-only",
        ) from error
    raise Mismatch(
        f"{what}: your table has one column per position of a sentence, T = {T}, where dE has one per "
        f"dimension of a word vector, d_model = {d_model}, the last axis of d_X: dE has the shape of E, "
        f"({vocab_size}, {d_model})",
        "width-from-sentence-length",
    ) from error


def _embedding_mistakes(got, d_X, ids, expected, what):
    """Name the embedding gradient's usual mistakes; return quietly when none matches."""

    def same(candidate):
        return got.shape == candidate.shape and np.allclose(got, candidate)

    vocab_size, d_model = expected.shape
    B, T = ids.shape
    counts = np.bincount(ids.ravel(), minlength=vocab_size)  # (vocab_size,): the places of each word
    repeated = int(np.argmax(counts))  # the word with the most places
    if got.shape == expected.shape and got.dtype.kind in "iub":
        raise Mismatch(
            f"{what} holds whole numbers (dtype {got.dtype}): your table took the ids' integer type, "
            "so every gradient added into it was cut to a whole number; make a table of floats, like "
            "d_X",
            "integer-table",
        )
    if got.shape == (d_model, vocab_size) and d_model != vocab_size and np.allclose(got.T, expected):
        raise Mismatch(
            f"{what} has shape ({d_model}, {vocab_size}), (d_model, vocab_size): your table is "
            f"transposed. dE has the shape of E, ({vocab_size}, {d_model}), one row per word",
            "transposed",
        )
    if B > 1 and same(d_X.sum(axis=0)):
        raise Mismatch(
            f"{what} has shape ({T}, {d_model}): you added d_X up over the {B} sentences, which leaves "
            f"one row per position. dE has one row per word of the vocabulary, ({vocab_size}, {d_model}): "
            "each word's row collects the gradients of the places where it sits",
            "summed-over-batch",
        )
    by_position = np.zeros_like(expected)
    by_position[:T] = d_X.sum(axis=0)
    if T <= vocab_size and same(by_position) and not np.allclose(by_position, expected):
        raise Mismatch(
            f"{what}: row t of your result collects the gradients of position t of every sentence; "
            "row v belongs to word v, and collects the gradient of every place where word v sits, "
            "whatever its position",
            "rows-for-positions",
        )
    once = np.zeros_like(expected)
    once[ids] = d_X  # what an indexed addition with repeated ids leaves: one gradient per word
    if counts[repeated] > 1 and same(once):
        raise Mismatch(
            f"{what}: word {repeated} sits in {counts[repeated]} places but its row got only one of "
            "their gradients. An indexed addition with the whole ids array writes a repeated word's "
            "row once; each place must add its own gradient (np.add.at does, once per place)",
            "repeated-word-once",
        )
    if counts[repeated] > 1 and same(expected / np.maximum(counts, 1)[:, None]):
        raise Mismatch(
            f"{what}: word {repeated} sits in {counts[repeated]} places and its row is the mean of their "
            "gradients; the loss changes through every one of those places, so the row is the sum "
            "of their gradients",
            "averaged",
        )
    if B > 1 and same(expected / B):
        raise Mismatch(
            f"{what} is the right sum divided by the batch size, {B}: a word's row adds up the gradients "
            "of its places, with no averaging (a loss that is a mean over the batch already put its "
            "1/B inside d_X)",
            "divided-by-batch",
        )
