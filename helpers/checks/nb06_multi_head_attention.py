"""The exercises of 06_multi_head_attention."""

import numpy as np

from helpers.checks._core import Mismatch, as_array, call, check_rng, edited, exercise, expect_close
from helpers.checks._families import scores_divided_by, wrong_array_weighted
from helpers.checks._mistakes import multihead_mistakes, none_mask_mistakes, same_numbers_other_order
from helpers.checks._reference import multihead_loop


def _is(got, candidate, expected):
    """True when `got` is `candidate` (shape and values) and `candidate` is not the right answer here."""
    return (
        got.shape == candidate.shape
        and not np.iscomplexobj(got)
        and np.allclose(got, candidate)
        and not (candidate.shape == expected.shape and np.allclose(candidate, expected))
    )


@exercise(
    notebook="06_multi_head_attention",
    hint="Head i owns a block of d_head neighbouring columns of every token. Cut the last axis into two, (heads, "
    "d_head), then bring the heads axis in front of the tokens axis; np.swapaxes exchanges two axes, and "
    "counting axes from the end works whatever the number of leading axes.",
    hint2=(
        "Try it on numbered entries: X of shape (2, 4) holding 0 to 7 row by row, and two heads. Head 0 must "
        "hold 0, 1 and 4, 5 (the first two columns of both tokens), head 1 holds 2, 3 and 6, 7. If head 0 "
        "comes out as 0, 1 and 2, 3, the tokens were mixed into the heads: one reshape alone cannot move the "
        "heads in front of the tokens."
    ),
    solution="""
        def split_heads_batched(X, n_heads):
            *batch, T, d_model = X.shape
            X = X.reshape(*batch, T, n_heads, d_model // n_heads)  # (..., T, h, d_head)
            return np.swapaxes(X, -3, -2)  # (..., h, T, d_head)
    """,
    mistakes={
        "plain-reshape": """
            def split_heads_batched(X, n_heads):
                *batch, T, d_model = X.shape
                return X.reshape(*batch, n_heads, T, d_model // n_heads)
        """,
        "no-swap": """
            def split_heads_batched(X, n_heads):
                *batch, T, d_model = X.shape
                return X.reshape(*batch, T, n_heads, d_model // n_heads)
        """,
        "front-axes": """
            def split_heads_batched(X, n_heads):
                *batch, T, d_model = X.shape
                X = X.reshape(*batch, T, n_heads, d_model // n_heads)
                return np.swapaxes(X, 1, 2)
        """,
        "wrong-places": """
            def split_heads_batched(X, n_heads):
                *batch, T, d_model = X.shape
                X = X.reshape(*batch, T, d_model // n_heads, n_heads)
                return np.moveaxis(X, -1, -3)
        """,
        "last-two-axes": """
            def split_heads_batched(X, n_heads):
                *batch, T, d_model = X.shape
                X = X.reshape(*batch, T, n_heads, d_model // n_heads)
                return np.swapaxes(X, -2, -1)
        """,
        "heads-first": """
            def split_heads_batched(X, n_heads):
                return np.stack(np.split(X, n_heads, axis=-1))
        """,
        "leading-axes-merged": """
            def split_heads_batched(X, n_heads):
                *batch, T, d_model = X.shape
                X = X.reshape(-1, T, n_heads, d_model // n_heads)
                return np.swapaxes(X, -3, -2)
        """,
    },
    forbid=("helpers.split_heads", "helpers.multihead.split_heads"),
)
def split_heads_batched(answer):
    rng = check_rng()
    # one leading axis first, then two (where counting axes from the front goes wrong), then none
    for shape, n_heads in (((2, 5, 12), 3), ((2, 3, 4, 8), 4), ((6, 4), 2), ((3, 6), 1)):
        X = rng.normal(size=shape)
        *batch, T, d_model = shape
        d_head = d_model // n_heads
        expected = np.stack([X[..., i * d_head : (i + 1) * d_head] for i in range(n_heads)], axis=-3)
        what = f"split_heads_batched(X of shape {shape}, n_heads={n_heads})"
        got = as_array(call(answer, X, n_heads), what)
        by_token = X.reshape(*batch, T, n_heads, d_head)  # (..., T, h, d_head)
        if _is(got, X.reshape(*batch, n_heads, T, d_head), expected):
            raise Mismatch(
                f"{what} has the right shape, but a reshape straight to (..., h, T, d_head) mixes tokens "
                "into heads: it fills head 0 with the first tokens' numbers in memory order, so a row of a "
                "head holds pieces of several tokens. Cut each token's columns into (h, d_head) first, "
                "then move the heads axis in front of the tokens",
                "plain-reshape",
            )
        if _is(got, by_token, expected):
            raise Mismatch(
                f"{what} has shape {got.shape}, (..., T, h, d_head): each token's columns are cut into "
                "heads, but the heads axis still comes after the tokens. Exchange the tokens axis and the "
                "heads axis, to get (..., h, T, d_head)",
                "no-swap",
            )
        if _is(got, np.swapaxes(by_token, -2, -1), expected):
            raise Mismatch(
                f"{what} has shape {got.shape}, (..., T, d_head, h): you exchanged the last two axes, the "
                "heads and d_head. The heads axis goes in front of the tokens: exchange the tokens axis and "
                "the heads axis (the third-last and the second-last), to get (..., h, T, d_head)",
                "last-two-axes",
            )
        if batch and _is(got, np.moveaxis(by_token, -2, 0), expected):
            raise Mismatch(
                f"{what} has shape {got.shape}: the heads axis came first, in front of the leading axes "
                f"{tuple(batch)}. It goes just before the tokens, after every leading axis: (..., h, T, "
                "d_head)",
                "heads-first",
            )
        lost = got.shape[:-3] != tuple(batch) and got.shape[-3:] == expected.shape[-3:] and got.size == X.size
        if lost and not np.iscomplexobj(got) and np.allclose(got.reshape(expected.shape), expected):
            came_back = f"the leading axes {tuple(batch)} came back as" if batch else "X has no leading axes, yet got"
            raise Mismatch(
                f"{what} has shape {got.shape}: the heads are right, but {came_back} {got.shape[:-3]}. "
                "Keep every leading axis as it is, whatever their number: (..., h, T, d_head)",
                "leading-axes-merged",
            )
        if len(batch) >= 2 and _is(got, np.swapaxes(by_token, 1, 2), expected):
            raise Mismatch(
                f"{what} has shape {got.shape}, expected {expected.shape}: you exchanged the second and "
                "third axes counted from the front, which are the tokens and heads axes only when there is "
                f"exactly one leading axis, and this X has {len(batch)} leading axes. Count from the end, "
                "the third-last and second-last, so it works for any number",
                "front-axes",
            )
        if not np.iscomplexobj(got):
            same_numbers_other_order(
                got,
                expected,
                what,
                "head i takes d_head neighbouring columns of each token "
                "(head 0 the first d_head columns, head 1 the next d_head), and the tokens keep "
                "their order",
                "wrong-places",
            )
        expect_close(got, expected, what)


