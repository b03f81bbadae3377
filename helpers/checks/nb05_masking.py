"""The exercises of 05_masking."""

import numpy as np

from helpers.checks._core import Case, exercise
from helpers.checks._families import softmax_slips
from helpers.checks._reference import causal_mask_loop, masked_softmax_loop


@exercise(
    hint="Give every query and every key its position, and compare the two: query i may see key j when j is at "
    "most the query's position. Here the queries are the last T_q of the T_k positions, so query i sits at "
    "position i + (T_k − T_q). np.arange gives a run of positions.",
    hint2="Draw a small case by hand: with T_q = 2 and T_k = 4 the two queries are the last two positions, 2 and 3, so "
    "the first row is True, True, True, False and the second row is all True. The queries are the rows and the keys "
    "the columns, and a square mask has True on its diagonal: a query may see itself.",
    solution="""
        def build_causal_mask(T_q, T_k):
            query_pos = np.arange(T_q)[:, None] + (T_k - T_q)  # (T_q, 1): the queries are the last T_q positions
            key_pos = np.arange(T_k)[None, :]  # (1, T_k)
            return key_pos <= query_pos  # (T_q, T_k)
    """,
    mistakes=r"""
        hides-diagonal: `key_pos <= query_pos` → `key_pos < query_pos`
            {what} is False where the key sits at the query's own position, so no query may see itself. A query may
            attend to every key up to and including its own position ({own}): itself and the past
        future-visible:
            `query_pos = np.arang` → `return np.triu(np.ones((T_q, T_k), dtype=bool))\n    query_pos = np.arang`
            {what} is True on and above the diagonal: each query may see the keys after it (the future) but not the ones
            before it. Rows are queries and columns are keys; a query may see the keys up to its own position ({own}),
            on and below the diagonal
        future-visible: `key_pos <= query_pos` → `key_pos >= query_pos`
        true-means-blocked: `key_pos <= query_pos` → `key_pos > query_pos`
            {what} is True exactly where the key comes after the query, where attention must be blocked. In this
            workshop a mask's True means 'may attend' (some libraries use the opposite convention, True = blocked)
        square-only:
            `query_pos = np.arang` → `return np.tril(np.ones((T_q, T_k), dtype=bool))\n    query_pos = np.arang`
            {what} is right only for a square mask: here the {T_q} queries are the last {T_q} of {T_k} positions, so
            query i sits at position i + {shift} and sees every key up to there
        int-mask:
            def build_causal_mask(T_q, T_k):
                return np.tril(np.ones((T_q, T_k), dtype=int), k=T_k - T_q)
            {what} has its 1s and 0s in the right places, but as numbers (dtype {got.dtype}); a mask is a boolean array,
            True = may attend. The workshop's attention refuses a mask of numbers, and indexing the scores with a 0/1
            array would pick rows 0 and 1 instead of the True entries
    """,
    exact=True,
    forbid=("helpers.causal_mask",),
)
def build_causal_mask():
    # a square case first: a square-only answer passes it and is named on the first rectangle
    for T_q, T_k in ((4, 4), (2, 5), (1, 1), (6, 6), (1, 6), (3, 4)):
        shift = T_k - T_q
        own = f"key i + {shift} for query i" if shift else "key i for query i"
        facts = {"T_q": T_q, "T_k": T_k, "shift": shift, "own": own}
        yield Case(f"build_causal_mask({T_q}, {T_k})", (T_q, T_k), facts=facts, expected=causal_mask_loop(T_q, T_k))


def _blocked(got, mask):
    """The largest weight a blocked key got, as text."""
    return f"{float(np.abs(got[~np.broadcast_to(mask, got.shape)]).max()):.3g}"


def _emptied(got, mask):
    """The rows that came out all zeros though they have allowed keys, as a message names them."""
    rows = [str(int(i)) for i in np.flatnonzero(~np.asarray(got).any(axis=-1) & mask.any(axis=-1))]
    return f"row{'s' * (len(rows) > 1)} " + " and ".join([", ".join(rows[:-1]), rows[-1]] if len(rows) > 1 else rows)


def _weights_facts(mask):
    """What the messages of a masked softmax say about the learner's weights, worked out from them."""
    return {
        "blocked": lambda got: _blocked(got, mask),
        "row0": lambda got: f"{float(np.asarray(got).reshape(-1, np.shape(got)[-1])[0].sum()):.3g}",
        "emptied": lambda got: _emptied(got, mask),
    }


def _leaks(got, expected, case):
    scores, mask = case.args
    if got.shape != scores.shape or np.iscomplexobj(got):
        return
    softmax_slips(got, scores, case.what, mask=mask)  # wrong axis, whole matrix, NaN, keepdims, rows not normalised
    if np.any(got[~np.broadcast_to(mask, got.shape)] != 0):
        return "masked-keys-weighted"


