"""The exercises of 05_masking."""

import numpy as np

from helpers.attention import softmax
from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close, expect_equal
from helpers.checks._mistakes import row_softmax_mistakes
from helpers.checks._reference import causal_mask_loop, masked_softmax_loop


def _as_mask(got):
    """`got` read as True/False (a bool array, or numbers that are all 0 or 1), or None when it is neither."""
    if got.dtype == bool:
        return got
    if np.issubdtype(got.dtype, np.number) and not np.iscomplexobj(got) and np.all((got == 0) | (got == 1)):
        return got != 0
    return None


@exercise(
    notebook="05_masking",
    hint="Give every query and every key its position, and compare the two: query i may see key j when j is at "
    "most the query's position. Here the queries are the last T_q of the T_k positions, so query i sits at "
    "position i + (T_k − T_q). np.arange gives a run of positions.",
    hint2=(
        "Draw a small case by hand: with T_q = 2 and T_k = 4 the two queries are the last two positions, 2 "
        "and 3, so the first row is True, True, True, False and the second row is all True. The queries are "
        "the rows and the keys the columns, and a square mask has True on its diagonal: a query may see "
        "itself."
    ),
    solution="""
        def build_causal_mask(T_q, T_k):
            query_pos = np.arange(T_q)[:, None] + (T_k - T_q)  # (T_q, 1): the queries are the last T_q positions
            key_pos = np.arange(T_k)[None, :]  # (1, T_k)
            return key_pos <= query_pos  # (T_q, T_k)
    """,
    mistakes={
        "hides-diagonal": """
            def build_causal_mask(T_q, T_k):
                query_pos = np.arange(T_q)[:, None] + (T_k - T_q)
                key_pos = np.arange(T_k)[None, :]
                return key_pos < query_pos
        """,
        "future-visible": """
            def build_causal_mask(T_q, T_k):
                return np.triu(np.ones((T_q, T_k), dtype=bool))
        """,
        "true-means-blocked": """
            def build_causal_mask(T_q, T_k):
                query_pos = np.arange(T_q)[:, None] + (T_k - T_q)
                key_pos = np.arange(T_k)[None, :]
                return key_pos > query_pos
        """,
        "square-only": """
            def build_causal_mask(T_q, T_k):
                return np.tril(np.ones((T_q, T_k), dtype=bool))
        """,
        "int-mask": """
            def build_causal_mask(T_q, T_k):
                return np.tril(np.ones((T_q, T_k), dtype=int), k=T_k - T_q)
        """,
    },
    forbid=("helpers.causal_mask", "helpers.masking.causal_mask"),
)
def build_causal_mask(answer):
    # a square case first: a square-only answer passes it and is named on the first rectangle
    for T_q, T_k in ((4, 4), (2, 5), (1, 1), (6, 6), (1, 6), (3, 4)):
        what = f"build_causal_mask({T_q}, {T_k})"
        got = as_array(call(answer, T_q, T_k), what)
        expected = causal_mask_loop(T_q, T_k)
        shift = T_k - T_q
        query_pos = np.arange(T_q)[:, None] + shift  # (T_q, 1)
        key_pos = np.arange(T_k)[None, :]  # (1, T_k)
        mask = _as_mask(got) if got.shape == expected.shape else None
        own = f"key i + {shift} for query i" if shift else "key i for query i"

        def gives(candidate, mask=mask, expected=expected):  # a pattern that is right here is no mistake here
            return mask is not None and np.array_equal(mask, candidate) and not np.array_equal(candidate, expected)

        if gives(key_pos < query_pos):
            raise Mismatch(
                f"{what} is False where the key sits at the query's own position, so no query may see "
                f"itself. A query may attend to every key up to and including its own position ({own}): "
                "itself and the past",
                "hides-diagonal",
            )
        if gives(key_pos > query_pos):
            raise Mismatch(
                f"{what} is True exactly where the key comes after the query, where attention must be "
                "blocked. In this workshop a mask's True means 'may attend' (some libraries use the "
                "opposite convention, True = blocked)",
                "true-means-blocked",
            )
        if gives(key_pos >= query_pos) or gives(np.triu(np.ones((T_q, T_k), bool))):
            raise Mismatch(
                f"{what} is True on and above the diagonal: each query may see the keys after it (the "
                "future) but not the ones before it. Rows are queries and columns are keys; a query may see "
                f"the keys up to its own position ({own}), on and below the diagonal",
                "future-visible",
            )
        if shift and gives(np.tril(np.ones((T_q, T_k), bool))):
            raise Mismatch(
                f"{what} is right only for a square mask: here the {T_q} queries are the last {T_q} of "
                f"{T_k} positions, so query i sits at position i + {shift} and sees every key up to there",
                "square-only",
            )
        if mask is not None and got.dtype != bool and np.array_equal(mask, expected):
            raise Mismatch(
                f"{what} has its 1s and 0s in the right places, but as numbers (dtype {got.dtype}); a mask "
                "is a boolean array, True = may attend. The workshop's attention refuses a mask of "
                "numbers, and indexing the scores with a 0/1 array would pick rows 0 and 1 instead of "
                "the True entries",
                "int-mask",
            )
        expect_equal(got, expected, what)


