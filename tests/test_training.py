"""helpers/training.py gathers what the notebooks train with under one name; each part is tested in its own
module's tests (test_losses.py, test_gradients.py, test_toy_task.py). Here: the names are the very same objects;
and the modules split out of it, with the model modules that share its parts, export what they define
(tests/test_repository.py checks that no helpers module reaches another's private names)."""

import ast
import inspect

import pytest

from helpers import (
    embeddings,
    gpt_block,
    gradients,
    heads,
    kv_cache,
    layers,
    losses,
    multihead,
    next_word,
    position_task,
    pretrained,
    tiny_gpt,
    tiny_model,
    toy_task,
    training,
    transformer,
)
from helpers.pretrained import minilm

SPLIT = [
    losses,
    gradients,
    toy_task,
    training,
    position_task,
    transformer,
    tiny_model,
    gpt_block,
    tiny_gpt,
    next_word,
    multihead,
    kv_cache,
    embeddings,
    heads,
    pretrained,
    minilm,
    layers,
]


@pytest.mark.parametrize("name", training.__all__)
def test_every_name_is_the_one_its_own_module_defines(name):
    obj = getattr(training, name)
    home = {"losses": losses, "gradients": gradients, "toy_task": toy_task}[obj.__module__.rsplit(".", 1)[-1]]
    assert getattr(home, name) is obj and name in home.__all__


def test_training_holds_every_public_name_of_the_generic_parts_and_the_toy_task():
    assert set(losses.__all__) - {"check_ids"} | set(gradients.__all__) | set(toy_task.__all__) == set(training.__all__)


def test_each_trainer_has_one_name():
    # train_attention_layer, train_masked_word, train_next_word: no module keeps a bare `train` beside them
    assert not [m.__name__ for m in (training, toy_task, tiny_model, tiny_gpt) if hasattr(m, "train")]


def _top_level(module):
    """(defined, aliases, imported): the public names the module's own statements bind, those of them that
    only rename another name (`train = train_masked_word`), and the names it imports."""
    defined, aliases, imported = set(), set(), set()
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            names = {
                t.id
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if isinstance(t, ast.Name)
            }
            defined |= names
            if isinstance(node.value, ast.Name):
                aliases |= names
        elif isinstance(node, ast.ImportFrom):
            imported |= {alias.asname or alias.name for alias in node.names}
    return {n for n in defined if not n.startswith("_")}, aliases, imported


@pytest.mark.parametrize("module", SPLIT, ids=lambda m: m.__name__)
def test_all_lists_what_the_module_defines_and_nothing_missing(module):
    """__all__ = every public function, class and constant the module defines (old names kept as aliases
    aside), plus names it imports to hand on (tiny_gpt hands on next_word's VOCAB and data helpers)."""
    exported = set(module.__all__)
    assert len(exported) == len(module.__all__), "a name listed twice"
    assert all(hasattr(module, name) for name in exported)
    defined, aliases, imported = _top_level(module)
    assert defined - aliases == exported - imported, "__all__ and what the module defines differ"
    assert not aliases & exported, "an old name kept as an alias is listed in __all__"
