"""causal_mask and padding_mask against brute force (True = may attend / is a real token)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import causal_mask, padding_mask, scaled_dot_product_attention
from helpers.masking import causal_block, window_mask

FAST = settings(max_examples=40, deadline=None)


def causal_brute_force(T_q, T_k):
    """The rule, entry by entry: query i may see key j iff j <= i + (T_k - T_q)."""
    mask = np.zeros((T_q, T_k), bool)
    for i in range(T_q):
        for j in range(T_k):
            mask[i, j] = j <= i + (T_k - T_q)
    return mask


def padding_brute_force(lengths, T):
    """Entry by entry: position t of sequence b is real iff t < lengths[b]."""
    mask = np.zeros((len(lengths), T), bool)
    for b, length in enumerate(lengths):
        for t in range(T):
            mask[b, t] = t < length
    return mask


@FAST
@given(st.integers(1, 12), st.integers(0, 8))
def test_causal_mask_equals_brute_force(T_q, extra_keys):
    T_k = T_q + extra_keys
    mask = causal_mask(T_q, T_k)
    assert mask.dtype == bool and mask.shape == (T_q, T_k)
    assert np.array_equal(mask, causal_brute_force(T_q, T_k))


@FAST
@given(st.integers(1, 12))
def test_square_causal_mask_is_lower_triangular(T):
    mask = causal_mask(T)
    assert np.array_equal(mask, causal_mask(T, T))
    assert np.array_equal(mask, np.tril(np.ones((T, T), bool)))
    assert np.array_equal(mask.sum(axis=1), np.arange(1, T + 1))  # token t sees t + 1 tokens


def test_causal_mask_with_more_keys_than_queries_by_hand():
    # 2 new queries after 3 cached keys: they are positions 3 and 4 of 5
    expected = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], bool)
    assert np.array_equal(causal_mask(2, 5), expected)
    assert np.array_equal(causal_mask(1, 4), np.ones((1, 4), bool))  # one new token sees everything


@FAST
@given(st.integers(1, 10), st.integers(0, 6))
def test_causal_mask_is_the_bottom_rows_of_the_square_mask(T_q, extra_keys):
    T_k = T_q + extra_keys
    assert np.array_equal(causal_mask(T_q, T_k), causal_mask(T_k)[T_k - T_q :])


@FAST
@given(st.integers(1, 8), st.integers(1, 8), st.integers(-10, 10))
def test_causal_block_is_the_rule_with_any_offset(T_q, T_k, offset):
    expected = [[j <= i + offset for j in range(T_k)] for i in range(T_q)]
    assert np.array_equal(causal_block(T_q, T_k, offset), expected)


@FAST
@given(st.integers(1, 10), st.integers(0, 6), st.integers(1, 12))
def test_a_window_keeps_the_last_positions_of_the_causal_mask(T_q, extra_keys, window):
    T_k = T_q + extra_keys
    expected = [[i + extra_keys - window < j <= i + extra_keys for j in range(T_k)] for i in range(T_q)]
    mask = window_mask(T_k, window, T_q=T_q)
    assert np.array_equal(mask, expected) and np.all(mask.sum(axis=1) <= window)
    if window >= T_k:
        assert np.array_equal(mask, causal_mask(T_q, T_k))


def test_causal_mask_accepts_numpy_ints():
    assert np.array_equal(causal_mask(np.int64(3), np.int32(4)), causal_brute_force(3, 4))


@FAST
@given(st.integers(1, 10).flatmap(lambda T: st.tuples(st.just(T), st.lists(st.integers(0, T), max_size=6))))
def test_padding_mask_equals_brute_force(case):
    T, lengths = case
    mask = padding_mask(np.array(lengths, dtype=int), T)
    assert mask.dtype == bool and mask.shape == (len(lengths), T)
    assert np.array_equal(mask, padding_brute_force(lengths, T))
    assert np.array_equal(mask.sum(axis=1), lengths)


def test_padding_mask_accepts_lists_tuples_and_numpy_ints():
    expected = padding_brute_force([2, 0, 3], 3)
    for lengths in ([2, 0, 3], (2, 0, 3), np.array([2, 0, 3], dtype=np.int32)):
        assert np.array_equal(padding_mask(lengths, 3), expected)
    assert np.array_equal(padding_mask([1], np.int64(2)), [[True, False]])


def test_padding_mask_hides_padded_keys_in_attention(rng):
    # each sequence attends as if its padding were not there at all
    lengths, T, d = [3, 5, 1], 5, 4
    x = rng.normal(size=(3, T, d))
    key_mask = padding_mask(lengths, T)[:, None, :]  # (B, 1, T_k): the same keys for every query
    out, weights = scaled_dot_product_attention(x, x, x, mask=key_mask)
    for b, L in enumerate(lengths):
        alone, _ = scaled_dot_product_attention(x[b], x[b, :L], x[b, :L])
        np.testing.assert_allclose(out[b], alone, rtol=1e-12, atol=1e-14)
        assert np.all(weights[b, :, L:] == 0)


def test_causal_and_padding_masks_combine_with_and():
    combined = causal_mask(4) & padding_mask([2], 4)[:, None, :]  # (T, T) & (B, 1, T) -> (B, T, T)
    expected = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0]], bool)
    assert np.array_equal(combined[0], expected)
