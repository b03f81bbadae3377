"""The exercises of 10_efficient_attention."""

import numpy as np

from helpers.attention import scaled_dot_product_attention
from helpers.checks._core import Case, Mismatch, check_rng, exercise
from helpers.checks._families import parts_in_other_order, scores_divided_by, wrong_array_weighted
from helpers.efficient import online_softmax_step
from helpers.masking import causal_mask

_UPDATE_PARTS = ("m", "l", "acc")


def _update_families(got, expected, case):
    parts_in_other_order(got, expected, _UPDATE_PARTS, case.what, "returned-in-other-order")
    if any(np.any(~np.isfinite(part)) for part in got[1:]):
        raise Mismatch(
            f"{case.what}: l or acc is inf or NaN; against the running max no exponent is positive, and at the first "
            "block (m = −∞) the factor e^(m − m_new) is 0",
            "nan",
        )


@exercise(
    hint="First the new running max: the larger of m and this block's largest score. Everything in l and acc was "
    "summed against the old max, so scale both by e^(m − m_new) before you add this block's terms, each "
    "measured against the new max.",
    hint2="Check it against the plain softmax: feed one row of scores in two blocks, starting from m = −∞ and l"
    " = 0 with acc all zeros, divide the last acc by the last l, and compare with the values weighted by "
    "the softmax of the whole row. The correction e^(m − m_new) is one number, at most 1, and 0 at the "
    "first block (m = −∞), so the first block needs no special case. Return acc and l undivided.",
    solution="""
        def online_softmax_update(m, l, acc, scores, values):
            m_new = max(m, scores.max())  # the running max, now including this block
            p = np.exp(scores - m_new)  # (b_k,): this block's weights, before normalising
            correction = np.exp(m - m_new)  # rescales what was summed against the old max (0 at the start)
            return m_new, l * correction + p.sum(), acc * correction + p @ values
    """,
    mistakes=r"""
        no-rescale: `l * correction` → `l`, `acc * correction` → `acc`
            {what}: the max rose from {m:.4g} to {m_new:.4g} but the old l was added as it was; l and acc were summed
            against the old max, so scale them by e^(m − m_new) = {c:.4g} first
        acc-not-rescaled: `acc * correction` → `acc`
            {what}: l is right, but acc was added as it was; it was summed against the old max too and needs the same
            factor e^(m − m_new) = {c:.4g}
        inverted-correction: `np.exp(m - m_new)` → `np.exp(m_new - m)`
            {what}: you multiplied the old sum by e^(m_new − m) = {inverted:.4g}, which grows it; the factor that
            shrinks old terms to the new max is e^(m − m_new) = {c:.4g}
        inverted-correction: `l * correction` → `l / correction`
        max-not-updated: `return m_new,` → `return m,`
            {what}: you returned the old max, m = {m:.4g}, but this block's largest score is {top:.4g}, so the running
            max is now {top:.4g}
        block-max-only: `max(m, scores.max())` → `scores.max()`
            {what}: your m fell to this block's largest score, {top:.4g}; the running max never falls, it is the larger
            of m = {m:.4g} and the block's largest score
        max-as-axis: `max(m, scores.max())` → `np.max(m, scores.max())`
            {what}: your code raised TypeError ({got}) because numpy's max takes one array and reads a second argument
            as the axis to reduce along; the larger of two numbers is Python's built-in max, or numpy's maximum
        old-max-shift: `np.exp(scores - m_new)` → `np.exp(scores - m)`
            {what}: the old sum was rescaled to the new max {m_new:.4g}, but this block's terms were measured against
            the old max {m:.4g}; measure them against the new one
        correction-on-new-terms: `l * correction + p.sum()` → `l + correction * p.sum()`
            `acc * correction + p @ values` → `acc + correction * (p @ values)`
            {what}: you multiplied this block's terms by e^(m − m_new) = {c:.4g}, but they are already measured against
            the new max; the old l and acc need that factor
        raw-exp: `np.exp(scores - m_new)` → `np.exp(scores)`, `l * correction` → `l`, `acc * correction` → `acc`
            {what}: l grew by e^s of the raw scores; every term is measured against the running max, e^(s − m_new), so
            that no exponent is positive (near 1000, e^s is infinite)
        divided-acc: `acc * correction + p @ values` → `(acc * correction + p @ values) / (l * correction + p.sum())`
            {what}: acc came back divided by l; keep it an unnormalised running sum, which the next block rescales and
            adds to, and divide by l once, after the last block
        returned-in-other-order: `return m_new, l * correction + p.sum(),` → `return l * correction + p.sum(), m_new,`
    """,
    returns=_UPDATE_PARTS,
    close={"rtol": 1e-7},
    families=_update_families,
    forbid=("helpers.efficient.online_softmax_step",),
)
def online_softmax_update():
    rng = check_rng()

    def case(m, l, acc, scores, values, what):  # the right new state, with the numbers the messages give
        right = [np.asarray(x, dtype=float) for x in online_softmax_step(np.array(m), np.array(l), acc, scores, values)]
        facts = {"m": m, "top": float(scores.max()), "m_new": float(right[0])}
        with np.errstate(all="ignore"):
            facts.update(c=float(np.exp(m - right[0])), inverted=float(np.exp(right[0] - m)))
        return Case(what, (m, l, acc, scores, values), facts=facts, expected=right)

    # first one step from the middle of a row (m finite) where the max rises: every slip gives finite, recognisable
    # numbers there; then whole rows from the start (m = -inf), on unit scores and near +-1000
    values = rng.normal(size=(4, 3))  # (b_k, d_v); the block's largest score, 2.2, is above the running max 0.5
    what = "online_softmax_update from m = 0.5, l = 2, on a block whose largest score is 2.2"
    yield case(0.5, 2.0, rng.normal(size=3), np.array([0.3, 2.2, -0.4, 1.1]), values, what)
    for scale, what_scores in ((2.0, "unit-scale scores"), (400.0, "scores near ±1000")):
        scores = rng.normal(size=10) * scale
        scores[4:8] += 3 * scale  # the max rises in the second block (the old sums are rescaled) and not in the third
        values = rng.normal(size=(10, 3))
        m, l, acc = -np.inf, 0.0, np.zeros(3)
        for start in (0, 4, 8):
            what = f"online_softmax_update on {what_scores} from m = −∞, keys {start}..{min(start + 4, 10) - 1}"
            step = case(m, l, acc, scores[start : start + 4], values[start : start + 4], what)  # (b_k,), (b_k, d_v)
            yield step
            m, l, acc = float(step.expected[0]), float(step.expected[1]), step.expected[2]  # on from the right state


