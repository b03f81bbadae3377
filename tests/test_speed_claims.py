"""benchmarks/speed_claims.py, where the notebooks' claims about speed are measured: every claim runs and gives a
ratio, and each notebook with a claim points at the benchmark. (No threshold is asserted here: a test is no place
for a timing; the benchmark's table says whether a claim held.)"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _benchmark():
    spec = importlib.util.spec_from_file_location("speed_claims", ROOT / "benchmarks" / "speed_claims.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _markdown(notebook):
    cells = json.loads(next((ROOT / "notebooks").glob(f"{notebook}_*.ipynb")).read_text())["cells"]
    return " ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


@pytest.mark.parametrize("notebook", sorted({claim[0] for claim in _benchmark().CLAIMS}))
def test_each_notebook_with_a_claim_points_at_the_benchmark(notebook):
    assert f"benchmarks/speed_claims.py --notebook {notebook}" in _markdown(notebook)


@pytest.mark.slow  # one round of every claim: about 15 seconds
def test_every_claim_gives_a_positive_ratio():
    bench = _benchmark()
    ratios = bench.measure(sorted({claim[0] for claim in bench.CLAIMS}), rounds=1)
    assert sorted(ratios) == list(range(len(bench.CLAIMS)))
    assert all(len(values) == 1 and np.isfinite(values[0]) and values[0] > 0 for values in ratios.values())
