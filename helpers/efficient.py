"""Attention at length: the online softmax, tiled attention as taught, and its fast version.

`tiled_attention_simple` is the tiled attention notebook 10 teaches: `online_softmax_step` folded
over the key blocks of each block of queries. `tiled_attention_fast` gives the same numbers with
fewer passes over each tile and on every core. `tiled_attention` is the fast one: the contract's
name keeps its n_threads and its speed for whoever calls it (10's timings and explorer, the
benchmark), while the taught one stays short enough to read. (The KV cache, also in 10, lives in
helpers.kv_cache.)

Names: a tile is b_q queries by b_k keys (both `block_size` here); B stays the batch, as in
docs/conventions.md.

Taught in 10_efficient_attention.
"""

import functools

import numpy as np

from helpers._validate import positive_int
from helpers.attention import check_qkv
from helpers.kv_cache import KVCache, cached_self_attention  # noqa: F401 - the KV cache is part of this topic
from helpers.masking import causal_block, causal_mask
from helpers.threads import default_threads, parallel_for

DEFAULT_BLOCK_SIZE = 512  # queries and keys per tile of the fast version: best measured on 2 cores
TILE_SKIPPED, TILE_COMPUTED, TILE_MASKED = 0, 1, 2  # what tiled attention does with a tile (block_grid's codes)
_DIAGONAL_GROUPS = 4  # the fast version computes a tile on the causal diagonal in this many groups of rows


