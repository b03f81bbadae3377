"""Attention at length: the online softmax, tiled attention and the KV cache.

Taught in 10_efficient_attention.
"""

import numpy as np

from helpers._validate import as_float_array, positive_int
from helpers.attention import _check_qkv, scaled_dot_product_attention
from helpers.masking import causal_mask
from helpers.multihead import merge_heads, split_heads
from helpers.threads import default_threads, parallel_for

DEFAULT_BLOCK_SIZE = 256  # query and key rows per tile: smaller pays Python's overhead per tile
SKIPPED, COMPUTED, MASKED = 0, 1, 2  # what tiled attention does with a tile (block_grid's codes)


def attention_in_place(q, k, v, causal=False):
    """Naive attention with fewer passes over the (T_q, T_k) scores, all in one buffer.

    Shapes: q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v).
    The scale is folded into Q (T_q*d_k multiplies, not T_q*T_k), exp() and the shift
    overwrite the scores, and the output is divided by the row sums after P @ V (T_q*d_v
    divisions, not T_q*T_k). Still O(T_q * T_k) memory: one scores matrix.
    Taught in 10_efficient_attention.
    """
    q, k, v = _check_qkv(q, k, v)
    dtype = np.result_type(q, k, v)
    Q = q * dtype.type(1 / np.sqrt(q.shape[-1]))  # (..., T_q, d_k)
    S = np.matmul(Q, np.swapaxes(k, -1, -2), dtype=dtype)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    if causal:
        np.copyto(S, -np.inf, where=~causal_mask(q.shape[-2], k.shape[-2]))
    S -= S.max(axis=-1, keepdims=True)  # every row keeps at least one key: no -inf - -inf
    np.exp(S, out=S)  # S now holds the unnormalised weights P
    l = S.sum(axis=-1, keepdims=True)  # (..., T_q, 1)
    out = np.matmul(S, v, dtype=dtype)  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    out /= l
    return out


def online_softmax_step(m, l, acc, scores, values):
    """Fold one block of keys into a running softmax-weighted sum (the FlashAttention update).

    Shapes: m (...,) running max, l (...,) running sum of exp(s - m), acc (..., d_v),
            scores (..., B) for B keys (-inf = may not attend), values (B, d_v) -> m, l, acc.
    Math: m' = max(m, max_j s_j); c = exp(m - m'); l' = c l + sum_j exp(s_j - m');
          acc' = c acc + exp(s - m') V. After the last block, acc / l is the attention output.
    Taught in 10_efficient_attention.
    """
    m_new = np.maximum(m, scores.max(axis=-1))  # (...,)
    # a row that has seen only -inf keeps shift 0, so no -inf - -inf = nan appears
    shift = np.where(np.isneginf(m_new), 0, m_new)  # (...,)
    p = np.exp(scores - shift[..., None])  # (..., B)
    correction = np.exp(m - shift)  # (...,): rescales what was summed against the old max
    l_new = correction * l + p.sum(axis=-1)  # (...,)
    acc_new = correction[..., None] * acc + p @ values  # (..., d_v) + (..., B) @ (B, d_v)
    return m_new, l_new, acc_new


def _key_blocks(first, last, T_k, block_size, causal):
    """(j0, j1, kind) for the key blocks that queries at positions first..last must see.

    Causal: keys after `last` are skipped, and the last block is cut at `last` + 1; a block
    reaching past `first` is MASKED (some of its keys are hidden from some of the queries).
    """
    stop = min(T_k, last + 1) if causal else T_k
    for j0 in range(0, stop, block_size):
        j1 = min(j0 + block_size, stop)
        yield j0, j1, MASKED if causal and j1 - 1 > first else COMPUTED


