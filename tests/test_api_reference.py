"""docs/helpers-api.md is what tools/api_reference.py writes now, and every public helper names its notebook."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

import helpers
from helpers import checks, masking

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = {path.stem for path in (ROOT / "notebooks").glob("*.ipynb")}

_spec = importlib.util.spec_from_file_location("api_reference", ROOT / "tools" / "api_reference.py")
api_reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api_reference)

# The workshop's machinery is never the lesson; every other module of helpers/ is a concept module
# (found, not listed, so a new one cannot be forgotten).
MACHINERY = {"helpers", "helpers.checks", "helpers.widgets", "helpers.environment", "helpers.plotting",
             "helpers.html_plots"}


def concept_modules(modules):
    return sorted(name for name in modules if name not in MACHINERY and not name.startswith("helpers.widgets."))


# Public names of concept modules that no notebook names: never the lesson themselves.
NO_NOTEBOOK = {
    # building blocks of a taught function (similarity_matrix, erf, head_profile, the 09 explorer)
    "helpers.embeddings.unit_rows", "helpers.pretrained.layers.rational_erf",
    "helpers.heads.target_weights", "helpers.head_views.hide_tokens",
    # the threads under tiled_attention (10 shows blas_controllable, blas_single_thread, default_threads)
    "helpers.threads.blas_threads", "helpers.threads.cpu_count", "helpers.threads.parallel_for",
    # locating and reading the weight files
    "helpers.pretrained.WeightsNotFoundError", "helpers.pretrained.model_dir", "helpers.pretrained.sha256_of",
    "helpers.pretrained.load_tensor", "helpers.pretrained.load_tokenizer",
    # records returned by a taught function (random_sentence, MiniLM.run)
    "helpers.grammar.Sentence", "helpers.pretrained.minilm.Output",
}


@pytest.fixture(scope="module")
def modules():
    return api_reference.collect()


def test_the_committed_page_is_what_the_tool_writes_now():
    committed = api_reference.PAGE.read_text(encoding="utf-8")
    assert committed == api_reference.generate(), "docs/helpers-api.md is out of date: run tools/api_reference.py"


def test_the_committed_feedback_page_is_what_its_tool_writes_now():
    spec = importlib.util.spec_from_file_location("feedback_table", ROOT / "tools" / "feedback_table.py")
    feedback_table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(feedback_table)
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
    missing = []
    for name in concept_modules(modules):
        _, entries = modules[name]
        for e in entries:
            if e["home"] == name and e["kind"] != "constant" and not (e["taught"] or e["used"]):
                missing.append(f"{name}.{e['name']}")
    assert sorted(set(missing) - NO_NOTEBOOK) == [], 'add "Taught in NN_name" to these docstrings'
    assert sorted(NO_NOTEBOOK - set(missing)) == [], "these name a notebook now: drop them from NO_NOTEBOOK"


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
        ["03_queries_keys_values"], ["04_scaling"])
    assert api_reference.notebooks_of("Taught in 04_scaling (used from 00_setup_check on).") == (
        ["04_scaling"], ["00_setup_check"])
    wrapped = "Taught in 02_similarity_matrix (softmax), 03_queries_keys_values (attention) and\n04_scaling (scale)."
    assert api_reference.notebooks_of(wrapped)[0] == ["02_similarity_matrix", "03_queries_keys_values", "04_scaling"]
    assert api_reference.notebooks_of("To be taught in 11_cross_attention.") == ([], [])


def test_the_contract_covers_what_the_repository_pins():
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from test_repository import CONTRACT as pinned
    finally:
        sys.path.remove(str(ROOT / "tests"))
    listed = {name for module, names in api_reference.CONTRACT if module == "helpers" for name in names}
    assert set(pinned) | {"MultiHeadAttention"} <= listed
    docstring = re.search(r"\(a contract:[^)]*\):\n(.*?)\.\n", helpers.__doc__, re.S).group(1)
    assert {n.strip() for n in docstring.split(",")} == {n for n in listed if "." not in n}
    page = api_reference.PAGE.read_text(encoding="utf-8")
    for module, names in api_reference.CONTRACT:
        assert f"- `from {module} import {names[0]}`" in page
