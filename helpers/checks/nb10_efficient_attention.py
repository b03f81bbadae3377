"""The exercises of 10_efficient_attention."""

import numpy as np

from helpers.attention import scaled_dot_product_attention
from helpers.checks._core import Mismatch, call, check_rng, edited, exercise, expect_close
from helpers.checks._families import scores_divided_by, wrong_array_weighted
from helpers.checks._mistakes import matches as _same
from helpers.checks._mistakes import returned_in_other_order
from helpers.checks._mistakes import returned_tuple as _unpack
from helpers.efficient import online_softmax_step
from helpers.masking import causal_mask

UPDATE = """
    def online_softmax_update(m, l, acc, scores, values):
        m_new = max(m, scores.max())  # the running max, now including this block
        p = np.exp(scores - m_new)  # (b_k,): this block's weights, before normalising
        correction = np.exp(m - m_new)  # rescales what was summed against the old max (0 at the start)
        return m_new, l * correction + p.sum(), acc * correction + p @ values
"""


def _raised_in(exc, functions):
    """True when `exc` went through one of numpy's `functions` (by name) on its way out."""
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name in functions and "numpy" in code.co_filename:
            return True
        tb = tb.tb_next
    return False


@exercise(
    notebook="10_efficient_attention",
    hint="First the new running max: the larger of m and this block's largest score. Everything in l and acc was "
    "summed against the old max, so scale both by e^(m − m_new) before you add this block's terms, each "
    "measured against the new max.",
    hint2=(
        "Check it against the plain softmax: feed one row of scores in two blocks, starting from m = −∞ and l"
        " = 0 with acc all zeros, divide the last acc by the last l, and compare with the values weighted by "
        "the softmax of the whole row. The correction e^(m − m_new) is one number, at most 1, and 0 at the "
        "first block (m = −∞), so the first block needs no special case. Return acc and l undivided."
    ),
    solution=UPDATE,
    mistakes={
        "no-rescale": edited(UPDATE, ("l * correction", "l"), ("acc * correction", "acc")),
        "acc-not-rescaled": edited(UPDATE, ("acc * correction", "acc")),
        "inverted-correction": edited(UPDATE, ("np.exp(m - m_new)", "np.exp(m_new - m)")),
        "max-not-updated": edited(UPDATE, ("return m_new,", "return m,")),
        "block-max-only": edited(UPDATE, ("max(m, scores.max())", "scores.max()")),
        "max-as-axis": edited(UPDATE, ("max(m, scores.max())", "np.max(m, scores.max())")),
        "old-max-shift": edited(UPDATE, ("np.exp(scores - m_new)", "np.exp(scores - m)")),
        "correction-on-new-terms": edited(
            UPDATE,
            (
                "l * correction + p.sum(), acc * correction + p @ values",
                "l + correction * p.sum(), acc + correction * (p @ values)",
            ),
        ),
        "raw-exp": edited(
            UPDATE, ("np.exp(scores - m_new)", "np.exp(scores)"), ("l * correction", "l"), ("acc * correction", "acc")
        ),
        "divided-acc": edited(
            UPDATE, ("acc * correction + p @ values", "(acc * correction + p @ values) / (l * correction + p.sum())")
        ),
        "returned-in-other-order": edited(
            UPDATE, ("return m_new, l * correction + p.sum(),", "return l * correction + p.sum(), m_new,")
        ),
    },
    forbid=("helpers.efficient.online_softmax_step",),
)
def online_softmax_update(answer):
    rng = check_rng()
    # first one step from the middle of a row (m finite) where the max rises: every slip gives finite, recognisable
    # numbers there; then whole rows from the start (m = -inf), on unit scores and near +-1000
    values = rng.normal(size=(4, 3))  # (b_k, d_v); the block's largest score, 2.2, is above the running max 0.5
    what = "online_softmax_update from m = 0.5, l = 2, on a block whose largest score is 2.2"
    _check_update(answer, 0.5, 2.0, rng.normal(size=3), np.array([0.3, 2.2, -0.4, 1.1]), values, what)
    for scale, what_scores in ((2.0, "unit-scale scores"), (400.0, "scores near ±1000")):
        scores = rng.normal(size=10) * scale
        scores[4:8] += 3 * scale  # the max rises in the second block (the old sums are rescaled) and not in the third
        values = rng.normal(size=(10, 3))
        m, l, acc = -np.inf, 0.0, np.zeros(3)
        for start in (0, 4, 8):
            what = f"online_softmax_update on {what_scores} from m = −∞, keys {start}..{min(start + 4, 10) - 1}"
            block = (scores[start : start + 4], values[start : start + 4])  # (b_k,), (b_k, d_v)
            m, l, acc = _check_update(answer, m, l, acc, *block, what)  # go on from the right state


