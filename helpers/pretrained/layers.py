"""erf, GELU and LayerNorm, the pretrained model's layers that are not attention: they live in helpers.layers,
shared with 08's tiny transformer, and are importable from here too.

Taught in 09_attention_in_a_real_model.
"""

from helpers.layers import ERF_CLIP, ERF_P, ERF_Q, erf, gelu, layer_norm, rational_erf

__all__ = ["ERF_CLIP", "ERF_P", "ERF_Q", "rational_erf", "erf", "gelu", "layer_norm"]