def block_grid(T_q, T_k, block_size, causal):
    """Which tiles tiled attention computes (1), computes with a mask (2) or skips (0).

    Shapes: -> (ceil(T_q / block_size), ceil(T_k / block_size)) int, rows = query blocks.
    Taught in 10_efficient_attention.
    """
    T_q, T_k = positive_int(T_q, "T_q"), positive_int(T_k, "T_k")
    block_size = positive_int(block_size, "block_size")
    if causal and T_k < T_q:
        raise ValueError(f"causal attention needs T_k >= T_q (the queries are the last T_q positions), got T_q={T_q}, T_k={T_k}")
    grid = np.full((-(-T_q // block_size), -(-T_k // block_size)), SKIPPED)
    for row, i0 in enumerate(range(0, T_q, block_size)):
        i1 = min(i0 + block_size, T_q)
        for j0, _, kind in _key_blocks(i0 + T_k - T_q, i1 - 1 + T_k - T_q, T_k, block_size, causal):
            grid[row, j0 // block_size] = kind
    return grid


def _with_ones(x):
    """x with a column of ones appended. Shapes: (T, d) -> (T, d + 1)."""
    out = np.empty((x.shape[0], x.shape[1] + 1), x.dtype)
    out[:, :-1] = x
    out[:, -1] = 1
    return out


def _attend_rows(Q1, K1, V1, blocks, first, S_flat, big):
    """Tiled attention for one block of queries. Shapes: Q1 (b, d+1), K1 (T_k, d+1), V1 (T_k, d_v+1) -> (b, d_v).

    Three folds keep each tile to two matrix products and one exp():
    Q1 = [Q * scale | -m] and K1 = [K | 1] give scores - m straight from the product;
    V1 = [V | 1] gives the row sums l as the last column of P @ V1;
    m is only raised when a tile's sums exceed `big` (else exp(s - m) is exact and safe).
    """
    b = Q1.shape[0]
    acc = None  # (b, d_v + 1): sum of exp(s - m) * [v | 1] over the keys seen so far
    for j0, j1, kind in blocks:
        S = S_flat[: b * (j1 - j0)].reshape(b, j1 - j0)
        for attempt in ("keep m", "raise m"):
            np.matmul(Q1, K1[j0:j1].T, out=S)  # (b, d+1) @ (d+1, B) -> (b, B): scores - m
            if kind == MASKED:  # the query at position first + r may see keys up to first + r
                hidden = np.arange(j0, j1)[None, :] > np.arange(first, first + b)[:, None]  # (b, B)
                np.copyto(S, -np.inf, where=hidden)
            if acc is not None and attempt == "keep m":
                with np.errstate(over="ignore", invalid="ignore"):
                    update = np.exp(S, out=S) @ V1[j0:j1]  # (b, B) @ (B, d_v+1) -> (b, d_v+1)
                if update[:, -1].max() <= big:  # False for inf and nan too
                    acc += update
                    break
                continue  # a score rose far above m: redo the tile with a new m
            shift = S.max(axis=1)  # (b,): how far each row's max is above m
            if acc is not None:
                np.maximum(shift, 0, out=shift)  # m never falls: sums stay >= 1
            S -= shift[:, None]
            update = np.exp(S, out=S) @ V1[j0:j1]  # (b, B) @ (B, d_v+1) -> (b, d_v+1)
            acc = update if acc is None else acc * np.exp(-shift)[:, None] + update
            Q1[:, -1] -= shift  # m += shift
            break
    return acc[:, :-1] / acc[:, -1:]  # (b, d_v) / (b, 1)


def tiled_attention(q, k, v, causal=False, block_size=None, *, n_threads=None):
    """Scaled dot-product attention tile by tile with the online softmax: O(T * d) extra memory.

    Shapes: q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v).
    Equals scaled_dot_product_attention(q, k, v, mask=causal_mask(T_q, T_k) if causal else None)[0]:
    causal queries are the last T_q positions. Tiles are block_size x block_size (default
    DEFAULT_BLOCK_SIZE); tiles above the diagonal are skipped. n_threads threads (default:
    every core) share the (batch, query block) work with BLAS held to one thread.
    Taught in 10_efficient_attention.
    """
    q, k, v = _check_qkv(q, k, v)
    block_size = DEFAULT_BLOCK_SIZE if block_size is None else positive_int(block_size, "block_size")
    n_threads = default_threads() if n_threads is None else positive_int(n_threads, "n_threads")
    (T_q, d_k), (T_k, d_v) = q.shape[-2:], v.shape[-2:]
    if causal and T_k < T_q:
        raise ValueError(f"causal attention needs T_k >= T_q (the queries are the last T_q positions), "
                         f"got q {q.shape} and k {k.shape}")
    dtype = np.result_type(q, k, v)
    work_dtype = np.result_type(dtype, np.float32)  # float16 is computed in float32
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    out = np.zeros(batch + (T_q, d_v), dtype)  # T_k = 0: nothing to attend to gives zeros
    if out.size == 0 or T_k == 0:
        return out
    q, k, v = (np.broadcast_to(x, batch + x.shape[-2:]) for x in (q, k, v))
    scale = 1 / np.sqrt(d_k)
    big = np.sqrt(np.finfo(work_dtype).max)  # half the exponent range: room to sum many tiles

    def work(item, scratch):
        index, i0 = item
        i1 = min(i0 + block_size, T_q)
        if scratch.get("index") != index:  # [K | 1] and [V | 1], built once per batch item
            K1, V1 = _with_ones(k[index].astype(work_dtype)), _with_ones(v[index].astype(work_dtype))
            scratch.update(index=index, K1=K1, V1=V1, S=np.empty(block_size * block_size, work_dtype))
        Q1 = np.zeros((i1 - i0, d_k + 1), work_dtype)  # [Q * scale | -m], m = 0 until the first tile
        np.multiply(q[index][i0:i1], scale, out=Q1[:, :-1])
        first, last = i0 + T_k - T_q, i1 - 1 + T_k - T_q  # the queries' positions among the keys
        blocks = _key_blocks(first, last, T_k, block_size, causal)
        out[index][i0:i1] = _attend_rows(Q1, scratch["K1"], scratch["V1"], blocks, first, scratch["S"], big)

    # the latest query blocks see the most keys: start them first so the threads finish together
    items = [(index, i0) for index in np.ndindex(batch) for i0 in reversed(range(0, T_q, block_size))]
    parallel_for(work, items, min(n_threads, len(items)))
    return out


def cached_self_attention(mha, x_new, cache):
    """Causal MultiHeadAttention for the newest tokens only: their keys and values join `cache`.

    Shapes: x_new (..., t, d_model) -> (..., t, d_model); the cache holds (..., h, T, d_head).
    Equals mha(x, mask=causal_mask(T))[0][..., -t:, :] where x is every token so far.
    Taught in 10_efficient_attention.
    """
    x_new = as_float_array(x_new, "x_new", min_ndim=2)

    def project(W, b):  # the parameters may be float64: float32 in stays float32 out
        out = x_new @ W.astype(x_new.dtype, copy=False)  # (..., t, d_model) @ (d_model, d_model)
        return out if b is None else out + b.astype(x_new.dtype, copy=False)

    Q = split_heads(project(mha.W_q, mha.b_q), mha.n_heads)  # (..., h, t, d_head)
    cache.append(split_heads(project(mha.W_k, mha.b_k), mha.n_heads),  # (..., h, t, d_head)
                 split_heads(project(mha.W_v, mha.b_v), mha.n_heads))
    heads = cache.attend(Q)  # (..., h, t, d_head): the new queries against every stored key
    out = merge_heads(heads) @ mha.W_o.astype(x_new.dtype, copy=False)  # (..., t, d_model)
    return out if mha.b_o is None else out + mha.b_o.astype(x_new.dtype, copy=False)


class KVCache:
    """The keys and values of the tokens seen so far, for causal generation one token at a time.

    Shapes: append(k (..., t, d_k), v (..., t, d_v)); keys (..., T, d_k); values (..., T, d_v);
            attend(q (..., t_q, d_k)) -> (..., t_q, d_v), the queries being the last t_q positions.
    Storage grows by doubling, so appending a token copies nothing already stored (amortised).
    Taught in 10_efficient_attention.
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
        if self._k is not None and (k.shape[:-2] != self._k.shape[:-2] or k.shape[-1] != self._k.shape[-1]
                                    or v.shape[-1] != self._v.shape[-1]):
            raise ValueError(f"k {k.shape} and v {v.shape} do not match the cached keys {self.keys.shape} "
                             f"and values {self.values.shape} (same batch axes, d_k and d_v)")
        t = k.shape[-2]
        if self._k is None or self.length + t > self._k.shape[-2]:
            self._grow(max(2 * self.length, self.length + t, 16), k, v)
        self._k[..., self.length : self.length + t, :] = k
        self._v[..., self.length : self.length + t, :] = v
        self.length += t

    def _grow(self, capacity, k, v):
        new_k = np.empty(k.shape[:-2] + (capacity, k.shape[-1]), k.dtype)
        new_v = np.empty(v.shape[:-2] + (capacity, v.shape[-1]), v.dtype)
        if self._k is not None:
            new_k[..., : self.length, :], new_v[..., : self.length, :] = self.keys, self.values
        self._k, self._v = new_k, new_v

    def attend(self, q):
        """Causal attention of the newest queries over every stored key: no recomputation."""
        if self._k is None:
            raise ValueError("the cache is empty: append the new tokens' keys and values before attend(q)")
        q = as_float_array(q, "q", min_ndim=2)
        mask = causal_mask(q.shape[-2], self.length)  # (t_q, T): the queries are the newest tokens
        return scaled_dot_product_attention(q, self.keys, self.values, mask=mask)[0]
