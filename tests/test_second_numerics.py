"""tools/second_numerics.py, which runs make test's tiers with other CPU types' OpenBLAS kernels."""

import sys

import second_numerics as sn  # tools/


def test_a_core_type_needs_the_instructions_of_its_kernels():
    assert sn.missing("Haswell", {"sse4_2", "avx"}) == {"avx2", "fma"}
    assert sn.missing("Sandybridge", {"sse4_2", "avx"}) == set()
    assert sn.missing("ARMV8", {"fp", "asimd"}) == set()  # not an x86-64 type: nothing to check
    assert sn.missing("Haswell", None) == set()  # no /proc/cpuinfo (macOS): run it


def test_run_sets_the_core_type_for_the_command(capfd):
    code = "import os, sys; sys.exit(0 if os.environ['OPENBLAS_CORETYPE'] == 'Nehalem' else 3)"
    assert sn.main(["--run", "Nehalem", "--", sys.executable, "-c", code]) == 0
    assert "OPENBLAS_CORETYPE=Nehalem" in capfd.readouterr().out
    assert sn.main(["--run", "Nehalem", "--", sys.executable, "-c", "raise SystemExit(5)"]) == 5  # its exit code


def test_run_skips_kernels_this_cpu_cannot_run(monkeypatch, capfd):
    monkeypatch.setattr(sn, "cpu_flags", lambda: {"sse4_2", "avx"})
    assert sn.main(["--run", "Haswell", "--", sys.executable, "-c", "raise SystemExit(5)"]) == 0  # not run
    assert "skipped: this CPU lacks avx2, fma, which Haswell's kernels need" in capfd.readouterr().out
