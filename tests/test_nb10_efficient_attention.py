"""What 10_efficient_attention adds: its exercises' verdicts and messages, and the tile explorer driven by code.

(tests/test_checks.py also feeds every exercise a right, a wrong, an untouched and a crashing answer.)
"""

import textwrap

import numpy as np
import pytest
from _answers import define, solution

from helpers import causal_mask, checks, efficient, scaled_dot_product_attention, softmax, widgets
from helpers.efficient import COMPUTED, MASKED, SKIPPED, block_grid, online_softmax_step


def verdict(name, source, capsys):
    """(status, printed text) of checks.<name> on the answer that `source` defines."""
    result = getattr(checks, name)(define(textwrap.dedent(source), name))
    return result.status, capsys.readouterr().out


# ---- online_softmax_update

def test_online_update_solution_folds_blocks_into_the_softmax(rng):
    update = solution("online_softmax_update")
    scores, values = rng.normal(size=11) * 3, rng.normal(size=(11, 2))
    m, l, acc = -np.inf, 0.0, np.zeros(2)
    for start in range(0, 11, 3):
        m, l, acc = update(m, l, acc, scores[start:start + 3], values[start:start + 3])
    assert np.isclose(m, scores.max())
    assert np.allclose(acc / l, softmax(scores) @ values)


def test_online_update_solution_is_the_helpers_step(rng):
    update = solution("online_softmax_update")
    m, l, acc = 0.7, 2.5, rng.normal(size=3)
    scores, values = rng.normal(size=4) + 1, rng.normal(size=(4, 3))
    for got, expected in zip(update(m, l, acc, scores, values),
                             online_softmax_step(np.array(m), np.array(l), acc, scores, values), strict=True):
        assert np.allclose(got, expected)


ONLINE_MISTAKES = {
    "forgets to rescale": ("""
        def online_softmax_update(m, l, acc, scores, values):
            m_new = max(m, scores.max())
            p = np.exp(scores - m_new)
            return m_new, l + p.sum(), acc + p @ values
    """, "l was not rescaled"),
    "rescales l only": ("""
        def online_softmax_update(m, l, acc, scores, values):
            m_new = max(m, scores.max())
            p = np.exp(scores - m_new)
            return m_new, l * np.exp(m - m_new) + p.sum(), acc + p @ values
    """, "acc was not rescaled"),
    "keeps the old max": ("""
        def online_softmax_update(m, l, acc, scores, values):
            m_new = max(m, scores.max())
            p = np.exp(scores - m_new)
            c = np.exp(m - m_new)
            return m, l * c + p.sum(), acc * c + p @ values
    """, "m is still the old max"),
    "no max at all": ("""
        def online_softmax_update(m, l, acc, scores, values):
            p = np.exp(scores)
            return scores.max(), l + p.sum(), acc + p @ values
    """, "exp() of the raw scores"),
    "overflows on large scores": ("""
        def online_softmax_update(m, l, acc, scores, values):
            m_new = max(m, scores.max())
            p = np.exp(scores - m)  # the old max: exp(+large) overflows once the max rises
            c = np.exp(m - m_new)
            return m_new, l * c + p.sum(), acc * c + p @ values
    """, "inf or NaN"),
    "returns two things": ("""
        def online_softmax_update(m, l, acc, scores, values):
            return m, l
    """, "should return 3 things"),
}


@pytest.mark.parametrize("mistake", ONLINE_MISTAKES)
def test_online_update_names_the_mistake(mistake, capsys):
    source, words = ONLINE_MISTAKES[mistake]
    status, printed = verdict("online_softmax_update", source, capsys)
    assert status == checks.INCORRECT and words in printed, printed


def test_online_update_may_not_call_the_helper(capsys):
    source = """
        from helpers.efficient import online_softmax_step

        def online_softmax_update(m, l, acc, scores, values):
            m, l, acc = online_softmax_step(np.array(m), np.array(l), acc, scores, values)
            return float(m), float(l), acc
    """
    status, printed = verdict("online_softmax_update", source, capsys)
    assert status == checks.INCORRECT and "online_softmax_step" in printed


# ---- kv_cache_step

