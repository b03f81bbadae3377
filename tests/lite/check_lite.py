"""The JupyterLite edition in a real browser, with no network: make lite-test (and make lite-serve's server).

    unshare -n .venv-lite/bin/python tests/lite/check_lite.py build/lite build/lite-mirror [00 01 ...]
    .venv-lite/bin/python tests/lite/check_lite.py --serve PORT build/lite build/lite-mirror

Serves the built site on 127.0.0.1 with Pyodide from the offline mirror (tools/build_lite.py --mirror) in place
of Pyodide's CDN: the site's jupyter-lite.json is served with the mirror's address as pyodideUrl, and a request
for the CDN's address is answered from the mirror. Then, in Debian's headless chromium with a fresh profile:
1. each notebook (every one, or those whose numbers are given): opened, its stored outputs show no line that
   starts with a comma (a list of lines shown joined by commas), and once its kernel is ready the notebook is
   still unmodified (its tab shows no dot); Run All from the menu, then every code cell ran, no cell shows an
   error (nor anything on stderr), every image loaded; where the notebook has an explorer (a control above an
   Output widget), its first one responds: a slider moved by the arrow keys and by a mouse drag, or its other
   control moved as a mouse or typing moves it, changes its output (the kernel answered); and in every explorer
   with a text box, text typed there and Enter change its output;
2. a reload opens the notebook in front (one the link opened, then one opened from the file browser): the
   address keeps its ?path= (deploy/lite/lab-page.js);
3. the way back to the workshop's version (the note the build puts first in every notebook): a notebook edited
   and saved is what opens after a reload; Delete in the file browser's menu removes that copy and the shipped
   notebook opens again.
Every request must be for 127.0.0.1 (or the CDN's, answered from the mirror): a route aborts and records any
other. Run it inside `unshare -n` (the Makefile does), where the only network is loopback, so nothing can reach
the internet even past the route (a service worker's fetches, which Playwright's route does not see). Prints the
seconds of each notebook; exits 1 on any problem. The file name does not start with test_: `make test` never
collects it.
"""

import fcntl
import functools
import json
import os
import re
import socket
import struct
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tools"), str(ROOT / "tests" / "browser")]
import controls  # noqa: E402  (tests/browser/controls.py)
from build_lite import KERNEL_PLUGIN, PYODIDE_URL  # noqa: E402  (tools/build_lite.py)

CDN = PYODIDE_URL.rsplit("/", 1)[0] + "/"  # https://cdn.jsdelivr.net/pyodide/v0.27.7/full/
MIRROR_PATH = "/_pyodide-mirror/"  # where the server answers with the mirror's files
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
TIMEOUT = float(os.environ.get("LITE_TEST_TIMEOUT", "900"))  # seconds for one notebook's Run All
SETTLE = 3  # seconds the test waits after the kernel is ready, before it looks for a "modified" mark (not counted)
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check"]