@exercise(
    notebook="06_multi_head_attention",
    hint="Undo the split in reverse order: bring the tokens axis back in front of the heads axis (np.swapaxes), "
    "then join the last two axes into one of width h·d_head.",
    hint2=(
        "Merging undoes splitting: merging the split of any X must give X back, whatever the number of "
        "leading axes. On the numbered example (two tokens, 0 to 7, two heads) the heads 0, 1 / 4, 5 and 2, 3"
        " / 6, 7 must give back the rows 0 to 3 and 4 to 7. The heads sit side by side in each token's row: "
        "they are not added."
    ),
    solution="""
        def merge_heads_batched(H):
            *batch, n_heads, T, d_head = H.shape
            H = np.swapaxes(H, -3, -2)  # (..., T, h, d_head)
            return H.reshape(*batch, T, n_heads * d_head)  # (..., T, d_model)
    """,
    mistakes={
        "plain-reshape": """
            def merge_heads_batched(H):
                *batch, n_heads, T, d_head = H.shape
                return H.reshape(*batch, T, n_heads * d_head)
        """,
        "not-joined": """
            def merge_heads_batched(H):
                return np.swapaxes(H, -3, -2)
        """,
        "heads-added": """
            def merge_heads_batched(H):
                return H.sum(axis=-3)
        """,
        "front-axes": """
            def merge_heads_batched(H):
                *batch, n_heads, T, d_head = H.shape
                return np.swapaxes(H, 1, 2).reshape(*batch, T, n_heads * d_head)
        """,
        "wrong-places": """
            def merge_heads_batched(H):
                *batch, n_heads, T, d_head = H.shape
                return np.moveaxis(H, -3, -1).reshape(*batch, T, n_heads * d_head)
        """,
        "last-two-axes": """
            def merge_heads_batched(H):
                *batch, n_heads, T, d_head = H.shape
                return np.swapaxes(H, -2, -1).reshape(*batch, T, n_heads * d_head)
        """,
        "first-axis": """
            def merge_heads_batched(H):
                return np.concatenate(H, axis=-1)
        """,
    },
    forbid=("helpers.merge_heads", "helpers.multihead.merge_heads"),
)
def merge_heads_batched(answer):
    rng = check_rng()
    # one leading axis first, then two (where counting axes from the front goes wrong), then none
    for shape in ((2, 3, 5, 4), (3, 4, 2, 2, 3), (2, 6, 2), (1, 3, 6)):
        H = rng.normal(size=shape)
        *batch, n_heads, T, d_head = shape
        expected = np.concatenate([H[..., i, :, :] for i in range(n_heads)], axis=-1)
        what = f"merge_heads_batched(H of shape {shape})"
        got = as_array(call(answer, H), what)
        if _is(got, H.reshape(*batch, T, n_heads * d_head), expected):
            raise Mismatch(
                f"{what} has the right shape, but a reshape alone keeps the numbers in memory order: "
                "each row of your result holds consecutive tokens of one head, side by side. Bring the "
                "tokens axis in front of the heads axis first, (..., T, h, d_head), then join the last "
                "two",
                "plain-reshape",
            )
        if _is(got, np.swapaxes(H, -3, -2), expected):
            raise Mismatch(
                f"{what} has shape {got.shape}, (..., T, h, d_head): the tokens are back in front of the "
                f"heads, but each token still has its {n_heads} pieces on separate rows. Join the last two "
                f"axes into one of width h·d_head = {n_heads * d_head}",
                "not-joined",
            )
        if _is(got, H.sum(axis=-3), expected) or _is(got, H.mean(axis=-3), expected):
            raise Mismatch(
                f"{what} has shape {got.shape}, (..., T, d_head): you added the heads up (or averaged "
                f"them). Merging puts them side by side, (..., T, h·d_head) = (..., {T}, "
                f"{n_heads * d_head}); the sum over heads appears only once the output projection has been "
                "applied",
                "heads-added",
            )
        if _is(got, np.swapaxes(H, -2, -1).reshape(*batch, T, n_heads * d_head), expected):
            raise Mismatch(
                f"{what}: you exchanged the last two axes, the tokens and d_head, before joining, so each "
                "row of your result holds numbers of several tokens. The axes to exchange are the heads "
                "and the tokens (the third-last and the second-last), which gives (..., T, h, d_head); "
                "then join the last two",
                "last-two-axes",
            )
        if batch and _is(got, np.concatenate(H, axis=-1), expected):
            raise Mismatch(
                f"{what} has shape {got.shape}: you joined the pieces along the first axis, which is the "
                f"heads axis only when H has no leading axes; here it is a leading axis of size {shape[0]}. "
                "Join the heads, the third-last axis, side by side",
                "first-axis",
            )
        if len(batch) >= 2 and _is(got, np.swapaxes(H, 1, 2).reshape(*batch, T, n_heads * d_head), expected):
            raise Mismatch(
                f"{what}: you exchanged the second and third axes counted from the front, which are the "
                "heads and tokens axes only when there is exactly one leading axis, and this H has "
                f"{len(batch)} leading axes. Count from the end, the third-last and second-last, so it "
                "works for any number",
                "front-axes",
            )
        if not np.iscomplexobj(got):
            same_numbers_other_order(
                got,
                expected,
                what,
                "each token's row holds head 0's d_head numbers, then head "
                "1's, and so on: whole heads side by side, the tokens in their order",
                "wrong-places",
            )
        expect_close(got, expected, what)


