"""Tiled attention and the online softmax against scaled_dot_product_attention."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import causal_mask, scaled_dot_product_attention, softmax
from helpers.efficient import (
    TILE_COMPUTED,
    TILE_MASKED,
    TILE_SKIPPED,
    attention_in_place,
    block_grid,
    finish_online_softmax,
    fold_tile,
    online_softmax_step,
    tiled_attention,
    tiled_attention_fast,
    tiled_attention_simple,
)
from helpers.threads import blas_threads

FAST = settings(max_examples=60, deadline=None)


def reference(q, k, v, causal):
    """The contract: scaled_dot_product_attention with causal_mask's alignment."""
    mask = causal_mask(q.shape[-2], k.shape[-2]) if causal else None
    return scaled_dot_product_attention(q, k, v, mask=mask)[0]


def random_qkv(rng, q_shape, k_shape, d_v, dtype=np.float64, scale=1.0):
    """q (*q_shape), k (*k_shape), v (*k_shape[:-1], d_v) with unit-scale entries (times `scale`)."""
    q = rng.standard_normal(q_shape) * scale
    k = rng.standard_normal(k_shape) * scale
    v = rng.standard_normal(k_shape[:-1] + (d_v,))
    return q.astype(dtype), k.astype(dtype), v.astype(dtype)


# batch axes of q and k (v follows k): equal, broadcast one way, broadcast the other way, none
BATCHES = [((2, 3), (2, 3)), ((2, 1), (4,)), ((), (3,)), ((), ())]


@st.composite
def tiled_problems(draw):
    causal = draw(st.booleans())
    T_k = draw(st.integers(1, 20))
    T_q = draw(st.integers(1, T_k)) if causal else draw(st.integers(1, 20))
    q_batch, k_batch = draw(st.sampled_from(BATCHES))
    d_k, d_v = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([0.1, 1.0, 4.0]))
    q, k, v = random_qkv(rng, q_batch + (T_q, d_k), k_batch + (T_k, d_k), d_v, scale=scale)
    return q, k, v, causal, draw(st.integers(1, 8)), draw(st.integers(1, 3))


@FAST
@given(tiled_problems())
def test_tiled_equals_reference_float64(problem):
    q, k, v, causal, block_size, n_threads = problem
    out = tiled_attention(q, k, v, causal=causal, block_size=block_size, n_threads=n_threads)
    expected = reference(q, k, v, causal)
    assert out.shape == expected.shape and out.dtype == np.float64
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


@FAST
@given(tiled_problems())
def test_the_taught_version_equals_reference_float64(problem):
    q, k, v, causal, block_size, _ = problem
    out = tiled_attention_simple(q, k, v, causal=causal, block_size=block_size)
    expected = reference(q, k, v, causal)
    assert out.shape == expected.shape and out.dtype == np.float64
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype, tolerance", [(np.float32, 4e-6), (np.float64, 1e-13)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("T_q, T_k, block_size", [(64, 64, 16), (100, 100, 32), (37, 129, 16), (50, 300, 64)])
def test_the_taught_and_the_fast_version_agree(rng, dtype, tolerance, causal, T_q, T_k, block_size):
    """Both ways of 10, with T_q != T_k and T not a multiple of the block; the fast one is tiled_attention."""
    if not causal:
        T_q, T_k = T_k, T_q  # more queries than keys, which only non-causal attention allows
    q, k, v = random_qkv(rng, (2, 1, T_q, 16), (3, T_k, 16), 8, dtype=dtype, scale=2.0)
    simple = tiled_attention_simple(q, k, v, causal=causal, block_size=block_size)
    fast = tiled_attention_fast(q, k, v, causal=causal, block_size=block_size, n_threads=2)
    assert simple.dtype == fast.dtype == dtype and simple.shape == fast.shape == (2, 3, T_q, 8)
    np.testing.assert_allclose(simple, fast, rtol=0, atol=tolerance)
    np.testing.assert_array_equal(tiled_attention(q, k, v, causal, block_size, n_threads=2), fast)


def test_the_taught_version_runs_on_online_softmax_step_once_per_computed_tile(rng, monkeypatch):
    from helpers import efficient

    calls = []
    monkeypatch.setattr(efficient, "online_softmax_step", lambda *args: calls.append(1) or online_softmax_step(*args))
    q, k, v = random_qkv(rng, (2, 70, 4), (2, 90, 4), 3)
    out = tiled_attention_simple(q, k, v, causal=True, block_size=16)
    assert len(calls) == 2 * (block_grid(70, 90, 16, causal=True) != TILE_SKIPPED).sum()
    np.testing.assert_allclose(out, reference(q, k, v, True), rtol=1e-10)


