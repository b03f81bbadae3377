"""The exercises of 09_attention_in_a_real_model."""

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import Case, Mismatch, check_rng, exercise
from helpers.checks._families import not_a_distribution, scores_divided_by
from helpers.multihead import MultiHeadAttention


class _Layer(MultiHeadAttention):
    """A layer whose call is the answer itself: an attention_row that calls it is told to compute the row."""

    def __call__(self, *args, **kwargs):
        raise Mismatch("called the layer", "called-the-layer")  # the registered mistake's message says more


def _scores(X, attention, head, divisor):
    """Head `head`'s scores, every query against every key, divided by `divisor`. Shapes: (T, d_model) -> (T, T)."""
    d_head = attention.d_model // attention.n_heads
    cols = slice(head * d_head, (head + 1) * d_head)
    Q = X @ attention.W_q[:, cols] + attention.b_q[cols]  # (T, d_head)
    K = X @ attention.W_k[:, cols] + attention.b_k[cols]  # (T, d_head)
    return Q @ K.T / divisor  # (T, T)


def _row_families(got, expected, case):
    """Scores divided by another size than √d_head; weights that do not sum to 1."""
    X, attention, head, i = case.args
    d_head = attention.d_model // attention.n_heads
    sizes = {"d_head": d_head, "d_model": attention.d_model, "n_heads": attention.n_heads, "T": len(X)}
    divided = lambda c: softmax(_scores(X, attention, head, c)[i])  # noqa: E731
    scores_divided_by(got, divided, case.what, sizes, ("√d_head", np.sqrt(d_head)))
    not_a_distribution(
        got, expected, case.what, ": a query's weights over the keys are a distribution, which adds up to 1"
    )