@exercise(
    notebook="05_masking",
    hint="Before the softmax, replace every blocked score by minus infinity, so that its exponential is exactly 0; "
    "then take a stable softmax along each row (over the keys). A row whose keys are all blocked needs "
    "care, since its max is minus infinity too. np.where chooses, entry by entry, between two arrays by a "
    "mask.",
    hint2=(
        "Two rows to try by hand: a row with one blocked key must give that key exactly 0 and share 1 among "
        "the others; a row with every key blocked must come out all zeros, with no warning and no NaN. In "
        "such a row the maximum is −∞ and the sum is 0, so both need a stand-in number there."
    ),
    solution="""
        def masked_softmax(scores, mask):
            scores = np.where(mask, scores, -np.inf)
            row_max = scores.max(axis=-1, keepdims=True)
            row_max = np.where(np.isfinite(row_max), row_max, 0)  # a fully masked row: shift by 0, not -inf
            e = np.exp(scores - row_max)  # exp(-inf) = 0: masked keys get exactly 0
            total = e.sum(axis=-1, keepdims=True)
            return e / np.where(total > 0, total, 1)  # a fully masked row: 0 / 1 = 0, not 0 / 0
    """,
    mistakes={
        "finite-fill": """
            def masked_softmax(scores, mask):
                scores = np.where(mask, scores, -1e9)  # a finite fill: a fully masked row becomes uniform
                e = np.exp(scores - scores.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
        """,
        "all-masked-nan": """
            def masked_softmax(scores, mask):
                scores = np.where(mask, scores, -np.inf)
                e = np.exp(scores - scores.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
        """,
        "after-softmax": """
            def masked_softmax(scores, mask):
                e = np.exp(scores - scores.max(axis=-1, keepdims=True))
                weights = e / e.sum(axis=-1, keepdims=True)
                return np.where(mask, weights, 0)
        """,
        "zero-fill": """
            def masked_softmax(scores, mask):
                scores = np.where(mask, scores, 0)
                e = np.exp(scores - scores.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
        """,
        "masked-keys-weighted": """
            def masked_softmax(scores, mask):
                e = np.exp(scores - scores.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
        """,
        "wrong-axis": """
            def masked_softmax(scores, mask):
                scores = np.where(mask, scores, -np.inf)
                e = np.exp(scores - scores.max(axis=0, keepdims=True))
                return e / e.sum(axis=0, keepdims=True)
        """,
        "max-over-blocked": """
            def masked_softmax(scores, mask):
                e = np.exp(scores - scores.max(axis=-1, keepdims=True)) * mask  # masked after the exponential
                total = e.sum(axis=-1, keepdims=True)
                return e / np.where(total > 0, total, 1)
        """,
        "true-means-blocked": """
            def masked_softmax(scores, mask):
                scores = np.where(mask, -np.inf, scores)
                row_max = scores.max(axis=-1, keepdims=True)
                row_max = np.where(np.isfinite(row_max), row_max, 0)
                e = np.exp(scores - row_max)
                total = e.sum(axis=-1, keepdims=True)
                return e / np.where(total > 0, total, 1)
        """,
        "max-as-a-row": """
            def masked_softmax(scores, mask):
                scores = np.where(mask, scores, -np.inf)
                e = np.exp(scores - scores.max(axis=-1))
                return e / e.sum(axis=-1, keepdims=True)
        """,
    },
    # the workshop's softmax already turns an all -inf row into zeros: that is the lesson, so write it
    forbid=(
        "helpers.softmax",
        "helpers.attention.softmax",
        "helpers.scaled_dot_product_attention",
        "helpers.attention.scaled_dot_product_attention",
    ),
)
def masked_softmax(answer):
    rng = check_rng()
    base = rng.normal(size=(4, 4)) * 2
    causal = np.tril(np.ones((4, 4), dtype=bool))
    for scores, what in (
        (base, "masked_softmax(scores, causal mask) for 4 tokens"),
        (base * 500, "masked_softmax(scores, causal mask) on scores of size about 1000"),
    ):
        got = as_array(call(answer, scores, causal), what)
        expected = masked_softmax_loop(scores, causal)
        if got.shape == scores.shape and not np.iscomplexobj(got):
            _name_a_leak(got, scores, causal, expected, what)
        expect_close(got, expected, what)
    batch = rng.normal(size=(2, 3, 4))
    keys = (np.arange(4)[None, :] < np.array([3, 0])[:, None])[:, None, :]  # (2, 1, 4): sentence 1 is all padding
    what = "masked_softmax with a (2, 1, 4) padding mask where sentence 1 has no real token"
    got = as_array(call(answer, batch, keys), what)
    if got.shape == batch.shape and not np.iscomplexobj(got):
        if np.all(np.isnan(got[1])):
            raise Mismatch(
                f"{what}: the rows of sentence 1, whose keys are all masked, are NaN. Their max is −∞, and "
                "−∞ − (−∞) is NaN (without the shift, 0/0 is). Such a row must come out all zeros: shift "
                "it by 0 instead of by its max, and divide by 1 where the row sums to 0",
                "all-masked-nan",
            )
        if np.allclose(got[1], 0.25):
            raise Mismatch(
                f"{what}: the rows of sentence 1, whose keys are all masked, came out uniform, 0.25 on each "
                "of the 4 keys it must not see. That is what a finite fill such as −1e9 gives: every score "
                "of the row becomes the same number. A query that may see nothing must get all zeros: "
                "block with −∞ and treat the all-blocked row apart",
                "finite-fill",
            )
    expect_close(got, masked_softmax_loop(batch, keys), f"{what} (its rows must be all zeros)")