def test_the_taught_version_returns_the_log_of_each_softmax_denominator(rng):
    q, k, v = random_qkv(rng, (30, 8), (45, 8), 4)
    out, L = tiled_attention_simple(q, k, v, causal=True, block_size=16, return_logsumexp=True)
    scores = np.where(causal_mask(30, 45), q @ k.T / np.sqrt(8), -np.inf)  # (30, 45)
    np.testing.assert_allclose(L, np.log(np.exp(scores).sum(axis=1)), rtol=1e-12)
    np.testing.assert_allclose(out, np.exp(scores - L[:, None]) @ v, rtol=1e-10)  # P = e^(S - L): 10's backward


@pytest.mark.parametrize("f", [tiled_attention_simple, tiled_attention_fast])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_query_with_no_key_gets_zeros_never_nan(f, dtype):
    q, k, v = np.ones((2, 3, 4), dtype), np.zeros((2, 0, 4), dtype), np.zeros((2, 0, 5), dtype)
    out = f(q, k, v)
    assert out.dtype == dtype and out.shape == (2, 3, 5)
    np.testing.assert_array_equal(out, reference(q, k, v, False))  # zeros, as scaled_dot_product_attention gives
    l, acc = np.array([0.0, 2.0]), np.array([[0.0, 0.0], [1.0, 3.0]])  # a fully masked row ends with l = 0
    np.testing.assert_array_equal(finish_online_softmax(l, acc), [[0.0, 0.0], [0.5, 1.5]])


