"""Another CPU type's OpenBLAS kernels on this machine: do they change numpy's last bits here? (make test's tiers)

    python tools/second_numerics.py Sandybridge
    python tools/second_numerics.py --run Haswell -- python -m pytest -m chaotic tests

nbval compares printed outputs, and some tests assert numbers of a chaotic computation (a training, a
rerun over five seeds), which turns a last-bit difference between two CPUs into a different number. So
`make test` runs nbval with this machine's own kernels and with Sandybridge's, and the tests marked
`chaotic` with its own, Sandybridge's and Haswell's (OPENBLAS_CORETYPE; ARMV8 and CORTEXA57 on arm64).
This script first prints whether the other kernels really differ here (if they do not, that run checks
nothing new, and it says so). With --run it then runs the command with OPENBLAS_CORETYPE set; where this
CPU lacks the instructions those kernels need (Haswell's need AVX2 and FMA), it says so and runs nothing.
Any python3 with numpy.
"""

import os
import subprocess
import sys

PROBE = (
    "import numpy as np; rng = np.random.default_rng(0); "
    "a, b = rng.normal(size=(64, 300)), rng.normal(size=(300, 64)); print((a @ b).sum().hex())"
)
NEEDS = {  # the /proc/cpuinfo flags an x86-64 core type's kernels use
    "Nehalem": {"sse4_2"},
    "Sandybridge": {"avx"},
    "Haswell": {"avx2", "fma"},
    "Zen": {"avx2", "fma"},
    "SkylakeX": {"avx512f", "avx512bw", "avx512vl"},
    "Cooperlake": {"avx512f", "avx512_bf16"},
}


def cpu_flags():
    """The CPU's feature flags from /proc/cpuinfo, or None where there is none to read (macOS, Windows)."""
    try:
        with open("/proc/cpuinfo") as info:
            return {flag for line in info if line.startswith("flags") for flag in line.split(":", 1)[1].split()}
    except OSError:
        return None


def missing(coretype, flags):
    """The instructions `coretype`'s kernels need that this CPU lacks (empty when it can run them, or cannot tell)."""
    return set() if flags is None else NEEDS.get(coretype, set()) - flags


def matmul_bits(coretype=None):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def report(coretype):
    """Print whether OPENBLAS_CORETYPE=coretype changes a matmul's last bits here; False if this CPU cannot run it."""
    lacking = missing(coretype, cpu_flags())
    if lacking:
        print(f"skipped: this CPU lacks {', '.join(sorted(lacking))}, which {coretype}'s kernels need")
        return False
    own, other = matmul_bits(), matmul_bits(coretype)
    if own == other:
        print(
            f"note: OPENBLAS_CORETYPE={coretype} gives the same bits as this machine's own kernels here: "
            "this run checks nothing new on this machine"
        )
    else:
        print(
            f"OPENBLAS_CORETYPE={coretype} changes the last bits of a matmul here ({own} vs {other}): "
            "the tests must pass under both"
        )
    return True


def main(argv):
    if argv[:1] != ["--run"]:
        report(argv[0] if argv else "Sandybridge")
        return 0
    if len(argv) < 4 or argv[2] != "--":
        sys.exit("usage: second_numerics.py --run CORETYPE -- COMMAND ...")
    coretype, command = argv[1], argv[3:]
    if not report(coretype):
        return 0
    sys.stdout.flush()
    return subprocess.run(command, env={**os.environ, "OPENBLAS_CORETYPE": coretype}).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
