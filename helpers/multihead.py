"""Multi-head attention: split -> per-head attention -> merge -> W_o.

Taught in 06_multi_head_attention.
"""

import numpy as np

from helpers._validate import as_float_array, as_rng, positive_int
from helpers.attention import scaled_dot_product_attention

__all__ = ["split_heads", "merge_heads", "MultiHeadAttention"]


def _head_width(d_model, n_heads, of=""):
    """d_model // n_heads, or a ValueError when the heads cannot share d_model equally."""
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model}{of} is not divisible by n_heads={n_heads}")
    return d_model // n_heads


def split_heads(x, n_heads):
    """Cut the last axis into n_heads slices of width d_head and move heads before tokens.

    Shapes: (..., T, d_model) -> (..., n_heads, T, d_head), d_head = d_model // n_heads.
    """
    x = as_float_array(x, "x", min_ndim=2)
    n_heads = positive_int(n_heads, "n_heads")
    *batch, T, d_model = x.shape
    d_head = _head_width(d_model, n_heads, f" (x has shape {x.shape})")
    x = x.reshape(*batch, T, n_heads, d_head)  # (..., T, h, d_head)
    return np.swapaxes(x, -3, -2)  # (..., h, T, d_head)


def merge_heads(x):
    """Undo split_heads: put the heads side by side again.

    Shapes: (..., n_heads, T, d_head) -> (..., T, n_heads * d_head).
    """
    x = as_float_array(x, "x", min_ndim=3)
    *batch, h, T, d_head = x.shape
    x = np.swapaxes(x, -3, -2)  # (..., T, h, d_head)
    return x.reshape(*batch, T, h * d_head)  # (..., T, d_model)


