"""tools/new_notebook.py (make new-notebook / remove-notebook), run on a copy of the repository.

The copy holds only what the scaffold reads and what its files need to import and be tested;
the real tree is never touched. The notebook is not executed here (--no-execute): the full
`make test` with a scaffolded notebook in place is what shows it runs.
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # each test copies helpers/ and runs the tool in a fresh Python


def free_number(root):
    """The highest NN that nothing in the repository uses yet: not a notebook, a checks, widgets or test module, nor
    a README row (a maintainer may be trying the scaffold out with NN=99 while the tests run)."""
    used = {
        path.name.removeprefix("test_").removeprefix("nb")[:2]
        for pattern in ("notebooks/*.ipynb", "helpers/checks/nb*.py", "helpers/widgets/nb*.py", "tests/test_nb*.py")
        for path in root.glob(pattern)
    }
    used |= set(re.findall(r"^\| \[(\d\d)_", (root / "README.md").read_text(encoding="utf-8"), re.M))
    return max(f"{n:02d}" for n in range(100) if f"{n:02d}" not in used)


# the copy includes every real notebook's files, and the scaffold's must not meet any of them
NN, NAME = free_number(ROOT), "scaffold_example"
STEM, MODULE = f"{NN}_{NAME}", f"nb{NN}_{NAME}"
CREATED = [
    f"notebooks/{STEM}.ipynb",
    f"helpers/checks/{MODULE}.py",
    f"helpers/widgets/{MODULE}.py",
    f"tests/test_{MODULE}.py",
]
COPIED = [
    "README.md",
    "pyproject.toml",
    "notebooks/00_setup_check.ipynb",
    "tools/new_notebook.py",
    "tools/tidy_notebooks.py",
    "deploy/class_link.py",
    "tests/conftest.py",
    "tests/_answers.py",
    "tests/_feedback.py",
    "tests/test_checks.py",
]


@pytest.fixture
def repo(tmp_path):
    """A copy of the files the scaffold reads and writes, plus helpers/ and the tests its files need."""
    for name in COPIED:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "helpers", tmp_path / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def scaffold(repo, *args):
    """Run the copy's tool; (exit code, stdout + stderr)."""
    result = subprocess.run(
        [sys.executable, repo / "tools" / "new_notebook.py", *args, "--root", repo], capture_output=True, text=True
    )
    return result.returncode, result.stdout + result.stderr


def snapshot(repo):
    """Every file's bytes, caches aside."""
    return {
        p.relative_to(repo).as_posix(): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and ".pytest_cache" not in p.parts
    }


