"""The exercises of 09_attention_in_a_real_model."""

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import Mismatch, as_array, call, check_rng, edited, exercise, expect_close
from helpers.checks._families import not_a_distribution, scores_divided_by
from helpers.multihead import MultiHeadAttention


class _Layer(MultiHeadAttention):
    """A layer whose call is the answer itself: an attention_row that calls it is told to compute the row."""

    def __call__(self, *args, **kwargs):
        raise Mismatch("called the layer", "called-the-layer")  # the check words the message


def _small_layer(rng, d_model=12, n_heads=3):
    """A layer with random weights and biases, like one of the model's layers, only smaller."""
    biases = [rng.normal(0, 0.5, d_model) for _ in range(4)]
    return _Layer.from_weights(*(rng.normal(0, 0.3, (d_model, d_model)) for _ in range(4)), n_heads, biases=biases)


def _scores(X, attention, head, *, bias=True, scale=None, columns=True, start=None):
    """One head's scores, every query against every key, computed a chosen (right or wrong) way.

    start: the head's first column (None: head * d_head, the right one).
    Shapes: X (T, d_model) -> (T, T), rows are queries.
    """
    d_head = attention.d_model // attention.n_heads
    first = head * d_head if start is None else start
    cols = slice(first, first + d_head) if columns else slice(None)
    Q = X @ attention.W_q[:, cols] + (attention.b_q[cols] if bias else 0)  # (T, d_head)
    K = X @ attention.W_k[:, cols] + (attention.b_k[cols] if bias else 0)  # (T, d_head)
    return Q @ K.T / np.sqrt(d_head if scale is None else scale)  # (T, T)


def _same(got, candidate):
    return got.shape == candidate.shape and np.allclose(got, candidate, atol=1e-6)


_ROW_SOLUTION = """
    def attention_row(X, attention, head, i):
        d_head = attention.d_model // attention.n_heads
        cols = slice(head * d_head, (head + 1) * d_head)  # this head's columns
        q = X[i] @ attention.W_q[:, cols] + attention.b_q[cols]  # (d_model,) @ (d_model, d_head) -> (d_head,)
        K = X @ attention.W_k[:, cols] + attention.b_k[cols]  # (T, d_model) @ (d_model, d_head) -> (T, d_head)
        scores = K @ q / np.sqrt(d_head)  # (T, d_head) @ (d_head,) -> (T,)
        e = np.exp(scores - scores.max())
        return e / e.sum()
"""

_FULL_MATRIX = """
    def attention_row(X, attention, head, i):
        d_head = attention.d_model // attention.n_heads
        cols = slice(head * d_head, (head + 1) * d_head)
        Q = X @ attention.W_q[:, cols] + attention.b_q[cols]
        K = X @ attention.W_k[:, cols] + attention.b_k[cols]
        scores = Q @ K.T / np.sqrt(d_head)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = e / e.sum(axis=-1, keepdims=True)
        return weights[i]
"""


