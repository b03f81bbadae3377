"""The notebooks' claims about speed, measured here: each claim a ratio beside the threshold its prose states.

    python benchmarks/speed_claims.py                 # every claim, 5 rounds
    python benchmarks/speed_claims.py --notebook 10   # one notebook's
    python benchmarks/speed_claims.py --rounds 9

A notebook shows its own timings, labelled "on this machine", and asserts only what holds on any machine
(bytes, counts, equal outputs); what it says about speed (one product beats a loop, the KV cache beats
recomputing, ...) is a row here. Each round measures every claim afresh (each time the fastest of a few runs,
BLAS held to one thread); the table gives the median ratio over the rounds, the lowest and the highest, and
how many rounds cleared the threshold. Other programs slow single runs down: run it on a quiet machine, and
read the load average it prints.
"""

import argparse
import copy
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # runs from any venv that has numpy, without installing helpers

from helpers import MultiHeadAttention, causal_mask, embeddings, softmax  # noqa: E402
from helpers.efficient import DEFAULT_BLOCK_SIZE, attention_in_place, fold_tile, tiled_attention_fast  # noqa: E402
from helpers.kv_cache import KVCache, cached_self_attention  # noqa: E402
from helpers.threads import blas_single_thread  # noqa: E402

RNG = np.random.default_rng(0)


def fastest(f, runs=3, clock=time.perf_counter):
    """The shortest of `runs` calls of f(), in seconds of `clock`."""
    best = np.inf
    for _ in range(runs):
        start = clock()
        f()
        best = min(best, clock() - start)
    return best


def naive_attention(Q, K, V):
    """10's naive attention: softmax(Q K^T / sqrt(d_k)) V with the whole score matrix."""
    return softmax(Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5) @ V


# --- 01_embeddings ---------------------------------------------------------------------------------------------


def product_against_loop():
    """Seconds per row of a Python loop of cosine_similarity over 500 rows, over those of one product."""
    E = RNG.standard_normal((30522, 384), dtype=np.float32)  # the shape and dtype of 01's table (its values aside)
    v = E[0]
    loop = fastest(lambda: [embeddings.cosine_similarity(row, v) for row in E[:500]]) / 500
    unit = E / np.linalg.norm(E, axis=1, keepdims=True)  # (n_vocab, 384)
    product = fastest(lambda: unit @ (v / np.linalg.norm(v))) / len(E)
    return loop / product


# --- 10_efficient_attention ------------------------------------------------------------------------------------


def naive_time_slope():
    """The slope of log(time) against log(T) for naive attention, T = 1,024 to 4,096 (one head, d = 64)."""
    lengths = [1024, 2048, 4096]
    seconds = []
    for T in lengths:
        Q, K, V = (RNG.standard_normal((T, 64), dtype=np.float32) for _ in range(3))
        seconds.append(fastest(lambda Q=Q, K=K, V=V: naive_attention(Q, K, V)))
    return np.polyfit(np.log(lengths), np.log(seconds), 1)[0]


def memory_against_cache():
    """67 million multiplications in one pass over 256 MiB, over the same in 2,048 passes over 128 KiB."""

    def passes(size, n):
        x = np.ones(size, dtype=np.float32)
        return fastest(lambda: [np.multiply(x, 1.0, out=x) for _ in range(n)], runs=5)

    return passes(4 * 4096 * 4096, 1) / passes(32 * 1024, 2048)


def kv_cache_generation():
    """10's greedy generation of 300 tokens after 3, recomputing and with the cache: three ratios of step times."""
    model_rng = np.random.default_rng(1)
    E = model_rng.standard_normal((50, 64))  # (vocab, d_model): embeddings, also the output layer
    layers = [MultiHeadAttention(64, 4, rng=model_rng) for _ in range(2)]

    def generate(use_cache):
        tokens, seconds, caches, new = [3, 14, 15], [], [KVCache() for _ in layers], [3, 14, 15]
        for _ in range(300):
            start = time.perf_counter()
            x = E[new] if use_cache else E[tokens]  # (t, d_model): the new tokens, or all of them
            for layer, cache in zip(layers, caches, strict=True):
                x = x + (cached_self_attention(layer, x, cache) if use_cache else layer(x, mask=causal_mask(len(x)))[0])
            tokens.append(int(np.argmax(x[-1] @ E.T)))
            seconds.append(time.perf_counter() - start)
            new = tokens[-1:]
        return tokens, np.array(seconds)

    (tokens_full, full), (tokens_cached, cached) = generate(False), generate(True)
    assert tokens_full == tokens_cached, "the cache changed the tokens"
    return {
        "total": full.sum() / cached.sum(),
        "last 50": full[-50:].mean() / cached[-50:].mean(),
        "grows": full[-50:].mean() / full[:50].mean(),
    }