def code_sources(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def test_create_writes_the_four_files_and_a_well_formed_readme_row(repo):
    readme_before = (repo / "README.md").read_text(encoding="utf-8")
    code, out = scaffold(repo, "create", NN, NAME, "--no-execute")
    assert code == 0, out
    for name in CREATED:
        assert (repo / name).is_file(), f"{name} was not created"
    notebook = repo / CREATED[0]
    assert code_sources(notebook)[0] == code_sources(repo / "notebooks" / "00_setup_check.ipynb")[0]

    readme = (repo / "README.md").read_text(encoding="utf-8")
    added = [line for line in readme.splitlines() if line not in readme_before.splitlines()]
    assert len(added) == 1
    row = added[0]
    slug = re.search(r'^Repository = "https://github\.com/(.+)"', (repo / "pyproject.toml").read_text(), re.M)[1]
    colab = f"https://colab.research.google.com/github/{slug}/blob/main/notebooks/{STEM}.ipynb"
    assert row.startswith(
        f"| [{STEM}](notebooks/{STEM}.ipynb) [![Colab](https://colab.research.google.com/"
        f"assets/colab-badge.svg)]({colab}) | "
    )
    assert row.count(" | ") == 3 and row.endswith(" |")
    assert row.split(" | ")[2] == "40"  # the minutes column
    lines = readme.splitlines()
    at = lines.index(row)
    start, end = at, at + 1  # the table of notebooks around it, which stays in number order
    while lines[start - 1].startswith("| ["):
        start -= 1
    while end < len(lines) and lines[end].startswith("| ["):
        end += 1
    numbers = [line[3:5] for line in lines[start:end]]
    assert numbers == sorted(set(numbers)) and len(numbers) > 1, numbers


def test_the_notebook_has_the_house_rhythm_and_tags(repo):
    assert scaffold(repo, "create", NN, NAME, "--no-execute", "--minutes", "35 + 5")[0] == 0
    nb = json.loads((repo / CREATED[0]).read_text(encoding="utf-8"))
    headings = [
        line
        for c in nb["cells"]
        if c["cell_type"] == "markdown"
        for line in "".join(c["source"]).splitlines()
        if line.startswith("#")
    ]
    assert headings[0] == f"# {NN} · Scaffold example"
    assert [re.sub(r"^#+ (\d+\. )?", "", h).split(":")[0] for h in headings[1:]] == [
        "The math",
        "A loop on a tiny input",
        "Vectorised, checked against the loop",
        "A picture",
        "Explore",
        "Your turn",
        "Recap",
    ]
    assert "*Time: about 35 + 5 minutes.*" in "".join(nb["cells"][0]["source"])
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    tagged = [c for c in code if "nbval-ignore-output" in c["metadata"].get("tags", [])]
    assert [c["source"][0] for c in tagged] == [
        f"box = widgets.{MODULE}_explorer(scores, tokens, query=2)\n",
        'box.controls["query"].value = 5  # a learner moving the controls, done by code\n',
    ]
    assert "".join(code[-1]["source"]).endswith(f"checks.{MODULE}_example({MODULE}_example)")
    assert len({c["id"] for c in nb["cells"]}) == len(nb["cells"])


def test_the_new_modules_import_register_and_pass_their_tests(repo):
    assert scaffold(repo, "create", NN, NAME, "--no-execute")[0] == 0
    probe = (
        "import helpers, helpers.checks as c, helpers.widgets as w; "
        f"m = next(m for m in w.MODULES if m.__name__ == 'helpers.widgets.{MODULE}'); "
        f"print(helpers.__file__, '{MODULE}_example' in c.EXERCISES, "
        f"w.{MODULE}_explorer.__module__, [d[0] for d in m.demos()])"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, check=True)
    out = out.stdout.strip().splitlines()[-1]  # building the demos may print progress lines first
    assert out.split() == [
        str(repo / "helpers" / "__init__.py"),
        "True",
        f"helpers.widgets.{MODULE}",
        f"['{MODULE}_explorer",
        f"({NN})']",
    ]
    # its own tests, and the generic ones every exercise gets, on the copy (test_widgets.py would build every
    # notebook's explorers: seconds; the probe above built this one's demos)
    tests = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            MODULE,
            f"tests/test_{MODULE}.py",
            "tests/test_checks.py",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert re.search(r"(\d+) passed", tests.stdout) and int(re.search(r"(\d+) passed", tests.stdout)[1]) >= 15


@pytest.mark.parametrize(
    ("nn", "name", "named"),
    [
        ("1", NAME, "NN='1'"),
        ("111", NAME, "NN='111'"),
        ("ab", NAME, "NN='ab'"),
        ("", NAME, "NN=''"),
        (NN, "CrossAttention", "NAME='CrossAttention'"),
        (NN, "cross-attention", "NAME='cross-attention'"),
        (NN, "cross__attention", "NAME='cross__attention'"),
        (NN, "2d_attention", "NAME='2d_attention'"),
        (NN, "", "NAME=''"),
        (NN, "a" * 31, "NAME='aaaa"),
        ("00", "another_setup", "NN=00: the number is already used"),
    ],
)
def test_bad_arguments_are_refused_and_nothing_is_written(repo, nn, name, named):
    before = snapshot(repo)
    code, out = scaffold(repo, "create", nn, name, "--no-execute")
    assert code != 0 and "refused" in out and named in out, out
    assert snapshot(repo) == before


@pytest.mark.parametrize(
    ("repository", "named"), [(None, "no Repository"), ("https://git.example.org/a/b", "needs a GitHub address")]
)
def test_a_pyproject_without_a_github_address_is_refused_before_anything_is_written(repo, repository, named):
    pyproject = repo / "pyproject.toml"
    text = re.sub(r'^Repository = "[^"]+"\n', "", pyproject.read_text(), flags=re.M)
    if repository:
        text = text.replace("[project.urls]\n", f'[project.urls]\nRepository = "{repository}"\n')
    pyproject.write_text(text)
    before = snapshot(repo)
    code, out = scaffold(repo, "create", NN, NAME, "--no-execute")
    assert code == 2 and "refused" in out and named in out, out
    assert snapshot(repo) == before


def test_an_existing_notebook_is_never_overwritten(repo):
    assert scaffold(repo, "create", NN, NAME, "--no-execute")[0] == 0
    (repo / CREATED[1]).write_text("# the author's work\n")
    before = snapshot(repo)
    code, out = scaffold(repo, "create", NN, NAME, "--no-execute")
    assert code != 0 and "already exist" in out and CREATED[1] in out, out
    code, out = scaffold(repo, "create", NN, "other_name", "--no-execute")  # the same number, another name
    assert code != 0 and f"NN={NN}: the number is already used by {CREATED[0]}" in out, out
    assert snapshot(repo) == before


@pytest.mark.parametrize("name", [NAME, "x", "a_long_name_of_thirty_letters1"])
def test_the_new_python_files_pass_make_lint(repo, name):
    """ruff check and ruff format --check, as make lint runs them, with the copy's pyproject.toml: the scaffold
    lays its files out with ruff format, whatever the length of NAME."""
    assert scaffold(repo, "create", NN, name, "--no-execute")[0] == 0
    module = f"nb{NN}_{name}"
    files = [f"helpers/checks/{module}.py", f"helpers/widgets/{module}.py", f"tests/test_{module}.py"]
    for command in (["check"], ["format", "--check"]):
        result = subprocess.run(
            [sys.executable, "-m", "ruff", *command, *files], cwd=repo, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_remove_restores_the_tree_byte_for_byte(repo):
    before = snapshot(repo)
    assert scaffold(repo, "create", NN, NAME, "--no-execute")[0] == 0
    code, out = scaffold(repo, "remove", NN, NAME)
    assert code == 0, out
    assert snapshot(repo) == before  # README.md included
    code, out = scaffold(repo, "remove", NN, NAME)
    assert code != 0 and "nothing to remove" in out


def test_remove_refuses_edited_files_unless_forced(repo):
    before = snapshot(repo)
    assert scaffold(repo, "create", NN, NAME, "--no-execute")[0] == 0
    notebook = repo / CREATED[0]
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    nb["cells"][0]["source"] = [f"# {NN} · A title the author wrote\n"]
    notebook.write_text(json.dumps(nb))
    code, out = scaffold(repo, "remove", NN, NAME)
    assert code != 0 and CREATED[0] in out and "--force" in out, out
    assert notebook.exists()
    code, out = scaffold(repo, "remove", NN, NAME, "--force")
    assert code == 0, out
    assert snapshot(repo) == before


def test_remove_never_deletes_uncommitted_changes_git_tracks(repo):
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], check=True)
    assert scaffold(repo, "create", NN, NAME, "--no-execute")[0] == 0
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "scaffold"], check=True)
    with open(repo / CREATED[2], "a") as module:
        module.write("# started\n")
    code, out = scaffold(repo, "remove", NN, NAME, "--force")
    assert code != 0 and "uncommitted changes" in out and CREATED[2] in out, out
    assert all((repo / name).exists() for name in CREATED)
