"""The class board's list of exercises (deploy/board/exercises.json), written from the helpers' registry.

    python deploy/board/exercise_list.py           # rewrite deploy/board/exercises.json (make api-docs runs it)
    python deploy/board/exercise_list.py --check   # exit 1 when the file differs from the registry

Run it with a Python that has the workshop's requirements (numpy): the project's .venv, or on a hub
the learners' Python. The board itself only reads the JSON file: it never imports the helpers and
never runs the learners' Python. tests/test_board.py fails when the committed file is stale.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIST = ROOT / "deploy" / "board" / "exercises.json"
ABOUT = "The exercises the class board accepts, in notebook order. Written by deploy/board/exercise_list.py."


def registered():
    """[(name, notebook)] of every exercise helpers.checks registers, in its order (the notebooks' order)."""
    sys.path.insert(0, str(ROOT))
    from helpers import checks

    return [(name, exercise.notebook) for name, exercise in checks.EXERCISES.items()]


def text(exercises):
    """The file's content for `exercises`, [(name, notebook)]: one exercise a line, so a diff shows each."""
    lines = [json.dumps({"name": name, "notebook": notebook}, ensure_ascii=False) for name, notebook in exercises]
    return '{"about": ' + json.dumps(ABOUT) + ',\n "exercises": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is out of date, write nothing")
    parser.add_argument("--output", type=Path, default=LIST, help=f"where to write (default {LIST})")
    args = parser.parse_args(argv)
    exercises = registered()
    wanted = text(exercises)
    current = args.output.read_text(encoding="utf-8") if args.output.exists() else None
    if args.check:
        if current != wanted:
            print(f"{args.output} is out of date: run python deploy/board/exercise_list.py (or make api-docs)")
            return 1
        print(f"{args.output} is up to date: the {len(exercises)} exercises the helpers register")
        return 0
    args.output.write_text(wanted, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