@pytest.mark.parametrize(
    "T_q, T_k, causal", [(100, 100, True), (37, 129, True), (129, 37, False), (1, 50, True), (64, 64, False)]
)
@pytest.mark.parametrize("block_size", [16, 32, None])
def test_tiled_float32_within_float32_precision(rng, T_q, T_k, causal, block_size):
    q, k, v = random_qkv(rng, (3, T_q, 16), (3, T_k, 16), 8, dtype=np.float32)
    out = tiled_attention(q, k, v, causal=causal, block_size=block_size)
    assert out.dtype == np.float32
    exact = reference(*(x.astype(np.float64) for x in (q, k, v)), causal)
    np.testing.assert_allclose(out, exact, rtol=0, atol=2e-6)
    np.testing.assert_allclose(out, reference(q, k, v, causal), rtol=0, atol=4e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_query_that_sees_one_key_copies_its_value(rng, dtype):
    q, k, v = random_qkv(rng, (2, 9, 4), (2, 9, 4), 3, dtype=dtype)
    out = tiled_attention(q, k, v, causal=True, block_size=4)
    np.testing.assert_allclose(out[:, 0], v[:, 0], rtol=1e-6)  # position 0 sees only key 0
    np.testing.assert_allclose(out, reference(q, k, v, True), rtol=1e-5, atol=1e-6)


def test_large_logits_float32_match_float64_where_naive_drifts(rng):
    q, k, v = random_qkv(rng, (4, 300, 16), (4, 300, 16), 8, dtype=np.float32, scale=10.0)
    exact = reference(*(x.astype(np.float64) for x in (q, k, v)), True)
    out = tiled_attention(q, k, v, causal=True, block_size=32)
    np.testing.assert_allclose(out, exact, rtol=0, atol=5e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scores_that_grow_along_the_keys_raise_the_running_max(rng, dtype):
    # each key block scores 60 higher than the one before: keeping the first block's max
    # would overflow exp() in float32, so the tile must be redone with a raised max.
    # Integer keys and scale 1/2 make every score exact in float32 too.
    T, d = 96, 4
    q = np.ones((T, d), dtype)
    k = np.repeat(np.arange(T // 16) * 30, 16)[:, None] + rng.integers(-3, 4, size=(T, d))
    k, v = k.astype(dtype), rng.standard_normal((T, 3)).astype(dtype)
    exact = reference(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), False)
    out = tiled_attention(q, k, v, block_size=16)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, exact, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("growth", [0.0, 200.0])  # scores of the usual size, or rising far past float32's exp
def test_fold_tile_is_the_online_softmax_with_l_in_the_last_column(rng, growth):
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for shape in ((5, 4), (12, 4), (12, 3)))
    q[:, 0] = 1 + np.abs(q[:, 0])  # >= 1, so that keys 4.. below score at least growth / 2 higher
    k[4:, 0] += growth
    Q1 = np.hstack([q / 2, np.zeros((5, 1), np.float32)])  # [Q * scale | -m] with m = 0; d_k = 4: the scale is 1/2
    acc, buffer = np.zeros((5, 4), np.float32), np.empty(5 * 4, np.float32)
    m, l, acc_taught = np.full(5, -np.inf), np.zeros(5), np.zeros((5, 3))  # float64: the reference
    for j0 in (0, 4, 8):
        K1, V1 = (np.hstack([x[j0 : j0 + 4], np.ones((4, 1), np.float32)]) for x in (k, v))  # [K | 1], [V | 1]
        fold_tile(Q1, acc, K1, V1, buffer, offset=0 if j0 == 0 else None)  # the first tile causal, the rest not
        scores = q.astype(np.float64) @ k[j0 : j0 + 4].T.astype(np.float64) / 2  # (5, 4)
        if j0 == 0:
            scores = np.where(causal_mask(5)[:, :4], scores, -np.inf)  # query r sees keys 0..r
        m, l, acc_taught = online_softmax_step(m, l, acc_taught, scores, v[j0 : j0 + 4].astype(np.float64))
    # float32 scores near 300 carry about 3e-5 of rounding: errors of that size, not of a wrong rescaling
    np.testing.assert_allclose(acc[:, :-1] / acc[:, -1:], acc_taught / l[:, None], rtol=0, atol=1e-4)
    m_fast = -Q1[:, -1]  # (5,): m rose only when a tile's sums would have overflowed
    assert np.all(m_fast > 50) if growth else np.all(m_fast == 0)


def test_nan_input_gives_nan_rows_like_the_reference(rng):
    q, k, v = random_qkv(rng, (6, 4), (10, 4), 2)
    k[3, 0] = np.nan
    out = tiled_attention(q, k, v, block_size=4)
    assert np.isnan(out).all() and np.isnan(reference(q, k, v, False)).all()


def test_threads_give_identical_bits_and_restore_blas(rng):
    q, k, v = random_qkv(rng, (5, 70, 8), (5, 70, 8), 8, dtype=np.float32)
    before = blas_threads()
    one = tiled_attention(q, k, v, causal=True, block_size=16, n_threads=1)
    three = tiled_attention(q, k, v, causal=True, block_size=16, n_threads=3)
    assert np.array_equal(one, three)
    assert blas_threads() == before


def test_empty_inputs_match_the_reference():
    q, k, v = np.zeros((0, 4)), np.zeros((3, 4)), np.zeros((3, 2))
    assert tiled_attention(q, k, v).shape == (0, 2)
    q, k, v = np.ones((2, 4)), np.zeros((0, 4)), np.zeros((0, 2))
    np.testing.assert_array_equal(tiled_attention(q, k, v), reference(q, k, v, False))


def test_float16_in_float16_out(rng):
    q, k, v = random_qkv(rng, (12, 8), (12, 8), 4, dtype=np.float16)
    out = tiled_attention(q, k, v, causal=True, block_size=5)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, reference(*(x.astype(np.float64) for x in (q, k, v)), True), atol=3e-3)


def test_extra_memory_is_linear_in_T(rng):
    heads, T, d = 2, 1024, 16
    q, k, v = random_qkv(rng, (heads, T, d), (heads, T, d), d, dtype=np.float32)
    tracemalloc.start()
    tiled_attention(q, k, v, causal=True, block_size=128, n_threads=2)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    scores_bytes = heads * T * T * 4  # what the naive version holds at once: 8 MiB here
    assert peak < scores_bytes / 8, f"tiled attention peaked at {peak / 2**20:.1f} MiB"


@pytest.mark.parametrize("T_q, T_k", [(256, 256), (40, 300), (300, 40)])
def test_a_block_larger_than_the_sequence_allocates_a_tile_of_the_sequence_not_of_the_block(rng, T_q, T_k):
    """T = 256 in blocks of 1,024: a 256 x 256 tile buffer, not a 1024 x 1024 one (4 MiB)."""
    q, k, v = random_qkv(rng, (T_q, 8), (T_k, 8), 8, dtype=np.float32)
    peaks = []
    for block_size in (max(T_q, T_k), 1024):
        tiled_attention(q, k, v, block_size=block_size, n_threads=1)  # warm up: caches filled on a first call
        tracemalloc.start()
        tiled_attention(q, k, v, block_size=block_size, n_threads=1)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] <= peaks[0] + 4096, peaks  # a block past the sequence allocates nothing more
    assert peaks[1] < 2 * T_q * T_k * 4 + 200 * 1024, peaks  # one (T_q, T_k) float32 tile and (T, d) buffers