def _check_update(answer, m, l, acc, scores, values, what):
    """Check one update from (m, l, acc); return the right new state, from which the next block goes on."""
    try:
        got = call(answer, m, l, acc, scores, values)
    except TypeError as exc:  # a float where numpy's max wants an axis
        if _raised_in(exc, {"max", "amax", "_amax"}):
            raise Mismatch(
                f"{what}: your code raised TypeError ({exc}) because numpy's max takes one array and "
                "reads a second argument as the axis to reduce along; the larger of two numbers is "
                "Python's built-in max, or numpy's maximum",
                "max-as-axis",
            ) from exc
        raise
    got = _unpack(got, ("m", "l", "acc"), what)
    expected = [np.asarray(x, dtype=float) for x in online_softmax_step(np.array(m), np.array(l), acc, scores, values)]
    returned_in_other_order(got, expected, ("m", "l", "acc"), what, "returned-in-other-order")
    _name_update_mistakes(*got, m, l, acc, scores, values, expected, what)
    for got_part, want, name in zip(got, expected, ("m", "l", "acc"), strict=True):
        expect_close(got_part, want, f"{what}: {name}", rtol=1e-7)
    return float(expected[0]), float(expected[1]), expected[2]


def _name_update_mistakes(got_m, got_l, got_acc, m, l, acc, scores, values, expected, what):
    """Recognise the usual slips of the online-softmax update and say what is wrong, in one sentence."""
    m_new, l_new, acc_new = expected
    top = float(scores.max())
    rises, old_finite = top > m, bool(np.isfinite(m))  # the running max changes at this block; m is a number
    with np.errstate(all="ignore"):
        p, c = np.exp(scores - m_new), np.exp(m - m_new)  # (b_k,) the right weights, and the right correction
        inverted, raw, old = np.exp(m_new - m), np.exp(scores), np.exp(scores - m)  # what the slips use instead
    if top < m and _same(got_m, top):
        raise Mismatch(
            f"{what}: your m fell to this block's largest score, {top:.4g}; the running max never falls, "
            f"it is the larger of m = {m:.4g} and the block's largest score",
            "block-max-only",
        )
    if rises and old_finite and _slip(got_l, l * inverted + p.sum(), l_new):
        raise Mismatch(
            f"{what}: you multiplied the old sum by e^(m_new − m) = {inverted:.4g}, which grows it; the "
            f"factor that shrinks old terms to the new max is e^(m − m_new) = {c:.4g}",
            "inverted-correction",
        )
    if rises and _same(got_m, m):
        raise Mismatch(
            f"{what}: you returned the old max, m = {m:.4g}, but this block's largest score is {top:.4g}, "
            f"so the running max is now {top:.4g}",
            "max-not-updated",
        )
    if _slip(got_l, l + raw.sum(), l_new):
        raise Mismatch(
            f"{what}: l grew by e^s of the raw scores; every term is measured against the running max, "
            "e^(s − m_new), so that no exponent is positive (near 1000, e^s is infinite)",
            "raw-exp",
        )
    if rises and old_finite and _slip(got_l, l * c + old.sum(), l_new):
        raise Mismatch(
            f"{what}: the old sum was rescaled to the new max {float(m_new):.4g}, but this block's terms "
            f"were measured against the old max {m:.4g}; measure them against the new one",
            "old-max-shift",
        )
    if rises and old_finite and _slip(got_l, l + c * p.sum(), l_new):
        raise Mismatch(
            f"{what}: you multiplied this block's terms by e^(m − m_new) = {c:.4g}, but they are already "
            "measured against the new max; the old l and acc need that factor",
            "correction-on-new-terms",
        )
    if rises and old_finite and _slip(got_l, l + p.sum(), l_new):
        raise Mismatch(
            f"{what}: the max rose from {m:.4g} to {float(m_new):.4g} but the old l was added as it was; "
            f"l and acc were summed against the old max, so scale them by e^(m − m_new) = {c:.4g} "
            "first",
            "no-rescale",
        )
    if rises and old_finite and _same(got_l, l_new) and _slip(got_acc, acc + p @ values, acc_new):
        raise Mismatch(
            f"{what}: l is right, but acc was added as it was; it was summed against the old max too and "
            f"needs the same factor e^(m − m_new) = {c:.4g}",
            "acc-not-rescaled",
        )
    if _same(got_l, l_new) and _slip(got_acc, acc_new / l_new, acc_new):
        raise Mismatch(
            f"{what}: acc came back divided by l; keep it an unnormalised running sum, which the next "
            "block rescales and adds to, and divide by l once, after the last block",
            "divided-acc",
        )
    if np.any(~np.isfinite(got_l)) or np.any(~np.isfinite(got_acc)):
        raise Mismatch(
            f"{what}: l or acc is inf or NaN; against the running max no exponent is positive, and at "
            "the first block (m = −∞) the factor e^(m − m_new) is 0",
            "nan",
        )


