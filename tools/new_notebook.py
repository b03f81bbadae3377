"""Scaffold a new notebook with its helpers and test, or remove one the scaffold made.

    python tools/new_notebook.py create 11 cross_attention [--minutes 40] [--no-execute]
    python tools/new_notebook.py remove 11 cross_attention [--force]

(`make new-notebook NN=12 NAME=cross_attention` and `make remove-notebook NN=12 NAME=cross_attention`;
docs/adding-a-notebook.md walks through filling the files in.)

create writes four files and one README row, and edits nothing else:
- notebooks/NN_NAME.ipynb: the bootstrap cell copied from 00_setup_check, then the house rhythm
  as headings with placeholder prose and example code that runs;
- helpers/checks/nbNN_NAME.py: one example exercise;
- helpers/widgets/nbNN_NAME.py: one example explorer, with `__all__` and `demos()`;
- tests/test_nbNN_NAME.py: tests of the two;
- a row in the README's table of notebooks.
Then it runs `make execute NB=notebooks/NN_NAME.ipynb` (a fresh kernel, then tools/tidy_notebooks.py),
so the notebook is committed executed, as the repository's tests require.
The example names start with nbNN_NAME (e.g. `nb12_cross_attention_example`), so they cannot
clash with another notebook's. It never overwrites: an NN already used by a notebook, or a file
that already exists, is refused.

remove deletes exactly those four files and the README row. It refuses when one of them is no
longer what the scaffold wrote (the author has started filling it in) unless --force, and always
when git tracks one of them and it has uncommitted changes.
"""

import argparse
import copy
import hashlib
import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tidy_notebooks import KERNELSPEC, tidy, write  # this script's folder, which Python puts on sys.path

# deploy/class_link.py reads the repository address (and runs on any python3, helpers or not): the one edit
sys.path.append(str(Path(__file__).resolve().parent.parent / "deploy"))
from class_link import repository_url  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MAX_NAME = 30
NAME_RULE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
TABLE_HEADER = "| notebook | concept | minutes | what you build |"
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"


class Refusal(Exception):
    """The arguments or the repository's state forbid the operation; the message says why."""


class Names:
    """Every name and path the scaffold derives from NN and NAME."""

    def __init__(self, nn, name, root):
        if not re.fullmatch(r"\d\d", nn):
            raise Refusal(f"NN={nn!r}: NN must be two digits, e.g. NN=11")
        if len(name) > MAX_NAME:  # the generated code's lines must stay within ruff's 120 characters
            raise Refusal(f"NAME={name!r}: at most {MAX_NAME} characters, got {len(name)}")
        if not NAME_RULE.fullmatch(name):
            raise Refusal(
                f"NAME={name!r}: NAME must be lower_snake_case (a-z, 0-9, single underscores, "
                "starting with a letter), e.g. NAME=cross_attention"
            )
        self.nn, self.name, self.root = nn, name, Path(root)
        self.stem = f"{nn}_{name}"  # 12_cross_attention
        self.module = f"nb{nn}_{name}"  # nb12_cross_attention
        self.exercise = f"{self.module}_example"
        self.explorer = f"{self.module}_explorer"
        self.weights = f"{self.module}_weights"
        self.title = name.replace("_", " ").capitalize()
        self.notebook = Path("notebooks") / f"{self.stem}.ipynb"
        self.checks = Path("helpers") / "checks" / f"{self.module}.py"
        self.widgets = Path("helpers") / "widgets" / f"{self.module}.py"
        self.test = Path("tests") / f"test_{self.module}.py"

    @property
    def files(self):
        return [self.notebook, self.checks, self.widgets, self.test]

    def fill(self, template):
        return (
            textwrap.dedent(template)
            .lstrip("\n")
            .replace("__STEM__", self.stem)
            .replace("__NN__", self.nn)
            .replace("__TITLE__", self.title)
            .replace("__EXERCISE__", self.exercise)
            .replace("__EXPLORER__", self.explorer)
            .replace("__WEIGHTS__", self.weights)
        )


# --- the module templates ------------------------------------------------------------------------