@exercise(
    notebook="09_attention_in_a_real_model",
    hint="Each head owns its own slice of d_head columns of W_q and W_k, and the same slice of their biases. Make "
    "query i's vector and every token's key with that slice, score the keys against the query, scale by "
    "1/√d_head, and turn the T scores into weights with a softmax.",
    hint2=(
        "Check the shapes: head h's query is d_head numbers, its keys (T, d_head), its scores and its weights"
        " T numbers, the weights positive and adding up to 1. Head h owns columns h·d_head up to (h + "
        "1)·d_head of W_q and W_k and the same entries of their biases: leave a bias out and the weights "
        "differ from the model's."
    ),
    solution=_ROW_SOLUTION,
    mistakes={
        "no-biases": edited(_ROW_SOLUTION, (" + attention.b_q[cols]", ""), (" + attention.b_k[cols]", "")),
        "sqrt-d-model": edited(_ROW_SOLUTION, ("/ np.sqrt(d_head)", "/ np.sqrt(attention.d_model)")),
        "unscaled": edited(_ROW_SOLUTION, (" / np.sqrt(d_head)", "")),
        "every-column": edited(
            _ROW_SOLUTION, ("cols = slice(head * d_head, (head + 1) * d_head)", "cols = slice(None)")
        ),
        "divided-by-d-head": edited(_ROW_SOLUTION, ("/ np.sqrt(d_head)", "/ d_head")),
        "columns-from-head-number": edited(
            _ROW_SOLUTION, ("slice(head * d_head, (head + 1) * d_head)", "slice(head, head + d_head)")
        ),
        "whole-bias": edited(
            _ROW_SOLUTION,
            (" + attention.b_q[cols]", " + attention.b_q"),
            (" + attention.b_k[cols]", " + attention.b_k"),
        ),
        "softmax-whole-matrix": edited(
            _FULL_MATRIX,
            ("scores.max(axis=-1, keepdims=True)", "scores.max()"),
            ("e.sum(axis=-1, keepdims=True)", "e.sum()"),
        ),
        "no-softmax": edited(
            _ROW_SOLUTION, ("e = np.exp(scores - scores.max())\n        return e / e.sum()", "return scores")
        ),
        "not-normalised": edited(_ROW_SOLUTION, ("e / e.sum()", "e")),
        "softmax-over-queries": edited(_FULL_MATRIX, ("axis=-1", "axis=0")),
        "took-column": edited(_FULL_MATRIX, ("weights[i]", "weights[:, i]")),
        "whole-matrix": edited(_FULL_MATRIX, ("weights[i]", "weights")),
        "called-the-layer": """
            def attention_row(X, attention, head, i):
                return attention(X)[1][head, i]
        """,
    },
)
def attention_row(answer):
    rng = check_rng()
    for T, head, i in ((5, 1, 2), (7, 2, 0)):
        attention = _small_layer(rng)
        X = rng.normal(size=(T, attention.d_model))
        what = f"attention_row(X {X.shape}, attention, head={head}, i={i})"
        try:
            got = as_array(call(answer, X, attention, head, i), what)
        except Mismatch as exc:
            if exc.code != "called-the-layer":
                raise
            raise Mismatch(
                f"{what}: you called the layer itself, which computes every head's weights for you; "
                "compute this one row from the head's columns of W_q and W_k and their biases",
                "called-the-layer",
            ) from None
        except ValueError as exc:  # numpy could not add a (d_model,) bias to this head's (d_head,) numbers
            text = str(exc).replace(" ", "")
            if "broadcast" not in text or f"({attention.d_model},)" not in text:
                raise
            d_head = attention.d_model // attention.n_heads
            raise Mismatch(
                f"{what}: your code added a whole bias, all d_model = {attention.d_model} numbers of b_q "
                f"or b_k, to this head's query or keys, which have d_head = {d_head}; take this head's "
                "slice of the bias, the same d_head positions as its columns of W",
                "whole-bias",
            ) from exc
        scores = _scores(X, attention, head)  # (T, T): this head's right scores
        weights = softmax(scores)  # (T, T): its weights, each row sums to 1
        if _same(got, weights):
            raise Mismatch(
                f"{what} has shape {got.shape}: you returned the weights of every query; return only "
                f"row {i}, the weights of query {i}, shape ({T},)",
                "whole-matrix",
            )
        if got.shape != (T,) or _same(got, weights[i]):
            expect_close(got, weights[i], what, atol=1e-6)  # a wrong shape, or right: on to the next case
            continue
        if _same(got, scores[i]) or _same(got, _scores(X, attention, head, scale=1)[i]):
            raise Mismatch(
                f"{what}: you returned the scores themselves (they sum to {float(got.sum()):.3g}); the "
                "weights are their softmax, positive and adding up to 1 over the keys",
                "no-softmax",
            )
        if _same(got, np.exp(scores[i] - scores[i].max())) or _same(got, np.exp(scores[i])):
            raise Mismatch(
                f"{what}: you took the exponential of the scores but did not divide by their sum over "
                f"the keys, so your weights add up to {float(got.sum()):.3g}, not 1",
                "not-normalised",
            )
        exponentials = np.exp(scores - scores.max())  # (T, T)
        if _same(got, (exponentials / exponentials.sum())[i]):
            raise Mismatch(
                f"{what}: your softmax ran over the whole (T, T) matrix of scores at once, so row {i} "
                f"adds up to {float(got.sum()):.3g}, not 1; it runs along each row on its own, over the "
                "keys of one query",
                "softmax-whole-matrix",
            )
        if _same(got, softmax(scores, axis=0)[i]):
            raise Mismatch(
                f"{what}: your softmax ran down each column of the (T, T) scores, over the queries, "
                f"so the row does not sum to 1 (it sums to {float(got.sum()):.3g}); it runs along each "
                "row, over the keys",
                "softmax-over-queries",
            )
        if _same(got, weights[:, i]):
            raise Mismatch(
                f"{what}: you returned column {i} of the weights, what every query gives key {i}; "
                f"the answer is row {i}, what query {i} gives every key",
                "took-column",
            )
        if _same(got, softmax(_scores(X, attention, head, bias=False)[i])):
            raise Mismatch(
                f"{what}: you left out the biases; the model's queries and keys are X times W plus b "
                "(b_q and b_k, this head's slice of each)",
                "no-biases",
            )
        if _same(got, softmax(_scores(X, attention, head, scale=attention.d_model)[i])):
            raise Mismatch(
                f"{what}: you divided by √d_model; each head's scores are scaled by √d_head, the "
                "length of its own queries and keys",
                "sqrt-d-model",
            )
        if _same(got, softmax(_scores(X, attention, head, scale=1)[i])):
            raise Mismatch(f"{what}: the scores are not scaled; divide them by √d_head before the softmax", "unscaled")
        d_head = attention.d_model // attention.n_heads
        if _same(got, softmax(_scores(X, attention, head, scale=d_head**2)[i])):
            raise Mismatch(
                f"{what}: you divided the scores by d_head = {d_head}; the scale is 1/√d_head, here "
                f"1/{np.sqrt(d_head):g}",
                "divided-by-d-head",
            )
        if head and _same(got, softmax(_scores(X, attention, head, start=head)[i])):
            raise Mismatch(
                f"{what}: you took the d_head columns that start at column {head}, the head's number; "
                f"each head owns a block of d_head = {d_head} columns, so head {head}'s start at head × "
                f"d_head = {head * d_head}",
                "columns-from-head-number",
            )
        if _same(got, softmax(_scores(X, attention, head, columns=False)[i])):
            raise Mismatch(
                f"{what}: you used every column of W_q and W_k; head {head} uses only its own d_head columns",
                "every-column",
            )
        sizes = {"d_head": d_head, "d_model": attention.d_model, "n_heads": attention.n_heads, "T": T}
        divided = lambda c: softmax(_scores(X, attention, head, scale=c * c)[i])  # noqa: E731, B023
        scores_divided_by(got, divided, what, sizes, ("√d_head", np.sqrt(d_head)))
        not_a_distribution(got, what, "a query's weights over the keys")
        expect_close(got, weights[i], what, atol=1e-6)