def attention_in_place(q, k, v, causal=False):
    """Naive attention with fewer passes over the (T_q, T_k) scores, all in one buffer.

    Shapes: q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v).
    The scale is folded into Q (T_q*d_k multiplies, not T_q*T_k), exp() and the shift
    overwrite the scores, and the output is divided by the row sums after P @ V (T_q*d_v
    divisions, not T_q*T_k). Still O(T_q * T_k) memory: one scores matrix.
    """
    q, k, v = check_qkv(q, k, v)
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
            scores (..., b_k) for the block's b_k keys (-inf = may not attend), values (b_k, d_v) -> m, l, acc.
    Math: m' = max(m, max_j s_j); c = exp(m - m'); l' = c l + sum_j exp(s_j - m');
          acc' = c acc + exp(s - m') V. After the last block, acc / l is the attention output;
          a row that saw only -inf (every key masked) ends with l = 0: finish_online_softmax gives it zeros.
    """
    m_new = np.maximum(m, scores.max(axis=-1))  # (...,)
    # a row that has seen only -inf keeps shift 0, so no -inf - -inf = nan appears
    shift = np.where(np.isneginf(m_new), 0, m_new)  # (...,)
    p = np.exp(scores - shift[..., None])  # (..., b_k)
    correction = np.exp(m - shift)  # (...,): rescales what was summed against the old max
    l_new = correction * l + p.sum(axis=-1)  # (...,)
    acc_new = correction[..., None] * acc + p @ values  # (..., d_v) + (..., b_k) @ (b_k, d_v)
    return m_new, l_new, acc_new


def finish_online_softmax(l, acc):
    """The attention output acc / l once every key block is folded in; zeros where l = 0 (no key could be seen).

    Shapes: l (...,), acc (..., d_v) -> (..., d_v).
    """
    return np.divide(acc, l[..., None], out=np.zeros_like(acc), where=l[..., None] > 0)


def _check_causal(causal, T_q, T_k, got):
    if causal and T_k < T_q:
        raise ValueError(f"causal attention needs T_k >= T_q (the queries are the last T_q positions), got {got}")


def _key_blocks(first, last, T_k, block_size, causal):
    """(j0, j1, kind) for the key blocks that queries at positions first..last must see.

    Causal: keys after `last` are skipped, and the last block is cut at `last` + 1; a block
    reaching past `first` is TILE_MASKED (some of its keys are hidden from some of the queries).
    """
    stop = min(T_k, last + 1) if causal else T_k
    for j0 in range(0, stop, block_size):
        j1 = min(j0 + block_size, stop)
        yield j0, j1, TILE_MASKED if causal and j1 - 1 > first else TILE_COMPUTED


def block_grid(T_q, T_k, block_size, causal):
    """Which tiles tiled attention computes (TILE_COMPUTED), computes with a mask (TILE_MASKED) or skips (TILE_SKIPPED).

    Shapes: -> (ceil(T_q / block_size), ceil(T_k / block_size)) int, rows = query blocks.
    """
    T_q, T_k = positive_int(T_q, "T_q"), positive_int(T_k, "T_k")
    block_size = positive_int(block_size, "block_size")
    _check_causal(causal, T_q, T_k, f"T_q={T_q}, T_k={T_k}")
    grid = np.full((-(-T_q // block_size), -(-T_k // block_size)), TILE_SKIPPED)
    for row, i0 in enumerate(range(0, T_q, block_size)):
        i1 = min(i0 + block_size, T_q)
        for j0, _, kind in _key_blocks(i0 + T_k - T_q, i1 - 1 + T_k - T_q, T_k, block_size, causal):
            grid[row, j0 // block_size] = kind
    return grid


def _prepare(q, k, v, causal, block_size, default_block):
    """Checked q, k, v broadcast to their common batch axes, the block size, and the zero output to fill."""
    q, k, v = check_qkv(q, k, v)
    block_size = default_block if block_size is None else positive_int(block_size, "block_size")
    _check_causal(causal, q.shape[-2], k.shape[-2], f"q {q.shape} and k {k.shape}")
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q, k, v = (np.broadcast_to(x, batch + x.shape[-2:]) for x in (q, k, v))
    out = np.zeros(batch + (q.shape[-2], v.shape[-1]), np.result_type(q, k, v))  # T_k = 0 gives zeros
    return q, k, v, block_size, out


def tiled_attention_simple(q, k, v, causal=False, block_size=256, return_logsumexp=False):
    """Attention one tile at a time with the online softmax: the tiled attention 10 teaches, in O(T * d) memory.

    Shapes: q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v);
            with return_logsumexp also L (..., T_q) = m + log(l), all that a backward pass keeps.
    Equals tiled_attention (and scaled_dot_product_attention with causal_mask when causal).
    """
    q, k, v, block_size, out = _prepare(q, k, v, causal, block_size, 256)
    logsumexp = np.full(out.shape[:-1], -np.inf, out.dtype)  # (..., T_q)
    (T_q, d_k), T_k = q.shape[-2:], k.shape[-2]
    work = np.result_type(out.dtype, np.float32)  # float16 is computed in float32
    for index in np.ndindex(out.shape[:-2]):  # one (sequence, head) after another
        Q, K, V = (x[index].astype(work, copy=False) for x in (q, k, v))  # (T_q, d_k), (T_k, d_k), (T_k, d_v)
        Q = Q * work.type(1 / np.sqrt(d_k))  # the scale folded into Q once: T_q * d_k multiplies, not T_q * T_k
        for i0 in range(0, T_q, block_size):
            Q_blk = Q[i0 : i0 + block_size]  # (b_q, d_k): a block of queries
            first, last = i0 + T_k - T_q, i0 + len(Q_blk) - 1 + T_k - T_q  # its queries' places among the keys
            m = np.full(len(Q_blk), -np.inf, work)  # (b_q,): the running max
            l = np.zeros(len(Q_blk), work)  # (b_q,): the running sum of exp(s - m)
            acc = np.zeros((len(Q_blk), V.shape[1]), work)  # (b_q, d_v): the running sum of exp(s - m) v
            for j0 in range(0, T_k, block_size):
                if causal and j0 > last:
                    break  # this tile, and the rest of the row, lies above the diagonal: skipped
                s = Q_blk @ K[j0 : j0 + block_size].T  # (b_q, d_k) @ (d_k, b_k) -> (b_q, b_k): one tile of scores
                if causal and j0 + s.shape[1] - 1 > first:  # the tile crosses the diagonal: mask it
                    visible = causal_block(len(Q_blk), s.shape[1], first - j0)  # (b_q, b_k): key <= query
                    s = np.where(visible, s, -np.inf)  # (b_q, b_k)
                m, l, acc = online_softmax_step(m, l, acc, s, V[j0 : j0 + block_size])
            out[index][i0 : i0 + block_size] = finish_online_softmax(l, acc)  # (b_q, d_v)
            with np.errstate(divide="ignore"):  # log(0) = -inf for a row that saw no key
                logsumexp[index][i0 : i0 + block_size] = m + np.log(l)  # (b_q,)
    return (out, logsumexp) if return_logsumexp else out


@functools.lru_cache(maxsize=32)
def _hidden(rows, cols, offset):
    """Which keys of a tile are hidden: query r may see key c iff c <= r + offset. -> (rows, cols) bool."""
    hidden = ~causal_block(rows, cols, offset)
    hidden.flags.writeable = False  # shared by every call (and thread) with the same shape
    return hidden


def fold_tile(Q1, acc, K1, V1, buffer, offset=None):
    """One tile of the fast version: fold b_k keys into the running sums of b_q queries, in place (acc, Q1's m).

    Shapes: Q1 (b_q, d_k+1) = [Q * scale | -m], acc (b_q, d_v+1) = the sums of exp(s - m) [v | 1] so far,
            K1 (b_k, d_k+1) = [K | 1], V1 (b_k, d_v+1) = [V | 1]; buffer: at least b_q * b_k numbers, reused.
    offset: None (every key seen), or the tile's causal offset (query r sees key c iff c <= r + offset).
    It is online_softmax_step with l in acc's last column, in a product, an exp and a product.
    """
    S = buffer[: len(Q1) * len(K1)].reshape(len(Q1), len(K1))  # (b_q, b_k): no new array per tile
    for attempt in ("keep m", "raise m"):
        np.matmul(Q1, K1.T, out=S)  # (b_q, d_k+1) @ (d_k+1, b_k) -> (b_q, b_k): s - m, no subtraction pass
        if offset is not None:  # query r sees keys up to offset + r: the rest become -inf
            np.copyto(S, -np.inf, where=_hidden(len(Q1), len(K1), offset))
        if attempt == "keep m":
            with np.errstate(over="ignore", invalid="ignore"):
                update = np.exp(S, out=S) @ V1  # (b_q, b_k) @ (b_k, d_v+1): P V, P's row sums last
            if update[:, -1].max() <= _big(S.dtype):  # the usual case (False for inf and nan too): m was high enough
                acc += update  # online_softmax_step with m kept: its correction e^(m - m) is 1
                return
            continue  # a score rose far above m: redo the tile with m raised to the tile's max
        # online_softmax_step itself, on the scores measured from m (so the running max is 0 here), [v | 1] carrying l
        shift, _, acc[:] = online_softmax_step(np.zeros(len(Q1), S.dtype), acc[:, -1], acc, S, V1)
        Q1[:, -1] -= shift  # m += shift: how far each row's max rose above m (m never falls)


@functools.cache
def _big(dtype):
    """Half the exponent range of dtype, sqrt(its max): room to sum many tiles before m must rise."""
    return np.sqrt(np.finfo(dtype).max)


def _first_max(Q, K_first, first):
    """Each query's largest score over the first few keys: a start for m that every query has seen.

    Shapes: Q (b_q, d_k) scaled, K_first (n, d_k) -> (b_q,). Causal (first = the position of Q's
    first query): query r sees keys up to first + r, and key 0 always.
    """
    s = Q @ K_first.T  # (b_q, d_k) @ (d_k, n) -> (b_q, n)
    if first is not None and first < len(K_first) - 1:
        s = np.where(causal_block(len(Q), len(K_first), first), s, -np.inf)  # (b_q, n): key <= query
    return s.max(axis=1)


def _attend_rows(Q1, blocks, first, tiles, group, out):
    """The fast version's work on one block of queries at positions first, first+1, ...: written into out (b_q, d_v).

    A tile crossing the causal diagonal is cut into groups of `group` rows, each given only the
    keys up to its last query: the work wasted on hidden keys shrinks from b*b/2 to b*group/2.
    """
    acc = np.zeros((len(Q1), tiles["V1"].shape[1]), Q1.dtype)  # (b_q, d_v + 1)
    for j0, j1, kind in blocks:
        if kind == TILE_COMPUTED:
            fold_tile(Q1, acc, tiles["K1"][j0:j1], tiles["V1"][j0:j1], tiles["S"])
            continue
        for r0 in range(0, len(Q1), group):
            r1 = min(r0 + group, len(Q1))
            stop = min(j1, first + r1)  # the keys the group's last query may see
            if stop > j0:
                offset = first + r0 - j0 if stop - 1 > first + r0 else None  # None: no key of it is hidden
                fold_tile(Q1[r0:r1], acc[r0:r1], tiles["K1"][j0:stop], tiles["V1"][j0:stop], tiles["S"], offset)
    np.divide(acc[:, :-1], acc[:, -1:], out=out)  # (b_q, d_v) / (b_q, 1)


def _with_ones(x, out):
    """Fill `out` with x and a column of ones: [x | 1]. Shapes: x (T, d), out (T, d + 1) -> out."""
    out[:, :-1] = x
    out[:, -1] = 1
    return out


def tiled_attention_fast(q, k, v, causal=False, block_size=None, *, n_threads=None):
    """tiled_attention_simple's result with fewer passes over each tile, on every core: about PyTorch's speed.

    Shapes: q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v).
    Tiles are block_size x block_size (default DEFAULT_BLOCK_SIZE). What differs from the simple one:
    - the scale and the running max go into the first product: [Q * scale | -m] [K | 1]^T = s - m,
      so no pass subtracts m (and none multiplies by the scale);
    - the row sums come out of the second product: the last column of P [V | 1] is l's new terms;
    - m is not a running max: it starts as each query's largest score over the first 16 keys and
      rises only when a tile's sums pass sqrt(float max), so there is no max pass and acc is
      rescaled almost never (e^(s - m) is exact for any m; m only keeps exp() from overflowing);
      a tile is then exp() and two matrix products in buffers reused from tile to tile;
    - causal: the tiles on the diagonal are cut into groups of rows, each seeing only its keys;
    - n_threads threads (default: every core) share the (batch, query block) work, BLAS held to one
      thread, the query blocks that see the most keys first so the threads finish together.
    """
    q, k, v, block_size, out = _prepare(q, k, v, causal, block_size, DEFAULT_BLOCK_SIZE)
    n_threads = default_threads() if n_threads is None else positive_int(n_threads, "n_threads")
    (T_q, d_k), (T_k, d_v) = q.shape[-2:], v.shape[-2:]
    if out.size == 0 or T_k == 0:
        return out
    work_dtype = np.result_type(out.dtype, np.float32)  # float16 is computed in float32
    scale = 1 / np.sqrt(d_k)

    def work(item, tiles):
        index, i0 = item
        i1 = min(i0 + block_size, T_q)
        if not tiles:  # this thread's buffers, reused for every item it takes
            tiles.update(
                index=None,
                K1=np.empty((T_k, d_k + 1), work_dtype),
                V1=np.empty((T_k, d_v + 1), work_dtype),
                S=np.empty(min(block_size, T_q) * min(block_size, T_k), work_dtype),  # one tile
            )
        if tiles["index"] != index:  # [K | 1] and [V | 1], built once per batch item
            _with_ones(k[index], tiles["K1"])
            _with_ones(v[index], tiles["V1"])
            tiles["index"] = index
        Q1 = np.empty((i1 - i0, d_k + 1), work_dtype)  # [Q * scale | -m]
        np.multiply(q[index][i0:i1], scale, out=Q1[:, :-1])
        first, last = i0 + T_k - T_q, i1 - 1 + T_k - T_q  # the queries' positions among the keys
        Q1[:, -1] = -_first_max(Q1[:, :-1], tiles["K1"][:16, :-1], first if causal else None)
        blocks = _key_blocks(first, last, T_k, block_size, causal)
        _attend_rows(Q1, blocks, first, tiles, max(1, block_size // _DIAGONAL_GROUPS), out[index][i0:i1])

    # the latest query blocks see the most keys: start them first so the threads finish together
    items = [(index, i0) for index in np.ndindex(out.shape[:-2]) for i0 in reversed(range(0, T_q, block_size))]
    parallel_for(work, items, min(n_threads, len(items)))
    return out


def tiled_attention(q, k, v, causal=False, block_size=None, *, n_threads=None):
    """Scaled dot-product attention tile by tile with the online softmax: O(T * d) extra memory, every core.

    Shapes: q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v).
    Equals scaled_dot_product_attention(q, k, v, mask=causal_mask(T_q, T_k) if causal else None)[0]:
    causal queries are the last T_q positions. It is tiled_attention_fast (block_size x block_size
    tiles, default DEFAULT_BLOCK_SIZE; n_threads threads, default every core); tiled_attention_simple
    is the same computation as 10 teaches it.
    """
    return tiled_attention_fast(q, k, v, causal, block_size, n_threads=n_threads)
