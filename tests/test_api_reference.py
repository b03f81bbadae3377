"""docs/helpers-api.md is what tools/api_reference.py writes now, and every public helper names its notebook."""

import re
from pathlib import Path

import api_reference  # tools/ (pyproject.toml's pytest pythonpath)
import feedback_table
import pytest
from test_repository import CONTRACT as PINNED

import helpers
from helpers import checks, masking

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = {path.stem for path in (ROOT / "notebooks").glob("*.ipynb")}

# The workshop's machinery is never the lesson; every other module of helpers/ is a concept module
# (found, not listed, so a new one cannot be forgotten).
MACHINERY = {
    "helpers",
    "helpers.checks",
    "helpers.board_report",
    "helpers.widgets",
    "helpers.environment",
    "helpers.plotting",
    "helpers.html_plots",
}


def concept_modules(modules):
    return sorted(name for name in modules if name not in MACHINERY and not name.startswith("helpers.widgets."))


# Public names of concept modules that no notebook names: never the lesson themselves. A name whose docstring
# names no notebook takes its module's "Taught in NN_name." (tools/api_reference.py), so only the names of a
# module whose docstring names several notebooks can be here.
NO_NOTEBOOK = set()


def unnamed(modules):
    """The public names of concept modules that name no notebook, in their own docstring or their module's.

    A module whose docstring says "to be taught in NN_name" is code ahead of its notebook: its names wait for it.
    """
    missing = []
    for name in concept_modules(modules):
        module, entries = modules[name]
        if re.search(r"\b[Tt]o be taught in \d\d_[a-z_]+", module.__doc__ or ""):
            continue
        for e in entries:
            if e["home"] == name and e["kind"] != "constant" and not (e["taught"] or e["used"]):
                missing.append(f"{name}.{e['name']}")
    return set(missing)


@pytest.fixture(scope="module")
def modules():
    return api_reference.collect()


def test_the_committed_page_is_what_the_tool_writes_now():
    committed = api_reference.PAGE.read_text(encoding="utf-8")
    assert committed == api_reference.generate(), "docs/helpers-api.md is out of date: run tools/api_reference.py"


def test_the_committed_feedback_page_is_what_its_tool_writes_now():
    committed = feedback_table.PAGE.read_text(encoding="utf-8")
    assert committed == feedback_table.generate(), "docs/exercise-feedback.md is out of date: run make api-docs"
    assert "(named `" not in committed  # every registered wrong answer is named by its own code


def test_a_new_helper_makes_the_page_out_of_date(monkeypatch, capsys):
    def window_mask(T, width):
        """Query i may see the keys i - width .. i.

        Taught in 05_masking.
        """

    window_mask.__module__ = masking.__name__  # as if defined in helpers/masking.py
    monkeypatch.setattr(masking, "window_mask", window_mask, raising=False)
    page = api_reference.generate()
    assert "| `window_mask(T, width)` | Query i may see the keys i - width .. i. | 05_masking |" in page
    assert re.search(r"\| 05_masking \| [^|]*`masking\.window_mask`", page)
    assert api_reference.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "docs/helpers-api.md is out of date: run `python tools/api_reference.py`" in out
    assert "+| `window_mask(T, width)`" in out


def test_the_page_has_no_machine_paths_or_addresses():
    page = api_reference.PAGE.read_text(encoding="utf-8")
    assert " at 0x" not in page
    assert str(ROOT) not in page and "site-packages" not in page


def test_every_public_helper_of_a_concept_module_names_a_notebook(modules):
    assert {"helpers.attention", "helpers.masking", "helpers.pretrained.minilm"} <= set(concept_modules(modules))
    missing = unnamed(modules)
    assert sorted(missing - NO_NOTEBOOK) == [], 'add "Taught in NN_name" to these docstrings (or their module\'s)'
    assert sorted(NO_NOTEBOOK - missing) == [], "these name a notebook now: drop them from NO_NOTEBOOK"


def test_a_module_docstrings_notebook_names_its_names_unless_their_own_docstring_does(monkeypatch):
    def window_mask(T, width):
        """Query i may see the keys i - width .. i."""

    window_mask.__module__ = masking.__name__  # as if defined in helpers/masking.py ("Taught in 05_masking.")
    monkeypatch.setattr(masking, "window_mask", window_mask, raising=False)
    assert api_reference.entry(masking, "window_mask")["taught"] == ["05_masking"]
    assert "helpers.masking.window_mask" not in unnamed(api_reference.collect())
    assert "| `window_mask(T, width)` | Query i may see the keys i - width .. i. | 05_masking |" in (
        api_reference.generate()
    )

    window_mask.__doc__ += "\n\nUsed in 10_efficient_attention."  # its own line wins over its module's
    assert api_reference.notebooks_of_name(window_mask, window_mask.__doc__) == ([], ["10_efficient_attention"])

    window_mask.__doc__ = "Query i may see the keys i - width .. i."
    monkeypatch.setattr(masking, "__doc__", "Boolean attention masks.")  # a module that names no notebook
    assert "helpers.masking.window_mask" in unnamed(api_reference.collect())
    monkeypatch.setattr(masking, "__doc__", "Masks.\n\nTaught in 05_masking (causal) and 11_tiny_gpt (windows).")
    assert "helpers.masking.window_mask" in unnamed(api_reference.collect())  # several: each name says its own


def test_every_notebook_the_page_names_exists(modules):
    named = set()
    for name, (_, entries) in modules.items():
        for e in entries:
            for row in [e] + e["methods"]:
                named |= set(row["taught"]) | set(row["used"])
        if name.startswith("helpers.widgets.nb"):
            named.add(api_reference.widget_notebook(name))
    named |= {ex.notebook for ex in checks.EXERCISES.values()}
    assert named - NOTEBOOKS == set()
    page = api_reference.PAGE.read_text(encoding="utf-8")
    assert set(re.findall(r"\b\d\d_[a-z_]+[a-z]\b", page)) - NOTEBOOKS == set()


def test_the_taught_in_parser():
    assert api_reference.notebooks_of("x.\n\nTaught in 03_queries_keys_values; used in 04_scaling.") == (
        ["03_queries_keys_values"],
        ["04_scaling"],
    )
    assert api_reference.notebooks_of("Taught in 04_scaling (used from 00_setup_check on).") == (
        ["04_scaling"],
        ["00_setup_check"],
    )
    wrapped = "Taught in 02_similarity_matrix (softmax), 03_queries_keys_values (attention) and\n04_scaling (scale)."
    assert api_reference.notebooks_of(wrapped)[0] == ["02_similarity_matrix", "03_queries_keys_values", "04_scaling"]
    assert api_reference.notebooks_of("To be taught in 11_cross_attention.") == ([], [])


def test_the_contract_covers_what_the_repository_pins():
    listed = {name for module, names in api_reference.CONTRACT if module == "helpers" for name in names}
    assert set(PINNED) | {"MultiHeadAttention"} <= listed
    docstring = re.search(r"\(a contract:[^)]*\):\n(.*?)\.\n", helpers.__doc__, re.S).group(1)
    assert {n.strip() for n in docstring.split(",")} == {n for n in listed if "." not in n}
    page = api_reference.PAGE.read_text(encoding="utf-8")
    for module, names in api_reference.CONTRACT:
        assert f"- `from {module} import {names[0]}`" in page
