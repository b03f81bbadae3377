"""Boolean attention masks: True means "may attend".

The causal rule itself, "a query sees the keys up to its own position", is written once, in causal_block;
causal_mask, 11's window_mask and 10's tiles are all made from it.
Taught in 05_masking.
"""

import numpy as np

from helpers._validate import positive_int


def causal_block(T_q, T_k, offset):
    """The causal rule on one block of scores: query i may see key j iff j <= i + offset.

    offset = the first query's position minus the first key's: causal_mask(T_q, T_k) is the block with
    offset T_k - T_q; a tile of queries from position p against keys from position s has offset p - s.
    Shapes: -> (T_q, T_k) bool.
    Taught in 10_efficient_attention (one tile of scores at a time).
    """
    return np.arange(T_k)[None, :] <= np.arange(T_q)[:, None] + offset  # (1, T_k) <= (T_q, 1) -> (T_q, T_k)


def causal_mask(T_q, T_k=None):
    """Query i may see key j iff j <= i + (T_k - T_q): the queries are the last T_q positions.

    Shapes: -> (T_q, T_k) bool, lower-triangular (True on and below the shifted diagonal).
    """
    T_q = positive_int(T_q, "T_q")
    T_k = T_q if T_k is None else positive_int(T_k, "T_k")
    if T_k < T_q:
        raise ValueError(
            f"causal_mask needs T_k >= T_q (the queries are the last T_q of the T_k positions), "
            f"got T_q={T_q}, T_k={T_k}"
        )
    return causal_block(T_q, T_k, T_k - T_q)  # (T_q, T_k)


def window_mask(T, window, T_q=None):
    """Causal attention that reaches back at most `window` positions (the query's own included).

    Shapes: -> (T_q, T) bool, the queries being the last T_q of the T positions (default T_q = T).
    Math: query at position i may see key j iff i - window < j <= i. With T <= window it is causal_mask(T).
    Taught in 11_tiny_gpt.
    """
    T, window = positive_int(T, "T"), positive_int(window, "window")
    T_q = T if T_q is None else positive_int(T_q, "T_q")
    if T_q > T:
        raise ValueError(f"T_q={T_q} queries cannot be more than the T={T} positions")
    too_far = causal_block(T_q, T, T - T_q - window)  # (T_q, T): the keys `window` or more positions back
    return causal_mask(T_q, T) & ~too_far  # (T_q, T)


def padding_mask(lengths, T):
    """True at the real tokens of each sequence, False at its padding.

    Shapes: lengths (B,) ints in [0, T] -> (B, T) bool.
    To use it as an attention mask over keys: mask[:, None, :] broadcasts to (B, T_q, T).
    """
    T = positive_int(T, "T")
    lengths_arr = np.asarray(lengths)
    if lengths_arr.ndim != 1:
        raise ValueError(f"lengths must be 1-D (B,), got shape {lengths_arr.shape}")
    if lengths_arr.size and not np.issubdtype(lengths_arr.dtype, np.integer):
        raise TypeError(f"lengths must be integers, got dtype {lengths_arr.dtype} with shape {lengths_arr.shape}")
    if np.any(lengths_arr < 0) or np.any(lengths_arr > T):
        raise ValueError(
            f"every length must be in [0, T={T}], got {lengths_arr.tolist()} with shape {lengths_arr.shape}"
        )
    return np.arange(T)[None, :] < lengths_arr[:, None]  # (1, T) < (B, 1) -> (B, T)
