"""Write docs/exercise-feedback.md: every exercise's two hints and every registered mistake's message, as printed.

    python tools/feedback_table.py           # write the page
    python tools/feedback_table.py --check   # exit 1 if the committed page is out of date

What a learner reads when they get an exercise wrong, in one place: for a reviewer reading the
messages as a learner would, for an instructor who wants to know what the checks recognise, and
for whoever adds an exercise (docs/adding-an-exercise.md). `make api-docs` runs it too, and
tests/test_api_reference.py fails when the page is stale.
"""

import argparse
import contextlib
import io
import sys
from pathlib import Path

import numpy as np
from api_reference import write_or_check  # tools/, this script's folder

from helpers import checks  # installed in .venv by make setup (pip install --editable .)
from helpers.checks import _core

ROOT = Path(__file__).resolve().parent.parent

PAGE = ROOT / "docs" / "exercise-feedback.md"
COMMAND = "python tools/feedback_table.py"


def define(source, name):
    """The function that an exercise's registered source text defines."""
    namespace = {"np": np}
    exec(source, namespace)  # our own registered source text
    return namespace[name]


def message_of(name, source):
    """The ✗ line the check prints for the answer `source`, and the mistake code it names."""
    _core.HINTS_SHOWN.clear()  # as a learner who has asked for no hint yet
    with contextlib.redirect_stdout(io.StringIO()):
        result = getattr(checks, name)(define(source, name))
    _core.LATEST.pop(name, None)
    return result.message.splitlines()[0].removeprefix(f"✗ {name}: "), result.mistake


def cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def generate():
    lines = [
        "# Exercise feedback, as the learner reads it",
        "",
        f"This page is generated: `{COMMAND}` (or `make api-docs`) writes it from the checks themselves, "
        "running each exercise's check on each of its registered wrong answers (a mistake may be made in several "
        "ways, each named by its own message). Do not edit it by hand. "
        "A wrong answer gets ✗ and one of these messages, then a line pointing to `checks.hint(name)`; "
        "asked twice, `checks.hint` gives the second hint; `checks.solution(name)` gives the code, the only "
        "place that has any ([adding-an-exercise.md](adding-an-exercise.md)). A mistake the check does "
        "not register may still be named by its family (every entry off by one factor, the right numbers "
        "shifted along an axis or with two axes exchanged, attention weights applied to the wrong array, "
        "scores scaled by the wrong size, rows that should sum to 1 and do not: `helpers/checks/_families.py`) or, "
        "when it makes two registered mistakes at once, by both their messages; "
        "else it gets the generic comparison (shape, NaN, or the entry that differs most).",
        "",
        f"{len(checks.EXERCISES)} exercises, "
        f"{sum(len(ex.mistakes) for ex in checks.EXERCISES.values())} registered mistakes, "
        f"{sum(len(ex.ways) for ex in checks.EXERCISES.values())} ways of making them.",
        "",
    ]
    notebook = None
    for name, ex in checks.EXERCISES.items():
        if ex.notebook != notebook:
            notebook = ex.notebook
            lines += [f"## {notebook}", ""]
        lines += [
            f"### `{name}`",
            "",
            f"- **Hint 1:** {ex.hint}",
            f"- **Hint 2:** {ex.hint2}",
            "",
            "| mistake | message |",
            "|---|---|",
        ]
        seen = set()
        for way in ex.ways:  # a code may have several ways, each with its message
            message, named = message_of(name, way.source)
            shown = message if named == way.code else f"(named `{named}`, not `{way.code}`) {message}"
            lines.append(f"| `{way.code}`{' (another way)' * (way.code in seen)} | {cell(shown)} |")
            seen.add(way.code)
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed page is out of date")
    return write_or_check(PAGE, generate(), parser.parse_args(argv).check, COMMAND)


if __name__ == "__main__":
    sys.exit(main())
