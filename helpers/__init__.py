"""Shared code for the "Attention, from scratch" workshop notebooks.

The attention API (a contract: notebooks, tests and outside checks call these names):
softmax, scaled_dot_product_attention, softmax_backward, attention_backward,
causal_mask, padding_mask, MultiHeadAttention, sinusoidal_positional_encoding.
Plotting, widgets and exercise checks: `from helpers import plotting, widgets, checks`.
"""

import numpy as _np

MIN_NUMPY = (1, 24)


def _version_tuple(version):
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


if _version_tuple(_np.__version__) < MIN_NUMPY:
    raise ImportError(
        f"numpy {_np.__version__} is too old for the workshop (need >= {MIN_NUMPY[0]}.{MIN_NUMPY[1]}).\n"
        f'Upgrade it with:  pip install -U "numpy>={MIN_NUMPY[0]}.{MIN_NUMPY[1]}"  and restart the kernel.'
    )

from helpers.attention import (  # noqa: E402
    attention_backward,
    scaled_dot_product_attention,
    softmax,
    softmax_backward,
)
from helpers.masking import causal_mask, padding_mask  # noqa: E402
from helpers.multihead import MultiHeadAttention, merge_heads, split_heads  # noqa: E402
from helpers.positional import sinusoidal_positional_encoding  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "softmax",
    "scaled_dot_product_attention",
    "softmax_backward",
    "attention_backward",
    "causal_mask",
    "padding_mask",
    "MultiHeadAttention",
    "split_heads",
    "merge_heads",
    "sinusoidal_positional_encoding",
    "setup_notebook",
]


def setup_notebook():
    """Called by every notebook's first cell: stable print options, nothing seeded globally."""
    _np.set_printoptions(precision=3, suppress=True, linewidth=100, floatmode="maxprec")