@pytest.mark.parametrize(
    "args, error, words",
    [
        (("abc", np.ones((3, 4)), np.ones((3, 2))), TypeError, "q must be an array"),
        ((np.ones((2, 4)), np.ones((3, 5)), np.ones((3, 2))), ValueError, "share d_k"),
        ((np.ones((2, 4)), np.ones((3, 4)), np.ones((4, 2))), ValueError, "same number of keys"),
        ((np.ones((2, 2, 4)), np.ones((3, 3, 4)), np.ones((3, 3, 2))), ValueError, "do not broadcast"),
        ((np.ones(4), np.ones((3, 4)), np.ones((3, 2))), ValueError, "at least 2"),
    ],
)
def test_bad_arrays_are_named(args, error, words):
    with pytest.raises(error, match=words):
        tiled_attention(*args)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"block_size": 0}, ValueError, "block_size must be a positive int"),
        ({"block_size": 2.5}, TypeError, "block_size"),
        ({"block_size": True}, TypeError, "block_size"),
        ({"n_threads": 0}, ValueError, "n_threads"),
    ],
)
def test_bad_options_are_named(kwargs, error, words):
    with pytest.raises(error, match=words):
        tiled_attention(np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 2)), **kwargs)


def test_causal_needs_at_least_as_many_keys_as_queries():
    with pytest.raises(ValueError, match=r"T_k >= T_q.*\(5, 4\).*\(3, 4\)"):
        tiled_attention(np.ones((5, 4)), np.ones((3, 4)), np.ones((3, 2)), causal=True)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_in_place_equals_reference(rng, causal, dtype):
    q, k, v = random_qkv(rng, (2, 7, 5), (2, 11, 5), 3, dtype=dtype)
    out = attention_in_place(q, k, v, causal=causal)
    assert out.dtype == dtype
    np.testing.assert_allclose(out, reference(q, k, v, causal), rtol=1e-5 if dtype == np.float32 else 1e-12)


@FAST
@given(st.integers(1, 30), st.integers(1, 7), st.integers(0, 2**32 - 1))
def test_online_softmax_block_by_block_equals_softmax(T, block, seed):
    rng = np.random.default_rng(seed)
    scores, values = rng.normal(size=(3, T)) * 5, rng.normal(size=(T, 2))
    scores[0, : T // 2] = -np.inf  # a row whose first blocks are all masked
    m, l, acc = np.full(3, -np.inf), np.zeros(3), np.zeros((3, 2))
    for j in range(0, T, block):
        m, l, acc = online_softmax_step(m, l, acc, scores[:, j : j + block], values[j : j + block])
    np.testing.assert_allclose(m, scores.max(axis=1))
    np.testing.assert_allclose(acc / l[:, None], softmax(scores) @ values, rtol=1e-10, atol=1e-12)


def test_block_grid_agrees_with_the_causal_mask():
    for T_q, T_k, block in [(10, 10, 3), (4, 10, 3), (7, 7, 7), (9, 13, 2), (1, 5, 1)]:
        grid, mask = block_grid(T_q, T_k, block, causal=True), causal_mask(T_q, T_k)
        for r, i0 in enumerate(range(0, T_q, block)):
            for c, j0 in enumerate(range(0, T_k, block)):
                tile = mask[i0 : i0 + block, j0 : j0 + block]
                last_seen = np.nonzero(tile.any(axis=0))[0]  # columns some query of the block sees
                if grid[r, c] == TILE_SKIPPED:
                    assert not tile.any()
                elif grid[r, c] == TILE_COMPUTED:  # every query sees every key it is given
                    assert tile[:, : last_seen[-1] + 1].all()
                else:
                    assert grid[r, c] == TILE_MASKED and not tile[:, : last_seen[-1] + 1].all()
        assert (block_grid(T_q, T_k, block, causal=False) == TILE_COMPUTED).all()


def test_block_grid_counts_for_a_square_causal_grid():
    grid = block_grid(8, 8, 2, causal=True)  # 4 x 4 tiles: 6 below the diagonal, 4 on it, 6 above
    assert [(grid == kind).sum() for kind in (TILE_COMPUTED, TILE_MASKED, TILE_SKIPPED)] == [6, 4, 6]


def test_online_softmax_of_a_fully_masked_row_stays_at_zero_without_nan():
    m, l, acc = np.array([-np.inf]), np.array([0.0]), np.zeros((1, 2))
    for _ in range(3):  # three blocks of keys, every one masked
        m, l, acc = online_softmax_step(m, l, acc, np.full((1, 4), -np.inf), np.ones((4, 2)))
    assert not np.isnan(l).any() and not np.isnan(acc).any()
    assert l[0] == 0 and np.isneginf(m[0]) and (acc == 0).all()
    np.testing.assert_array_equal(finish_online_softmax(l, acc), np.zeros((1, 2)))  # as the docstring says
