"""The exercises of 10_efficient_attention."""

import numpy as np

from helpers.attention import scaled_dot_product_attention, softmax
from helpers.checks._core import Mismatch, as_array, call, check_rng, exercise, expect_close
from helpers.efficient import online_softmax_step
from helpers.masking import causal_mask


def _unpack(got, names, what):
    """The learner's returned tuple as arrays, one per name, or Mismatch."""
    if not isinstance(got, (tuple, list)) or len(got) != len(names):
        raise Mismatch(f"{what} should return {len(names)} things, ({', '.join(names)}); got {type(got).__name__}")
    return [as_array(x, f"{what}: {name}") for x, name in zip(got, names, strict=True)]


@exercise(
    notebook="10_efficient_attention",
    hint="m_new = max(m, scores.max()). What l and acc hold was summed against the old max: multiply both by "
         "np.exp(m - m_new), then add p.sum() and p @ values, where p = np.exp(scores - m_new).",
    solution="""
        def online_softmax_update(m, l, acc, scores, values):
            m_new = max(m, scores.max())  # the running max, now including this block
            p = np.exp(scores - m_new)  # (B,): this block's weights, before normalising
            correction = np.exp(m - m_new)  # rescales what was summed against the old max (0 at the start)
            return m_new, l * correction + p.sum(), acc * correction + p @ values
    """,
    wrong="""
        def online_softmax_update(m, l, acc, scores, values):
            m_new = max(m, scores.max())
            p = np.exp(scores - m_new)
            return m_new, l + p.sum(), acc + p @ values  # forgets to rescale the old sums
    """,
    forbid=("helpers.efficient.online_softmax_step",),
)
def online_softmax_update(answer):
    rng = check_rng()
    for scale, what_scores in ((2.0, "unit-scale scores"), (400.0, "scores near ±1000")):
        scores = rng.normal(size=10) * scale
        scores[4:8] += 3 * scale  # the maximum rises in the second block: the old sums must be rescaled
        values = rng.normal(size=(10, 3))
        m, l, acc = -np.inf, 0.0, np.zeros(3)
        for start in (0, 4, 8):
            block = slice(start, start + 4)
            what = f"online_softmax_update on {what_scores}, block of keys {start}..{min(start + 4, 10) - 1}"
            got = call(answer, m, l, acc, scores[block], values[block])
            got_m, got_l, got_acc = _unpack(got, ("m", "l", "acc"), what)
            expected = online_softmax_step(np.array(m), np.array(l), acc, scores[block], values[block])
            _name_update_mistakes(got_m, got_l, got_acc, m, l, acc, scores[block], values[block], expected, what)
            for got, want, name in zip((got_m, got_l, got_acc), expected, ("m", "l", "acc"), strict=True):
                expect_close(got, want, f"{what}: {name}", rtol=1e-7)
            m, l, acc = (float(expected[0]), float(expected[1]), expected[2])  # go on from the right state
        expect_close(acc / l, softmax(scores) @ values, f"acc / l after every block ({what_scores})", rtol=1e-7)


def _name_update_mistakes(got_m, got_l, got_acc, m, l, acc, scores, values, expected, what):
    """Recognise the usual slips of the online-softmax update and say what to change."""
    m_new = max(m, scores.max())
    if np.any(~np.isfinite(got_l)) or np.any(~np.isfinite(got_acc)):
        raise Mismatch(f"{what}: l or acc is inf or NaN. Subtract the new running max before exp(): "
                       "p = np.exp(scores - m_new), so no exponent is positive")
    if got_m.shape == () and np.isclose(got_m, m) and not np.isclose(m, m_new):
        raise Mismatch(f"{what}: m is still the old max {m:.4g}; this block's largest score is {scores.max():.4g}, "
                       "so m must become max(m, scores.max())")
    p = np.exp(scores - m_new)
    if not np.isfinite(m) and got_l.shape == () and np.isclose(got_l, np.exp(scores).sum()) and m_new != 0:
        raise Mismatch(f"{what}: l is the sum of exp() of the raw scores. Subtract the running max first, "
                       "p = np.exp(scores - m_new): on large scores exp() would overflow")
    if np.isfinite(m) and m != m_new and np.isclose(got_l, l + p.sum()) and not np.isclose(got_l, expected[1]):
        raise Mismatch(f"{what}: the max rose from {m:.4g} to {m_new:.4g}, but l was not rescaled. l was summed "
                       "against the old max: multiply it (and acc) by np.exp(m - m_new) before adding this block")
    if (np.isfinite(m) and m != m_new and got_acc.shape == acc.shape
            and np.allclose(got_acc, acc + p @ values) and not np.allclose(got_acc, expected[2])):
        raise Mismatch(f"{what}: l is right but acc was not rescaled: multiply acc by np.exp(m - m_new) too")


