"""The exercises of 06_multi_head_attention."""

import numpy as np

from helpers.checks._core import Case, check_rng, exercise
from helpers.checks._families import other_order, scores_divided_by, wrong_array_weighted
from helpers.checks._reference import multihead_loop


@exercise(
    hint="Head i owns a block of d_head neighbouring columns of every token. Cut the last axis into two, (heads, "
    "d_head), then bring the heads axis in front of the tokens axis; np.swapaxes exchanges two axes, and "
    "counting axes from the end works whatever the number of leading axes.",
    hint2="Try it on numbered entries: X of shape (2, 4) holding 0 to 7 row by row, and two heads. Head 0 must hold 0, "
    "1 and 4, 5 (the first two columns of both tokens), head 1 holds 2, 3 and 6, 7. If head 0 comes out as 0, 1 and 2, "
    "3, the tokens were mixed into the heads: one reshape alone cannot move the heads in front of the tokens.",
    solution="""
        def split_heads_batched(X, n_heads):
            *batch, T, d_model = X.shape
            X = X.reshape(*batch, T, n_heads, d_model // n_heads)  # (..., T, h, d_head)
            return np.swapaxes(X, -3, -2)  # (..., h, T, d_head)
    """,
    mistakes=r"""
        plain-reshape: `X = X.reshape(*batch, T, n_heads,` → `X = X.reshape(*batch, n_heads, T,`
            `np.swapaxes(X, -3, -2)` → `X`
            {what} has the right shape, but a reshape straight to (..., h, T, d_head) mixes tokens into heads: it fills
            head 0 with the first tokens' numbers in memory order, so a row of a head holds pieces of several tokens.
            Cut each token's columns into (h, d_head) first, then move the heads axis in front of the tokens
        no-swap: `np.swapaxes(X, -3, -2)` → `X`
            {what} has shape {got.shape}, (..., T, h, d_head): each token's columns are cut into heads, but the heads
            axis still comes after the tokens. Exchange the tokens axis and the heads axis, to get (..., h, T, d_head)
        last-two-axes: `-3, -2)` → `-2, -1)`
            {what} has shape {got.shape}, (..., T, d_head, h): you exchanged the last two axes, the heads and d_head.
            The heads axis goes in front of the tokens: exchange the tokens axis and the heads axis (the third-last and
            the second-last), to get (..., h, T, d_head)
        front-axes: `-3, -2)` → `1, 2)`
            {what} has shape {got.shape}, expected {shape}: you exchanged the second and third axes counted from the
            front, which are the tokens and heads axes only when there is exactly one leading axis, and this X has
            {leading} leading axes. Count from the end, the third-last and second-last, so it works for any number
        wrong-places: `T, n_heads, d_model // n_heads)` → `T, d_model // n_heads, n_heads)`
            `(X, -3, -2)` → `(X, -1, -3)`
            {what} has the right shape and the right numbers in the wrong places: head i takes d_head neighbouring
            columns of each token (head 0 the first d_head columns, head 1 the next d_head), and the tokens keep their
            order
        heads-first: `*batch, T, d_model =` → `return np.stack(np.split(X, n_heads, axis=-1))\n    *batch, T, d_model =`
            {what} has shape {got.shape}: the heads axis came first, in front of the leading axes {batch}. It goes just
            before the tokens, after every leading axis: (..., h, T, d_head)
        leading-axes-merged: `X.reshape(*batch, T` → `X.reshape(-1, T`
            {what} has shape {got.shape}: the heads are right, but {came_back} {lead}. Keep every leading axis as it is,
            whatever their number: (..., h, T, d_head)
    """,
    families=lambda got, expected, case: "wrong-places" if other_order(got, expected) else None,
    forbid=("helpers.split_heads",),
)
def split_heads_batched():
    rng = check_rng()
    # one leading axis first, then two (where counting axes from the front goes wrong), then none
    for shape, n_heads in (((2, 5, 12), 3), ((2, 3, 4, 8), 4), ((6, 4), 2), ((3, 6), 1)):
        *batch, T, d_model = shape
        facts = {"batch": tuple(batch), "leading": len(batch), "shape": (*batch, n_heads, T, d_model // n_heads)}
        came_back = f"the leading axes {tuple(batch)} came back as" if batch else "X has no leading axes, yet got"
        facts.update(came_back=came_back, lead=lambda got: np.shape(got)[:-3])
        what = f"split_heads_batched(X of shape {shape}, n_heads={n_heads})"
        yield Case(what, (rng.normal(size=shape), n_heads), facts=facts)


@exercise(
    hint="Undo the split in reverse order: bring the tokens axis back in front of the heads axis (np.swapaxes), "
    "then join the last two axes into one of width h·d_head.",
    hint2="Merging undoes splitting: merging the split of any X must give X back, whatever the number of leading axes. "
    "On the numbered example (two tokens, 0 to 7, two heads) the heads 0, 1 / 4, 5 and 2, 3 / 6, 7 must give back the "
    "rows 0 to 3 and 4 to 7. The heads sit side by side in each token's row: they are not added.",
    solution="""
        def merge_heads_batched(H):
            *batch, n_heads, T, d_head = H.shape
            H = np.swapaxes(H, -3, -2)  # (..., T, h, d_head)
            return H.reshape(*batch, T, n_heads * d_head)  # (..., T, d_model)
    """,
    mistakes=r"""
        plain-reshape: `H = np.swapaxes(H, -3, -2)` → `pass`
            {what} has the right shape, but a reshape alone keeps the numbers in memory order: each row of your result
            holds consecutive tokens of one head, side by side. Bring the tokens axis in front of the heads axis first,
            (..., T, h, d_head), then join the last two
        not-joined: `*batch, n_heads, T, ` → `return np.swapaxes(H, -3, -2)\n    *batch, n_heads, T, `
            {what} has shape {got.shape}, (..., T, h, d_head): the tokens are back in front of the heads, but each token
            still has its {h} pieces on separate rows. Join the last two axes into one of width h·d_head = {d_model}
        heads-added: `*batch, n_heads, T, ` → `return H.sum(axis=-3)\n    *batch, n_heads, T, `
            {what} has shape {got.shape}, (..., T, d_head): you added the heads up (or averaged them). Merging puts them
            side by side, (..., T, h·d_head) = (..., {T}, {d_model}); the sum over heads appears only once the output
            projection has been applied
        heads-added: `*batch, n_heads, T, ` → `return H.mean(axis=-3)\n    *batch, n_heads, T, `
        last-two-axes: `np.swapaxes(H, -3, -2)` → `np.swapaxes(H, -2, -1)`
            {what}: you exchanged the last two axes, the tokens and d_head, before joining, so each row of your result
            holds numbers of several tokens. The axes to exchange are the heads and the tokens (the third-last and the
            second-last), which gives (..., T, h, d_head); then join the last two
        front-axes: `np.swapaxes(H, -3, -2)` → `np.swapaxes(H, 1, 2)`
            {what}: you exchanged the second and third axes counted from the front, which are the heads and tokens axes
            only when there is exactly one leading axis, and this H has {leading} leading axes. Count from the end, the
            third-last and second-last, so it works for any number
        wrong-places: `np.swapaxes(H, -3, -2)` → `np.moveaxis(H, -3, -1)`
            {what} has the right shape and the right numbers in the wrong places: each token's row holds head 0's d_head
            numbers, then head 1's, and so on: whole heads side by side, the tokens in their order
        first-axis: `*batch, n_heads, T, ` → `return np.concatenate(H, axis=-1)\n    *batch, n_heads, T, `
            {what} has shape {got.shape}: you joined the pieces along the first axis, which is the heads axis only when
            H has no leading axes; here it is a leading axis of size {first}. Join the heads, the third-last axis, side
            by side
    """,
    families=lambda got, expected, case: "wrong-places" if other_order(got, expected) else None,
    forbid=("helpers.merge_heads",),
)
def merge_heads_batched():
    rng = check_rng()
    # one leading axis first, then two (where counting axes from the front goes wrong), then none
    for shape in ((2, 3, 5, 4), (3, 4, 2, 2, 3), (2, 6, 2), (1, 3, 6)):
        *batch, n_heads, T, d_head = shape
        facts = {"h": n_heads, "T": T, "d_model": n_heads * d_head, "leading": len(batch), "first": shape[0]}
        yield Case(f"merge_heads_batched(H of shape {shape})", (rng.normal(size=shape),), facts=facts)


def _values_and_scales(got, expected, case):
    """Attention that weights the keys instead of the values, or divides the scores by another size."""
    x, context, W_q, W_k, W_v, W_o, n_heads, mask = case.args
    values_from_keys = multihead_loop(x, context, W_q, W_k, W_k, W_o, n_heads, mask)
    wrong_array_weighted(got, {"the keys (context times W_k)": values_from_keys}, case.what, "the values")
    d_model = W_q.shape[1]
    sizes = {"d_head": d_model // n_heads, "d_model": d_model, "n_heads": n_heads, "T_q": 3, "T_k": 5}
    scale = ("√d_head", np.sqrt(d_model // n_heads))
    scores_divided_by(got, lambda c: multihead_loop(*case.args, scale=1 / c), case.what, sizes, scale)


@exercise(
    hint="The same steps as multi-head self-attention, except that the queries are projected from x and the keys "
    "and values from context. Each head's scores are divided by √d_head, blocked scores become −∞ before the "
    "softmax, and the merged heads are multiplied by W_o. np.einsum can run every head at once.",
    hint2="Two things differ from self-attention: the queries have T_q rows and the keys T_k, so each head's scores "
    "are (T_q, T_k); and the scale is √d_head with d_head = d_model / h, not √d_model. A check: with the context equal "
    "to x and a mask of all True you must get exactly what multi-head self-attention gives.",
    solution="""
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
    """,
    mistakes=r"""
        keys-from-x: `split(context @ W_k), split(context @ W_v)` → `split(x @ W_k), split(x @ W_v)`
            {what}: your keys and values come from x, so this is self-attention. In cross-attention only the queries
            come from x (3 tokens); the keys and values come from context (5 tokens), so the weights are (h, 3, 5)
        no-output-projection: `.reshape(x.shape[0], -1) @ W_o` → `.reshape(x.shape[0], -1)`
            {what}: you merged the heads but did not apply the output projection W_o ({d_model}, {d_model}); the layer's
            output is the merged heads times W_o
        scaled-by-d-model: `/ np.sqrt(d_head)` → `/ np.sqrt(W_q.shape[1])`
            {what}: each head's scores are divided by √d_model = √{d_model}. A head's queries and keys have d_head =
            {d_head} entries, so divide by √d_head = √{d_head}
        not-scaled: `/ np.sqrt(d_head)` → ``
            {what}: the scores are not scaled; divide each head's scores by √d_head = √{d_head}, as in 04_scaling
        mask-ignored: `if mask is not None:` → `if False:`
            {what}: the mask is not applied, so each query also attends to the keys it must not see. Where the mask is
            False, the score becomes −∞ before the softmax
        tokens-mixed:
            `M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2)` → `M.reshape(n_heads, M.shape[0], d_head)`
            `heads.transpose(1, 0, 2).` → `heads.`
            {what}: your heads mix tokens. A reshape of (T, d_model) straight to (h, T, d_head) fills head 0 with the
            first tokens' numbers in memory order, so a head's rows are pieces of several tokens. Cut each token's
            columns into (h, d_head) first, then move the heads axis in front
        tokens-mixed:
            `M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2)` → `M.reshape(n_heads, M.shape[0], d_head)`
        mask-none: `if mask is not None:\n        scores = np.where` → `scores = np.where`
            {what}: with mask=None every score was blocked, so your result is all NaN (with a mask that allows every key
            it is right). None means no mask: every query sees every key; block scores only when a mask is given
        queries-from-context:
            `(x @ W_q), split(context @ W_k), split(context @ W_v)` → `(context @ W_q), split(x @ W_k), split(x @ W_v)`
            `.reshape(x.shape[0], -1)` → `.reshape(context.shape[0], -1)`
            {what} has shape {got.shape}, one row per token of context: your queries come from context and the keys and
            values from x. In cross-attention the queries come from x (3 tokens), so the output has one row per token of
            x, (3, {d_model})
        wrong-axis: `max(axis=-1` → `max(axis=-2`, `sum(axis=-1` → `sum(axis=-2`
            {what}: each head's softmax ran down the columns, over the queries; it runs along each row, over the keys,
            so that each query's weights sum to 1
        scaled-by-d-head: `/ np.sqrt(d_head)` → `/ d_head`
            {what}: each head's scores are divided by d_head = {d_head}; divide by its square root, √d_head = √{d_head},
            as in 04_scaling
        one-head: `M.reshape(M.shape[0], n_heads, d_head).transpose(1, 0, 2)` → `M[None]`
            {what}: your attention ran as one head over all {d_model} columns. Split the queries, keys and values into
            {n_heads} heads of d_head = {d_head} columns, each with its own scores and softmax, then merge the heads
        true-means-blocked: `np.where(mask, scores, -np.inf)` → `np.where(mask, -np.inf, scores)`
            {what}: each query attends to exactly the keys the mask blocks. In this workshop a mask's True means 'may
            attend' (as in 05_masking): where the mask is False the score becomes −∞
        after-softmax: `if mask is not None:\n        scores = np.where(mask, scores, -np.inf)` → `pass`
            `heads = ` → `weights = weights if mask is None else weights * mask\n    heads = `
            {what}: the blocked keys got weight 0 after the softmax, so the rows no longer sum to 1: their share was
            thrown away instead of shared among the allowed keys. Block the scores (−∞) before the softmax
        zero-fill: `np.where(mask, scores, -np.inf)` → `np.where(mask, scores, 0)`
            {what}: the blocked scores became 0 (multiplying the scores by the mask does that), an ordinary score whose
            exponential is 1, so the blocked keys still get weight. A blocked score must be −∞
    """,
    families=_values_and_scales,
    forbid=("helpers.MultiHeadAttention",),
)
def multi_head_cross_attention():
    rng = check_rng()
    causal = np.arange(5)[None, :] <= np.arange(3)[:, None] + 2  # (3, 5): the last 3 of 5 positions
    for d_model, n_heads, mask in ((8, 2, None), (8, 2, causal), (12, 4, causal), (6, 1, None)):
        x, context = rng.normal(size=(3, d_model)), rng.normal(size=(5, d_model))
        W_q, W_k, W_v, W_o = (rng.normal(size=(d_model, d_model)) for _ in range(4))
        masked = "a (3, 5) causal mask" if mask is not None else "no mask"
        what = f"multi_head_cross_attention for x (3, {d_model}), context (5, {d_model}), n_heads={n_heads}, {masked}"
        args = (x, context, W_q, W_k, W_v, W_o, n_heads, mask)
        facts = {"d_model": d_model, "d_head": d_model // n_heads, "n_heads": n_heads}
        yield Case(what, args, facts=facts, expected=multihead_loop(*args))
