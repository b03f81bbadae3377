"""The KV cache: causal generation one token at a time without recomputing the past.

Taught in 10_efficient_attention.
"""

import numpy as np

from helpers._validate import as_float_array, int_at_least
from helpers.attention import scaled_dot_product_attention
from helpers.masking import causal_mask, window_mask

__all__ = ["causal_attention", "cached_self_attention", "KVCache"]


def causal_attention(q, k, v, window=None):
    """The KV cache's step: the newest queries against every key so far, the queries being the last T_q positions.

    window: each query sees at most `window` positions back, its own included (11's sliding window); None: all.
    Shapes: q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v)
            -> out (..., T_q, d_v), weights (..., T_q, T_k), mask (T_q, T_k) bool.
    Taught in 10_efficient_attention; used in 11_tiny_gpt (gpt_block, with a cache and without).
    """
    T_q, T_k = q.shape[-2], k.shape[-2]
    mask = causal_mask(T_q, T_k) if window is None else window_mask(T_k, window, T_q)  # (T_q, T_k)
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    return out, weights, mask


def cached_self_attention(mha, x_new, cache):
    """Causal MultiHeadAttention for the newest tokens only: their keys and values join `cache`.

    Shapes: x_new (..., t, d_model) -> (..., t, d_model); the cache holds (..., h, T, d_head).
    Equals mha(x, mask=causal_mask(T))[0][..., -t:, :] where x is every token so far.
    """
    Q, K, V = mha.project(x_new, name="x_new")  # (..., h, t, d_head) each: only the new tokens are projected
    cache.append(K, V)  # the cache now holds (..., h, T, d_head): every token so far
    return mha.output(cache.attend(Q))  # the new queries against every stored key -> (..., t, d_model)


class KVCache:
    """The keys and values of the tokens seen so far, for causal generation one token at a time.

    Shapes: append(k (..., t, d_k), v (..., t, d_v)); keys (..., T, d_k); values (..., T, d_v);
            attend(q (..., t_q, d_k)) -> (..., t_q, d_v), the queries being the last t_q positions.
    Storage grows by doubling, so appending a token copies nothing already stored (amortised).
    """

    def __init__(self):
        self._k = self._v = None  # (..., capacity, d_k), (..., capacity, d_v)
        self.length = 0

    def __len__(self):
        return self.length

    @property
    def keys(self):
        return None if self._k is None else self._k[..., : self.length, :]

    @property
    def values(self):
        return None if self._v is None else self._v[..., : self.length, :]

    @property
    def nbytes(self):
        """Bytes the stored keys and values take (not counting the spare capacity)."""
        return 0 if self._k is None else self.keys.nbytes + self.values.nbytes

    def append(self, k, v):
        """Store the keys and values of t new tokens after the ones already stored."""
        k = as_float_array(k, "k", min_ndim=2)
        v = as_float_array(v, "v", min_ndim=2)
        if k.shape[:-1] != v.shape[:-1]:
            raise ValueError(f"k {k.shape} (..., t, d_k) and v {v.shape} (..., t, d_v) must agree on (..., t)")
        if self._k is not None and (
            k.shape[:-2] != self._k.shape[:-2] or k.shape[-1] != self._k.shape[-1] or v.shape[-1] != self._v.shape[-1]
        ):
            raise ValueError(
                f"k {k.shape} and v {v.shape} do not match the cached keys {self.keys.shape} "
                f"and values {self.values.shape} (same batch axes, d_k and d_v)"
            )
        t = k.shape[-2]
        if self._k is None or self.length + t > self._k.shape[-2]:
            self._grow(max(2 * self.length, self.length + t, 16), k, v)
        self._k[..., self.length : self.length + t, :] = k
        self._v[..., self.length : self.length + t, :] = v
        self.length += t

    @property
    def capacity(self):
        """Tokens the storage has room for (at least len(self): it grows by doubling)."""
        return 0 if self._k is None else self._k.shape[-2]

    def keep_last(self, n):
        """Forget all but the newest n tokens, and keep room for one more.

        A sliding window: 11 writes on past its context with keep_last(window - 1) after each word, so that
        the storage never holds more than `window` tokens, whatever the length of the prompt.
        """
        n = int_at_least(n, "n", 0)
        if self.length > n:
            k, v = self._k[..., self.length - n : self.length, :], self._v[..., self.length - n : self.length, :]
            self._k = self._v = None
            self.length = 0
            self._grow(n + 1, k, v)  # fresh storage for the n kept and the next one: a long prompt's is let go
            self.append(k, v)

    def _grow(self, capacity, k, v):
        new_k = np.empty(k.shape[:-2] + (capacity, k.shape[-1]), k.dtype)
        new_v = np.empty(v.shape[:-2] + (capacity, v.shape[-1]), v.dtype)
        if self._k is not None:
            new_k[..., : self.length, :], new_v[..., : self.length, :] = self.keys, self.values
        self._k, self._v = new_k, new_v

    def attend(self, q):
        """Causal attention of the newest queries over every stored key (causal_attention): no recomputation."""
        if self._k is None:
            raise ValueError("the cache is empty: append the new tokens' keys and values before attend(q)")
        q = as_float_array(q, "q", min_ndim=2)
        return causal_attention(q, self.keys, self.values)[0]  # (..., t_q, d_v)