def _kv_reference(cache_K, cache_V, q_new, k_new, v_new):
    K, V = np.concatenate([cache_K, k_new]), np.concatenate([cache_V, v_new])  # (T + t, d_k), (T + t, d_v)
    out = scaled_dot_product_attention(q_new, K, V, mask=causal_mask(len(q_new), len(K)))[0]
    return K, V, out


@exercise(
    notebook="10_efficient_attention",
    hint="Append with np.concatenate([cache_K, k_new]) (and the same for V). The t new queries are the last t "
         "of the T + t positions: scaled_dot_product_attention(q_new, K, V, mask=causal_mask(t, T + t)).",
    solution="""
        def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
            K = np.concatenate([cache_K, k_new])  # (T + t, d_k): the past keys, then the new ones
            V = np.concatenate([cache_V, v_new])  # (T + t, d_v)
            scores = q_new @ K.T / np.sqrt(K.shape[1])  # (t, d_k) @ (d_k, T + t) -> (t, T + t)
            T_q, T_k = scores.shape
            visible = np.arange(T_k)[None, :] <= np.arange(T_q)[:, None] + (T_k - T_q)  # the queries are the last t
            scores = np.where(visible, scores, -np.inf)
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights /= weights.sum(axis=1, keepdims=True)
            return K, V, weights @ V  # out: (t, T + t) @ (T + t, d_v) -> (t, d_v)
    """,
    wrong="""
        def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
            K = np.concatenate([cache_K, k_new])
            V = np.concatenate([cache_V, v_new])
            scores = q_new @ K.T / np.sqrt(K.shape[1])  # no causal mask: new tokens see each other's future
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights /= weights.sum(axis=1, keepdims=True)
            return K, V, weights @ V
    """,
)
def kv_cache_step(answer):
    rng = check_rng()
    d_k, d_v = 4, 3
    cache_K, cache_V = np.zeros((0, d_k)), np.zeros((0, d_v))
    for t in (3, 1, 1, 2):  # a prompt of 3 tokens at once, then one token at a time, then two
        q_new, k_new, v_new = rng.normal(size=(t, d_k)), rng.normal(size=(t, d_k)), rng.normal(size=(t, d_v))
        T = len(cache_K)
        what = f"kv_cache_step with {T} cached tokens and {t} new"
        got = call(answer, cache_K, cache_V, q_new, k_new, v_new)
        got_K, got_V, got_out = _unpack(got, ("cache_K", "cache_V", "out"), what)
        K, V, out = _kv_reference(cache_K, cache_V, q_new, k_new, v_new)
        if got_K.shape == cache_K.shape:
            raise Mismatch(f"{what}: cache_K still has {T} rows; append the new keys (np.concatenate([cache_K, "
                           "k_new])) and return the grown caches, so the next step sees these tokens")
        if got_K.shape == K.shape and T and np.allclose(got_K, np.concatenate([k_new, cache_K])):
            raise Mismatch(f"{what}: the new keys went in front of the old ones; append them after, so row j "
                           "of the cache is the token at position j")
        expect_close(got_K, K, f"{what}: cache_K")
        expect_close(got_V, V, f"{what}: cache_V")
        if t > 1 and got_out.shape == out.shape and np.allclose(got_out, scaled_dot_product_attention(q_new, K, V)[0]):
            raise Mismatch(f"{what}: the {t} new tokens saw each other's future. They are the last {t} of the "
                           f"{T + t} positions: mask with causal_mask({t}, {T + t})")
        if got_out.shape == out.shape and T and np.allclose(got_out, scaled_dot_product_attention(
                q_new, k_new, v_new, mask=causal_mask(t))[0]):
            raise Mismatch(f"{what}: out attended to the new tokens only; the queries must see every cached key too")
        expect_close(got_out, out, f"{what}: out")
        cache_K, cache_V = K, V