_CROSS_SOLUTION = """
        def multi_head_cross_attention(x, context, W_q, W_k, W_v, W_o, n_heads, mask=None):
            d_head = W_q.shape[1] // n_heads

            def split(M):  # (T, d_model) -> (h, T, d_head)
                return M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2)

            Q, K, V = split(x @ W_q), split(context @ W_k), split(context @ W_v)
            scores = np.einsum("hqd,hkd->hqk", Q, K) / np.sqrt(d_head)  # (h, T_q, T_k)
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
            weights = weights / weights.sum(axis=-1, keepdims=True)
            heads = np.einsum("hqk,hkd->hqd", weights, V)  # (h, T_q, d_head)
            return heads.transpose(1, 0, 2).reshape(x.shape[0], -1) @ W_o  # (T_q, d_model) @ (d_model, d_model)
    """


@exercise(
    notebook="06_multi_head_attention",
    hint="The same steps as multi-head self-attention, except that the queries are projected from x and the keys "
    "and values from context. Each head's scores are divided by √d_head, blocked scores become −∞ before the "
    "softmax, and the merged heads are multiplied by W_o. np.einsum can run every head at once.",
    hint2=(
        "Two things differ from self-attention: the queries have T_q rows and the keys T_k, so each head's "
        "scores are (T_q, T_k); and the scale is √d_head with d_head = d_model / h, not √d_model. A check: "
        "with the context equal to x and a mask of all True you must get exactly what multi-head self-"
        "attention gives."
    ),
    solution=_CROSS_SOLUTION,
    mistakes={  # each the solution with one mistake put in
        "keys-from-x": edited(
            _CROSS_SOLUTION, ("split(context @ W_k), split(context @ W_v)", "split(x @ W_k), split(x @ W_v)")
        ),
        "no-output-projection": edited(_CROSS_SOLUTION, (".reshape(x.shape[0], -1) @ W_o", ".reshape(x.shape[0], -1)")),
        "scaled-by-d-model": edited(_CROSS_SOLUTION, ("/ np.sqrt(d_head)", "/ np.sqrt(W_q.shape[1])")),
        "not-scaled": edited(_CROSS_SOLUTION, ("/ np.sqrt(d_head)", "")),
        "mask-ignored": edited(_CROSS_SOLUTION, ("if mask is not None:", "if False:")),
        "tokens-mixed": edited(
            _CROSS_SOLUTION,  # a plain reshape to split, and its inverse to merge
            ("M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2)", "M.reshape(n_heads, M.shape[0], d_head)"),
            ("heads.transpose(1, 0, 2).reshape(x.shape[0], -1)", "heads.reshape(x.shape[0], -1)"),
        ),
        "mask-none": edited(
            _CROSS_SOLUTION,  # np.where on None: every score blocked
            ("if mask is not None:\n                scores = np.where", "scores = np.where"),
        ),
        "queries-from-context": edited(
            _CROSS_SOLUTION,
            (
                "split(x @ W_q), split(context @ W_k), split(context @ W_v)",
                "split(context @ W_q), split(x @ W_k), split(x @ W_v)",
            ),
            (".reshape(x.shape[0], -1)", ".reshape(context.shape[0], -1)"),
        ),
        "wrong-axis": edited(
            _CROSS_SOLUTION,
            ("max(axis=-1, keepdims=True)", "max(axis=-2, keepdims=True)"),
            ("sum(axis=-1, keepdims=True)", "sum(axis=-2, keepdims=True)"),
        ),
        "scaled-by-d-head": edited(_CROSS_SOLUTION, ("/ np.sqrt(d_head)", "/ d_head")),
        "one-head": edited(_CROSS_SOLUTION, ("M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2)", "M[None]")),
        "true-means-blocked": edited(
            _CROSS_SOLUTION, ("np.where(mask, scores, -np.inf)", "np.where(mask, -np.inf, scores)")
        ),
    },
    forbid=("helpers.MultiHeadAttention", "helpers.multihead.MultiHeadAttention"),
)
def multi_head_cross_attention(answer):
    rng = check_rng()
    causal = np.arange(5)[None, :] <= np.arange(3)[:, None] + 2  # (3, 5): the last 3 of 5 positions
    for d_model, n_heads, mask in ((8, 2, None), (8, 2, causal), (12, 4, causal), (6, 1, None)):
        x, context = rng.normal(size=(3, d_model)), rng.normal(size=(5, d_model))
        W_q, W_k, W_v, W_o = (rng.normal(size=(d_model, d_model)) for _ in range(4))
        weights = (x, context, W_q, W_k, W_v, W_o, n_heads)
        masked = "a (3, 5) causal mask" if mask is not None else "no mask"
        what = f"multi_head_cross_attention for x (3, {d_model}), context (5, {d_model}), n_heads={n_heads}, {masked}"
        got = as_array(call(answer, *weights, mask), what)
        expected = multihead_loop(*weights, mask)
        if _is(got, multihead_loop(x, x, *weights[2:]), expected):
            raise Mismatch(
                f"{what}: your keys and values come from x, so this is self-attention. In cross-attention "
                "only the queries come from x (3 tokens); the keys and values come from context (5 "
                "tokens), so the weights are (h, 3, 5)",
                "keys-from-x",
            )
        if mask is None and _is(got, multihead_loop(context, x, *weights[2:]), expected):
            raise Mismatch(
                f"{what} has shape {got.shape}, one row per token of context: your queries come from "
                "context and the keys and values from x. In cross-attention the queries come from x (3 "
                f"tokens), so the output has one row per token of x, (3, {d_model})",
                "queries-from-context",
            )
        multihead_mistakes(got, expected, weights, mask, what)  # scaling, heads, mask, softmax axis, W_o
        if mask is None and not (got.shape == expected.shape and np.allclose(got, expected)):
            none_mask_mistakes(answer, weights, got, expected, what)
        d_head = d_model // n_heads
        values_from_keys = multihead_loop(x, context, W_q, W_k, W_k, W_o, n_heads, mask)
        wrong_array_weighted(got, {"the keys (context times W_k)": values_from_keys}, what, "the values")
        sizes = {"d_head": d_head, "d_model": d_model, "n_heads": n_heads, "T_q": 3, "T_k": 5}
        scale = ("√d_head", np.sqrt(d_head))
        scores_divided_by(got, lambda c: multihead_loop(*weights, mask, scale=1 / c), what, sizes, scale)  # noqa: B023
        expect_close(got, expected, what)
