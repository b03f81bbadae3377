"""The exercises of 10_efficient_attention."""

import numpy as np

from helpers.attention import scaled_dot_product_attention
from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close
from helpers.efficient import online_softmax_step
from helpers.masking import causal_mask


def _unpack(got, names, what):
    """The learner's returned tuple as arrays, one per name, or Mismatch."""
    if not isinstance(got, (tuple, list)) or len(got) != len(names):
        returned = f"{len(got)} things" if isinstance(got, (tuple, list)) else "one thing"
        raise Mismatch(f"{what} should return {len(names)} things, ({', '.join(names)}) in that order; your "
                       f"function returned {returned}", "wrong-shape")
    return [as_array(x, f"{what}: {name}") for x, name in zip(got, names, strict=True)]


def _same(got, candidate):
    """True when `got` has `candidate`'s shape and values; NaN where `candidate` has NaN counts as equal."""
    candidate = np.asarray(candidate, dtype=float)
    fits = got.shape == candidate.shape and np.issubdtype(got.dtype, np.number) and not np.iscomplexobj(got)
    return fits and bool(np.allclose(got.astype(float), candidate, rtol=1e-7, atol=1e-12, equal_nan=True))


@exercise(
    notebook="10_efficient_attention",
    hint="First the new running max: the larger of m and this block's largest score. Everything in l and acc was "
         "summed against the old max, so scale both by e^(m − m_new) before you add this block's terms, each "
         "measured against the new max.",
    hint2="Four steps. (1) m_new is the larger of m and the block's largest score. (2) One weight per key of the "
          "block, e^(s − m_new): shape (B,). (3) The correction e^(m − m_new), one number, at most 1 (0 at the first "
          "block, where m = −∞). (4) The new l is l times the correction plus the sum of the weights; the new acc is "
          "acc times the correction plus the values weighted by the weights, (B,) by (B, d_v) giving (d_v,). Return "
          "m_new, the new l and the new acc, without dividing.",
    solution="""
        def online_softmax_update(m, l, acc, scores, values):
            m_new = max(m, scores.max())  # the running max, now including this block
            p = np.exp(scores - m_new)  # (B,): this block's weights, before normalising
            correction = np.exp(m - m_new)  # rescales what was summed against the old max (0 at the start)
            return m_new, l * correction + p.sum(), acc * correction + p @ values
    """,
    mistakes={
        "no-rescale": """
            def online_softmax_update(m, l, acc, scores, values):
                m_new = max(m, scores.max())
                p = np.exp(scores - m_new)
                return m_new, l + p.sum(), acc + p @ values
        """,
        "acc-not-rescaled": """
            def online_softmax_update(m, l, acc, scores, values):
                m_new = max(m, scores.max())
                p, c = np.exp(scores - m_new), np.exp(m - m_new)
                return m_new, l * c + p.sum(), acc + p @ values
        """,
        "inverted-correction": """
            def online_softmax_update(m, l, acc, scores, values):
                m_new = max(m, scores.max())
                p, c = np.exp(scores - m_new), np.exp(m_new - m)
                return m_new, l * c + p.sum(), acc * c + p @ values
        """,
        "max-not-updated": """
            def online_softmax_update(m, l, acc, scores, values):
                m_new = max(m, scores.max())
                p, c = np.exp(scores - m_new), np.exp(m - m_new)
                return m, l * c + p.sum(), acc * c + p @ values
        """,
        "old-max-shift": """
            def online_softmax_update(m, l, acc, scores, values):
                m_new = max(m, scores.max())
                p, c = np.exp(scores - m), np.exp(m - m_new)
                return m_new, l * c + p.sum(), acc * c + p @ values
        """,
        "raw-exp": """
            def online_softmax_update(m, l, acc, scores, values):
                p = np.exp(scores)
                return max(m, scores.max()), l + p.sum(), acc + p @ values
        """,
        "divided-acc": """
            def online_softmax_update(m, l, acc, scores, values):
                m_new = max(m, scores.max())
                p, c = np.exp(scores - m_new), np.exp(m - m_new)
                return m_new, l * c + p.sum(), (acc * c + p @ values) / (l * c + p.sum())
        """,
    },
    forbid=("helpers.efficient.online_softmax_step",),
)
def online_softmax_update(answer):
    rng = check_rng()
    # first one step from the middle of a row (m finite) where the max rises: every slip gives finite, recognisable
    # numbers there; then whole rows from the start (m = -inf), on unit scores and near +-1000
    values = rng.normal(size=(4, 3))  # (B, d_v); the block's largest score, 2.2, is above the running max 0.5
    what = "online_softmax_update from the middle of a row (m = 0.5, l = 2) on a block whose largest score is 2.2"
    _check_update(answer, 0.5, 2.0, rng.normal(size=3), np.array([0.3, 2.2, -0.4, 1.1]), values, what)
    for scale, what_scores in ((2.0, "unit-scale scores"), (400.0, "scores near ±1000")):
        scores = rng.normal(size=10) * scale
        scores[4:8] += 3 * scale  # the maximum rises in the second block: the old sums must be rescaled
        values = rng.normal(size=(10, 3))
        m, l, acc = -np.inf, 0.0, np.zeros(3)
        for start in (0, 4, 8):
            what = (f"online_softmax_update on {what_scores} from the start of a row (m = −∞), "
                    f"block of keys {start}..{min(start + 4, 10) - 1}")
            block = (scores[start:start + 4], values[start:start + 4])  # (B,), (B, d_v)
            m, l, acc = _check_update(answer, m, l, acc, *block, what)  # go on from the right state


