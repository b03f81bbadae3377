"""How both browser tests move an explorer's control other than a slider, the way a learner would.

Used by tests/browser/check_in_browser.py (JupyterLab) and tests/lite/check_lite.py (JupyterLite), which each move
a slider their own way (keys there, a mouse drag in JupyterLite, where the arrow keys do not move one).
"""


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
