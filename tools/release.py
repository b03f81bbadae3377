"""Make a release: bump the version everywhere it is written, commit, and tag the commit vX.Y.Z.

    python3 tools/release.py X.Y.Z       (make release VERSION=X.Y.Z)

The version is written once for the code, in pyproject.toml (`helpers.__version__` reads it), and once in
every notebook's first cell (`VERSION = "..."`), which installs the tag `v<VERSION>` on Colab and warns
anywhere else when other helpers are loaded. Nothing else writes it: the scaffold copies 00's first cell,
and the README and docs never name a version (tests/test_release.py checks all of this).

Refused, with exit status 2 and the argument named: a version that is not three numbers (X.Y.Z, no
leading v), one not greater than pyproject.toml's, one whose tag exists, and a work tree with uncommitted
changes or untracked files (the release commit must hold only the bump).

Re-executed: every notebook with a cell other than the first that reads the version (none today). The
first cell prints nothing while the versions agree, so no committed output shows the version and nbval's
comparisons stay as they are.

Nothing is pushed: pushing the tag is a person's job (CONTRIBUTING.md, "Releasing").
Runs on any python3 (the standard library only), as `make release` runs it.
"""

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION_RULE = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")
CELL_VERSION = re.compile(r'^VERSION = "([^"]*)"$', re.M)  # the first cell's line
INSTALL = 'f"git+{REPO}@v{VERSION}"'  # what the first cell's Colab branch installs

# helpers/environment.py reads pyproject.toml for helpers.__version__; it needs only the standard library,
# so it is loaded from its file (importing the helpers package would need numpy)
_spec = importlib.util.spec_from_file_location("_environment", ROOT / "helpers" / "environment.py")
environment = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(environment)


class Refusal(Exception):
    """The argument or the repository's state forbids the release; the message says why."""


def pyproject_version(root=ROOT):
    return environment.pyproject_field((Path(root) / "pyproject.toml").read_text(encoding="utf-8"), "version")


def notebooks(root=ROOT):
    return sorted((Path(root) / "notebooks").glob("*.ipynb"))


def code_sources(path):
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def cell_version(source):
    """The VERSION a first cell is written for, or None."""
    found = CELL_VERSION.findall(source)
    return found[0] if len(found) == 1 else None


def version_problems(pyproject_text, first_cell):
    """What is wrong between pyproject.toml's version and a notebook's first cell: [] when they agree."""
    version = environment.pyproject_field(pyproject_text, "version")
    problems = []
    if not version or not VERSION_RULE.fullmatch(version):
        problems.append(f"pyproject.toml's version {version!r} is not three numbers, major.minor.patch")
    if cell_version(first_cell) != version:
        problems.append(f'the first cell says VERSION = "{cell_version(first_cell)}", pyproject.toml says {version}')
    if INSTALL not in first_cell:
        problems.append(f"the first cell does not install {INSTALL} (the tag of its VERSION)")
    return problems


def numbers(version):
    return tuple(int(n) for n in version.split("."))


def git(*args, root=ROOT, check=True):
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=check).stdout


def refusal(version, root=ROOT):
    """Why `version` cannot be released from `root` now, or None."""
    current = pyproject_version(root)
    if not VERSION_RULE.fullmatch(version):
        example = ".".join(map(str, (*numbers(current)[:1], numbers(current)[1] + 1, 0)))
        return f"VERSION={version!r}: give three numbers, major.minor.patch, e.g. VERSION={example} (no v, no suffix)"
    if numbers(version) <= numbers(current):
        return f"VERSION={version}: must be greater than the current version, {current} (pyproject.toml)"
    if git("tag", "--list", f"v{version}", root=root).strip():
        return f"VERSION={version}: the tag v{version} exists already"
    status = git("status", "--porcelain", root=root)
    if status.strip():
        return f"VERSION={version}: the work tree has changes; commit or stash them first:\n{status.rstrip()}"
    return None


def reads_the_version(path):
    """A notebook with a cell other than the first that reads the version: its outputs may show it."""
    return any(re.search(r"\b(VERSION|__version__)\b", source) for source in code_sources(path)[1:])


def bump(version, root=ROOT):
    """Write `version` into pyproject.toml and every notebook's first cell; return the files changed."""
    root = Path(root)
    current = pyproject_version(root)
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    table = re.search(r"^\[project\][ \t]*$", text, re.M).end()
    line = re.compile(rf'^version = "{re.escape(current)}"$', re.M)
    pyproject.write_text(text[:table] + line.sub(f'version = "{version}"', text[table:], count=1), encoding="utf-8")
    changed = [pyproject]
    for path in notebooks(root):
        nb = json.loads(path.read_text(encoding="utf-8"))
        cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
        source = CELL_VERSION.sub(f'VERSION = "{version}"', "".join(cell["source"]), count=1)
        cell["source"] = source.splitlines(keepends=True)
        # as tools/tidy_notebooks.py writes a notebook (JupyterLab's format), so only the one line changes
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        changed.append(path)
    for path in changed[1:]:
        problems = version_problems(pyproject.read_text(encoding="utf-8"), code_sources(path)[0])
        if problems:
            raise RuntimeError(f"{path.name}: {'; '.join(problems)}")
    return changed


def release(version, root=ROOT):
    root = Path(root)
    reason = refusal(version, root)
    if reason:
        raise Refusal(reason)
    current = pyproject_version(root)
    changed = bump(version, root)
    rerun = [str(p.relative_to(root)) for p in notebooks(root) if reads_the_version(p)]
    if rerun:
        print("re-executing the notebooks whose cells read the version:", *rerun)
        subprocess.run(["make", "-C", str(root), "execute", f"NB={' '.join(rerun)}"], check=True)
    git("add", *(str(p.relative_to(root)) for p in changed), root=root)
    git("commit", "-q", "-m", f"Release {version} (was {current}): pyproject.toml and every first cell", root=root)
    git("tag", "-a", f"v{version}", "-m", f"Release {version}", root=root)
    branch = git("rev-parse", "--abbrev-ref", "HEAD", root=root).strip()
    print(
        f"Committed and tagged v{version} ({git('rev-parse', '--short', 'HEAD', root=root).strip()}). Nothing is "
        f"pushed. Push the tag first (the notebooks on {branch} install it), then the branch:\n"
        f"    git push origin v{version}\n    git push origin {branch}"
    )


def main(argv):
    if len(argv) != 1:
        print("usage: make release VERSION=X.Y.Z", file=sys.stderr)
        return 2
    try:
        release(argv[0])
    except Refusal as refused:
        print(f"make release: {refused}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
