"""Every explorer of every notebook, built as its demo and driven by its controls."""

import pytest

from helpers import widgets

DEMOS = list(widgets.demos())


def test_every_notebook_module_has_explorers():
    assert [m.__name__.rsplit(".", 1)[1][:4] for m in widgets.MODULES] == sorted(
        m.__name__.rsplit(".", 1)[1][:4] for m in widgets.MODULES)
    assert len(DEMOS) >= len(widgets.MODULES)
    for module in widgets.MODULES:
        for name in module.__all__:
            assert getattr(widgets, name) is getattr(module, name)


@pytest.mark.parametrize(("name", "box", "moves"), DEMOS, ids=[d[0] for d in DEMOS])
def test_each_move_redraws_what_the_explorer_shows(name, box, moves, shown):
    assert set(box.controls) >= {control for control, _ in moves}
    assert not hasattr(box, "output")  # the drawing area is reached through refresh(), not kept as an attribute
    for control, value in moves:
        before = len(shown)
        box.controls[control].value = value
        assert box.controls[control].value == value
        assert len(shown) == before + 1, f"{name}: moving {control} to {value!r} did not redraw"
    box.refresh()
    assert len(shown) == before + 2
