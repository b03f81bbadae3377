"""Time of attention in numpy beside PyTorch's fused kernel, each measured at its own steady state.

    python benchmarks/attention_speed.py [--T 1024 2048 4096] [--rounds 5] [--calls 5] [--all]

Work: float32 q, k, v of shape (B·H, T, d) = (8, T, 64), causal and not (torch gets them as
(1, 8, T, 64): with 3 axes it falls back from its fused kernel to matmul-softmax-matmul). Variants:
  tiled            helpers.efficient.tiled_attention (the fast version, every core, BLAS held to one thread)
  tiled, 1 thread  the same with n_threads=1
  torch            torch.nn.functional.scaled_dot_product_attention with torch's own threads, when torch imports
and with --all also
  taught           helpers.efficient.tiled_attention_simple (10's tiled attention, one thread)
  in place         helpers.efficient.attention_in_place
Steady state: a round gives each variant, in a rotating order, a pause of PAUSE seconds (so the
threads of the variant before stop spinning), one call to warm up, then --calls calls in a row,
and keeps their median. Over --rounds rounds: "ms" is the median of the rounds' medians,
"spread" the range of the rounds' medians around it, "/ torch" the ratio of the medians, and
"ratio range" the lowest and highest ratio of one round's medians. "cores" is CPU time / wall time:
about 2 when two cores really worked at once (lower when other programs took the cores: then the
ratios say less about an idle machine). Each output is checked first against
tiled_attention_simple in float64.
"""

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # runs from any venv that has numpy, without installing helpers

from helpers.efficient import attention_in_place, tiled_attention, tiled_attention_simple  # noqa: E402
from helpers.threads import blas_controllable, default_threads  # noqa: E402

# BLAS (OpenBLAS) and OpenMP (torch) worker threads keep spinning for up to ~0.1 s after a call,
# taking a core from whatever runs next: every burst of calls starts after this pause
PAUSE = 0.5

try:
    import torch
except ImportError:  # torch is never a dependency: the table just has no torch rows
    torch = None


def variants(causal, everything):
    """{name: f(q, k, v) -> out (numpy)} for one masking choice."""
    found = {
        f"tiled, {default_threads()} threads": lambda q, k, v: tiled_attention(q, k, v, causal=causal),
        "tiled, 1 thread": lambda q, k, v: tiled_attention(q, k, v, causal=causal, n_threads=1),
    }
    if everything:
        found["taught"] = lambda q, k, v: tiled_attention_simple(q, k, v, causal=causal)
        found["in place"] = lambda q, k, v: attention_in_place(q, k, v, causal=causal)
    if torch is not None:

        def fused(q, k, v):
            with torch.inference_mode():
                out = torch.nn.functional.scaled_dot_product_attention(
                    *(torch.from_numpy(x[None]) for x in (q, k, v)), is_causal=causal
                )  # (1, 8, T, d)
            return out.numpy()[0]

        found["torch"] = fused
    return found


def burst(f, args, calls):
    """Pause, warm up with one call, then `calls` calls in a row: (median wall seconds, CPU seconds / wall seconds)."""
    time.sleep(PAUSE)
    f(*args)
    walls, cpus = [], []
    for _ in range(calls):
        start, cpu_start = time.perf_counter(), time.process_time()
        f(*args)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu_start)
    return float(np.median(walls)), sum(cpus) / sum(walls)


def measure(T, causal, args, rng):
    """Rows (name, median ms, spread ms (low, high), ratio of medians, ratio range (low, high), cores, max error)."""
    q, k, v = (rng.standard_normal((8, T, args.d), dtype=np.float32) for _ in range(3))
    exact = tiled_attention_simple(*(x.astype(np.float64) for x in (q, k, v)), causal=causal)
    fs = variants(causal, args.all)
    errors = {name: float(np.abs(f(q, k, v) - exact).max()) for name, f in fs.items()}
    for name, error in errors.items():
        assert error < 1e-4, f"{name} differs from the float64 result by {error:.2g} at T={T}"
    names = list(fs)
    rounds = {name: [] for name in names}  # (median seconds, cores) of each round
    for rnd in range(args.rounds):
        for name in names[rnd % len(names) :] + names[: rnd % len(names)]:  # rotate the order
            rounds[name].append(burst(fs[name], (q, k, v), args.calls))
    seconds = {name: np.array([s for s, _ in rounds[name]]) for name in names}
    rows = []
    for name in names:
        s = seconds[name]
        ratios = s / seconds["torch"] if "torch" in fs else np.full(len(s), np.nan)  # round by round
        ratio = np.median(s) / np.median(seconds["torch"]) if "torch" in fs else np.nan
        cores = np.mean([c for _, c in rounds[name]])
        rows.append(
            (
                name,
                np.median(s) * 1e3,
                (s.min() * 1e3, s.max() * 1e3),
                ratio,
                (ratios.min(), ratios.max()),
                cores,
                errors[name],
            )
        )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--T", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=5, help="calls in a row per round, after one to warm up")
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--causal", choices=["both", "yes", "no"], default="both")
    parser.add_argument("--all", action="store_true", help="also the taught version and the in-place one")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""  # others' work slows us
    print(
        f"numpy {np.__version__}, torch {torch.__version__ if torch else 'not installed'}"
        f"{f' ({torch.get_num_threads()} threads)' if torch else ''}, {os.cpu_count()} cores, "
        f"BLAS held to one thread: {blas_controllable()}, "
        f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(default)')}{load}"
    )
    print(
        f"float32, (B·H, T, d) = (8, T, {args.d}); {args.rounds} rounds of {args.calls} calls in a row per "
        f"variant (after a {PAUSE} s pause and a warm-up call); ms = median of the rounds' medians"
    )
    if os.environ.get("OPENBLAS_CORETYPE"):
        print(
            f"note: OPENBLAS_CORETYPE forces numpy's BLAS to {os.environ['OPENBLAS_CORETYPE']}'s kernels, and torch "
            "keeps its own: unset it (env -u OPENBLAS_CORETYPE ...) to compare on this CPU's own kernels"
        )
    if torch is not None:
        x = torch.zeros(1, 8, 8, args.d)
        backend = {0: "math (unfused)", 1: "flash (fused)"}.get(int(torch._fused_sdp_choice(x, x, x)), "other")
        print(f"torch's backend for these shapes: {backend}")
    print(
        f"{'T':>5} {'causal':>6}  {'variant':<16} {'ms':>8} {'spread (ms)':>15} {'/ torch':>8} "
        f"{'ratio range':>12} {'cores':>6} {'max err':>8}"
    )
    causal_choices = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    for T, causal in itertools.product(args.T, causal_choices):
        for name, ms, (low, high), ratio, (r_low, r_high), cores, error in measure(T, causal, args, rng):
            ratio_text = "" if np.isnan(ratio) else f"{ratio:.2f}x"
            range_text = "" if np.isnan(ratio) else f"{r_low:.2f}-{r_high:.2f}"
            print(
                f"{T:>5} {str(causal):>6}  {name:<16} {ms:8.1f} {f'{low:.1f}-{high:.1f}':>15} {ratio_text:>8} "
                f"{range_text:>12} {cores:6.2f} {error:8.1e}"
            )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