CHECKS = '''
    """The exercises of __STEM__.

    Scaffolded: replace the example with the notebook's own exercises (docs/adding-an-exercise.md).
    """

    import numpy as np

    from helpers.checks._core import Case, check_rng, exercise


    @exercise(
        hint="Output row i is the average of the value rows, weighted by row i of the weights. For all the "
        "queries at once that is one matrix product.",
        hint2="The weights are (T_q, T_k) and the values (T_k, d_v): the product's inner axis is the keys, so each "
        "output row is a weighted sum over the keys, and the result is (T_q, d_v).",
        solution="""
            def __EXERCISE__(weights, V):
                return weights @ V  # (T_q, T_k) @ (T_k, d_v) -> (T_q, d_v)
        """,
        mistakes=r"""
            transposed: `weights @ V` → `weights.T @ V`
                {what} averages with the columns of weights: row i of weights holds query i's weights, so output
                row i is the values weighted by row i
            plain-mean: `weights @ V` → `np.broadcast_to(V.mean(axis=0), (len(weights), V.shape[1]))`
                {what} gave every query the plain mean of the values: weigh value j by query i's weight for key j
            elementwise: `weights @ V` → `weights * V`
                {what} multiplied the weights and the values entry by entry; mixing sums over the keys: a matrix
                product, (T_q, T_k) times (T_k, d_v)
        """,
    )
    def __EXERCISE__():
        rng = check_rng()
        for T_q, T_k, d_v in ((3, 3, 2), (2, 6, 3)):  # a square case first, where the transpose runs
            weights = rng.dirichlet(np.ones(T_k), size=T_q)  # (T_q, T_k): each row sums to 1
            V = rng.normal(size=(T_k, d_v))  # (T_k, d_v)
            yield Case(f"__EXERCISE__(weights, V) for weights {weights.shape} and V {V.shape}", (weights, V))
'''

WIDGETS = '''
    """Explorers of __STEM__.

    Scaffolded: replace the example with the notebook's own explorer (docs/adding-a-notebook.md).
    """

    import numpy as np

    from helpers import html_plots
    from helpers.attention import softmax
    from helpers.widgets._explorer import explorer, ipw, show_html

    __all__ = ["__WEIGHTS__", "__EXPLORER__"]


    def __WEIGHTS__(scores, temperature=1.0):
        """What __EXPLORER__ draws: the row softmax of scores / temperature.

        Shapes: scores (T_q, T_k) -> weights (T_q, T_k).
        """
        scores = np.asarray(scores, dtype=float)
        if scores.ndim != 2:
            raise ValueError(f"scores must have shape (T_q, T_k), got {scores.shape}")
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        return softmax(scores / temperature)  # (T_q, T_k)


    def __EXPLORER__(scores, tokens, query=0, temperature=1.0):
        """Pick a query (▶) and a temperature: the weights as a heatmap, the query's row as bars.

        Shapes: scores (T, T); tokens T labels -> a widget. Drawn as HTML, so each update is fast.
        """
        T = len(tokens)
        if np.shape(scores) != (T, T):
            raise ValueError(f"scores must have shape (T, T) = ({T}, {T}) for {T} tokens, got {np.shape(scores)}")
        controls = {
            "query": ipw.IntSlider(value=query, min=0, max=T - 1, description="query"),
            "temperature": ipw.FloatSlider(value=temperature, min=0.1, max=5.0, step=0.1, description="temperature"),
        }

        def draw(query, temperature):
            weights = __WEIGHTS__(scores, temperature)  # (T, T)
            grid = html_plots.heatmap(weights, html_plots.marked_rows(tokens, query), tokens, title="weights",
                                      cmap="Blues", vmin=0, vmax=1)
            bars = html_plots.weight_bars(weights[query], tokens, f"query {query} {tokens[query]!r}")
            show_html(html_plots.side_by_side(grid, bars))

        return explorer(controls, draw)


    def demos():
        """__EXPLORER__ on six tokens with seeded random scores, and the moves to try."""
        tokens = ["The", "cat", "sat", "on", "the", "mat"]
        scores = np.random.default_rng(0).normal(size=(6, 6))  # (T, T)
        box = __EXPLORER__(scores, tokens)
        moves = [("query", 3), ("temperature", 0.5), ("temperature", 2.0)]
        yield "__EXPLORER__ (__NN__)", box, moves
'''

