"""Does OPENBLAS_CORETYPE=<type> change numpy's last bits on this machine? (make nbval-second uses it)

    python tools/second_numerics.py Sandybridge

nbval compares printed outputs, and a chaotic computation turns a last-bit difference between two
CPUs (or two BLAS builds) into a different printed number. `make test` therefore runs nbval twice:
with this machine's own BLAS kernels and with those of another CPU type. This script says whether
the two really differ here (if they do not, the second run checks nothing new, and it says so).
"""

import os
import subprocess
import sys

PROBE = (
    "import numpy as np; rng = np.random.default_rng(0); "
    "a, b = rng.normal(size=(64, 300)), rng.normal(size=(300, 64)); print((a @ b).sum().hex())"
)


def matmul_bits(coretype=None):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def main(coretype):
    own, other = matmul_bits(), matmul_bits(coretype)
    if own == other:
        print(
            f"note: OPENBLAS_CORETYPE={coretype} gives the same bits as this machine's own kernels here: "
            "the second nbval run checks nothing new on this machine"
        )
    else:
        print(
            f"OPENBLAS_CORETYPE={coretype} changes the last bits of a matmul here ({own} vs {other}): "
            "nbval must pass under both"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "Sandybridge"))