def _check_update(answer, m, l, acc, scores, values, what):
    """Check one update from (m, l, acc); return the right new state, from which the next block goes on."""
    got_m, got_l, got_acc = _unpack(call(answer, m, l, acc, scores, values), ("m", "l", "acc"), what)
    expected = [np.asarray(x, dtype=float) for x in online_softmax_step(np.array(m), np.array(l), acc, scores, values)]
    _name_update_mistakes(got_m, got_l, got_acc, m, l, acc, scores, values, expected, what)
    for got, want, name in zip((got_m, got_l, got_acc), expected, ("m", "l", "acc"), strict=True):
        expect_close(got, want, f"{what}: {name}", rtol=1e-7)
    return float(expected[0]), float(expected[1]), expected[2]


def _name_update_mistakes(got_m, got_l, got_acc, m, l, acc, scores, values, expected, what):
    """Recognise the usual slips of the online-softmax update and say what is wrong, in words."""
    m_new, l_new, acc_new = expected
    rises = bool(scores.max() > m)  # the running max changes at this block
    with np.errstate(all="ignore"):
        p, c = np.exp(scores - m_new), np.exp(m - m_new)  # (B,) the right weights, and the right correction
        inverted, raw, old = np.exp(m_new - m), np.exp(scores), np.exp(scores - m)  # what the slips use instead
    if rises and np.isfinite(m) and _same(got_l, l * inverted + p.sum()):
        raise Mismatch(f"{what}: l came out as {float(got_l):.4g}, not {float(l_new):.4g}: you multiplied the old sum "
                       f"by e^(m_new − m) = {inverted:.4g}, which makes it larger. The max rose, so every old term "
                       f"e^(s − m) must shrink to e^(s − m_new): the factor is e^(m − m_new) = {c:.4g}, at most 1. "
                       "(At the first block, m = −∞, the inverted factor is infinite and 0 times ∞ gives NaN.)",
                       "inverted-correction")
    if rises and got_m.shape == () and np.isclose(got_m, m) and not np.isclose(m, m_new):
        raise Mismatch(f"{what}: you returned m = {m:.4g}, the old max; this block's largest score is "
                       f"{scores.max():.4g}, so the running max must become {float(m_new):.4g}, or the next block's "
                       "correction is measured from the wrong max", "max-not-updated")
    if got_l.shape == () and _same(got_l, l + raw.sum()) and not np.isclose(m_new, 0):
        raise Mismatch(f"{what}: l grew by the sum of e^s over the raw scores. l holds e^(s − m) with m the running "
                       "max, so no exponent is ever positive: on scores near 1000, e^s alone is already infinite in "
                       "floating point", "raw-exp")
    if rises and np.isfinite(m) and _same(got_l, l * c + old.sum()):
        raise Mismatch(f"{what}: the old sum was rescaled to the new max {float(m_new):.4g}, but this block's terms "
                       f"were measured against the old max {m:.4g}, e^(s − m). Every term of l must be measured "
                       "against the same max, the new one: e^(s − m_new). (From m = −∞ those terms are infinite.)",
                       "old-max-shift")
    if rises and np.isfinite(m) and _same(got_l, l + p.sum()):
        raise Mismatch(f"{what}: the max rose from {m:.4g} to {float(m_new):.4g}, but the old l was added as it was. "
                       "It was summed against the old max: scale it (and acc) by e^(m − m_new) "
                       f"= {c:.4g} before adding this block", "no-rescale")
    if rises and np.isfinite(m) and _same(got_l, l_new) and _same(got_acc, acc + p @ values):
        raise Mismatch(f"{what}: l is right, but acc was added as it was although the max rose from {m:.4g} to "
                       f"{float(m_new):.4g}: acc was summed against the old max too, and needs the same factor "
                       f"e^(m − m_new) = {c:.4g} as l", "acc-not-rescaled")
    if _same(got_l, l_new) and not np.isclose(l_new, 1) and _same(got_acc, acc_new / l_new):
        raise Mismatch(f"{what}: acc came back divided by l. acc is the running sum of e^(s − m)·v, not yet an "
                       "average: keep it unnormalised, since the next block rescales it and adds to it; divide by l "
                       "only once, after the last block", "divided-acc")
    if np.any(~np.isfinite(got_l)) or np.any(~np.isfinite(got_acc)):
        raise Mismatch(f"{what}: l or acc is inf or NaN. Against the running max no exponent is positive, and at the "
                       "first block (m = −∞) the old sums, 0, are multiplied by e^(m − m_new) = 0", "nan")