# Settings a learner's site does not have but the test needs, served in place of the site's jupyter-lite.json:
# every cell in the DOM (JupyterLab otherwise renders only the cells in view, and the test would read empty
# prompts), no autosave (the browser's copy stays the shipped one), no news toast.
SETTINGS_OVERRIDES = {
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension:plugin": {"autosave": False},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}

CELLS_JS = """() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell')].map((cell) => {
  const outputs = [...cell.querySelectorAll('.jp-OutputArea-output')];
  return {
    prompt: (cell.querySelector('.jp-InputArea-prompt') || {textContent: ''}).textContent.trim(),
    hidden: cell.querySelector('.jp-InputPlaceholder') !== null,
    source: (cell.querySelector('.jp-InputArea-editor') || {textContent: ''}).textContent.slice(0, 60),
    stderr: outputs.filter((o) => o.getAttribute('data-mime-type') === 'application/vnd.jupyter.stderr')
                   .map((o) => o.textContent),
    images: [...cell.querySelectorAll('.jp-OutputArea-output img')].map((img) => img.complete && img.naturalWidth > 0),
    text: outputs.map((o) => o.textContent).join('\\n').slice(0, 2000),
  };
})"""

# The first explorer of the open notebook: a widget output holding a control above an Output widget (marked).
CONTROLS = (
    ".noUi-handle, .ui-slider-handle, select, input[type=text], input[type=number], textarea, "
    "input[type=checkbox], .widget-toggle-button, button.jupyter-button"
)
EXPLORER_JS = """(controls) => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  for (const out of panel.querySelectorAll('.jp-OutputArea-output')) {
    if (!out.querySelector('.jupyter-widgets')) continue;
    if (out.querySelector('.widget-output, .jupyter-widgets-output-area') && out.querySelector(controls)) {
      out.setAttribute('data-lite-explorer', '1');
      return true;
    }
  }
  return false;
}"""

# What the explorer's output shows now: its text and its pictures' addresses.
SIGNATURE_JS = """() => {
  const view = document.querySelector('[data-lite-explorer]');
  const out = view.querySelector('.widget-output, .jupyter-widgets-output-area');
  return out.textContent + '|' + [...out.querySelectorAll('img')].map((i) => i.src.length + i.src.slice(-48)).join(',');
}"""

COUNT_CELLS_JS = """() => document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell').length"""

# Lines of the open notebook's outputs that start with a comma: a stored list of lines shown as one joined by commas.
COMMA_LINES_JS = """() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output')]
  .flatMap((out) => out.textContent.split('\\n')).filter((line) => line.startsWith(','))"""

# The open notebook's kernel status ('' before it has one) and whether its tab shows it modified.
STATE_JS = """() => {
  const widget = window.jupyterapp.shell.currentWidget;
  const session = widget && widget.sessionContext && widget.sessionContext.session;
  const tab = document.querySelector('#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current');
  return {kernel: session && session.kernel ? session.kernel.status : '',
          modified: tab !== null && tab.classList.contains('jp-mod-dirty')};
}"""

# Every explorer of the open notebook that has a text box, marked (data-lite-text-explorer="0", "1", ...): from
# each box, the nearest element that also holds an Output widget. -> how many.
TEXT_EXPLORERS_JS = """(box) => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const found = [];
  for (const input of panel.querySelectorAll(box)) {
    let node = input.parentElement;
    while (node !== panel && !node.querySelector('.widget-output, .jupyter-widgets-output-area')) {
      node = node.parentElement;
    }
    if (node !== panel && !found.includes(node)) {
      node.setAttribute('data-lite-text-explorer', String(found.length));
      found.push(node);
    }
  }
  return found.length;
}"""

# What a marked explorer's output shows now (as SIGNATURE_JS).
TEXT_SIGNATURE_JS = """(index) => {
  const view = document.querySelector(`[data-lite-text-explorer="${index}"]`);
  const out = view.querySelector('.widget-output, .jupyter-widgets-output-area');
  return out.textContent + '|' + [...out.querySelectorAll('img')].map((i) => i.src.length + i.src.slice(-48)).join(',');
}"""


def loopback_up():
    """In a fresh network namespace the loopback interface is down: bring it up (SIOCSIFFLAGS, IFF_UP)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, request)[:18])[1]  # SIOCGIFFLAGS
        if not flags & 1:
            fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1))  # SIOCSIFFLAGS


class SiteHandler(SimpleHTTPRequestHandler):
    """The built site as it is, but for its jupyter-lite.json (pyodideUrl: the mirror's, when there is one; the
    test's SETTINGS_OVERRIDES), and MIRROR_PATH answered from the mirror's folder; quiet."""

    mirror = None  # the mirror's folder (a Path), or None: Pyodide from its CDN
    overrides = {}  # settingsOverrides added to jupyter-lite.json

    def translate_path(self, path):
        if self.mirror is not None and path.startswith(MIRROR_PATH):
            name = path[len(MIRROR_PATH) :].split("?")[0]
            return str(self.mirror / name) if "/" not in name else str(self.mirror / "missing")
        return super().translate_path(path)

    def do_GET(self):
        if self.path.split("?")[0] != "/jupyter-lite.json":
            return super().do_GET()
        config = json.loads((Path(self.directory) / "jupyter-lite.json").read_text(encoding="utf-8"))
        data = config["jupyter-config-data"]
        if self.mirror is not None:
            data["litePluginSettings"][KERNEL_PLUGIN]["pyodideUrl"] = MIRROR_PATH + PYODIDE_URL.rsplit("/", 1)[1]
        data.setdefault("settingsOverrides", {}).update(self.overrides)
        body = json.dumps(config).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class QuietServer(ThreadingHTTPServer):
    """A browser that navigates away drops its downloads: say nothing of connections it reset."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def serve(site, mirror, port, overrides):
    """The site (and the mirror) on 127.0.0.1:port (0: any free port), in a thread: the server."""
    handler = type("Handler", (SiteHandler,), {"mirror": mirror, "overrides": overrides})
    server = QuietServer(("127.0.0.1", port), functools.partial(handler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def new_context(browser, base, mirror, blocked):
    """A fresh profile (its own storage) whose requests stay on 127.0.0.1; the CDN's answered from the mirror."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})

    def route(r):
        url = r.request.url
        if url.startswith(CDN) and (mirror / url[len(CDN) :].split("?")[0]).is_file():
            r.fulfill(path=str(mirror / url[len(CDN) :].split("?")[0]))
        else:
            blocked.append(url)
            r.abort()

    # Only what is not the site reaches Python: a routed request waits for this script's next call into Playwright
    # (the sync API pumps its events only then), so routing the site's own requests too made every notebook
    # several times slower (04: 180 s instead of 45 s). The pattern is matched in Playwright's driver.
    context.route(re.compile(rf"^(?!{re.escape(base)})(?!data:)(?!blob:)"), route)
    return context


def ran(cells):
    """Whether each cell ran: its prompt shows a number. A cell whose code is collapsed (the first cell) shows no
    prompt: it ran if a later cell did (Run All goes in order and stops at an error)."""
    counted = [cell["prompt"].strip("[]: ").isdigit() for cell in cells]
    return [
        c or (cell["hidden"] and any(counted[i + 1 :])) for i, (c, cell) in enumerate(zip(counted, cells, strict=True))
    ]


def problems_of(cells):
    problems = []
    for i, (cell, done) in enumerate(zip(cells, ran(cells), strict=True)):
        where = f"cell {i} ({cell['source'].splitlines()[0] if cell['source'] else ''!r})"
        if not done:
            problems.append(f"{where} did not run (prompt {cell['prompt']!r})")
        for text in cell["stderr"]:  # an error, or a notice that looks like one (matplotlib's font cache)
            kind = "an error" if "Traceback" in text or "Error" in text else "text on stderr"
            problems.append(f"{where} shows {kind}: {(text.strip().splitlines() or [''])[-1][:300]}")
        if not all(cell["images"]):
            problems.append(f"{where} shows an image that did not load")
        for phrase in ("Error displaying widget", "model not found"):
            if phrase in cell["text"]:
                problems.append(f"{where} shows {phrase!r}")
    return problems


def route_blocks_the_outside(browser, base, mirror):
    """The route records and aborts a request for outside 127.0.0.1 and answers one for the CDN from the mirror."""
    blocked = []
    context = new_context(browser, base, mirror, blocked)
    page = context.new_page()
    page.goto(f"{base}lab/index.html")
    outside = page.evaluate("() => fetch('https://example.org/probe').then(() => 'answered', () => 'failed')")
    core = page.evaluate(f"() => fetch('{CDN}pyodide.js').then((r) => r.status, () => 'failed')")
    context.close()
    return outside == "failed" and blocked == ["https://example.org/probe"] and core == 200


def open_notebook(page, base, name):
    page.goto(f"{base}lab/index.html?path=notebooks/{name}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook", timeout=180_000)
    try:  # no "Select Kernel" dialog is expected (the build sets the kernelspec), but answer one
        page.wait_for_selector(".jp-Dialog .jp-mod-accept", timeout=5000).click()
    except Exception:
        pass
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator", timeout=60_000)


def on_open_problems(page):
    """The stored outputs show no line starting with a comma; once the kernel is ready the notebook is unmodified.
    -> (problems, time.monotonic() when the kernel was first seen ready)"""
    commas = page.evaluate(COMMA_LINES_JS)
    problems = [f"a stored output shows a line starting with a comma: {line[:80]!r}" for line in commas]
    state = page.evaluate(STATE_JS)
    for _ in range(720):  # Pyodide starting: about 10 s on an idle machine
        if state["kernel"] == "idle":
            break
        page.wait_for_timeout(250)
        state = page.evaluate(STATE_JS)
    ready = time.monotonic()
    page.wait_for_timeout(1000 * SETTLE)  # JupyterLab writes what the kernel reports into the notebook as it connects
    state = page.evaluate(STATE_JS)
    if state["kernel"] != "idle":
        problems.append(f"the kernel was not ready 3 minutes after opening: {state['kernel']!r}")
    if state["modified"]:
        problems.append("the notebook is marked modified as soon as it opened, before anything ran")
    return problems, ready


def slider_moves(page, handle):
    """The ways a learner moves a slider: by the arrow keys (away from the end it is at), and by a mouse drag."""

    def key(name):  # ten presses: one step can leave the output as it was (04's d_k 1024 -> 512: still one-hot)
        handle.focus()
        for _ in range(10):
            handle.press(name)
            page.wait_for_timeout(300)

    def drag(dx):
        box = handle.bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + dx, y, steps=6)
        page.mouse.up()

    now, top = (handle.get_attribute(name) for name in ("aria-valuenow", "aria-valuemax"))
    at_top = now is not None and top is not None and float(now) >= float(top)
    keys = ["ArrowLeft", "ArrowRight"] if at_top else ["ArrowRight", "ArrowLeft"]
    return {
        "the arrow keys": [lambda k=k: key(k) for k in keys],
        "a mouse drag": [lambda: drag(60), lambda: drag(-120)],
    }


def changes_output(page, actions, signature):
    """Whether one of the actions (tried in turn) changes what signature() shows."""
    before = signature()
    for action in actions:
        action()
        for _ in range(60):  # Pyodide answers in seconds; a figure can take longer
            if signature() != before:
                return True
            page.wait_for_timeout(1000)
    return False


def drive_explorer(page):
    """Move the notebook's first explorer (a slider both ways); '' if its output changed each time, else what went
    wrong."""
    if not page.evaluate(EXPLORER_JS, CONTROLS):
        return "the notebook shows a widget but no explorer (a control above an Output) was found"
    explorer = page.locator("[data-lite-explorer]")
    explorer.scroll_into_view_if_needed()
    handle = explorer.locator(".noUi-handle, .ui-slider-handle")
    moves = slider_moves(page, handle.first) if handle.count() else {"its control": controls.other_moves(explorer)}
    for how, actions in moves.items():
        if not changes_output(page, actions, lambda: page.evaluate(SIGNATURE_JS)):
            return f"its first explorer's output did not change when {how} moved its control"
    return ""


def settle(page):
    """Wait until the kernel has been idle for a second (every widget message answered; 2 minutes at most)."""
    quiet = 0
    for _ in range(240):
        quiet = quiet + 1 if page.evaluate(STATE_JS)["kernel"] == "idle" else 0
        if quiet > 2:
            return
        page.wait_for_timeout(500)


def text_box_problems(page):
    """In every explorer with a text box: text typed there, then Enter, changes its output. -> (problems, how many
    explorers answered)."""
    problems, answered = [], 0
    for index in range(page.evaluate(TEXT_EXPLORERS_JS, controls.TEXT_BOX)):
        box = page.locator(f'[data-lite-text-explorer="{index}"] {controls.TEXT_BOX}').first
        signature = functools.partial(page.evaluate, TEXT_SIGNATURE_JS, index)
        typing, enter = controls.type_then_enter(page, box, signature, lambda: settle(page), 120)
        if typing or enter:
            answered += 1
            print(f"    explorer {index} with a text box: redrawn {'as typed' if typing else 'on Enter'}", flush=True)
        else:
            problems.append(f"explorer {index} with a text box: its output did not change after typing and Enter")
    return problems, answered


def run_notebook(browser, base, mirror, path, blocked):
    """Open and check, Run All, wait, check, drive an explorer and type in every text box: (problems, seconds, code
    cells, whether an explorer was driven, how many explorers with a text box answered typing and Enter)."""
    context = new_context(browser, base, mirror, blocked)
    page = context.new_page()
    start = time.monotonic()
    open_notebook(page, base, path.name)
    problems, ready = on_open_problems(page)
    print(f"    its kernel was ready {ready - start:.0f} s after the notebook was asked for", flush=True)
    page.click(".lm-MenuBar-itemLabel:text-is('Run')")
    page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
    deadline, quiet_since, cell_seconds, last = start + TIMEOUT, None, {}, time.monotonic()
    while time.monotonic() < deadline:
        cells = page.evaluate(CELLS_JS)
        now, running = time.monotonic(), [i for i, c in enumerate(cells) if "*" in c["prompt"]]
        if running:  # Run All queues every cell: the first one waiting is the one running
            cell_seconds[running[0]] = cell_seconds.get(running[0], 0) + now - last
        last = now
        if cells and all(ran(cells)):
            break
        busy = bool(running)
        quiet_since = None if busy else (quiet_since or time.monotonic())
        if quiet_since and time.monotonic() - quiet_since > 30:
            break  # nothing running or queued: Run All stopped at an error
        page.wait_for_timeout(2000)
    seconds = time.monotonic() - start - SETTLE
    cells = page.evaluate(CELLS_JS)
    ran_problems = problems_of(cells)
    problems += ran_problems
    slowest = sorted(cell_seconds.items(), key=lambda item: -item[1])[:3]
    for i, spent in slowest:  # about (polled every 2 s)
        print(f"    cell {i} ran about {spent:.0f} s: {cells[i]['source'].splitlines()[0][:60]!r}", flush=True)
    driven, boxes = False, 0
    shipped = json.loads(path.read_text(encoding="utf-8"))
    has_widget = any(WIDGET_VIEW in o.get("data", {}) for c in shipped["cells"] for o in c.get("outputs", []))
    if has_widget and not ran_problems:
        problem = drive_explorer(page)
        driven = not problem
        problems += [problem] if problem else []
        typed, boxes = text_box_problems(page)
        problems += typed
    if path.stem in controls.notebooks_with_a_text_box() and not boxes and not ran_problems:
        problems.append("its explorer has a text box, but none was found to type in (has controls.TEXT_BOX changed?)")
    shots = ROOT / "screenshots"
    shots.mkdir(exist_ok=True)
    page.screenshot(path=str(shots / f"lite-{path.stem}.png"))
    context.close()
    return problems, seconds, len(cells), driven, boxes


def reload_problems(browser, base, mirror, first, second, blocked):
    """A reload opens the notebook in front: `first`, opened by the link, then `second`, from the file browser."""
    problems = []
    context = new_context(browser, base, mirror, blocked)
    page = context.new_page()
    open_notebook(page, base, first.name)
    for path in (first, second):
        if path is second:  # from the file browser (the link showed notebooks/ in it; after a reload it may not)
            item = page.locator(f".jp-DirListing-item:has-text('{second.name}')")
            if not item.count():
                page.dblclick(".jp-DirListing-item:has-text('notebooks')")
            item.dblclick()
        current = f"#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current:has-text('{path.name}')"
        page.wait_for_selector(current, timeout=60_000)
        for _ in range(40):
            if page.url.endswith(f"?path=notebooks/{path.name}"):
                break
            page.wait_for_timeout(250)
        else:
            problems.append(f"with {path.name} in front the address is {page.url}")
        page.reload()
        page.wait_for_selector("#jp-main-dock-panel .lm-TabBar-tab", timeout=180_000)  # a notebook, or the Launcher
        try:
            page.wait_for_selector(current, timeout=30_000)
        except Exception:
            tabs = page.locator("#jp-main-dock-panel .lm-TabBar-tab").all_inner_texts()
            problems.append(f"after a reload with {path.name} in front, the tabs are {tabs}")
    if not problems:
        print(f"reload: {first.name}, then {second.name}, each in front again after a reload", flush=True)
    context.close()
    return problems


def way_back_problems(browser, base, mirror, path, blocked):
    """A saved edit is what opens after a reload; Delete in the file browser brings the shipped notebook back."""
    problems = []
    context = new_context(browser, base, mirror, blocked)
    page = context.new_page()
    open_notebook(page, base, path.name)
    shipped = page.evaluate(COUNT_CELLS_JS)
    note = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").first.inner_text()
    if "back" not in note or "Delete" not in note:
        problems.append(f"the first cell is not the way-back note: {note[:120]!r}")
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").nth(1).click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")  # a new cell below, as a learner's edit
    page.keyboard.press("Control+s")
    page.wait_for_timeout(3000)
    page.goto(f"{base}lab/index.html?reset")  # no open tabs, then the same notebook anew
    open_notebook(page, base, path.name)
    edited = page.evaluate(COUNT_CELLS_JS)
    if edited != shipped + 1:
        problems.append(f"after saving and reloading: {edited} cells, not the edited {shipped + 1}")
    page.goto(f"{base}lab/index.html?reset")
    page.wait_for_selector(".jp-DirListing-item", timeout=60_000)
    page.dblclick(".jp-DirListing-item:has-text('notebooks')")
    item = page.locator(f".jp-DirListing-item:has-text('{path.name}')")
    item.wait_for(timeout=30_000)
    # the right-click menu's Delete closes when the listing refreshes (every few seconds), so select the file and
    # press the Delete key, the same command
    item.click()
    page.keyboard.press("Delete")
    page.wait_for_selector(".jp-Dialog .jp-mod-accept", timeout=10_000).click()
    page.wait_for_timeout(3000)
    open_notebook(page, base, path.name)
    back = page.evaluate(COUNT_CELLS_JS)
    if back != shipped:
        problems.append(f"after Delete in the file browser: {back} cells, not the shipped {shipped}")
    print(f"way back: shipped {shipped} cells, saved edit {edited}, after Delete {back}", flush=True)
    page.screenshot(path=str(ROOT / "screenshots" / "lite-way-back.png"))
    context.close()
    return problems


def main(argv):
    if argv[0] == "--serve":  # make lite-serve: the site for a person, until Ctrl+C
        port, site, mirror = int(argv[1]), Path(argv[2]).resolve(), Path(argv[3]).resolve()
        mirror = mirror if (mirror / "pyodide.js").is_file() else None
        server = serve(site, mirror, port, {})
        where = f"the mirror in {mirror}" if mirror else f"its CDN ({CDN}; make lite-test builds an offline mirror)"
        print(f"http://127.0.0.1:{port}/lab/index.html (Pyodide from {where}); Ctrl+C stops it", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            server.shutdown()
        return
    site, mirror, numbers = Path(argv[0]).resolve(), Path(argv[1]).resolve(), argv[2:]
    notebooks = sorted((site / "files" / "notebooks").glob("*.ipynb"))
    chosen = [p for p in notebooks if not numbers or p.name[:2] in numbers]
    if not chosen:
        sys.exit(f"no notebooks {numbers} in {site}/files/notebooks: run make lite first")
    if not (mirror / "pyodide.js").is_file():
        sys.exit(f"no Pyodide mirror in {mirror}: run .venv-lite/bin/python tools/build_lite.py --mirror {mirror}")
    try:
        loopback_up()
    except OSError as exc:
        print(f"(loopback not brought up: {exc}; fine outside a network namespace)")
    server = serve(site, mirror, 0, SETTINGS_OVERRIDES)
    base, blocked, failed, times = f"http://127.0.0.1:{server.server_port}/", [], False, {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            if not route_blocks_the_outside(browser, base, mirror):
                print("the route let a request for outside 127.0.0.1 through unrecorded: this test cannot be trusted")
                sys.exit(1)
            for path in chosen:
                problems, seconds, n, drove, boxes = run_notebook(browser, base, mirror, path, blocked)
                times[path.name] = round(seconds)
                status = "ok" if not problems else "FAILED"
                extra = ", its first explorer responded" if drove else ""
                extra += f", {boxes} explorer(s) answered typing and Enter" if boxes else ""
                print(f"{path.name}: {n} code cells, {seconds:.0f} s, {status}{extra}", flush=True)
                for problem in problems:
                    print(f"    {problem}")
                failed = failed or bool(problems)
            second = ([p for p in chosen if p != chosen[0]] + [p for p in notebooks if p != chosen[0]])[0]
            for name, problems in (
                ("reload", reload_problems(browser, base, mirror, chosen[0], second, blocked)),
                ("way back", way_back_problems(browser, base, mirror, chosen[0], blocked)),  # the first chosen
            ):
                for problem in problems:
                    print(f"    {name}: {problem}")
                failed = failed or bool(problems)
            browser.close()
    finally:
        server.shutdown()
    (ROOT / "screenshots" / "lite-times.json").write_text(json.dumps(times, indent=1) + "\n")
    print(f"seconds per notebook (screenshots/lite-times.json): {times}; total {sum(times.values())} s")
    if blocked:
        print(f"requests that left 127.0.0.1 (aborted): {len(blocked)}, e.g. {blocked[:5]}")
    sys.exit(1 if failed or blocked else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
