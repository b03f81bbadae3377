"""The design notes stay true: links resolve inside the repository, nothing points outside it for how
the project works, and the worked exercise of docs/adding-an-exercise.md runs on today's engine."""

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
TEACHING = sorted((ROOT / "docs" / "teaching").glob("*.md"))  # linked from teaching/README.md, not docs/README.md
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *DOCS, *TEACHING]
SKIPPED_DIRS = {
    ".git",
    ".venv",
    ".venv-oldest",
    ".class-test",
    "build",
    "screenshots",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    ".ipynb_checkpoints",
}
TEXT_SUFFIXES = {".md", ".py", ".ipynb", ".txt", ".toml", ".yml", ".yaml", ".cfg", ".sh", ""}

# Every address the repository may name, and why. Anything else is a page outside the repository
# that a reader would have to follow to understand the project: write it down here instead.
COLAB = r"https://colab\.research\.google\.com/(github/attention-from-scratch/|github/\{slug\}|assets/colab-badge\.svg)"
MADE_UP = r"https://([a-z]+\.)*example\.org\b|https://h\.org/|https://github\.com/a/workshop"
ALLOWED_URLS = {
    r"https://github\.com/attention-from-scratch/attention-from-scratch": "the repository itself",
    r"https://mybinder\.org/(v2/gh/attention-from-scratch/|v2/gh/\{slug\}|badge_logo\.svg)": "Binder badge and link",
    COLAB: "Colab badge and links",
    r"https?://(127\.0\.0\.1|localhost|10\.\d+\.\d+\.\d+)\b": "servers the tests start, private addresses in tests",
    MADE_UP: "made-up addresses in examples and tests",
    r"https://(github\.com|colab\.research\.google\.com)/$": "code that builds addresses from a prefix",
    r"https://(tljh|z2jh)\.jupyter\.org/?$": "where an instructor gets a JupyterHub (the README's table)",
    r"http://www\.w3\.org/2000/svg": "the SVG namespace",
    r"https://attention-from-scratch\.github\.io/attention-from-scratch/": "the JupyterLite edition on GitHub Pages",
    r"https://jupyterlite\.rtfd\.io/en/latest/_static/badge\.svg$": "JupyterLite's badge",
    r"https://cdn\.jsdelivr\.net/pyodide/v\d+\.\d+\.\d+/full/$": "where the site loads Pyodide from",
}
URL = re.compile(r"https?://[^\s)\"'<>`\]]+")


def repository_files():
    """The tracked text files (every file under the root when git is not there)."""
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        paths = [ROOT / line for line in listed.splitlines()]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for p in ROOT.rglob("*") if not SKIPPED_DIRS & set(p.relative_to(ROOT).parts)]
    return [p for p in paths if p.is_file() and p.suffix in TEXT_SUFFIXES]


def test_the_pages_exist_and_the_index_lists_every_one():
    assert (ROOT / "CONTRIBUTING.md").is_file() and len(DOCS) >= 8
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    for page in DOCS:
        if page.name != "README.md":
            assert f"({page.name})" in index, f"docs/README.md does not link to {page.name}"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/README.md)" in readme and "(CONTRIBUTING.md)" in readme


