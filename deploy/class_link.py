"""The nbgitpuller link that puts this workshop in every learner's home on a JupyterHub.

    python3 deploy/class_link.py https://hub.example.org             (or: make class-link HUB=...)
    python3 deploy/class_link.py https://hub.example.org --notebook notebooks/03_queries_keys_values.ipynb

The repository address comes from pyproject.toml ([project.urls] Repository), the one place it
is written. Standard library only: it runs with any python3 >= 3.10, no venv needed.
"""

import argparse
import re
import sys
from pathlib import Path
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_NOTEBOOK = "notebooks/00_setup_check.ipynb"


def repository_url(pyproject_text):
    """The `Repository = "..."` address under [project.urls] of a pyproject.toml's text."""
    # a regex, not tomllib: Python 3.10 has no tomllib
    match = re.search(r'^\[project\.urls\][^\[]*?^Repository\s*=\s*"([^"]+)"', pyproject_text, re.M | re.S)
    if not match:
        raise ValueError('pyproject.toml has no Repository = "..." under [project.urls]')
    return match.group(1)


def clone_folder(repo_url):
    """The folder nbgitpuller clones `repo_url` into: the last part of the address, as nbgitpuller names it."""
    return repo_url.rstrip("/").split("/")[-1]


def nbgitpuller_link(hub_url, repo_url, branch="main", notebook=DEFAULT_NOTEBOOK):
    """The link a learner clicks: log in, start a server, clone or update the repository, open `notebook`.

    The notebook opens in JupyterLab; `notebook` is a path inside the repository.
    """
    parts = urlsplit(hub_url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"hub_url must look like https://hub.example.org (optionally with a path), got {hub_url!r}")
    if notebook.startswith("/") or ".." in notebook.split("/"):
        raise ValueError(f"notebook must be a path inside the repository, got {notebook!r}")
    urlpath = f"lab/tree/{clone_folder(repo_url)}/{notebook}"  # nbgitpuller opens this once the pull is done
    query = urlencode({"repo": repo_url, "urlpath": urlpath, "branch": branch})
    return f"{hub_url.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hub_url", help="the hub's address, e.g. https://hub.example.org")
    parser.add_argument("--notebook", default=DEFAULT_NOTEBOOK, help=f"opened after the pull ({DEFAULT_NOTEBOOK})")
    parser.add_argument("--branch", default="main")
    parser.add_argument("--repo", help="a fork's address (default: pyproject.toml's Repository)")
    args = parser.parse_args(argv)
    repo = args.repo or repository_url((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    try:
        print(nbgitpuller_link(args.hub_url, repo, args.branch, args.notebook))
    except ValueError as exc:
        parser.error(str(exc))


if __name__ == "__main__":
    sys.exit(main())
