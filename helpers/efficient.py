"""Attention at length: the online softmax and tiled attention (and the KV cache, from helpers.kv_cache).

Taught in 10_efficient_attention.
"""

import functools

import numpy as np

from helpers._validate import positive_int
from helpers.attention import _check_qkv
from helpers.kv_cache import KVCache, cached_self_attention  # noqa: F401 - the KV cache is part of this topic
from helpers.masking import causal_mask
from helpers.threads import default_threads, parallel_for

DEFAULT_BLOCK_SIZE = 512  # query and key rows per tile: best measured on 2 cores (256 pays more Python overhead)
SKIPPED, COMPUTED, MASKED = 0, 1, 2  # what tiled attention does with a tile (block_grid's codes)
_DIAGONAL_GROUPS = 4  # a tile on the causal diagonal is computed in this many groups of rows


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
    """Fold one block of keys into a running softmax-weighted sum (the online softmax, Milakov & Gimelshein 2018).

    Shapes: m (...,) running max, l (...,) running sum of exp(s - m), acc (..., d_v),
            scores (..., B) for B keys (-inf = may not attend), values (B, d_v) -> m, l, acc.
    Math: m' = max(m, max_j s_j); c = exp(m - m'); l' = c l + sum_j exp(s_j - m');
          acc' = c acc + exp(s - m') V. After the last block, acc / l is the attention output;
          a row that saw only -inf (every key masked) ends with l = 0, and its output is zeros:
          np.divide(acc, l[..., None], out=np.zeros_like(acc), where=l[..., None] > 0).
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


def _check_causal(causal, T_q, T_k, got):
    if causal and T_k < T_q:
        raise ValueError(f"causal attention needs T_k >= T_q (the queries are the last T_q positions), got {got}")


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
    _check_causal(causal, T_q, T_k, f"T_q={T_q}, T_k={T_k}")
    grid = np.full((-(-T_q // block_size), -(-T_k // block_size)), SKIPPED)
    for row, i0 in enumerate(range(0, T_q, block_size)):
        i1 = min(i0 + block_size, T_q)
        for j0, _, kind in _key_blocks(i0 + T_k - T_q, i1 - 1 + T_k - T_q, T_k, block_size, causal):
            grid[row, j0 // block_size] = kind
    return grid


def _with_ones(x, out):
    """Fill `out` with x and a column of ones: [x | 1]. Shapes: x (T, d), out (T, d + 1) -> out."""
    out[:, :-1] = x
    out[:, -1] = 1
    return out


@functools.lru_cache(maxsize=32)
def _hidden(rows, cols, offset):
    """Which keys of a tile are hidden: query r may see key c iff c - r <= offset. -> (rows, cols) bool."""
    hidden = np.arange(cols)[None, :] - np.arange(rows)[:, None] > offset
    hidden.flags.writeable = False  # shared by every call (and thread) with the same shape
    return hidden


def _fold_tile(Q1, K1, V1, acc, j0, j1, hidden_after, S_flat, big):
    """Fold keys j0..j1-1 into the running sums of the queries Q1; Q1's last column (-m) and acc change in place.

    Shapes: Q1 (b, d+1) = [Q * scale | -m], K1 (T_k, d+1) = [K | 1], V1 (T_k, d_v+1) = [V | 1],
            acc (b, d_v+1) = sum of exp(s - m) * [v | 1]. hidden_after: None, or the position of
            Q1's first query (query r may not see keys after position hidden_after + r).
    The folds keep a tile to two matrix products and one exp(): [Q | -m] [K | 1]^T gives s - m,
    the last column of P [V | 1] gives the row sums; m is only raised when a tile's sums exceed
    `big` (exp(s - m) is exact for any m: m only keeps exp() from overflowing, and it never falls
    below a score the query has seen, so the sums stay >= 1).
    """
    b = Q1.shape[0]
    S = S_flat[: b * (j1 - j0)].reshape(b, j1 - j0)
    for attempt in ("keep m", "raise m"):
        np.matmul(Q1, K1[j0:j1].T, out=S)  # (b, d+1) @ (d+1, B) -> (b, B): scores - m
        if hidden_after is not None:  # query r sees keys up to hidden_after + r: the rest become -inf
            np.copyto(S, -np.inf, where=_hidden(b, j1 - j0, hidden_after - j0))
        if attempt == "keep m":
            with np.errstate(over="ignore", invalid="ignore"):
                update = np.exp(S, out=S) @ V1[j0:j1]  # (b, B) @ (B, d_v+1) -> (b, d_v+1)
            if update[:, -1].max() <= big:  # False for inf and nan too
                acc += update
                return
            continue  # a score rose far above m: redo the tile with a new m
        shift = np.maximum(S.max(axis=1), 0)  # (b,): how far each row's max is above m (m never falls)
        S -= shift[:, None]
        update = np.exp(S, out=S) @ V1[j0:j1]  # (b, B) @ (B, d_v+1) -> (b, d_v+1)
        acc *= np.exp(-shift)[:, None]  # what was summed against the old m
        acc += update
        Q1[:, -1] -= shift  # m += shift
        return


def _first_max(Q, K_first, first):
    """Each query's largest score over the first few keys, a start for m that every query has seen.

    Shapes: Q (b, d) scaled, K_first (n, d) -> (b,). Causal (first = the position of Q's first
    query): query r sees keys up to first + r, and key 0 always.
    """
    s = Q @ K_first.T  # (b, d) @ (d, n) -> (b, n)
    if first is not None and first < len(K_first) - 1:
        s = np.where(np.arange(len(K_first))[None, :] <= np.arange(first, first + len(Q))[:, None], s, -np.inf)
    return s.max(axis=1)


def _attend_rows(Q1, K1, V1, blocks, first, S_flat, big, group):
    """Tiled attention for one block of queries at positions first, first+1, ... -> (b, d_v).

    A tile crossing the causal diagonal is cut into groups of `group` rows, each given only the
    keys up to its last query: the work wasted on hidden keys shrinks from b*b/2 to b*group/2.
    """
    b = Q1.shape[0]
    acc = np.zeros((b, V1.shape[1]), Q1.dtype)  # (b, d_v + 1)
    for j0, j1, kind in blocks:
        if kind == MASKED:
            for r0 in range(0, b, group):
                r1 = min(r0 + group, b)
                stop = min(j1, first + r1)  # the keys the group's last query may see
                if stop > j0:
                    hidden_after = first + r0 if stop - 1 > first + r0 else None
                    _fold_tile(Q1[r0:r1], K1, V1, acc[r0:r1], j0, stop, hidden_after, S_flat, big)
        else:
            _fold_tile(Q1, K1, V1, acc, j0, j1, None, S_flat, big)
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
    _check_causal(causal, T_q, T_k, f"q {q.shape} and k {k.shape}")
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
        if not scratch:  # this thread's buffers, reused for every item it takes
            scratch.update(index=None, K1=np.empty((T_k, d_k + 1), work_dtype), V1=np.empty((T_k, d_v + 1), work_dtype),
                           S=np.empty(min(block_size, T_q) * min(block_size, T_k), work_dtype))  # one tile
        if scratch["index"] != index:  # [K | 1] and [V | 1], built once per batch item
            _with_ones(k[index], scratch["K1"])
            _with_ones(v[index], scratch["V1"])
            scratch["index"] = index
        Q1 = np.empty((i1 - i0, d_k + 1), work_dtype)  # [Q * scale | -m]
        np.multiply(q[index][i0:i1], scale, out=Q1[:, :-1])
        first, last = i0 + T_k - T_q, i1 - 1 + T_k - T_q  # the queries' positions among the keys
        Q1[:, -1] = -_first_max(Q1[:, :-1], scratch["K1"][:16, :-1], first if causal else None)
        blocks = _key_blocks(first, last, T_k, block_size, causal)
        out[index][i0:i1] = _attend_rows(Q1, scratch["K1"], scratch["V1"], blocks, first, scratch["S"], big,
                                         group=max(1, block_size // _DIAGONAL_GROUPS))

    # the latest query blocks see the most keys: start them first so the threads finish together
    items = [(index, i0) for index in np.ndindex(batch) for i0 in reversed(range(0, T_q, block_size))]
    parallel_for(work, items, min(n_threads, len(items)))
    return out
