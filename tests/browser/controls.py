"""How both browser tests move an explorer's control other than a slider, the way a learner would, and type in its
text box and press Enter.

Used by tests/browser/check_in_browser.py (JupyterLab) and tests/lite/check_lite.py (JupyterLite), which each move
a slider their own way (End and Home there, as Notebook 7 has them; the arrow keys and a mouse drag in JupyterLite).
"""

import re
from pathlib import Path

# A single-line text box (ipywidgets' Text and Combobox): the notebooks ask for Enter to submit one.
TEXT_BOX = ".widget-text input[type=text]"
WIDGETS = Path(__file__).resolve().parents[2] / "helpers" / "widgets"


def notebooks_with_a_text_box(folder=WIDGETS):
    """The notebooks ("01_embeddings") whose explorer has a text box: their widget module makes a Text or Combobox.

    A browser test that finds no text box in one of them fails: a selector that stopped matching must not pass.
    """
    made = re.compile(r"ipw\.(Text|Combobox)\(")
    return {p.stem.removeprefix("nb") for p in folder.glob("nb*.py") if made.search(p.read_text(encoding="utf-8"))}


def other_moves(view):
    """Actions (callables) that change the first select, text box, checkbox, toggle or button in `view` (a
    Playwright locator), each a different change; [] when it holds none of those."""
    select = view.locator("select")
    if select.count():
        current = select.first.evaluate("(s) => s.selectedIndex")
        others = [i for i in range(select.first.locator("option").count()) if i != current]
        return [lambda i=i: select.first.select_option(index=i) for i in others[:2]]
    text = view.locator("input[type=text], input[type=number], textarea")
    if text.count():
        field = text.first

        def type_value(value):
            field.fill(value)
            field.press("Enter")

        numeric = field.get_attribute("type") == "number"
        return [lambda: type_value("2" if numeric else "attention"), lambda: type_value("3" if numeric else "query")]
    for selector in ("input[type=checkbox]", ".widget-toggle-button:not(.mod-active)", "button.jupyter-button"):
        clickable = view.locator(selector)
        if clickable.count():
            return [lambda clickable=clickable: clickable.first.click()]
    return []


def shorter_text(value):
    """`value` without its last word (its last character if it is one word): other text, of the same kind."""
    words = value.split()
    return " ".join(words[:-1]) if len(words) > 1 else value[:-1]


def type_then_enter(page, box, signature, settle, seconds=60):
    """Type other text into `box` (a locator) as a learner does (click, select all, type), then press Enter.

    signature() is what the explorer shows; settle() waits until the kernel has answered everything sent so far.
    -> (whether typing alone changed the output, whether Enter then changed it). A box that redraws as you type
    (continuous_update) has nothing left for Enter: the wait after Enter is 2 s there, `seconds` for a box that
    waits for Enter.
    """
    settle()  # an earlier move's redraw finished: what follows is this box's doing
    before = signature()
    box.scroll_into_view_if_needed()
    box.click()
    page.keyboard.press("Control+a")
    page.keyboard.type(shorter_text(box.input_value()))
    page.wait_for_timeout(1000)
    settle()
    typed = signature()
    page.keyboard.press("Enter")
    for _ in range(4 * (2 if typed != before else seconds)):
        if signature() != typed:
            break
        page.wait_for_timeout(250)
    return typed != before, signature() != typed
