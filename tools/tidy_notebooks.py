"""Make committed notebooks look exactly as JupyterLab would save them, so opening one changes nothing.

    python tools/tidy_notebooks.py notebooks/*.ipynb          # rewrite in place
    python tools/tidy_notebooks.py --check notebooks/*.ipynb  # exit 1 and name what differs

`make execute` runs it after executing a notebook. What it does:
- the kernelspec JupyterLab writes ("Python 3 (ipykernel)"): another display name is rewritten
  the moment the notebook opens, which marks it modified and lets autosave rewrite it;
- no stored widget state (JupyterLab saves the live one, so a stored one always changes);
- no per-cell execution timestamps (nbclient's; they change on every run);
- output-ignoring for nbval as the cell tag `nbval-ignore-output` (invisible to learners), not a
  `# NBVAL_IGNORE_OUTPUT` comment in the learner's code;
- the first cell (the bootstrap) collapsed: `source_hidden` for JupyterLab, `cellView: form` for
  Colab (which shows the cell's `#@title` line instead of its code).
"""

import json
import sys
from pathlib import Path

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
IGNORE_TAG = "nbval-ignore-output"
IGNORE_COMMENT = "# NBVAL_IGNORE_OUTPUT"


def tidy(nb):
    """Return the notebook dict as JupyterLab would save it (see the module docstring)."""
    nb["metadata"]["kernelspec"] = dict(KERNELSPEC)
    nb["metadata"].pop("widgets", None)
    code_cells = [cell for cell in nb["cells"] if cell["cell_type"] == "code"]
    for cell in nb["cells"]:
        cell["metadata"].pop("execution", None)
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and source.startswith(IGNORE_COMMENT):
            source = source[len(IGNORE_COMMENT) :].lstrip("\n")
            cell["source"] = source.splitlines(keepends=True)
            tags = cell["metadata"].setdefault("tags", [])
            if IGNORE_TAG not in tags:
                tags.append(IGNORE_TAG)
    if code_cells:
        bootstrap = code_cells[0]["metadata"]
        bootstrap["cellView"] = "form"
        bootstrap.setdefault("jupyter", {})["source_hidden"] = True
    return nb


def write(path, nb):
    """Write as JupyterLab does: one-space indent, non-ASCII kept, a final newline."""
    Path(path).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(args):
    check = "--check" in args
    untidy = []
    for path in (a for a in args if a != "--check"):
        text = Path(path).read_text(encoding="utf-8")
        nb = tidy(json.loads(text))
        if json.dumps(nb, indent=1, ensure_ascii=False) + "\n" != text:
            untidy.append(path)
            if not check:
                write(path, nb)
    if check and untidy:
        print("not tidy (run: python tools/tidy_notebooks.py " + " ".join(untidy) + "):")
        print("\n".join(f"  {p}" for p in untidy))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