def anchors(path):
    """The #anchors a Markdown renderer makes from the page's headings (lower case, punctuation dropped)."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_between_pages_resolves(page):
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"https?://", target):
            continue  # addresses are the next test's business
        file, _, anchor = target.partition("#")
        resolved = (page.parent / file).resolve() if file else page
        assert resolved.exists(), f"{page.relative_to(ROOT)} links to {target}: no such file"
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), f"{page.relative_to(ROOT)} links to {target}: no such heading"


def test_nothing_points_outside_the_repository_for_how_the_project_works():
    outside = []
    for path in repository_files():
        if path == Path(__file__):
            continue  # the allowed list and the examples of what it rejects
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".ipynb":  # the pictures' base64 is not text anybody reads
            text = re.sub(r'"image/png": "[^"]*"', "", text)
        for url in URL.findall(text):
            if re.search(r"[\\{(]", url):
                continue  # a regex or an f-string that builds an address, not an address
            if not any(re.match(pattern, url) for pattern in ALLOWED_URLS):
                outside.append(f"{path.relative_to(ROOT)}: {url}")
        for phrase in ("shared design", "design folder", "../shared/", "ARCHITECTURE.md", "CURRICULUM.md"):
            if phrase in text:
                outside.append(f"{path.relative_to(ROOT)}: mentions {phrase!r}, which is not in the repository")
    assert not outside, "\n".join(outside)


def test_the_url_check_can_fail(tmp_path):
    assert not any(re.match(p, "https://some.blog.example.com/attention") for p in ALLOWED_URLS)
    assert not any(re.match(p, "https://github.com/someone/else") for p in ALLOWED_URLS)
    assert URL.findall("see [the notes](https://wiki.example.net/x).") == ["https://wiki.example.net/x"]


# --- docs/adding-an-exercise.md: the worked example runs ------------------------------------------

GUIDE = ROOT / "docs" / "adding-an-exercise.md"


def examples():
    """The guide's blocks marked <!-- example: NAME --> (the fenced block right after the marker)."""
    text = GUIDE.read_text(encoding="utf-8")
    found = re.findall(r"<!-- example: ([^>]+?) -->\n```\w*\n(.*?)```", text, re.S)
    return {name: body for name, body in found}


def test_the_guide_has_every_example():
    assert set(examples()) == {
        "check",
        "notebook",
        "output not attempted",
        "output wrong",
        "output correct",
        "generated tests",
        "test",
    }


def run_with_the_example_registered(code):
    """Run `code` in a fresh Python where the guide's check is registered (and nothing else changed)."""
    # as if it were helpers/checks/nb03_queries_keys_values.py, whose name gives the exercise's notebook
    register = f"exec(compile({examples()['check']!r}, 'guide', 'exec'), {{'__name__': 'nb03_queries_keys_values'}})\n"
    script = "import sys\n" + register + code
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_guides_cells_print_what_the_guide_shows():
    ex = examples()
    code = textwrap.dedent(f"""
        from helpers import checks
        exec({ex["notebook"]!r})
        for body in ("return weights.T @ V", "return weights @ V"):
            exec("def mix_values(weights, V):\\n    " + body + "\\n")
            checks.mix_values(mix_values)
    """)
    result = run_with_the_example_registered(code)
    assert result.returncode == 0, result.stderr
    shown = ex["output not attempted"] + ex["output wrong"] + ex["output correct"]
    assert result.stdout == shown


@pytest.mark.slow  # three runs of pytest in a fresh Python
def test_the_tests_the_guide_promises_are_generated_and_pass():
    ex = examples()
    listed = [line.split()[0] for line in ex["generated tests"].splitlines() if line.strip()]
    counts = [int(m) for line in ex["generated tests"].splitlines() for m in re.findall(r"\(×(\d+)\)", line)]
    promised = len(listed) - len(counts) + sum(counts)
    assert f"\n{promised} tests:" in GUIDE.read_text(encoding="utf-8")
    code = (
        "import pytest\n"
        "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'tests/test_checks.py', '-k', 'mix_values']))"
    )
    result = run_with_the_example_registered(code)
    assert result.returncode == 0, result.stdout[-3000:]
    assert f"{promised} passed" in result.stdout, result.stdout[-1000:]
    collect = (
        "import pytest\nsys.exit(pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', "
        "'tests/test_checks.py', '-k', 'mix_values']))"
    )
    collected = re.findall(r"::(test_\w+)", run_with_the_example_registered(collect).stdout)
    assert len(collected) == promised and sorted(set(collected)) == sorted(listed)


@pytest.mark.slow  # pytest in a fresh Python
def test_the_guides_own_tests_pass():
    code = textwrap.dedent(f"""
        import pytest
        open_test = {examples()["test"]!r}
        from pathlib import Path
        import tempfile
        folder = Path(tempfile.mkdtemp())
        (folder / 'test_guide_example.py').write_text(open_test)
        for neighbour in ('conftest.py', '_answers.py'):  # what the guide's test finds beside it in tests/
            (folder / neighbour).write_text((Path('tests') / neighbour).read_text())
        sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '--rootdir', str(folder), str(folder)]))
    """)
    result = run_with_the_example_registered(code)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "2 passed" in result.stdout