@exercise(
    hint="Each head owns its own slice of d_head columns of W_q and W_k, and the same slice of their biases. Make "
    "query i's vector and every token's key with that slice, score the keys against the query, scale by "
    "1/√d_head, and turn the T scores into weights with a softmax.",
    hint2="Check the shapes: head h's query is d_head numbers, its keys (T, d_head), its scores and its weights T "
    "numbers, the weights positive and adding up to 1. Head h owns columns h·d_head up to (h + 1)·d_head of W_q and "
    "W_k and the same entries of their biases: leave a bias out and the weights differ from the model's.",
    solution="""
        def attention_row(X, attention, head, i):
            d_head = attention.d_model // attention.n_heads
            cols = slice(head * d_head, (head + 1) * d_head)  # this head's columns
            q = X[i] @ attention.W_q[:, cols] + attention.b_q[cols]  # (d_model,) @ (d_model, d_head) -> (d_head,)
            K = X @ attention.W_k[:, cols] + attention.b_k[cols]  # (T, d_model) @ (d_model, d_head) -> (T, d_head)
            scores = K @ q / np.sqrt(d_head)  # (T, d_head) @ (d_head,) -> (T,)
            e = np.exp(scores - scores.max())
            return e / e.sum()
    """,
    mistakes=r"""
        no-biases: ` + attention.b_q[cols]` → ``, ` + attention.b_k[cols]` → ``
            {what}: you left out the biases; the model's queries and keys are X times W plus b (b_q and b_k, this head's
            slice of each)
        sqrt-d-model: `/ np.sqrt(d_head)` → `/ np.sqrt(attention.d_model)`
            {what}: you divided by √d_model; each head's scores are scaled by √d_head, the length of its own queries and
            keys
        unscaled: ` / np.sqrt(d_head)` → ``
            {what}: the scores are not scaled; divide them by √d_head before the softmax
        every-column: `cols = slice(head * d_head, (head + 1) * d_head)` → `cols = slice(None)`
            {what}: you used every column of W_q and W_k; head {head} uses only its own d_head columns
        divided-by-d-head: `/ np.sqrt(d_head)` → `/ d_head`
            {what}: you divided the scores by d_head = {d_head}; the scale is 1/√d_head, here 1/{root:g}
        columns-from-head-number: `slice(head * d_head, (head + 1) * d_head)` → `slice(head, head + d_head)`
            {what}: you took the d_head columns that start at column {head}, the head's number; each head owns a block
            of d_head = {d_head} columns, so head {head}'s start at head × d_head = {start}
        whole-bias: ` + attention.b_q[cols]` → ` + attention.b_q`, ` + attention.b_k[cols]` → ` + attention.b_k`
            {what}: your code added a whole bias, all d_model = {d_model} numbers of b_q or b_k, to this head's query or
            keys, which have d_head = {d_head}; take this head's slice of the bias, the same d_head positions as its
            columns of W
        whole-bias: ` + attention.b_k[cols]` → ` + attention.b_k`
        softmax-whole-matrix: `q = X[i] @` → `Q = X @`, `K @ q /` → `Q @ K.T /`, `e / e.sum()` → `(e / e.sum())[i]`
            {what}: your softmax ran over the whole (T, T) matrix of scores at once, so row {i} adds up to {total}, not
            1; it runs along each row on its own, over the keys of one query
        no-softmax: `e = np.exp(scores - scores.max())\n    return e / e.sum()` → `return scores`
            {what}: you returned the scores themselves (they sum to {total}); the weights are their softmax, positive
            and adding up to 1 over the keys
        no-softmax: `e = np.exp(scores - scores.max())\n    return e / e.sum()` → `return scores`
            ` / np.sqrt(d_head)` → ``
        not-normalised: `e / e.sum()` → `e`
            {what}: you took the exponential of the scores but did not divide by their sum over the keys, so your
            weights add up to {total}, not 1
        not-normalised: `e / e.sum()` → `e`, `scores - scores.max()` → `scores`
        softmax-over-queries: `q = X[i] @` → `Q = X @`, `K @ q /` → `Q @ K.T /`
            `scores.max()` → `scores.max(axis=0)`, `e / e.sum()` → `(e / e.sum(axis=0))[i]`
            {what}: your softmax ran down each column of the (T, T) scores, over the queries, so the row does not sum to
            1 (it sums to {total}); it runs along each row, over the keys
        took-column: `q = X[i] @` → `Q = X @`, `K @ q /` → `Q @ K.T /`
            `scores.max()` → `scores.max(axis=-1, keepdims=True)`
            `e / e.sum()` → `(e / e.sum(axis=-1, keepdims=True))[:, i]`
            {what}: you returned column {i} of the weights, what every query gives key {i}; the answer is row {i}, what
            query {i} gives every key
        whole-matrix: `q = X[i] @` → `Q = X @`, `K @ q /` → `Q @ K.T /`
            `scores.max()` → `scores.max(axis=-1, keepdims=True)`
            `e / e.sum()` → `e / e.sum(axis=-1, keepdims=True)`
            {what} has shape {got.shape}: you returned the weights of every query; return only row {i}, the weights of
            query {i}, shape ({T},)
        called-the-layer: `d_head ` → `return attention(X)[1][head, i]\n    d_head `
            {what}: you called the layer itself, which computes every head's weights for you; compute this one row from
            the head's columns of W_q and W_k and their biases
    """,
    families=_row_families,
)
def attention_row():
    rng = check_rng()
    for T, head, i in ((5, 1, 2), (7, 2, 0)):
        d_model, n_heads = 12, 3  # a layer with random weights and biases, like one of the model's, only smaller
        biases = [rng.normal(0, 0.5, d_model) for _ in range(4)]
        weights = (rng.normal(0, 0.3, (d_model, d_model)) for _ in range(4))
        attention = _Layer.from_weights(*weights, n_heads, biases=biases)
        X = rng.normal(size=(T, d_model))
        d_head = d_model // n_heads
        facts = {"T": T, "i": i, "head": head, "d_model": d_model, "d_head": d_head, "root": np.sqrt(d_head)}
        facts.update(start=head * d_head, total=lambda got: f"{float(np.sum(got)):.3g}")
        expected = softmax(_scores(X, attention, head, np.sqrt(d_head))[i])
        yield Case(
            f"attention_row(X {X.shape}, attention, head={head}, i={i})", (X, attention, head, i), {}, facts, expected
        )


