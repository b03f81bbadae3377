"""Interactive explorers (ipywidgets 7.7 and 8): each is a function returning a widget.

`widgets.<name>(...)` finds every explorer: the machinery is in `_explorer.py`, and each
notebook's explorers (and the functions computing what they draw) are in its own module,
`nbNN_<notebook>.py`, whose `__all__` lists them. Each such module also has `demos()`, the
explorers built on inputs like its notebook's with the control moves to try (for the tests
and benchmarks/widget_times.py).
"""

import importlib as _importlib
import pkgutil as _pkgutil

from helpers.widgets._explorer import explorer, show_html  # noqa: F401 - public

MODULES = []  # each notebook's explorer module, in notebook order

for _name in sorted(m.name for m in _pkgutil.iter_modules(__path__) if m.name.startswith("nb")):
    _module = _importlib.import_module(f"{__name__}.{_name}")
    MODULES.append(_module)
    for _public in _module.__all__:
        if _public in globals():
            raise ImportError(f"helpers.widgets.{_name}.{_public} clashes with a name already in helpers.widgets")
        globals()[_public] = getattr(_module, _public)


def demos():
    """(name, box, [(control, value), ...]) for every explorer of every notebook."""
    for module in MODULES:
        yield from module.demos()
