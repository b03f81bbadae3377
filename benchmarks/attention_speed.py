"""Time and peak memory of attention in numpy, step by step, beside PyTorch's fused kernel.

    python benchmarks/attention_speed.py [--T 1024 2048 4096] [--repeats 9] [--batch 2] [--heads 4] [--d 64]

Work: float32 q, k, v of shape (B, H, T, d), causal and not (4 axes: with 3, torch falls back
from its fused kernel to its plain matmul-softmax-matmul path). Variants:
  naive           helpers.scaled_dot_product_attention (the full (B, H, T, T) scores)
  in place        helpers.efficient.attention_in_place (one scores buffer, fewer passes)
  tiled, 1 thread helpers.efficient.tiled_attention(..., n_threads=1)
  tiled           helpers.efficient.tiled_attention (every core, BLAS held to one thread)
  torch           torch.nn.functional.scaled_dot_product_attention, when torch imports
Every round runs each variant once, in a rotating order (interleaved), each call after a short
pause (PAUSE), so a busy machine slows them alike; the ratio column is the median over rounds
of (variant / torch) in the same round. "cores" is CPU time / wall time over the rounds: about
2 when two cores really worked at once (lower on a busy machine, or on a virtual one whose two
cores share a physical core: the ratios then say less about an idle machine). Peak memory is
tracemalloc's peak during one call (numpy's buffers, the output included; torch's own allocator
is not seen by tracemalloc). Each variant's output is checked against the float64 reference
before anything is timed.
"""

import argparse
import gc
import itertools
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # runs from any venv that has numpy, without installing helpers

from helpers import causal_mask, scaled_dot_product_attention  # noqa: E402
from helpers.efficient import attention_in_place, tiled_attention  # noqa: E402
from helpers.threads import blas_controllable, default_threads  # noqa: E402

# BLAS (OpenBLAS) and OpenMP (torch) worker threads keep spinning for up to ~0.1 s after a call,
# taking a core from whatever runs next: every timed call starts after this pause
PAUSE = 0.25

try:
    import torch
except ImportError:  # torch is never a dependency: the table just has no torch column
    torch = None


def variants(causal):
    """{name: f(q, k, v) -> out (numpy)} for one masking choice."""

    def naive(q, k, v):
        mask = causal_mask(q.shape[-2], k.shape[-2]) if causal else None
        return scaled_dot_product_attention(q, k, v, mask=mask)[0]

    found = {
        "naive": naive,
        "in place": lambda q, k, v: attention_in_place(q, k, v, causal=causal),
        "tiled, 1 thread": lambda q, k, v: tiled_attention(q, k, v, causal=causal, n_threads=1),
        f"tiled, {default_threads()} threads": lambda q, k, v: tiled_attention(q, k, v, causal=causal),
    }
    if torch is not None:
        def fused(q, k, v):
            with torch.inference_mode():
                out = torch.nn.functional.scaled_dot_product_attention(
                    torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v), is_causal=causal)
            return out.numpy()

        found["torch"] = fused
    return found


def peak_mib(f, *args):
    """tracemalloc's peak (MiB) during one call of f(*args), the output included."""
    gc.collect()
    tracemalloc.start()
    f(*args)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def measure(T, causal, repeats, batch, heads, d, rng):
    """Rows (name, median seconds, median ratio to torch or nan, peak MiB, max error)."""
    q, k, v = (rng.standard_normal((batch, heads, T, d), dtype=np.float32) for _ in range(3))
    mask = causal_mask(T, T) if causal else None
    reference = scaled_dot_product_attention(*(x.astype(np.float64) for x in (q, k, v)), mask=mask)[0]
    fs = variants(causal)
    errors = {name: float(np.abs(f(q, k, v) - reference).max()) for name, f in fs.items()}  # also warms up
    for name, error in errors.items():
        assert error < 1e-4, f"{name} differs from the float64 reference by {error:.2g} at T={T}"
    peaks = {name: peak_mib(f, q, k, v) for name, f in fs.items() if name != "torch"}
    names = list(fs)
    seconds, cpu = {name: [] for name in names}, {name: 0.0 for name in names}
    for rnd in range(repeats):
        for name in names[rnd % len(names):] + names[: rnd % len(names)]:  # rotate the order
            time.sleep(PAUSE)  # let the last variant's idle BLAS / OpenMP threads stop spinning first
            start, cpu_start = time.perf_counter(), time.process_time()
            fs[name](q, k, v)
            seconds[name].append(time.perf_counter() - start)
            cpu[name] += time.process_time() - cpu_start
    rows = []
    for name in names:
        ratio = np.median(np.array(seconds[name]) / seconds["torch"]) if "torch" in fs else np.nan
        cores = cpu[name] / sum(seconds[name])
        rows.append((name, np.median(seconds[name]), ratio, cores, peaks.get(name, np.nan), errors[name]))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--T", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--causal", choices=["both", "yes", "no"], default="both")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"numpy {np.__version__}, torch {torch.__version__ if torch else 'not installed'}"
          f"{f' ({torch.get_num_threads()} threads)' if torch else ''}, {os.cpu_count()} cores, "
          f"BLAS held to one thread: {blas_controllable()}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(default)')}")
    print(f"float32, (B, H, T, d) = ({args.batch}, {args.heads}, T, {args.d}), {args.repeats} interleaved rounds; "
          "ratio = median of (ours / torch) per round")
    if torch is not None:
        x = torch.zeros(args.batch, args.heads, 8, args.d)
        backend = {0: "math (unfused)", 1: "flash (fused)"}.get(int(torch._fused_sdp_choice(x, x, x)), "other")
        print(f"torch's backend for these shapes: {backend}")
    columns = {"ms": 9, "/ torch": 8, "cores": 6, "peak MiB": 9, "max err": 9}  # name: width
    print(f"{'T':>5} {'causal':>6}  {'variant':<16} " + " ".join(f"{c:>{w}}" for c, w in columns.items()))
    causal_choices = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    for T, causal in itertools.product(args.T, causal_choices):
        rows = measure(T, causal, args.repeats, args.batch, args.heads, args.d, rng)
        for name, sec, ratio, cores, peak, error in rows:
            ratio_text = "" if np.isnan(ratio) else f"{ratio:7.2f}x"
            peak_text = "" if np.isnan(peak) else f"{peak:9.1f}"
            print(f"{T:>5} {str(causal):>6}  {name:<16} {sec * 1e3:9.1f} {ratio_text:>8} {cores:6.2f} {peak_text:>9} "
                  f"{error:9.1e}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