def _name_a_leak(got, scores, mask, expected, what):
    """Raise Mismatch when `got` is a known wrong way of masking. Shapes: got, scores, mask, expected (T_q, T_k)."""

    def gives(candidate):  # (a way that is right for these inputs is no mistake here)
        return np.allclose(got, candidate) and not np.allclose(candidate, expected)

    with np.errstate(all="ignore"):
        exps = np.exp(scores - scores.max(axis=-1, keepdims=True)) * mask  # the max over every key, blocked ones too
        renormalised = np.nan_to_num(exps / exps.sum(axis=-1, keepdims=True))
    empty = [int(i) for i in np.flatnonzero(~renormalised.any(axis=-1) & mask.any(axis=-1))]  # allowed keys, all 0
    if empty and np.allclose(np.nan_to_num(got), renormalised) and not np.allclose(renormalised, expected):
        listed = ", ".join(map(str, empty[:-1])) + (" and " if len(empty) > 1 else "") + str(empty[-1])
        raise Mismatch(
            f"{what}: row{'s' if len(empty) > 1 else ''} {listed} came out all zeros. Your row max "
            "included the blocked keys, so where a blocked key's score is far above every allowed one, "
            "the allowed keys' exponentials, e^(s − max), underflowed to 0. Block the scores (−∞) before "
            "taking the max, so that the max is over the allowed keys only",
            "max-over-blocked",
        )
    if gives(softmax(scores) * mask):
        sums = got.sum(axis=-1)
        raise Mismatch(
            f"{what}: the blocked keys got 0, but the rows no longer sum to 1 (row 0 sums to "
            f"{float(sums[0]):.3g}): you masked the weights after the softmax, so the blocked keys' share "
            "was thrown away instead of shared among the allowed keys. Block the scores before the "
            "softmax",
            "after-softmax",
        )
    inverted = masked_softmax_loop(scores, ~mask)  # (T_q, T_k); zero where every key is allowed
    rows = (~mask).any(axis=-1)  # the rows where the inverted mask allows something
    if rows.any() and not np.allclose(inverted, expected) and np.allclose(got[rows], inverted[rows]):
        raise Mismatch(
            f"{what}: your weights fall on exactly the keys the mask blocks, and the allowed keys get 0. "
            "In this workshop a mask's True means 'may attend' (some libraries use the opposite "
            "convention, True = blocked)",
            "true-means-blocked",
        )
    if gives(softmax(np.where(mask, scores, 0.0))):
        raise Mismatch(
            f"{what}: the blocked keys got weights up to {float(np.abs(got[~mask]).max()):.3g}: you set "
            "their scores to 0 (multiplying the scores by the mask does the same), an ordinary score "
            "whose exponential is 1. A blocked score must be −∞, whose exponential is exactly 0",
            "zero-fill",
        )
    row_softmax_mistakes(got, scores, what, mask=mask)  # wrong axis, whole matrix, NaN, keepdims, rows not normalised
    if np.any(got[~mask] != 0):
        raise Mismatch(
            f"{what}: a blocked key got weight {float(np.abs(got[~mask]).max()):.3g}. Every key where "
            "the mask is False must get exactly 0: its score becomes −∞ before the softmax",
            "masked-keys-weighted",
        )