def _attend(q, K, V, visible, scale=True):
    """Plain attention with a visibility mask; a query that sees no key gets NaN (it is compared loosely)."""
    scores = q @ K.T / (np.sqrt(K.shape[1]) if scale else 1.0)  # (t, d_k) @ (d_k, T_k) -> (t, T_k): small, no shift
    with np.errstate(all="ignore"):
        weights = np.exp(np.where(visible, scores, -np.inf))  # (t, T_k)
        return weights / weights.sum(axis=1, keepdims=True) @ V  # (t, T_k) @ (T_k, d_v) -> (t, d_v)


def _same_where_seen(got, candidate):
    """Like _same, but a row of `candidate` that saw no key (NaN) may be NaN or zeros in `got`."""
    blind = np.isnan(candidate).any(axis=1)  # (t,): the queries that saw no key; compare the other rows
    if got.shape != candidate.shape or not _same(got, np.where(blind[:, None], got, candidate)):
        return False
    return bool(np.all(np.isnan(got[blind]) | (got[blind] == 0)))


@exercise(
    notebook="10_efficient_attention",
    hint="Put the new keys and values after the cached ones (np.concatenate), then attend as usual: the t new "
         "queries against all T + t keys, scores divided by √d_k, under a causal mask in which the new tokens are "
         "the last t positions.",
    hint2="Stack along the token axis: K becomes (T + t, d_k) and V (T + t, d_v), the past first. The scores, the "
          "new queries times the keys transposed over √d_k, are (t, T + t). New query i sits at position T + i, "
          "so it may see key j when j ≤ T + i: every cached key, and the new ones up to and including its own. "
          "Set the other scores to −∞, take the softmax of each row, and mix the rows of V with those weights. "
          "Return K, V and the (t, d_v) output.",
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
    mistakes={
        "no-causal-mask": """
            def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
                K, V = np.concatenate([cache_K, k_new]), np.concatenate([cache_V, v_new])
                w = np.exp(q_new @ K.T / np.sqrt(K.shape[1]))
                return K, V, w / w.sum(axis=1, keepdims=True) @ V
        """,
        "diagonal-hidden": """
            def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
                K, V = np.concatenate([cache_K, k_new]), np.concatenate([cache_V, v_new])
                visible = np.arange(len(K)) < np.arange(len(q_new))[:, None] + len(cache_K)
                w = np.exp(q_new @ K.T / np.sqrt(K.shape[1])) * visible
                return K, V, w / w.sum(axis=1, keepdims=True) @ V
        """,
        "no-scaling": """
            def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
                K, V = np.concatenate([cache_K, k_new]), np.concatenate([cache_V, v_new])
                visible = np.arange(len(K)) <= np.arange(len(q_new))[:, None] + len(cache_K)
                w = np.exp(q_new @ K.T) * visible
                return K, V, w / w.sum(axis=1, keepdims=True) @ V
        """,
        "mask-not-shifted": """
            def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
                K, V = np.concatenate([cache_K, k_new]), np.concatenate([cache_V, v_new])
                visible = np.arange(len(K)) <= np.arange(len(q_new))[:, None]
                w = np.exp(q_new @ K.T / np.sqrt(K.shape[1])) * visible
                return K, V, w / w.sum(axis=1, keepdims=True) @ V
        """,
        "cache-not-grown": """
            def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
                K, V = np.concatenate([cache_K, k_new]), np.concatenate([cache_V, v_new])
                visible = np.arange(len(K)) <= np.arange(len(q_new))[:, None] + len(cache_K)
                w = np.exp(q_new @ K.T / np.sqrt(K.shape[1])) * visible
                return cache_K, cache_V, w / w.sum(axis=1, keepdims=True) @ V
        """,
        "new-keys-in-front": """
            def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
                K, V = np.concatenate([k_new, cache_K]), np.concatenate([v_new, cache_V])
                visible = np.arange(len(K)) <= np.arange(len(q_new))[:, None] + len(cache_K)
                w = np.exp(q_new @ K.T / np.sqrt(K.shape[1])) * visible
                return K, V, w / w.sum(axis=1, keepdims=True) @ V
        """,
        "new-tokens-only": """
            def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
                K, V = np.concatenate([cache_K, k_new]), np.concatenate([cache_V, v_new])
                visible = np.arange(len(k_new)) <= np.arange(len(q_new))[:, None]
                w = np.exp(q_new @ k_new.T / np.sqrt(K.shape[1])) * visible
                return K, V, w / w.sum(axis=1, keepdims=True) @ v_new
        """,
    },
)
def kv_cache_step(answer):
    rng = check_rng()
    d_k, d_v = 4, 3
    cache_K, cache_V = np.zeros((0, d_k)), np.zeros((0, d_v))
    for t in (3, 1, 1, 2):  # a prompt of 3 tokens at once, then one token at a time, then two
        q_new, k_new, v_new = rng.normal(size=(t, d_k)), rng.normal(size=(t, d_k)), rng.normal(size=(t, d_v))
        T = len(cache_K)
        what = f"kv_cache_step with {T} cached tokens and {t} new (d_k = {d_k})"
        got = call(answer, cache_K, cache_V, q_new, k_new, v_new)
        got_K, got_V, got_out = _unpack(got, ("cache_K", "cache_V", "out"), what)
        K, V = np.concatenate([cache_K, k_new]), np.concatenate([cache_V, v_new])  # (T + t, d_k), (T + t, d_v)
        for got_cache, old, new, name in ((got_K, cache_K, k_new, "cache_K"), (got_V, cache_V, v_new, "cache_V")):
            if got_cache.shape == old.shape:
                raise Mismatch(f"{what}: the returned {name} still has {T} rows, as before the step; return the "
                               f"grown cache, {T + t} rows with the new tokens' after the cached ones, so that the "
                               "next step sees them", "cache-not-grown")
            if T and _same(got_cache, np.concatenate([new, old])):
                raise Mismatch(f"{what}: in the returned {name}, the new tokens' rows come before the {T} cached "
                               "ones. Append them after: row j of the cache belongs to the token at position j, which "
                               "is what the causal mask assumes", "new-keys-in-front")
        expect_close(got_K, K, f"{what}: cache_K")
        expect_close(got_V, V, f"{what}: cache_V")
        _name_step_mistakes(got_out, q_new, k_new, v_new, K, V, T, t, what)
        out = scaled_dot_product_attention(q_new, K, V, mask=causal_mask(t, T + t))[0]
        expect_close(got_out, out, f"{what}: out")
        cache_K, cache_V = K, V