@exercise(
    hint="Before the softmax, replace every blocked score by minus infinity, so that its exponential is exactly 0; "
    "then take a stable softmax along each row (over the keys). A row whose keys are all blocked needs care, since its "
    "max is minus infinity too. np.where chooses, entry by entry, between two arrays by a mask.",
    hint2="Two rows to try by hand: a row with one blocked key must give that key exactly 0 and share 1 among "
    "the others; a row with every key blocked must come out all zeros, with no warning and no NaN. In "
    "such a row the maximum is −∞ and the sum is 0, so both need a stand-in number there.",
    solution="""
        def masked_softmax(scores, mask):
            scores = np.where(mask, scores, -np.inf)
            row_max = scores.max(axis=-1, keepdims=True)
            row_max = np.where(np.isfinite(row_max), row_max, 0)  # a fully masked row: shift by 0, not -inf
            e = np.exp(scores - row_max)  # exp(-inf) = 0: masked keys get exactly 0
            total = e.sum(axis=-1, keepdims=True)
            return e / np.where(total > 0, total, 1)  # a fully masked row: 0 / 1 = 0, not 0 / 0
    """,
    # a mistake with no message is named by the row softmax's family (_families.SOFTMAX_SAYS)
    mistakes=r"""
        finite-fill: `np.where(mask, scores, -np.inf)` → `np.where(mask, scores, -1e9)`
            {what}: the rows of sentence 1, whose keys are all masked, came out uniform, 0.25 on each of the 4 keys it
            must not see. That is what a finite fill such as −1e9 gives: every score of the row becomes the same number.
            A query that may see nothing must get all zeros: block with −∞ and treat the all-blocked row apart
        all-masked-nan: `row_max = np.where(np.isfinite(row_max), row_max, 0)` → ``
            `np.where(total > 0, total, 1)` → `total`
            {what}: the rows of sentence 1, whose keys are all masked, are NaN. Their max is −∞, and −∞ − (−∞) is NaN
            (without the shift, 0/0 is). Such a row must come out all zeros: shift it by 0 instead of by its max, and
            divide by 1 where the row sums to 0
        after-softmax:
            def masked_softmax(scores, mask):
                e = np.exp(scores - scores.max(axis=-1, keepdims=True))
                return np.where(mask, e / e.sum(axis=-1, keepdims=True), 0)
            {what}: the blocked keys got 0, but the rows no longer sum to 1 (row 0 sums to {row0}): you masked the
            weights after the softmax, so the blocked keys' share was thrown away instead of shared among the allowed
            keys. Block the scores before the softmax
        zero-fill: `np.where(mask, scores, -np.inf)` → `np.where(mask, scores, 0)`
            {what}: the blocked keys got weights up to {blocked}: you set their scores to 0 (multiplying the scores by
            the mask does the same), an ordinary score whose exponential is 1. A blocked score must be −∞, whose
            exponential is exactly 0
        masked-keys-weighted:
            def masked_softmax(scores, mask):
                e = np.exp(scores - scores.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
            {what}: a blocked key got weight {blocked}. Every key where the mask is False must get exactly 0: its score
            becomes −∞ before the softmax
        wrong-axis: `axis=-1` → `axis=0`
        max-over-blocked:
            def masked_softmax(scores, mask):
                e = np.exp(scores - scores.max(axis=-1, keepdims=True)) * mask
                total = e.sum(axis=-1, keepdims=True)
                return e / np.where(total > 0, total, 1)
            {what}: {emptied} came out all zeros. Your row max included the blocked keys, so where a blocked key's score
            is far above every allowed one, the allowed keys' exponentials, e^(s − max), underflowed to 0. Block the
            scores (−∞) before taking the max, so that the max is over the allowed keys only
        true-means-blocked: `np.where(mask, scores, -np.inf)` → `np.where(mask, -np.inf, scores)`
            {what}: your weights fall on exactly the keys the mask blocks, and the allowed keys get 0. In this workshop
            a mask's True means 'may attend' (some libraries use the opposite convention, True = blocked)
        max-as-a-row: `row_max = scores.max(axis=-1, keepdims=True)` → `row_max = scores.max(axis=-1)`
    """,
    families=_leaks,
    # the workshop's softmax already turns an all -inf row into zeros: that is the lesson, so write it
    forbid=("helpers.softmax", "helpers.scaled_dot_product_attention"),
)
def masked_softmax():
    from helpers.checks._core import check_rng

    rng = check_rng()
    base = rng.normal(size=(4, 4)) * 2
    causal = np.tril(np.ones((4, 4), dtype=bool))
    shapes = _weights_facts(causal)
    for scores, what in (
        (base, "masked_softmax(scores, causal mask) for 4 tokens"),
        (base * 500, "masked_softmax(scores, causal mask) on scores of size about 1000"),
    ):
        yield Case(what, (scores, causal), facts=shapes, expected=masked_softmax_loop(scores, causal))
    batch = rng.normal(size=(2, 3, 4))
    keys = (np.arange(4)[None, :] < np.array([3, 0])[:, None])[:, None, :]  # (2, 1, 4): sentence 1 is all padding
    what = "masked_softmax with a (2, 1, 4) padding mask where sentence 1 has no real token"
    shapes = _weights_facts(keys)
    yield Case(what, (batch, keys), facts=shapes, expected=masked_softmax_loop(batch, keys))