TEST = '''
    """What __STEM__ adds: its explorer and its exercise.

    Scaffolded examples: replace them with tests of the notebook's own explorer and exercises.
    """

    import numpy as np
    from _answers import define, solution

    from helpers import checks, widgets

    TOKENS = ["The", "cat", "sat", "on", "the", "mat"]
    EXERCISE = "__EXERCISE__"


    def test_weights_are_the_row_softmax_at_the_temperature(rng):
        scores = rng.normal(size=(4, 6))
        for temperature in (0.5, 1.0, 3.0):
            e = np.exp(scores / temperature)
            expected = e / e.sum(axis=1, keepdims=True)
            assert np.allclose(widgets.__WEIGHTS__(scores, temperature), expected)


    def test_explorer_redraws_the_chosen_query_at_the_chosen_temperature(shown, rng):
        scores = rng.normal(size=(6, 6))
        box = widgets.__EXPLORER__(scores, TOKENS, query=2)
        assert len(shown) == 1 and "▶ sat" in shown[-1]
        box.controls["query"].value = 5
        assert len(shown) == 2 and "▶ mat" in shown[-1] and "▶ sat" not in shown[-1]
        box.controls["temperature"].value = 0.5
        assert len(shown) == 3
        row = widgets.__WEIGHTS__(scores, 0.5)[5]
        assert all(f"{w:.3f}</td>" in shown[-1] for w in row)  # the bars show the chosen row's numbers


    def test_example_check_passes_the_solution_and_names_the_transpose():
        assert checks.__EXERCISE__(solution(EXERCISE)).status == checks.CORRECT
        wrong = define(checks.EXERCISES[EXERCISE].mistakes["transposed"], EXERCISE)
        result = checks.__EXERCISE__(wrong)
        assert result.mistake == "transposed" and "averages with the columns of weights" in result.message
'''

# --- the notebook: (cell type, source, tags); the bootstrap is copied from 00 ------------------