def test_kv_cache_step_solution_grows_the_caches_and_equals_full_attention(rng):
    step = solution("kv_cache_step")
    q, k, v = rng.normal(size=(7, 4)), rng.normal(size=(7, 4)), rng.normal(size=(7, 2))
    cache_K, cache_V, outs = np.zeros((0, 4)), np.zeros((0, 2)), []
    for start, stop in ((0, 3), (3, 4), (4, 7)):
        cache_K, cache_V, out = step(cache_K, cache_V, q[start:stop], k[start:stop], v[start:stop])
        outs.append(out)
    assert np.array_equal(cache_K, k) and np.array_equal(cache_V, v)
    expected = scaled_dot_product_attention(q, k, v, mask=causal_mask(7))[0]
    assert np.allclose(np.concatenate(outs), expected)


KV_MISTAKES = {
    "no mask": (None, "saw each other's future"),  # the registered wrong answer
    "does not append": ("""
        def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
            scores = q_new @ k_new.T / np.sqrt(k_new.shape[1])
            w = np.exp(scores - scores.max(axis=1, keepdims=True))
            return cache_K, cache_V, (w / w.sum(axis=1, keepdims=True)) @ v_new
    """, "still has 0 rows"),
    "prepends": ("""
        def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
            K, V = np.concatenate([k_new, cache_K]), np.concatenate([v_new, cache_V])
            t, T = len(q_new), len(K)
            s = q_new @ K.T / np.sqrt(K.shape[1])
            s = np.where(np.arange(T)[None, :] <= np.arange(t)[:, None] + T - t, s, -np.inf)
            w = np.exp(s - s.max(axis=1, keepdims=True))
            return K, V, (w / w.sum(axis=1, keepdims=True)) @ V
    """, "went in front of the old ones"),
    "attends to the new tokens only": ("""
        def kv_cache_step(cache_K, cache_V, q_new, k_new, v_new):
            K, V = np.concatenate([cache_K, k_new]), np.concatenate([cache_V, v_new])
            t = len(q_new)
            s = q_new @ k_new.T / np.sqrt(K.shape[1])
            s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
            w = np.exp(s - s.max(axis=1, keepdims=True))
            return K, V, (w / w.sum(axis=1, keepdims=True)) @ v_new
    """, "attended to the new tokens only"),
}


@pytest.mark.parametrize("mistake", KV_MISTAKES)
def test_kv_cache_step_names_the_mistake(mistake, capsys):
    source, words = KV_MISTAKES[mistake]
    source = checks.EXERCISES["kv_cache_step"].wrong if source is None else source
    status, printed = verdict("kv_cache_step", source, capsys)
    assert status == checks.INCORRECT and words in printed, printed


# ---- the explorer

def test_tile_counts_and_grid_picture():
    grid = block_grid(1024, 1024, 128, causal=True)
    assert widgets.tile_counts(grid) == {"computed": 28, "computed with a mask": 8, "skipped": 28}
    picture = widgets.block_grid_html(grid)
    for kind, n in ((COMPUTED, 28), (MASKED, 8), (SKIPPED, 28)):
        assert picture.count(f"background:{widgets.TILE_COLOURS[kind]}\"></td>") == n


@pytest.mark.parametrize("cores", [2, 8])
def test_measure_tiled_gives_a_peak_far_below_the_scores_on_any_core_count(monkeypatch, cores):
    monkeypatch.setattr(efficient, "default_threads", lambda: cores)  # a machine with this many cores
    seconds, peak_mib = widgets.measure_tiled(2048, 256, causal=True)
    assert seconds > 0
    assert peak_mib < 2048 * 2048 * 4 / 2**20 / 4  # a quarter of the (T, T) float32 scores, at most


def test_explorer_draws_the_chosen_grid(shown):
    box = widgets.tiled_attention_explorer(T=512, block_size=256, causal=True)
    assert "4 tiles of 256×256" in shown[-1] and "1 skipped" in shown[-1]
    box.controls["T"].value = 1024
    box.controls["block_size"].value = 128
    assert "64 tiles of 128×128" in shown[-1] and "28 skipped" in shown[-1] and "8 computed with a mask" in shown[-1]
    box.controls["causal"].value = False
    assert "64 computed, 0 computed with a mask, 0 skipped" in shown[-1]
    assert "(the naive (1024, 1024) float32 scores alone: 4 MiB)" in shown[-1]