def _name_step_mistakes(got_out, q_new, k_new, v_new, K, V, T, t, what):
    """Recognise the usual slips in the new tokens' attention output and say what is wrong, in words."""
    positions = np.arange(t)[:, None] + T  # (t, 1): the new queries' positions among the T + t keys
    keys = np.arange(T + t)[None, :]  # (1, T + t)
    at, tokens = ("position i" if T == 0 else f"position {T} + i"), ("token" if t == 1 else f"{t} tokens")
    if t > 1 and _same(got_out, _attend(q_new, K, V, np.ones((t, T + t), bool))):
        raise Mismatch(f"{what}: the {t} new tokens saw each other's future: every new query attended to all "
                       f"{T + t} keys. New query i stands at {at} and may see the keys up to that position, no later "
                       "one: the causal mask", "no-causal-mask")
    if _same_where_seen(got_out, _attend(q_new, K, V, keys < positions)):
        blind = " (so the first token of the text saw no key at all)" if T == 0 else ""
        raise Mismatch(f"{what}: your mask also hid each new token's own key, the diagonal{blind}. A token may "
                       f"attend to itself: new query i stands at {at} and sees every key up to and including that "
                       "position", "diagonal-hidden")
    if _same(got_out, _attend(q_new, K, V, keys <= positions, scale=False)):
        raise Mismatch(f"{what}: the scores were not divided by √d_k = {np.sqrt(K.shape[1]):.0f}; scale them as "
                       "in 04, before the mask and the softmax", "no-scaling")
    if T and _same(got_out, _attend(q_new, K, V, keys <= np.arange(t)[:, None])):
        raise Mismatch(f"{what}: new query i saw only keys 0 to i, as if it stood at the start of the text. With "
                       f"{T} tokens cached, it stands at {at}: it may see every cached key and the new ones up to "
                       "its own", "mask-not-shifted")
    if T and _same(got_out, _attend(q_new, k_new, v_new, np.tril(np.ones((t, t), bool)))):
        raise Mismatch(f"{what}: out attended to the new {tokens} only; the new queries must also see the "
                       f"{T} cached keys and values, that is what the cache is for", "new-tokens-only")
