"""Shared code for the "Attention, from scratch" workshop notebooks.

The attention API (a contract: notebooks, tests and outside checks call these names):
softmax, scaled_dot_product_attention, softmax_backward, attention_backward,
causal_mask, padding_mask, MultiHeadAttention, sinusoidal_positional_encoding.
Also entropy (beside softmax), split_heads and merge_heads.
Plotting, widgets and exercise checks: `from helpers import plotting, widgets, checks`.
"""

import numpy as _np

from helpers.environment import REQUIREMENTS as _REQUIREMENTS  # stdlib only: safe to import this early
from helpers.environment import build_font_cache_quietly as _build_font_cache_quietly
from helpers.environment import helpers_version as _helpers_version
from helpers.environment import version_tuple as _version_tuple

MIN_NUMPY = _REQUIREMENTS["numpy"]  # the same minimum as requirements.txt (a test keeps them in step)

if _version_tuple(_np.__version__) < _version_tuple(MIN_NUMPY):
    raise ImportError(
        f"numpy {_np.__version__} is too old for the workshop (need >= {MIN_NUMPY}).\n"
        f'Upgrade it with:  %pip install -U "numpy>={MIN_NUMPY}"  in a notebook cell, then restart the kernel.'
    )

from helpers.attention import attention_backward, entropy, scaled_dot_product_attention, softmax, softmax_backward  # noqa: E402
from helpers.masking import causal_mask, padding_mask  # noqa: E402
from helpers.multihead import MultiHeadAttention, merge_heads, split_heads  # noqa: E402
from helpers.positional import sinusoidal_positional_encoding  # noqa: E402

# pyproject.toml's version, written only there (environment.helpers_version says where it is read from); every
# notebook's first cell compares it with the version the notebook was written for
__version__ = _helpers_version()

__all__ = [
    "softmax",
    "scaled_dot_product_attention",
    "softmax_backward",
    "attention_backward",
    "entropy",
    "causal_mask",
    "padding_mask",
    "MultiHeadAttention",
    "split_heads",
    "merge_heads",
    "sinusoidal_positional_encoding",
    "setup_notebook",
]


def setup_notebook():
    """Called by every notebook's first cell: stable print options, nothing seeded globally; in the browser,
    matplotlib's font cache built without its notice."""
    _np.set_printoptions(precision=3, suppress=True, linewidth=100, floatmode="maxprec")
    _build_font_cache_quietly()
