"""The JupyterLite edition in a real browser, with no network: make lite-test.

    unshare -n .venv-lite/bin/python tests/lite/check_lite.py build/lite 00 01 03 09

Serves the built site on 127.0.0.1 and opens each notebook (by its number) in Debian's headless chromium, in a
fresh profile: Run All from the menu, then checks that every code cell ran, no cell shows an error (a stderr line
is allowed: matplotlib's first "building the font cache"), every image loaded, and in the first notebook with a
slider explorer, a mouse drag on the slider changes the explorer's output (the kernel answered). Every request must
be for 127.0.0.1: a route aborts and records any other. Run it inside `unshare -n` (the Makefile does), where the
only network is loopback, so nothing can reach the internet even past the route (a service worker's fetches, which
Playwright's route does not see). Prints the seconds of each notebook; exits 1 on any problem.
The file name does not start with test_: `make test` never collects it.
"""

import fcntl
import functools
import json
import os
import socket
import struct
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
TIMEOUT = float(os.environ.get("LITE_TEST_TIMEOUT", "900"))  # seconds for one notebook's Run All
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

SIGNATURE_JS = """(handle) => {
  const view = handle.closest('.jp-OutputArea-output');
  const out = view.querySelector('.widget-output, .jupyter-widgets-output-area') || view;
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
    """The built site as it is, but for its jupyter-lite.json, which gets SETTINGS_OVERRIDES; quiet."""

    def do_GET(self):
        if self.path.split("?")[0] != "/jupyter-lite.json":
            return super().do_GET()
        config = json.loads((Path(self.directory) / "jupyter-lite.json").read_text(encoding="utf-8"))
        config["jupyter-config-data"].setdefault("settingsOverrides", {}).update(SETTINGS_OVERRIDES)
        body = json.dumps(config).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


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
        for text in cell["stderr"]:
            if "Traceback" in text or "Error" in text:
                problems.append(f"{where} shows an error: {text.strip().splitlines()[-1][:300]}")
        if not all(cell["images"]):
            problems.append(f"{where} shows an image that did not load")
        for phrase in ("Error displaying widget", "model not found"):
            if phrase in cell["text"]:
                problems.append(f"{where} shows {phrase!r}")
    return problems


def run_notebook(browser, base, path, drive, blocked):
    """Open, Run All, wait, check; (problems, seconds, cells, whether an explorer was driven)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})

    def route(r):
        if r.request.url.startswith(base) or r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    start = time.monotonic()
    page.goto(f"{base}lab/index.html?path=notebooks/{path.name}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook", timeout=180_000)
    try:  # no "Select Kernel" dialog is expected (the build sets the kernelspec), but answer one
        page.wait_for_selector(".jp-Dialog .jp-mod-accept", timeout=5000).click()
    except Exception:
        pass
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator", timeout=60_000)
    page.click(".lm-MenuBar-itemLabel:text-is('Run')")
    page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
    deadline, quiet_since = start + TIMEOUT, None
    while time.monotonic() < deadline:
        cells = page.evaluate(CELLS_JS)
        if cells and all(ran(cells)):
            break
        busy = any("*" in c["prompt"] for c in cells)
        quiet_since = None if busy else (quiet_since or time.monotonic())
        if quiet_since and time.monotonic() - quiet_since > 30:
            break  # nothing running or queued: Run All stopped at an error
        time.sleep(2)
    seconds = time.monotonic() - start
    cells = page.evaluate(CELLS_JS)
    problems = problems_of(cells)
    driven = False
    if drive and not problems:
        handles = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jupyter-widgets .noUi-handle")
        if handles.count():
            handle = handles.first
            handle.scroll_into_view_if_needed()
            before = handle.evaluate(SIGNATURE_JS)
            box = handle.bounding_box()
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.mouse.down()
            page.mouse.move(box["x"] + box["width"] / 2 + 60, box["y"] + box["height"] / 2, steps=6)
            page.mouse.up()
            for _ in range(60):
                if handle.evaluate(SIGNATURE_JS) != before:
                    driven = True
                    break
                time.sleep(1)
            if not driven:
                problems.append("the first slider explorer's output did not change when its slider was dragged")
    shots = Path(__file__).resolve().parents[2] / "screenshots"
    shots.mkdir(exist_ok=True)
    page.screenshot(path=str(shots / f"lite-{path.stem}.png"))
    context.close()
    return problems, seconds, len(cells), driven


def main(site, numbers):
    site = Path(site).resolve()
    notebooks = sorted((site / "files" / "notebooks").glob("*.ipynb"))
    chosen = [p for p in notebooks if not numbers or p.name[:2] in numbers]
    if not chosen:
        sys.exit(f"no notebooks {numbers} in {site}/files/notebooks: run make lite first")
    try:
        loopback_up()
    except OSError as exc:
        print(f"(loopback not brought up: {exc}; fine outside a network namespace)")
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(SiteHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base, blocked, failed, driven = f"http://127.0.0.1:{server.server_port}/", [], False, False
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for path in chosen:
                problems, seconds, n, drove = run_notebook(browser, base, path, not driven, blocked)
                driven = driven or drove
                status = "ok" if not problems else "FAILED"
                extra = ", an explorer driven by a mouse drag" if drove else ""
                print(f"{path.name}: {n} code cells, {seconds:.0f} s, {status}{extra}", flush=True)
                for problem in problems:
                    print(f"    {problem}")
                failed = failed or bool(problems)
            browser.close()
    finally:
        server.shutdown()
    if blocked:
        print(f"requests that left 127.0.0.1 (aborted): {len(blocked)}, e.g. {blocked[:5]}")
    if not driven:
        print("no slider explorer was driven (none found, or an earlier problem)")
    sys.exit(1 if failed or blocked or not driven else 0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
