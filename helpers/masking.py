"""Boolean attention masks: True means "may attend".

Taught in 05_masking.
"""

import numpy as np

from helpers._validate import positive_int


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
    query_pos = np.arange(T_q)[:, None] + (T_k - T_q)  # (T_q, 1): each query's absolute position
    key_pos = np.arange(T_k)[None, :]  # (1, T_k)
    return key_pos <= query_pos  # (T_q, T_k)


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
