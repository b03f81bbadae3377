"""Positional encodings.

Written ahead of its notebook: to be taught in 07_positional_encoding.
"""

import numpy as np

from helpers._validate import positive_int


def sinusoidal_positional_encoding(T, d_model):
    """The fixed sine/cosine encoding of positions 0..T-1.

    Shapes: -> (T, d_model) float64.
    Math: PE[p, 2i] = sin(p / 10000^(2i/d_model)), PE[p, 2i+1] = cos(p / 10000^(2i/d_model)).
    Written ahead of its notebook: to be taught in 07_positional_encoding.
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
