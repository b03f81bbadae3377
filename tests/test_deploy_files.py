"""Binder and Colab readiness, the fast part (make test): what the files promise.

The slow part builds real venvs: tests/deploy/check_binder_colab.py (make deploy-test).
"""

import importlib.metadata
import importlib.util
import json
import os
import re
from pathlib import Path

import pytest

from helpers import environment

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# what Colab has preinstalled: the bootstrap cell must leave these alone
COLAB_OWN = [
    "numpy",
    "matplotlib",
    "ipywidgets",
    "ipykernel",
    "ipython",
    "jupyterlab",
    "notebook",
    "widgetsnbextension",
    "jupyterlab_widgets",
    "jupyterlab-widgets",
]


def deploy_module():
    path = ROOT / "tests" / "deploy" / "check_binder_colab.py"
    spec = importlib.util.spec_from_file_location("check_binder_colab", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bootstrap_cell():
    cells = json.loads(NOTEBOOKS[0].read_text(encoding="utf-8"))["cells"]
    source = next(c["source"] for c in cells if c["cell_type"] == "code")
    return "".join(source) if isinstance(source, list) else source


def repository_slug():
    url = re.search(r'^Repository = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    return url.removeprefix("https://github.com/")


def test_bootstrap_installs_with_no_deps_and_names_none_of_colabs_packages():
    cell = bootstrap_cell()
    installs = [line for line in cell.splitlines() if "subprocess.run" in line]
    assert installs, "the bootstrap cell installs nothing on Colab"
    assert "--no-deps" in installs[0] and "git+" in installs[0], installs[0]
    for line in installs:
        quoted = re.findall(r'"([^"]+)"', line)
        for package in COLAB_OWN:
            assert not any(re.match(rf"{re.escape(package)}\b", q) for q in quoted), f"{package} in: {line}"


RUNTIMES = deploy_module().COLAB_RUNTIMES


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_setup_check_passes_with_colabs_versions(monkeypatch, runtime):
    """00_setup_check on Colab: no [FAIL] for a package that Colab pins and a learner must not upgrade."""
    # where Colab lacks safetensors or tokenizers, the bootstrap installs their newest: at least these
    colab = {"safetensors": "0.5.3", "tokenizers": "0.21.1", **RUNTIMES[runtime]["versions"]}
    real_version = importlib.metadata.version

    def version(name):
        if name in colab:
            return colab[name]
        if name in ("jupyterlab", "jupyterlab_widgets", "jupyterlab-widgets"):
            raise importlib.metadata.PackageNotFoundError(name)  # Colab has its own front end
        return real_version(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    failed = [check.line() for check in environment.run_all(colab=True) if not check.ok]
    assert not failed, failed


def test_colab_runtimes_are_ipywidgets_7_today_on_python_3_13_and_one_before():
    assert all(r["versions"]["ipywidgets"].startswith("7.7") for r in RUNTIMES.values())
    assert RUNTIMES["today"]["python"] == "3.13" and set(RUNTIMES) == {"today", "previous"}
    for name in ("numpy", "matplotlib", "ipykernel", "ipython"):
        assert {name} <= set(RUNTIMES["today"]["versions"]) & set(RUNTIMES["previous"]["versions"])


def test_binder_postbuild_is_executable():
    assert os.access(ROOT / "postBuild", os.X_OK)


def test_readme_has_a_binder_badge_and_a_colab_link_per_notebook():
    readme = (ROOT / "README.md").read_text()
    slug = repository_slug()
    assert f"https://mybinder.org/v2/gh/{slug}/HEAD" in readme
    for path in NOTEBOOKS:
        link = f"https://colab.research.google.com/github/{slug}/blob/main/notebooks/{path.name}"
        assert link in readme, f"no 'Open in Colab' link for {path.name}"


@pytest.mark.parametrize("name", ["requirements.txt", "environment.yml"])
def test_browser_test_tools_are_not_a_learners_install(name):
    text = (ROOT / name).read_text()
    assert "playwright" not in text and "nbval" not in text