def _slip(got, slip, right):
    """True when `got` is what a slip gives, `slip`, and that differs from the right result."""
    return _same(got, slip) and not np.allclose(slip, right, rtol=1e-7, atol=1e-12)


def _attend(q, K, V, visible, divide_by=None, over_queries=False, hidden=-np.inf):
    """Plain attention with a visibility mask (or a slip's variant); a query that sees no key gets NaN."""
    scale = np.sqrt(K.shape[1]) if divide_by is None else divide_by
    scores = q @ K.T / scale  # (t, d_k) @ (d_k, T_k) -> (t, T_k): small, no shift
    with np.errstate(all="ignore"):
        weights = np.exp(np.where(visible, scores, hidden))  # (t, T_k)
        return weights / weights.sum(axis=0 if over_queries else 1, keepdims=True) @ V  # (t, T_k) @ (T_k, d_v)


def _same_where_seen(got, candidate):
    """Like _same, but a row of `candidate` that saw no key (NaN) may be NaN or zeros in `got`."""
    blind = np.isnan(candidate).any(axis=1)  # (t,): the queries that saw no key; compare the other rows
    if got.shape != candidate.shape or not _same(got, np.where(blind[:, None], got, candidate)):
        return False
    return bool(np.all(np.isnan(got[blind]) | (got[blind] == 0)))


STEP = """
    def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
        K = np.concatenate([cache_K, k_new])  # (T + t, d_k): the past keys, then the new ones
        V = np.concatenate([cache_V, v_new])  # (T + t, d_v)
        scores = q_new @ K.T / np.sqrt(K.shape[1])  # (t, d_k) @ (d_k, T + t) -> (t, T + t)
        visible = np.arange(len(K)) <= np.arange(len(q_new))[:, None] + len(cache_K)  # new query i: position T + i
        scores = np.where(visible, scores, -np.inf)
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        weights /= weights.sum(axis=1, keepdims=True)
        return K, V, weights @ V  # out: (t, T + t) @ (T + t, d_v) -> (t, d_v)
"""


