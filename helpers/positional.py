"""Positional encodings: the sinusoidal table, rotary embeddings (RoPE) and the real model's learned table.

Taught in 07_positional_encoding.
"""

import numpy as np

from helpers._validate import as_float_array, positive_int


def sinusoidal_positional_encoding(T, d_model):
    """The fixed sine/cosine encoding of positions 0..T-1.

    Shapes: -> (T, d_model) float64.
    Math: PE[p, 2i] = sin(p / 10000^(2i/d_model)), PE[p, 2i+1] = cos(p / 10000^(2i/d_model)).
    """
    T = positive_int(T, "T")
    d_model = positive_int(d_model, "d_model")
    positions = np.arange(T)[:, None]  # (T, 1)
    two_i = np.arange(0, d_model, 2)  # (ceil(d_model/2),)
    angles = positions / 10000 ** (two_i / d_model)  # (T, 1) / (d/2,) -> (T, d/2)
    pe = np.zeros((T, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return pe


def _rotary_positions(positions, x):
    """Return `positions` as a float64 array broadcastable to x.shape[:-1] (..., T), or raise."""
    T = x.shape[-2]
    if positions is None:
        return np.arange(T, dtype=np.float64)  # (T,)
    positions = as_float_array(positions, "positions", min_ndim=0).astype(np.float64)
    if not np.all(np.isfinite(positions)):
        raise ValueError("positions must be finite numbers")
    try:
        fits = np.broadcast_shapes(positions.shape, x.shape[:-1]) == x.shape[:-1]
    except ValueError:
        fits = False
    if not fits:  # positions may not add axes that x does not have: the output has x's shape
        raise ValueError(
            f"positions with shape {positions.shape} does not broadcast to x's (..., T) = "
            f"{x.shape[:-1]} (x has shape {x.shape})"
        )
    return positions


def rotary_angles(positions, d, base=10000):
    """The angle each pair (2i, 2i+1) is turned by: position * base^(-2i/d).

    Shapes: positions (..., T), d even -> (..., T, d/2) float64.
    """
    frequencies = float(base) ** (-np.arange(0, d, 2) / d)  # (d/2,): 1, then geometrically slower
    return np.asarray(positions, dtype=np.float64)[..., None] * frequencies  # (..., T, 1) * (d/2,) -> (..., T, d/2)


def apply_rotary(x, positions=None, base=10000):
    """Rotate each pair of dimensions (2i, 2i+1) of each token by the angle position * base^(-2i/d).

    Shapes: x (..., T, d) with d even, positions broadcastable to (..., T) (default 0..T-1) -> like x.
    Math: [x_2i, x_2i+1] -> [x_2i cos a - x_2i+1 sin a, x_2i sin a + x_2i+1 cos a], a = p * base^(-2i/d);
          then (R_m q) . (R_n k) = q . R_(n-m) k depends only on the offset n - m.
    The transpose (the backward pass) is the rotation by -a: apply_rotary(dy, -positions).
    """
    x = as_float_array(x, "x", min_ndim=2)
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"apply_rotary rotates pairs of dimensions, so d must be even; x has shape {x.shape}")
    if isinstance(base, bool) or not isinstance(base, (int, float, np.integer, np.floating)) or not base > 1:
        raise ValueError(f"base must be a number > 1, got {base!r}")
    angles = rotary_angles(_rotary_positions(positions, x), d, base)  # (..., T, d/2)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)  # float32 in stays float32
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each: the two coordinates of every pair
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def learned_position_table(dtype=np.float32):
    """The pretrained model's learned absolute position embeddings (all-MiniLM-L6-v2), one row per position.

    Shapes: -> (512, 384): row p is added to the token vector at position p; there is no row 512.
    """
    from helpers.pretrained import load_tensor  # imported here: the weights are read only when asked for

    table = load_tensor("embeddings.position_embeddings.weight")  # (512, 384) float32, this table only
    return np.array(table, dtype=dtype)  # a writable copy in the dtype asked for