_EMBEDDING_SOLUTION = """
    def sentence_embedding(H, real):
        counts = real.sum(axis=1, keepdims=True)  # (n, 1): real tokens per sentence
        pooled = (H * real[..., None]).sum(axis=1) / counts  # (n, T, d) -> (n, d): padding left out
        return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)  # unit length
"""


@exercise(
    notebook="09_attention_in_a_real_model",
    hint="Average each sentence's token vectors over its real tokens only, then divide that mean by its own length "
    "(np.linalg.norm gives a vector's length).",
    hint2=(
        "Check it on a padded batch: a sentence's embedding must not change when padding tokens are added to "
        "it, and every row of the result must have length 1. The mask is 1 at real tokens and 0 at padding; "
        "to zero the padding rows of H, (n, T, d), it needs a last axis of length 1. The mean divides by the "
        "count of real tokens, not by T."
    ),
    solution=_EMBEDDING_SOLUTION,
    mistakes={
        "padding-averaged": """
            def sentence_embedding(H, real):
                pooled = H.mean(axis=1)  # counts the padding positions too
                return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
        """,
        "not-normalised": """
            def sentence_embedding(H, real):
                return (H * real[..., None]).sum(axis=1) / real.sum(axis=1, keepdims=True)
        """,
        "sum-not-mean": """
            def sentence_embedding(H, real):
                return (H * real[..., None]).sum(axis=1)
        """,
        "normalised-first": """
            def sentence_embedding(H, real):
                H = H / np.linalg.norm(H, axis=-1, keepdims=True)
                pooled = (H * real[..., None]).sum(axis=1) / real.sum(axis=1, keepdims=True)
                return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
        """,
        "one-length-for-all": """
            def sentence_embedding(H, real):
                pooled = (H * real[..., None]).sum(axis=1) / real.sum(axis=1, keepdims=True)
                return pooled / np.linalg.norm(pooled)
        """,
        "first-token": """
            def sentence_embedding(H, real):
                pooled = H[:, 0]  # [CLS], as a classifier would
                return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
        """,
        "averaged-sentences": """
            def sentence_embedding(H, real):
                pooled = H.mean(axis=0)
                return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
        """,
        "mask-without-axis": """
            def sentence_embedding(H, real):
                pooled = (H * real).sum(axis=1) / real.sum(axis=1, keepdims=True)
                return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
        """,
    },
)
def sentence_embedding(answer):
    rng = check_rng()
    n, T, d = 3, 6, 8
    H = rng.normal(size=(n, T, d))
    real = np.arange(T) < np.array([6, 4, 2])[:, None]  # (3, 6): the sentences have 6, 4 and 2 tokens
    H = H * real[..., None] + 5.0 * ~real[..., None]  # padding rows that are not zero, as a model may leave them
    what = "sentence_embedding(H (3, 6, 8), real (3, 6))"
    try:
        got = as_array(call(answer, H, real), what)
    except ValueError as exc:  # numpy cannot line up (3, 6, 8) with (3, 6)
        text = str(exc).replace(" ", "")
        if "broadcast" in text and "(3,6,8)" in text and "(3,6)" in text:
            raise Mismatch(
                f"{what}: H is (n, T, d) and real is (n, T), so numpy cannot multiply them: real needs a "
                "last axis of length 1, (n, T, 1), to line up with each token's d numbers",
                "mask-without-axis",
            ) from exc
        raise

    def unit(rows, lengths=None):
        return rows / (np.linalg.norm(rows, axis=-1, keepdims=True) if lengths is None else lengths)

    total = (H * real[..., None]).sum(axis=1)  # (3, 8): the real tokens added up
    mean = total / real.sum(axis=1, keepdims=True)  # (3, 8)
    expected = unit(mean)
    if got.shape == (T, d):
        over_sentences = [H.mean(axis=0), (H * real[..., None]).sum(axis=0) / real.sum(axis=0)[:, None]]
        if any(_same(got, m) or _same(got, unit(m)) for m in over_sentences):
            raise Mismatch(
                f"{what} has shape {got.shape}, one row per token position: you averaged over the "
                f"sentences, the first axis; average over each sentence's tokens, the middle axis, for one "
                f"row per sentence, ({n}, {d})",
                "averaged-sentences",
            )
    if got.shape == expected.shape and not _same(got, expected):
        everything = H.mean(axis=1)
        if _same(got, unit(everything)) or _same(got, everything):
            raise Mismatch(
                f"{what}: you averaged the padding positions too; average only where real is True "
                "(the second sentence has 4 real tokens and 2 of padding)",
                "padding-averaged",
            )
        if _same(got, mean):
            raise Mismatch(
                f"{what}: the mean is right but its rows are not of length 1 (their lengths are "
                f"{', '.join(f'{x:.2f}' for x in np.linalg.norm(mean, axis=-1))}); divide each row by "
                "its own length",
                "not-normalised",
            )
        if _same(got, total):
            raise Mismatch(
                f"{what}: you added up the real tokens' vectors and stopped there, so the rows are not "
                f"of length 1 (their lengths are "
                f"{', '.join(f'{x:.2f}' for x in np.linalg.norm(total, axis=-1))}); scale each row to "
                "length 1. Sum or mean does not matter then: the number of tokens divides away",
                "sum-not-mean",
            )
        if _same(got, unit(H[:, 0])) or _same(got, H[:, 0]):
            raise Mismatch(
                f"{what}: you took each sentence's first token (the model's [CLS]) as its embedding; "
                "this model's sentence embedding is the mean over all of the sentence's real tokens, "
                "scaled to length 1",
                "first-token",
            )
        first = (unit(H) * real[..., None]).sum(axis=1) / real.sum(axis=1, keepdims=True)
        if _same(got, unit(first)) or _same(got, first):
            raise Mismatch(
                f"{what}: you normalised each token before averaging; average first, then normalise the mean",
                "normalised-first",
            )
        if _same(got, mean / np.linalg.norm(mean)) or _same(got, mean / np.linalg.norm(mean, axis=0)):
            raise Mismatch(
                f"{what}: you divided the rows by one length for all of them (or by each column's); "
                "each sentence's row is divided by its own length, so that every row has length 1",
                "one-length-for-all",
            )
    expect_close(got, expected, what, atol=1e-6)