@exercise(
    notebook="10_efficient_attention",
    hint="Put the new keys and values after the cached ones (np.concatenate), then attend as usual: the t new "
    "queries against all T + t keys, scores divided by √d_k, under a causal mask in which the new tokens are "
    "the last t positions.",
    hint2=(
        "Check it against attention without a cache: the t output rows must equal the last t rows of causal "
        "attention over all T + t tokens at once. The scores are (t, T + t): new query i sits at position T +"
        " i, so it sees every cached key and the new ones up to and including its own. The divisor is √d_k."
    ),
    solution=STEP,
    mistakes={
        "no-causal-mask": edited(STEP, ("np.where(visible, scores, -np.inf)", "scores")),
        "diagonal-hidden": edited(STEP, ("np.arange(len(K)) <=", "np.arange(len(K)) <")),
        "no-scaling": edited(STEP, (" / np.sqrt(K.shape[1])", "")),
        "scaled-by-d-k": edited(STEP, ("np.sqrt(K.shape[1])", "K.shape[1]")),
        "mask-not-shifted": edited(STEP, (" + len(cache_K)  #", "  #")),
        "masked-as-zero": edited(STEP, ("np.where(visible, scores, -np.inf)", "scores * visible")),
        "softmax-over-queries": edited(STEP, ("max(axis=1", "max(axis=0"), ("sum(axis=1", "sum(axis=0")),
        "returned-weights": edited(STEP, ("return K, V, weights @ V", "return K, V, weights")),
        "returned-in-other-order": edited(STEP, ("return K, V, weights @ V", "return weights @ V, K, V")),
        "cache-not-grown": edited(STEP, ("return K, V,", "return cache_K, cache_V,")),
        "new-keys-in-front": edited(
            STEP, ("[cache_K, k_new]", "[k_new, cache_K]"), ("[cache_V, v_new]", "[v_new, cache_V]")
        ),
        "new-tokens-only": edited(
            STEP,
            ("scores = q_new @ K.T", "scores = q_new @ k_new.T"),
            ("np.arange(len(K)) <=", "np.arange(len(k_new)) <="),
            (" + len(cache_K)  #", "  #"),
            ("weights @ V  #", "weights @ v_new  #"),
        ),
        "concatenated-wrong-axis": edited(
            STEP, ("[cache_K, k_new])", "[cache_K, k_new], axis=1)"), ("[cache_V, v_new])", "[cache_V, v_new], axis=1)")
        ),
        "append-flattened": edited(
            STEP,
            ("np.concatenate([cache_K, k_new])", "np.append(cache_K, k_new)"),
            ("np.concatenate([cache_V, v_new])", "np.append(cache_V, v_new)"),
        ),
    },
)
def kv_cache_step(answer):
    rng = check_rng()
    d_k, d_v = 4, 2  # d_v is never T + t below: the (t, T + t) weights cannot pass for the (t, d_v) output
    cache_K, cache_V = np.zeros((0, d_k)), np.zeros((0, d_v))
    for t in (3, 1, 1, 2):  # a prompt of 3 tokens at once, then one token at a time, then two
        q_new, k_new, v_new = rng.normal(size=(t, d_k)), rng.normal(size=(t, d_k)), rng.normal(size=(t, d_v))
        T = len(cache_K)
        what = f"kv_cache_step with {T} cached tokens and {t} new (d_k = {d_k}, d_v = {d_v})"
        K, V = np.concatenate([cache_K, k_new]), np.concatenate([cache_V, v_new])  # (T + t, d_k), (T + t, d_v)
        out = scaled_dot_product_attention(q_new, K, V, mask=causal_mask(t, T + t))[0]  # (t, d_v)
        got = _unpack(
            _call_step(answer, (cache_K, cache_V, q_new, k_new, v_new), what), ("cache_K", "cache_V", "out"), what
        )
        returned_in_other_order(got, (K, V, out), ("cache_K", "cache_V", "out"), what, "returned-in-other-order")
        for got_cache, old, new, name in ((got[0], cache_K, k_new, "cache_K"), (got[1], cache_V, v_new, "cache_V")):
            if got_cache.shape == old.shape:
                raise Mismatch(
                    f"{what}: the returned {name} still has {T} rows, as before the step; return the grown "
                    f"cache, {T + t} rows with the new tokens' after the cached ones",
                    "cache-not-grown",
                )
            if T and _same(got_cache, np.concatenate([new, old])):
                raise Mismatch(
                    f"{what}: in the returned {name} the new tokens' rows come before the {T} cached ones; "
                    "append them after, since row j of the cache is the token at position j",
                    "new-keys-in-front",
                )
        expect_close(got[0], K, f"{what}: cache_K")
        expect_close(got[1], V, f"{what}: cache_V")
        weights = scaled_dot_product_attention(q_new, K, V, mask=causal_mask(t, T + t))[1]  # (t, T + t)
        wrong_array_weighted(got[2], {"the keys K": weights @ K}, f"{what}: out", "the values V")
        _name_step_mistakes(got[2], q_new, k_new, v_new, K, V, T, t, what)
        divided = lambda c: _attend(q_new, K, V, causal_mask(t, T + t), divide_by=c)  # noqa: E731, B023
        sizes = {"d_k": d_k, "d_v": d_v, "t": t, "T + t": T + t}
        scores_divided_by(got[2], divided, f"{what}: out", sizes, ("√d_k", np.sqrt(d_k)))
        expect_close(got[2], out, f"{what}: out")
        cache_K, cache_V = K, V