_STEP_PARTS = ("cache_K", "cache_V", "out")


def _step_families(got, expected, case):
    """Results in another order, the weights applied to the keys, scores divided by another size."""
    parts_in_other_order(got, expected, _STEP_PARTS, case.what, "returned-in-other-order")
    cache_K, cache_V, q_new, k_new, v_new = case.args
    K, V = expected[:2]
    T, t = len(cache_K), len(q_new)
    weights = scaled_dot_product_attention(q_new, K, V, mask=causal_mask(t, T + t))[1]  # (t, T + t)
    wrong_array_weighted(got[2], {"the keys K": weights @ K}, f"{case.what}: out", "the values V")
    sizes = {"d_k": K.shape[1], "d_v": V.shape[1], "t": t, "T + t": T + t}
    scaled = lambda c: scaled_dot_product_attention(q_new * np.sqrt(K.shape[1]) / c, K, V, causal_mask(t, T + t))[0]  # noqa: E731
    scores_divided_by(got[2], scaled, f"{case.what}: out", sizes, ("√d_k", np.sqrt(K.shape[1])))


@exercise(
    hint="Put the new keys and values after the cached ones (np.concatenate), then attend as usual: the t new "
    "queries against all T + t keys, scores divided by √d_k, under a causal mask in which the new tokens are "
    "the last t positions.",
    hint2="Check it against attention without a cache: the t output rows must equal the last t rows of causal "
    "attention over all T + t tokens at once. The scores are (t, T + t): new query i sits at position T +"
    " i, so it sees every cached key and the new ones up to and including its own. The divisor is √d_k.",
    solution="""
        def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
            K = np.concatenate([cache_K, k_new])  # (T + t, d_k): the past keys, then the new ones
            V = np.concatenate([cache_V, v_new])  # (T + t, d_v)
            scores = q_new @ K.T / np.sqrt(K.shape[1])  # (t, d_k) @ (d_k, T + t) -> (t, T + t)
            visible = np.arange(len(K)) <= np.arange(len(q_new))[:, None] + len(cache_K)  # new query i: position T + i
            scores = np.where(visible, scores, -np.inf)
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights /= weights.sum(axis=1, keepdims=True)
            return K, V, weights @ V  # out: (t, T + t) @ (T + t, d_v) -> (t, d_v)
    """,
    mistakes=r"""
        no-causal-mask: `np.where(visible, scores, -np.inf)` → `scores`
            {what}: every new query attended to all {T_t} keys, so the {t} new tokens saw each other's future; new query
            i stands at {at} and may see the keys up to there
        diagonal-hidden: `np.arange(len(K)) <=` → `np.arange(len(K)) <`
            {what}: your mask also hid each new token's own key, the diagonal{blind}; new query i stands at {at} and
            sees every key up to and including that one
        no-scaling: ` / np.sqrt(K.shape[1])` → ``
            {what}: the scores were not divided by √d_k = {root}; scale them as in 04, before the mask and the softmax
        scaled-by-d-k: `np.sqrt(K.shape[1])` → `K.shape[1]`
            {what}: the scores were divided by d_k = {d_k}; the scale of 04 is √d_k = {root}
        mask-not-shifted: ` + len(cache_K)  #` → `  #`
            {what}: new query i saw only keys 0 to i, as if it stood at the start of the text; with {T} tokens cached it
            stands at {at}, so it also sees every cached key
        masked-as-zero: `np.where(visible, scores, -np.inf)` → `scores * visible`
            {what}: the hidden scores were set to 0, which still gets the weight e^0 in the softmax; a hidden key needs
            the score −∞, whose weight is exactly 0
        softmax-over-queries: `max(axis=1` → `max(axis=0`, `sum(axis=1` → `sum(axis=0`
            {what}: your softmax ran down each column of the (t, T + t) scores, over the new queries; it runs along each
            row, over the keys, so that each query's weights sum to 1
        returned-weights: `return K, V, weights @ V` → `return K, V, weights`
            {what}: out has the shape of the weights, (t, T + t) = {weights}; return the output, the values mixed with
            those weights, (t, d_v) = {out}
        returned-in-other-order: `return K, V, weights @ V` → `return weights @ V, K, V`
        cache-not-grown: `return K, V,` → `return cache_K, cache_V,`
            {what}: the returned cache_K still has {T} rows, as before the step; return the grown cache, {T_t} rows with
            the new tokens' after the cached ones
        new-keys-in-front: `[cache_K, k_new]` → `[k_new, cache_K]`, `[cache_V, v_new]` → `[v_new, cache_V]`
            {what}: in the returned cache_K the new tokens' rows come before the {T} cached ones; append them after,
            since row j of the cache is the token at position j
        new-tokens-only: `scores = q_new @ K.T` → `scores = q_new @ k_new.T`
            `np.arange(len(K)) <=` → `np.arange(len(k_new)) <=`, ` + len(cache_K)  #` → `  #`
            `weights @ V  #` → `weights @ v_new  #`
            {what}: out attended to the new {tokens} only; the new queries must also see the {T} cached keys and values,
            which is what the cache is for
        concatenated-wrong-axis: `[cache_K, k_new])` → `[cache_K, k_new], axis=1)`
            `[cache_V, v_new])` → `[cache_V, v_new], axis=1)`
            {what}: your code raised ValueError because it joined the cache and the new rows side by side, along their
            widths; they go one under the other, along the token axis, so that (T, d_k) and (t, d_k) give (T + t, d_k)
        append-flattened: `np.concatenate([cache_K, k_new])` → `np.append(cache_K, k_new)`
            `np.concatenate([cache_V, v_new])` → `np.append(cache_V, v_new)`
            {what}: your code raised {got.__class__.__name__} after numpy's append, which without an axis flattens both
            arrays into one long row of numbers, so the keys lost their (T + t, d_k) shape; join them along the token
            axis
    """,
    returns=_STEP_PARTS,
    families=_step_families,
)
def kv_cache_step():
    rng = check_rng()
    d_k, d_v = 4, 2  # d_v is never T + t below: the (t, T + t) weights cannot pass for the (t, d_v) output
    cache_K, cache_V = np.zeros((0, d_k)), np.zeros((0, d_v))
    for t in (3, 1, 1, 2):  # a prompt of 3 tokens at once, then one token at a time, then two
        q_new, k_new, v_new = rng.normal(size=(t, d_k)), rng.normal(size=(t, d_k)), rng.normal(size=(t, d_v))
        T = len(cache_K)
        K, V = np.concatenate([cache_K, k_new]), np.concatenate([cache_V, v_new])  # (T + t, d_k), (T + t, d_v)
        out = scaled_dot_product_attention(q_new, K, V, mask=causal_mask(t, T + t))[0]  # (t, d_v)
        facts = {"T": T, "t": t, "T_t": T + t, "d_k": d_k, "root": f"{np.sqrt(d_k):.0f}", "weights": (t, T + t)}
        facts.update(out=(t, d_v), at="position i" if T == 0 else f"position {T} + i")
        facts.update(tokens="token" if t == 1 else f"{t} tokens", blind=" (so the first token of the text saw no key "
                     "at all)" if T == 0 else "")  # fmt: skip
        what = f"kv_cache_step with {T} cached tokens and {t} new (d_k = {d_k}, d_v = {d_v})"
        yield Case(what, (cache_K, cache_V, q_new, k_new, v_new), facts=facts, expected=(K, V, out))
        cache_K, cache_V = K, V
