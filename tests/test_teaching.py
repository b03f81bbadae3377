"""The teaching notes (docs/teaching/) stay true: one page per notebook, its timing plan adds up to the
README's minutes, its links resolve, and every mistake code it names is one a check registers."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEACHING = ROOT / "docs" / "teaching"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def readme_minutes():
    """{notebook stem: (core, optional)} from the README's table, "35 + 12" -> (35, 12)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = {}
    for stem, minutes in re.findall(r"^\| \[(\d\d_\w+)\]\(notebooks/.*?\| .*? \| ([\d +]+) \|", text, re.M):
        core, _, extra = minutes.partition("+")
        found[stem] = (int(core), int(extra) if extra.strip() else 0)
    return found


def test_every_notebook_has_a_page_and_the_index_links_it():
    index = (TEACHING / "README.md").read_text(encoding="utf-8")
    for notebook in NOTEBOOKS:
        assert (TEACHING / f"{notebook.stem}.md").is_file(), f"docs/teaching/{notebook.stem}.md is missing"
        assert f"({notebook.stem}.md)" in index, f"docs/teaching/README.md does not link {notebook.stem}.md"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_timing_plan_adds_up_to_the_readmes_minutes(notebook):
    core, extra = readme_minutes()[notebook.stem]
    text = (TEACHING / f"{notebook.stem}.md").read_text(encoding="utf-8")
    plan = text.split("## Timing plan", 1)[1].split("\n## ", 1)[0]
    rows = [int(m) for m in re.findall(r"^\| (?!\*\*).+? \| (\d+) \| .*\|$", plan, re.M)]
    totals = [int(m) for m in re.findall(r"^\| \*\*.+?\*\* \| \*\*(\d+)\*\* \|", plan, re.M)]
    assert sum(rows) == core + extra, f"{notebook.stem}: sections add up to {sum(rows)}, README says {core} + {extra}"
    assert totals == ([core] if not extra else [core, core + extra]), f"{notebook.stem}: totals {totals}"


def test_every_mistake_code_named_is_registered():
    table = (ROOT / "docs" / "exercise-feedback.md").read_text(encoding="utf-8")
    registered = set(re.findall(r"^\| `([a-z0-9-]+)` \|", table, re.M))
    for page in sorted(TEACHING.glob("[0-9][0-9]_*.md")):
        named = set(re.findall(r"`([a-z][a-z0-9]*(?:-[a-z0-9]+)+)`", page.read_text(encoding="utf-8")))
        assert named <= registered, f"{page.name} names unregistered mistake codes: {sorted(named - registered)}"