@exercise(
    hint="Average each sentence's token vectors over its real tokens only, then divide that mean by its own length "
    "(np.linalg.norm gives a vector's length).",
    hint2="Check it on a padded batch: a sentence's embedding must not change when padding tokens are added to it, and "
    "every row of the result must have length 1. The mask is 1 at real tokens and 0 at padding; to zero the padding "
    "rows of H, (n, T, d), it needs a last axis of length 1. The mean divides by the count of real tokens, not by T.",
    solution="""
        def sentence_embedding(H, real):
            counts = real.sum(axis=1, keepdims=True)  # (n, 1): real tokens per sentence
            pooled = (H * real[..., None]).sum(axis=1) / counts  # (n, T, d) -> (n, d): padding left out
            return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)  # unit length
    """,
    mistakes=r"""
        padding-averaged: `pooled = (H * real[..., None]).sum(axis=1) / counts` → `pooled = H.mean(axis=1)`
            {what}: you averaged the padding positions too; average only where real is True (the second sentence has 4
            real tokens and 2 of padding)
        padding-averaged: `pooled = (H * real[..., None]).sum(axis=1) / counts` → `pooled = H.mean(axis=1)`
            `return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)` → `return pooled`
        not-normalised: `return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)` → `return pooled`
            {what}: the mean is right but its rows are not of length 1 (their lengths are {lengths}); divide each row by
            its own length
        sum-not-mean: ` / counts` → ``
            `return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)` → `return pooled`
            {what}: you added up the real tokens' vectors and stopped there, so the rows are not of length 1 (their
            lengths are {lengths}); scale each row to length 1. Sum or mean does not matter then: the number of tokens
            divides away
        normalised-first: `counts = ` → `H = H / np.linalg.norm(H, axis=-1, keepdims=True)\n    counts = `
            {what}: you normalised each token before averaging; average first, then normalise the mean
        normalised-first: `counts = ` → `H = H / np.linalg.norm(H, axis=-1, keepdims=True)\n    counts = `
            `return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)` → `return pooled`
        one-length-for-all: `np.linalg.norm(pooled, axis=-1, keepdims=True)` → `np.linalg.norm(pooled)`
            {what}: you divided the rows by one length for all of them (or by each column's); each sentence's row is
            divided by its own length, so that every row has length 1
        one-length-for-all: `np.linalg.norm(pooled, axis=-1, keepdims=True)` → `np.linalg.norm(pooled, axis=0)`
        first-token: `pooled = (H * real[..., None]).sum(axis=1) / counts` → `pooled = H[:, 0]`
            {what}: you took each sentence's first token (the model's [CLS]) as its embedding; this model's sentence
            embedding is the mean over all of the sentence's real tokens, scaled to length 1
        first-token: `pooled = (H * real[..., None]).sum(axis=1) / counts` → `pooled = H[:, 0]`
            `return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)` → `return pooled`
        averaged-sentences: `pooled = (H * real[..., None]).sum(axis=1) / counts` → `pooled = H.mean(axis=0)`
            {what} has shape {got.shape}, one row per token position: you averaged over the sentences, the first axis;
            average over each sentence's tokens, the middle axis, for one row per sentence, (3, 8)
        averaged-sentences: `pooled = (H * real[..., None]).sum(axis=1) / counts` → `pooled = H.mean(axis=0)`
            `return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)` → `return pooled`
        averaged-sentences: `.sum(axis=1) / counts` → `.sum(axis=0) / real.sum(axis=0)[:, None]`
        averaged-sentences: `.sum(axis=1) / counts` → `.sum(axis=0) / real.sum(axis=0)[:, None]`
            `return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)` → `return pooled`
        mask-without-axis: `H * real[..., None]` → `H * real`
            {what}: H is (n, T, d) and real is (n, T), so numpy cannot multiply them: real needs a last axis of length
            1, (n, T, 1), to line up with each token's d numbers
    """,
    close={"atol": 1e-6},
)
def sentence_embedding():
    rng = check_rng()
    n, T, d = 3, 6, 8
    H = rng.normal(size=(n, T, d))
    real = np.arange(T) < np.array([6, 4, 2])[:, None]  # (3, 6): the sentences have 6, 4 and 2 tokens
    H = H * real[..., None] + 5.0 * ~real[..., None]  # padding rows that are not zero, as a model may leave them
    mean = (H * real[..., None]).sum(axis=1) / real.sum(axis=1, keepdims=True)  # (3, 8)
    expected = mean / np.linalg.norm(mean, axis=-1, keepdims=True)
    lengths = {"lengths": lambda got: ", ".join(f"{x:.2f}" for x in np.linalg.norm(got, axis=-1))}
    yield Case("sentence_embedding(H (3, 6, 8), real (3, 6))", (H, real), facts=lengths, expected=expected)