NOTEBOOK = [
    (
        "markdown",
        """
        # __NN__ · __TITLE__

        *(Scaffold: replace every paragraph in italics with this notebook's own text, and the example code
        with the concept's; docs/adding-a-notebook.md walks through each section.)*

        You will learn:
        - *the first thing a learner will be able to do after this notebook;*
        - *the second;*
        - *the third.*

        *Time: about __MINUTES__ minutes.*

        *One or two sentences of motivation, tied to the running example "The cat sat on the mat": what the
        previous notebook could not do, and what this one adds.*
        """,
        [],
    ),
    ("bootstrap", None, []),
    (
        "code",
        """
        import matplotlib.pyplot as plt
        import numpy as np

        from helpers import checks, plotting, softmax, widgets
        """,
        [],
    ),
    (
        "markdown",
        r"""
        ## The math

        *The concept in LaTeX, with the shape of every symbol. The example code below computes*

        $$
        S = \frac{X X^\top}{\sqrt{d_k}} \in \mathbb{R}^{T \times T}, \qquad
        A = \operatorname{softmax}_{\text{each row}}(S) \in \mathbb{R}^{T \times T}, \qquad
        X \in \mathbb{R}^{T \times d_k}.
        $$
        """,
        [],
    ),
    (
        "markdown",
        """
        ## 1. A loop on a tiny input

        *The concept one entry at a time, on 3 to 6 tokens with 2 to 4 dimensions, printing its numbers.*
        """,
        [],
    ),
    (
        "code",
        """
        tokens = ["The", "cat", "sat", "on", "the", "mat"]
        X = np.array([[1, 0], [0, 2], [1, 1], [0, -1], [1, 0], [2, 0]], dtype=float)  # (T, d_k): made-up vectors


        def scores_loop(X):
            \"\"\"Every pair of tokens, one entry at a time. Shapes: (T, d_k) -> (T, T).\"\"\"
            T, d_k = X.shape
            scores = np.zeros((T, T))
            for i in range(T):  # the query (row)
                for j in range(T):  # the key (column)
                    scores[i, j] = X[i] @ X[j] / np.sqrt(d_k)
            return scores


        scores_by_loop = scores_loop(X)
        print(scores_by_loop)
        """,
        [],
    ),
    (
        "markdown",
        """
        ## 2. Vectorised, checked against the loop

        *The same computation without loops, a shape comment on every line that changes a shape, and an
        assert that it equals the loop. From the next notebook on, this version is imported from `helpers/`.*
        """,
        [],
    ),
    (
        "code",
        """
        def scores_vectorised(X):
            \"\"\"All pairs at once. Shapes: (T, d_k) -> (T, T).\"\"\"
            return X @ X.T / np.sqrt(X.shape[1])  # (T, d_k) @ (d_k, T) -> (T, T)


        scores = scores_vectorised(X)
        weights = softmax(scores)  # (T, T): each row sums to 1
        assert np.allclose(scores, scores_by_loop)
        assert np.allclose(weights.sum(axis=-1), 1.0)
        print("the vectorised scores equal the loop's")
        print(weights)
        """,
        [],
    ),
    (
        "markdown",
        """
        ## 3. A picture

        *A heatmap, lines between tokens or a curve: what the numbers above look like. Say what to look at.*
        """,
        [],
    ),
    (
        "code",
        """
        plotting.heatmap(weights, tokens, tokens, title="example: the softmax of the scaled scores")
        plotting.show("(scaffold: what the figure shows and what to see in it, for a learner who cannot see it)")
        """,
        [],
    ),
    (
        "markdown",
        """
        ## Explore: *what the knobs change*

        *Which control to move and what to look for.* The example explorer: pick a query (▶) and a temperature.
        """,
        [],
    ),
    (
        "code",
        """
        box = widgets.__EXPLORER__(scores, tokens, query=2)
        box
        """,
        ["nbval-ignore-output"],
    ),
    (
        "code",
        """
        box.controls["query"].value = 5  # a learner moving the controls, done by code
        box.controls["temperature"].value = 0.5
        shown = widgets.__WEIGHTS__(scores, box.controls["temperature"].value)
        """,
        ["nbval-ignore-output"],
    ),
    (
        "code",
        """
        assert np.allclose(shown, softmax(scores / 0.5))  # the explorer draws the weights computed above
        assert shown[5].max() > weights[5].max()  # a lower temperature sharpens the row of "mat"
        print("the explorer's weights match softmax(scores / temperature)")
        """,
        [],
    ),
    (
        "markdown",
        """
        ## Your turn

        **1. An example exercise.** *Say what to write, with the shapes.* Write `__EXERCISE__(weights, V)`:
        row $i$ of the output is the average of the rows of `V` weighted by row $i$ of `weights`, shape
        $(T_q, d_v)$ for `weights` $(T_q, T_k)$ and `V` $(T_k, d_v)$. `checks.hint("__EXERCISE__")` helps if
        you are stuck.
        """,
        [],
    ),
    (
        "code",
        """
        def __EXERCISE__(weights, V):
            # your code here
            raise NotImplementedError


        checks.__EXERCISE__(__EXERCISE__)
        """,
        [],
    ),
    (
        "markdown",
        """
        ## Recap

        - *the first thing learned;*
        - *the second;*
        - *the third.*

        *The one formula.*

        **Next:** *what the next notebook adds.*
        """,
        [],
    ),
]


def bootstrap_cell(root):
    """The first code cell of 00_setup_check, its source byte for byte, without outputs."""
    nb = json.loads((root / "notebooks" / "00_setup_check.ipynb").read_text(encoding="utf-8"))
    cell = copy.deepcopy(next(c for c in nb["cells"] if c["cell_type"] == "code"))
    cell["outputs"], cell["execution_count"] = [], None
    return cell