def steps_cpu_time():
    """10's section 5 on one thread, B*H = 4 heads of T = 2,048: CPU time of naive over in place and over tiled."""
    Q, K, V = (RNG.standard_normal((4, 2048, 64), dtype=np.float32) for _ in range(3))
    cpu = {
        name: fastest(f, runs=2, clock=time.process_time)
        for name, f in (
            ("naive", lambda: naive_attention(Q, K, V)),
            ("in place", lambda: attention_in_place(Q, K, V)),
            ("tiled", lambda: tiled_attention_fast(Q, K, V, n_threads=1)),
        )
    }
    return {"in place": cpu["naive"] / cpu["in place"], "tiled": cpu["naive"] / cpu["tiled"]}


def tile_products_share():
    """Of the fast version's 512 x 512 tile (fold_tile), the share of its two matrix products (median of 30)."""
    b, d = DEFAULT_BLOCK_SIZE, 64
    Q, K, V = (RNG.standard_normal((b, d), dtype=np.float32) for _ in range(3))
    Q /= d**0.5
    ones = np.ones((b, 1), np.float32)
    Q1 = np.hstack([Q, -(Q @ K[:16].T).max(axis=1, keepdims=True)])  # [Q * scale | -m]
    K1, V1 = np.hstack([K, ones]), np.hstack([V, ones])
    S, update, acc = np.empty((b, b), np.float32), np.empty((b, d + 1), np.float32), np.zeros((b, d + 1), np.float32)

    def median(f):
        times = []
        for _ in range(30):
            start = time.thread_time()
            f()
            times.append(time.thread_time() - start)
        return np.median(times)

    products = median(lambda: np.matmul(Q1, K1.T, out=S)) + median(lambda: np.matmul(S, V1, out=update))
    return products / median(lambda: fold_tile(Q1, acc, K1, V1, S.reshape(-1)))


# --- 12_a_real_language_model ---------------------------------------------------------------------------------


def smollm2_cache_step():
    """SmolLM2's step that reads token 256: rerunning all 256 tokens over the step with a cache of the 255 before."""
    from helpers.pretrained import load_smollm2

    model = load_smollm2()
    ids = model.tokenizer.encode("The cat sat on the mat. " * 40)[:256]  # 12's text, as in its section 5
    caches = model.new_cache()
    model.next_logits(ids[:-1], caches)  # the 255 tokens before the step
    runs = 3
    copies = [copy.deepcopy(caches) for _ in range(runs)]  # each timed step appends to a copy of its own
    cached = fastest(lambda: model.next_logits(ids, copies.pop()), runs=runs)
    return fastest(lambda: model.next_logits(ids), runs=2) / cached


# (notebook, claim, threshold, measure, key of its result or None): the claim holds when ratio > threshold
CLAIMS = [
    ("01", "one product / a loop of cosine_similarity, time per row", 10, product_against_loop, None),
    ("10", "naive attention: slope of log time over log T (T^2 is 2)", 1.5, naive_time_slope, None),
    ("10", "one pass over 256 MiB / 2,048 passes over 128 KiB", 1.2, memory_against_cache, None),
    ("10", "KV cache: recomputing / cached, 300 tokens in all", 2, kv_cache_generation, "total"),
    ("10", "KV cache: recomputing / cached, the last 50 tokens", 2, kv_cache_generation, "last 50"),
    ("10", "recomputing: the last 50 tokens / the first 50", 2, kv_cache_generation, "grows"),
    ("10", "one thread, CPU time: naive / in place", 1, steps_cpu_time, "in place"),
    ("10", "one thread, CPU time: naive / tiled_attention", 1.1, steps_cpu_time, "tiled"),
    ("10", "the fast tile: its two products / the whole tile", 0.5, tile_products_share, None),
    ("12", "SmolLM2 at T = 256: a step rerunning every token / cached", 3, smollm2_cache_step, None),
]


def measure(notebooks, rounds):
    """{claim index: [ratio of each round]} for the claims of `notebooks`."""
    chosen = [i for i, claim in enumerate(CLAIMS) if claim[0] in notebooks]
    ratios = {i: [] for i in chosen}
    with blas_single_thread():
        for _ in range(rounds):
            results = {}  # one run of each function per round, shared by the claims that read it
            for i in chosen:
                function, key = CLAIMS[i][3], CLAIMS[i][4]
                if function not in results:
                    results[function] = function()
                ratios[i].append(results[function] if key is None else results[function][key])
    return ratios


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", nargs="+", default=sorted({c[0] for c in CLAIMS}), help="e.g. 01 10")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    print(
        f"numpy {np.__version__}, {os.cpu_count()} cores{load}, BLAS held to one thread; {args.rounds} rounds\n"
        f"{'nb':<3} {'claim':<58} {'claim >':>8} {'median':>8} {'lowest':>8} {'highest':>8} {'rounds held':>12}"
    )
    for i, values in measure(args.notebook, args.rounds).items():
        notebook, claim, threshold = CLAIMS[i][:3]
        held = sum(value > threshold for value in values)
        print(
            f"{notebook:<3} {claim:<58} {threshold:>8} {np.median(values):>8.2f} {min(values):>8.2f} "
            f"{max(values):>8.2f} {f'{held} of {len(values)}':>12}",
            flush=True,
        )


if __name__ == "__main__":
    main()