def _call_step(answer, args, what):
    """The learner's step on `args`, with the crashes of joining the cache and the new rows explained."""
    try:
        return call(answer, *args)
    except (ValueError, IndexError) as exc:
        if "concatenation axis" in str(exc) and "along dimension 0" in str(exc):
            raise Mismatch(
                f"{what}: your code raised ValueError because it joined the cache and the new rows side by "
                "side, along their widths; they go one under the other, along the token axis, so that "
                "(T, d_k) and (t, d_k) give (T + t, d_k)",
                "concatenated-wrong-axis",
            ) from exc
        if "append" in getattr(getattr(answer, "__code__", None), "co_names", ()):
            raise Mismatch(
                f"{what}: your code raised {type(exc).__name__} after numpy's append, which without an "
                "axis flattens both arrays into one long row of numbers, so the keys lost their "
                "(T + t, d_k) shape; join them along the token axis",
                "append-flattened",
            ) from exc
        raise


def _name_step_mistakes(got_out, q_new, k_new, v_new, K, V, T, t, what):
    """Recognise the usual slips in the new tokens' attention output and say what is wrong, in one sentence."""
    positions = np.arange(t)[:, None] + T  # (t, 1): the new queries' positions among the T + t keys
    keys = np.arange(T + t)[None, :]  # (1, T + t)
    visible = keys <= positions  # (t, T + t)
    at, tokens = ("position i" if T == 0 else f"position {T} + i"), ("token" if t == 1 else f"{t} tokens")
    if got_out.shape == (t, T + t) != (t, V.shape[1]):
        raise Mismatch(
            f"{what}: out has the shape of the weights, (t, T + t) = {got_out.shape}; return the output, "
            f"the values mixed with those weights, (t, d_v) = {(t, V.shape[1])}",
            "returned-weights",
        )
    if t > 1 and _same(got_out, _attend(q_new, K, V, np.ones((t, T + t), bool))):
        raise Mismatch(
            f"{what}: every new query attended to all {T + t} keys, so the {t} new tokens saw each "
            f"other's future; new query i stands at {at} and may see the keys up to there",
            "no-causal-mask",
        )
    if _same_where_seen(got_out, _attend(q_new, K, V, keys < positions)):
        blind = " (so the first token of the text saw no key at all)" if T == 0 else ""
        raise Mismatch(
            f"{what}: your mask also hid each new token's own key, the diagonal{blind}; new query i "
            f"stands at {at} and sees every key up to and including that one",
            "diagonal-hidden",
        )
    if _same(got_out, _attend(q_new, K, V, visible, divide_by=1.0)):
        raise Mismatch(
            f"{what}: the scores were not divided by √d_k = {np.sqrt(K.shape[1]):.0f}; scale them as "
            "in 04, before the mask and the softmax",
            "no-scaling",
        )
    if _same(got_out, _attend(q_new, K, V, visible, divide_by=K.shape[1])):
        raise Mismatch(
            f"{what}: the scores were divided by d_k = {K.shape[1]}; the scale of 04 is √d_k = "
            f"{np.sqrt(K.shape[1]):.0f}",
            "scaled-by-d-k",
        )
    if t > 1 and _same(got_out, _attend(q_new, K, V, visible, hidden=0.0)):
        raise Mismatch(
            f"{what}: the hidden scores were set to 0, which still gets the weight e^0 in the softmax; a "
            "hidden key needs the score −∞, whose weight is exactly 0",
            "masked-as-zero",
        )
    if t > 1 and _same(got_out, _attend(q_new, K, V, visible, over_queries=True)):
        raise Mismatch(
            f"{what}: your softmax ran down each column of the (t, T + t) scores, over the new queries; it "
            "runs along each row, over the keys, so that each query's weights sum to 1",
            "softmax-over-queries",
        )
    if T and _same(got_out, _attend(q_new, K, V, keys <= np.arange(t)[:, None])):
        raise Mismatch(
            f"{what}: new query i saw only keys 0 to i, as if it stood at the start of the text; with {T} "
            f"tokens cached it stands at {at}, so it also sees every cached key",
            "mask-not-shifted",
        )
    if T and _same(got_out, _attend(q_new, k_new, v_new, np.tril(np.ones((t, t), bool)))):
        raise Mismatch(
            f"{what}: out attended to the new {tokens} only; the new queries must also see the {T} "
            "cached keys and values, which is what the cache is for",
            "new-tokens-only",
        )