def notebook(names, minutes):
    """The scaffold's notebook as a dict (not executed), tidy as JupyterLab saves it."""
    cells = []
    for index, (kind, text, tags) in enumerate(NOTEBOOK):
        if kind == "bootstrap":
            cell = bootstrap_cell(names.root)
        else:
            source = names.fill(text).rstrip("\n").replace("__MINUTES__", str(minutes))
            cell = {
                "cell_type": kind,
                "metadata": {"tags": list(tags)} if tags else {},
                "source": source.splitlines(keepends=True),
            }
            if kind == "code":
                cell.update(execution_count=None, outputs=[])
        # the same ids on every scaffold of this NN/NAME, unique within the notebook
        cell["id"] = hashlib.sha1(f"{names.stem}/{index}".encode()).hexdigest()[:8]
        cells.append(cell)
    metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    return tidy({"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5})


def cell_sources(nb):
    return [(c["cell_type"], "".join(c["source"])) for c in nb["cells"]]


# --- the README row --------------------------------------------------------------------------------


def repository_slug(root):
    """owner/name from pyproject.toml's [project.urls] Repository, read as deploy/class_link.py reads it."""
    try:
        url = repository_url((root / "pyproject.toml").read_text(encoding="utf-8"))
    except ValueError as exc:
        raise Refusal(str(exc)) from None
    match = re.fullmatch(r"https://github\.com/([^/]+/[^/]+?)/?", url)
    if not match:
        raise Refusal(
            f"pyproject.toml's Repository is {url!r}: the Colab badge needs a GitHub address, github.com/owner/name"
        )
    return match.group(1)


def readme_row(names, minutes):
    path = f"notebooks/{names.stem}.ipynb"
    colab = f"https://colab.research.google.com/github/{repository_slug(names.root)}/blob/main/{path}"
    return (
        f"| [{names.stem}]({path}) [![Colab]({COLAB_BADGE})]({colab}) | {names.title.lower()} *(scaffold: the "
        f"concept)* | {minutes} | *(scaffold: what the learner builds)* |\n"
    )


def table_rows(lines):
    """Indices of the rows of the README's notebooks table (after its header and |---| line)."""
    try:
        start = next(i for i, line in enumerate(lines) if line.rstrip("\n") == TABLE_HEADER) + 2
    except StopIteration:
        raise Refusal(f"README.md has no table of notebooks (header {TABLE_HEADER!r})") from None
    end = start
    while end < len(lines) and lines[end].startswith("| ["):
        end += 1
    return range(start, end)


def row_index(lines, names):
    """The index of this notebook's README row, or None."""
    prefix = f"| [{names.stem}](notebooks/{names.stem}.ipynb)"
    return next((i for i in table_rows(lines) if lines[i].startswith(prefix)), None)


def add_readme_row(names, minutes):
    readme = names.root / "README.md"
    lines = readme.read_text(encoding="utf-8").splitlines(keepends=True)
    rows = table_rows(lines)
    # in notebook order: before the first row with a larger number
    at = next((i for i in rows if lines[i][3:5] > names.nn), rows.stop)
    lines.insert(at, readme_row(names, minutes))
    readme.write_text("".join(lines), encoding="utf-8")


# --- create and remove -----------------------------------------------------------------------------


def refuse_collisions(names):
    taken = [str(p) for p in names.files if (names.root / p).exists()]
    if taken:
        raise Refusal(
            f"NN={names.nn} NAME={names.name}: these files already exist and are never overwritten: " + ", ".join(taken)
        )
    for folder, pattern in (
        ("notebooks", f"{names.nn}_*.ipynb"),
        ("helpers/checks", f"nb{names.nn}_*.py"),
        ("helpers/widgets", f"nb{names.nn}_*.py"),
        ("tests", f"test_nb{names.nn}_*.py"),
    ):
        used = sorted((names.root / folder).glob(pattern))
        if used:
            raise Refusal(f"NN={names.nn}: the number is already used by {used[0].relative_to(names.root)}")
    lines = (names.root / "README.md").read_text(encoding="utf-8").splitlines(keepends=True)
    if row_index(lines, names) is not None:
        raise Refusal(f"NN={names.nn} NAME={names.name}: README.md already has a row for {names.stem}")


def create(names, minutes, execute):
    refuse_collisions(names)
    start = time.perf_counter()
    root = names.root
    nb = notebook(names, minutes)
    readme_row(names, minutes)  # refuses a pyproject.toml without the address before anything is written
    for path in (names.checks, names.widgets, names.test):
        (root / path).write_text(scaffold_text(names, path), encoding="utf-8")
    write(root / names.notebook, nb)
    add_readme_row(names, minutes)
    for path in names.files:
        print(f"created {path}")
    print(f"added a row for {names.stem} to README.md")
    if execute:
        command = ["make", "--no-print-directory", "-C", str(root), "execute", f"NB={names.notebook}"]
        print(f"running: make execute NB={names.notebook}", flush=True)
        if subprocess.run(command).returncode != 0:
            print(
                f"\nThe notebook did not run through. The files are in place: fix the cause and run "
                f"`make execute NB={names.notebook}`, or undo everything with "
                f"`make remove-notebook NN={names.nn} NAME={names.name}`.",
                file=sys.stderr,
            )
            return 1
    print(f"done in {time.perf_counter() - start:.1f} s. Next: docs/adding-a-notebook.md")
    return 0


def git(root, *args):
    """git's stdout, or None when git or the repository is missing (a plain copy of the files)."""
    try:
        result = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    except FileNotFoundError:
        return None
    return result.stdout if result.returncode == 0 else None


def scaffold_text(names, path):
    """What the scaffold writes at `path` (a Python file), to compare with what is there now: the template filled
    in, then laid out by `ruff format` as `make lint` checks it (a longer NAME moves the line breaks)."""
    text = names.fill({names.checks: CHECKS, names.widgets: WIDGETS, names.test: TEST}[path])
    command = [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(path), "-"]
    result = subprocess.run(command, input=text, cwd=names.root, capture_output=True, text=True)
    return result.stdout if result.returncode == 0 else text  # without ruff (make setup-test installs it): as filled


def edited(names, path):
    """True when the file is no longer what the scaffold made (outputs and metadata aside, for the notebook)."""
    current = (names.root / path).read_text(encoding="utf-8")
    if path == names.notebook:
        nb = json.loads(current)
        minutes = re.search(r"\*Time: about (\S+) minutes\.\*", "".join(nb["cells"][0]["source"]))
        return cell_sources(nb) != cell_sources(notebook(names, minutes.group(1) if minutes else 0))
    return current != scaffold_text(names, path)


def remove(names, force):
    root = names.root
    present = [p for p in names.files if (root / p).exists()]
    readme = root / "README.md"
    lines = readme.read_text(encoding="utf-8").splitlines(keepends=True)
    row = row_index(lines, names)
    if not present and row is None:
        raise Refusal(f"NN={names.nn} NAME={names.name}: nothing to remove (no {names.notebook}, no README row)")
    tracked = set((git(root, "ls-files", "--", *map(str, present)) or "").split())
    changed = [p for p in present if str(p) in tracked and git(root, "status", "--porcelain", "--", str(p))]
    if changed:
        raise Refusal(
            "git tracks these files and they have uncommitted changes; commit or discard them first: "
            + ", ".join(map(str, changed))
        )
    differs = [str(p) for p in present if edited(names, p)]
    if row is not None:
        minutes = lines[row].split(" | ")[2]
        if lines[row] != readme_row(names, minutes):
            differs.append("README.md (its row for " + names.stem + ")")
    if differs and not force:
        raise Refusal(
            "these are no longer what the scaffold made (someone has started filling them in): "
            + ", ".join(differs)
            + ". Remove them anyway with FORCE=1 (make) or --force"
        )
    for path in present:
        (root / path).unlink()
        note = " (tracked by git: the deletion shows in git status)" if str(path) in tracked else ""
        print(f"removed {path}{note}")
    if row is not None:
        del lines[row]
        readme.write_text("".join(lines), encoding="utf-8")
        print(f"removed the row for {names.stem} from README.md")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["create", "remove"])
    parser.add_argument("nn", metavar="NN", help="two digits, e.g. 11")
    parser.add_argument("name", metavar="NAME", help="lower_snake_case, e.g. cross_attention")
    parser.add_argument("--minutes", default="40", help="workshop minutes, for the title cell and the README row")
    parser.add_argument("--no-execute", action="store_true", help="create without running the notebook (for tests)")
    parser.add_argument("--force", action="store_true", help="remove even files that were edited since the scaffold")
    parser.add_argument("--root", default=str(ROOT), help="the repository (default: the one holding this script)")
    args = parser.parse_args(argv)
    try:
        if not re.fullmatch(r"\d+( \+ \d+)?", args.minutes):
            raise Refusal(f"MINUTES={args.minutes!r}: give a number of minutes, e.g. MINUTES=40")
        names = Names(args.nn, args.name, Path(args.root).resolve())
        if args.action == "create":
            return create(names, args.minutes, execute=not args.no_execute)
        return remove(names, args.force)
    except Refusal as refusal:
        print(f"{Path(__file__).name} {args.action}: refused: {refusal}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
