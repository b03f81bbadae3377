"""The teaching notes (docs/teaching/) stay true: one page per notebook, its timing plan adds up to the
README's minutes, its links resolve, every mistake code it names is one a check registers, every sum
written in them adds up, the day plans' clocks follow their minutes, and the fast track to 11 keeps to
the README's minutes."""

import re
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEACHING = ROOT / "docs" / "teaching"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PAGES = sorted(TEACHING.glob("*.md"))


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
    for page in PAGES:
        named = set(re.findall(r"`([a-z][a-z0-9]*(?:-[a-z0-9]+)+)`", page.read_text(encoding="utf-8")))
        assert named <= registered, f"{page.name} names unregistered mistake codes: {sorted(named - registered)}"


SUM = re.compile(r"(?<![\w.])(\d+(?:\s*\+\s*\d+)+)\s*=\s*(\d+)(?![\w.])")  # "4 + 3 + 9 = 16", across line breaks


def test_the_sums_written_in_the_notes_add_up():
    written = 0
    for page in PAGES:
        for terms, total in SUM.findall(page.read_text(encoding="utf-8")):
            written += 1
            got = sum(int(t) for t in terms.split("+"))
            assert got == int(total), f"{page.name}: {' '.join(terms.split())} = {total}, but it adds up to {got}"
    assert written >= 14  # the two-day plan's days and the fast track's rows and totals


def tables(text):
    """Each Markdown table of `text` as a list of rows, each row a list of its cells (stripped)."""
    found, rows = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            found.append(rows)
            rows = []
    return found


def clock_runs(table):
    """Per column of start times ("09:15 ..."): [(minutes since midnight, the minutes in the next cell of digits
    before the next start time, or None when there is none, e.g. "45–60")]."""
    runs = {}
    for row in table:
        starts = [c for c, cell in enumerate(row) if re.match(r"\d\d:\d\d\b", cell)]
        for c, following in zip(starts, [*starts[1:], len(row)][: len(starts)], strict=True):
            minutes = next((int(cell) for cell in row[c + 1 : following] if cell.isdigit()), None)
            runs.setdefault(c, []).append((int(row[c][:2]) * 60 + int(row[c][3:5]), minutes))
    return runs.values()


def test_each_plans_clock_follows_its_minutes():
    checked = 0
    for rows in tables((TEACHING / "README.md").read_text(encoding="utf-8")):
        for run in clock_runs(rows):
            for (start, minutes), (following, _) in pairwise(run):
                if minutes is None:
                    continue
                assert start + minutes == following, (
                    f"{start // 60:02}:{start % 60:02} + {minutes} min is not the next row's start"
                )
                checked += 1
    assert checked >= 40  # the two one-day plans and both days of the two-day plan


def fast_track():
    """The fast track's two tables in docs/teaching/README.md: ({stem: (core, fast, kept)}, {stem: minutes taught})."""
    text = (TEACHING / "README.md").read_text(encoding="utf-8")
    section = text.split("## A one-day plan: the fast track to 11", 1)[1].split("\n## ", 1)[0]
    kept_table, timetable = [t for t in tables(section) if len(t) > 3]
    rows = {row[0]: (int(row[1]), int(row[2]), row[3]) for row in kept_table[2:]}
    taught = {}
    for row in timetable[2:]:
        stem = re.match(r"(\d\d_\w+), fast track$", row[1])
        if stem:
            taught[stem[1]] = int(row[2])
    return rows, taught


def test_the_fast_track_keeps_to_the_readmes_minutes_and_reaches_11():
    rows, taught = fast_track()
    readme = readme_minutes()
    assert sorted(rows) == sorted(stem for stem in readme if stem != "00_setup_check"), "a notebook is missing"
    for stem, (core, fast, kept) in rows.items():
        assert core == readme[stem][0], f"{stem}: the fast track says {core} core minutes, the README {readme[stem][0]}"
        assert fast <= core, f"{stem}: {fast} fast-track minutes, more than its {core}"
        sums = SUM.findall(kept)
        assert (int(sums[-1][1]) if sums else 0) == fast, f"{stem}: the kept sections do not add up to {fast}"
        assert taught.get(stem, 0) == fast, f"{stem}: the timetable gives it {taught.get(stem, 0)} minutes, not {fast}"
    assert "11_tiny_gpt" in taught