class MultiHeadAttention:
    """n_heads attention heads on d_model // n_heads wide slices of Q, K, V, then W_o.

    Attributes: W_q, W_k, W_v, W_o (d_model, d_model); b_q, b_k, b_v, b_o (d_model,)
    (None when bias=False). Head i uses columns i*d_head:(i+1)*d_head of Q, K and V.
    Call: (x (..., T_q, d_model), context (..., T_k, d_model) = x, mask, True = may attend)
          -> out (..., T_q, d_model), weights (..., n_heads, T_q, T_k).
    The mask: (..., T_q, T_k) with x's batch axes (or fewer) applies to every head; a mask
    with one more axis, (..., n_heads, T_q, T_k), is per head.
    A call is three steps, each a method: project (Q, K, V split into heads), scaled dot-product
    attention in every head at once, output (merge, then W_o). The KV cache (10) runs them itself.
    """

    def __init__(self, d_model, n_heads, *, bias=True, rng=None):
        self.d_model = positive_int(d_model, "d_model")
        self.n_heads = positive_int(n_heads, "n_heads")
        self.d_head = _head_width(self.d_model, self.n_heads)
        rng = as_rng(rng)
        std = 1 / np.sqrt(d_model)  # keeps the projections' outputs at about unit variance
        self.W_q, self.W_k, self.W_v, self.W_o = (rng.normal(0, std, (d_model, d_model)) for _ in range(4))
        zeros = (lambda: np.zeros(d_model)) if bias else (lambda: None)
        self.b_q, self.b_k, self.b_v, self.b_o = zeros(), zeros(), zeros(), zeros()

    @classmethod
    def from_weights(cls, W_q, W_k, W_v, W_o, n_heads, biases=None):
        """A layer holding the given weights (e.g. a trained model's), checked for shape.

        Shapes: W_q, W_k, W_v, W_o (d_model, d_model); biases None (no bias) or
                (b_q, b_k, b_v, b_o), each (d_model,). The arrays are kept, not copied.
        """
        weights = {
            name: as_float_array(W, name, min_ndim=2)
            for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v), ("W_o", W_o))
        }
        d_model = weights["W_q"].shape[0]
        for name, W in weights.items():
            if W.shape != (d_model, d_model):
                raise ValueError(
                    f"{name} has shape {W.shape}, expected (d_model, d_model) = ({d_model}, {d_model}) "
                    f"like W_q {weights['W_q'].shape}"
                )
        layer = cls(d_model, n_heads, bias=biases is not None, rng=0)
        layer.W_q, layer.W_k, layer.W_v, layer.W_o = weights.values()
        if biases is not None:
            if len(biases) != 4:
                raise ValueError(f"biases must be (b_q, b_k, b_v, b_o), got {len(biases)} arrays")
            for name, b in zip(("b_q", "b_k", "b_v", "b_o"), biases, strict=True):
                b = as_float_array(b, name)
                if b.shape != (d_model,):
                    raise ValueError(f"{name} has shape {b.shape}, expected (d_model,) = ({d_model},)")
                setattr(layer, name, b)
        return layer

    def __repr__(self):
        bias = self.b_q is not None
        return f"MultiHeadAttention(d_model={self.d_model}, n_heads={self.n_heads}, bias={bias})"

    def _linear(self, x, W, b):
        # the parameters are float64; cast them so float32 in stays float32 out
        W = W.astype(x.dtype, copy=False)
        # every token of every batch item as one row: one matmul, where (B, T, d) @ W makes B small ones
        rows = x.reshape(-1, x.shape[-1]) @ W  # (B*T, d_model) @ (d_model, d_model) -> (B*T, d_model)
        out = rows.reshape(*x.shape[:-1], W.shape[-1])  # (..., T, d_model)
        return out if b is None else out + b.astype(x.dtype, copy=False)

    def _check_input(self, x, name):
        x = as_float_array(x, name, min_ndim=2)
        if x.shape[-1] != self.d_model:
            raise ValueError(f"{name} must have shape (..., T, d_model={self.d_model}), got {x.shape}")
        return x

    def project(self, x, context=None, *, name="x"):
        """The queries of x, and the keys and values of context (x itself by default), split into heads.

        Shapes: x (..., T_q, d_model), context (..., T_k, d_model)
                -> Q (..., n_heads, T_q, d_head), K and V (..., n_heads, T_k, d_head).
        Math: Q = x W_q + b_q, K = context W_k + b_k, V = context W_v + b_v; head i takes columns
              i*d_head:(i+1)*d_head. name: what x is called in an error (e.g. a caller's "x_new").
        Taught in 06_multi_head_attention; used in 10_efficient_attention (the KV cache).
        """
        x = self._check_input(x, name)
        context = x if context is None else self._check_input(context, "context")
        Q = split_heads(self._linear(x, self.W_q, self.b_q), self.n_heads)  # (..., h, T_q, d_head)
        K = split_heads(self._linear(context, self.W_k, self.b_k), self.n_heads)  # (..., h, T_k, d_head)
        V = split_heads(self._linear(context, self.W_v, self.b_v), self.n_heads)  # (..., h, T_k, d_head)
        return Q, K, V

    def output(self, heads):
        """The heads' outputs side by side again, through W_o: what the layer returns.

        Shapes: heads (..., n_heads, T, d_head) -> (..., T, d_model).
        Math: out = concat(head_1, ..., head_h) W_o + b_o.
        Taught in 06_multi_head_attention; used in 10_efficient_attention (the KV cache).
        """
        heads = as_float_array(heads, "heads", min_ndim=3)
        if heads.shape[-3] != self.n_heads or heads.shape[-1] != self.d_head:
            raise ValueError(
                f"heads must have shape (..., n_heads={self.n_heads}, T, d_head={self.d_head}), got {heads.shape}"
            )
        return self._linear(merge_heads(heads), self.W_o, self.b_o)  # (..., T, d_model)

    def _head_mask(self, mask, x_ndim):
        """A per-sentence mask (x's batch axes, T_q, T_k) gets a head axis; any other passes as it is.

        Only its number of axes is read here; scaled_dot_product_attention checks the mask once
        (boolean, broadcasting to the scores (..., n_heads, T_q, T_k)).
        """
        try:
            ndim = np.ndim(mask)
        except ValueError:  # a ragged list: the attention's check says so
            return mask
        if ndim > x_ndim + 1:  # x (..., T_q, d_model) has as many axes as a per-sentence mask (..., T_q, T_k)
            raise ValueError(
                f"mask has shape {np.shape(mask)}: expected (..., T_q, T_k) with x's batch axes "
                f"(at most {x_ndim} axes) or a per-head mask "
                f"(..., n_heads={self.n_heads}, T_q, T_k) ({x_ndim + 1} axes)"
            )
        if mask is None or ndim < 3 or ndim == x_ndim + 1:
            return mask  # no batch axes (it broadcasts over the heads as it is), or one mask per head
        return np.expand_dims(mask, -3)  # (..., T_q, T_k) -> (..., 1, T_q, T_k): the same for every head

    def __call__(self, x, context=None, mask=None):
        Q, K, V = self.project(x, context)  # (..., h, T_q, d_head), (..., h, T_k, d_head) twice
        heads, weights = scaled_dot_product_attention(Q, K, V, mask=self._head_mask(mask, Q.ndim - 1))
        return self.output(heads), weights  # (..., T_q, d_model), (..., h, T_q, T_k)
