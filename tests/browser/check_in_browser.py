"""Every notebook, run by a real JupyterLab (and Notebook 7) in headless Chromium.

nbval compares what the kernel printed; it cannot see what a learner sees. This test opens
each notebook in the browser, clears its outputs, runs all cells and checks the page: no
error output, every image loaded, every widget rendered, and each interactive explorer
answers when one of its controls moves, and when text is typed in its text box and Enter
pressed. A screenshot of each notebook goes to screenshots/.
In JupyterLab it also checks accessibility (accessibility.py beside this file): each notebook's
explorer driven by keyboard alone, axe-core on the page after Run All (no serious or critical
violation in the workshop's own output), and the same page again in JupyterLab Dark (axe, the
contrast of our SVG charts' text, and a screenshot, lab-dark-*.png). axe's counts go to
screenshots/axe.json and a table at the end.
It also opens each notebook untouched and saves it: the file must not change (a notebook
that JupyterLab rewrites on opening clashes with `git pull` once autosave has run).

Run it with `make browser-test` (it installs chromium and playwright first). The file name
does not start with test_, so the plain `pytest tests` of `make test` never collects it.

Settings (environment variables):
  BROWSER_TEST_NOTEBOOKS   a folder of notebooks (default: the repository's notebooks/)
  BROWSER_TEST_NB7         notebook names for Notebook 7, comma separated
                           (default: 00 and the first other notebook with a widget)
  BROWSER_TEST_TIMEOUT     seconds allowed for one notebook's Run All (default 600)
  CHROMIUM                 the browser (default /usr/bin/chromium)
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

playwright_sync = pytest.importorskip("playwright.sync_api", reason="pip install -r requirements-browser.txt")
pytest.importorskip("axe_playwright_python", reason="pip install -r requirements-browser.txt")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accessibility  # noqa: E402 - beside this file, after the check that its axe-core is installed
import controls  # noqa: E402 - beside this file

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = Path(os.environ.get("BROWSER_TEST_NOTEBOOKS", ROOT / "notebooks")).resolve()
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
SCREENSHOTS = ROOT / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
RUN_TIMEOUT = float(os.environ.get("BROWSER_TEST_TIMEOUT", "600"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# An image with fewer drawn pixels than this is blank: a real plot has axes, ticks and labels
# (about 3% of the pixels for a bare line plot, 20% for a bar chart), a failed draw ~0.3%.
BLANK = 0.01
CHROMIUM_ARGS = [
    "--no-sandbox",  # as root in a container there is no user namespace for the sandbox
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--no-first-run",
    "--no-default-browser-check",
]

# Settings a fresh user would not have, but a test needs: every cell in the DOM (JupyterLab 4
# otherwise renders only the cells in view, and the test would silently check those only),
# no autosave (the committed notebooks must not change), no news or update toasts.
SETTINGS_OVERRIDES = {
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension:plugin": {"autosave": False},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}

TIMES = []  # (interface, notebook, {phase: seconds}) for the summary at the end
PAGE_ERRORS = []  # (interface, notebook, [messages]): reported, not failures (Notebook 7 logs one on load)
KEYBOARD_LOG = []  # (notebook, [the keyboard moves made on its explorer])


def has_widget(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return any(WIDGET_VIEW in o.get("data", {}) for c in cells if c["cell_type"] == "code" for o in c["outputs"])


def notebook7_choice():
    """00 and the first other notebook that shows a widget (or the names in BROWSER_TEST_NB7)."""
    if os.environ.get("BROWSER_TEST_NB7"):
        names = [n.strip() for n in os.environ["BROWSER_TEST_NB7"].split(",") if n.strip()]
        return [p for p in NOTEBOOKS if p.name in names or p.stem in names]
    chosen = [p for p in NOTEBOOKS if p.name.startswith("00")][:1]
    chosen += [p for p in NOTEBOOKS if p not in chosen and has_widget(p)][:1]
    return chosen


# --------------------------------------------------------------------------- the server


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """A JupyterLab server (which also serves Notebook 7) with throwaway config and state."""

    def __init__(self, root_dir):
        self.root_dir = root_dir
        self.tmp = Path(tempfile.mkdtemp(prefix="browser-test-"))
        self.port = free_port()
        self.token = os.urandom(16).hex()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = self.tmp / "server.log"
        self.proc = None

    def start(self):
        dirs = {
            name: self.tmp / name
            for name in ("config", "runtime", "data", "workspaces", "user-settings", "app-settings", "ipython")
        }
        for path in dirs.values():
            path.mkdir()
        (dirs["app-settings"] / "overrides.json").write_text(json.dumps(SETTINGS_OVERRIDES, indent=2))
        env = dict(os.environ)
        env.pop("MPLBACKEND", None)  # inherited by the kernels, it would silently stop inline plots
        for name in ("JUPYTER_CONFIG_PATH", "JUPYTER_PATH"):  # no settings or extensions from outside
            env.pop(name, None)
        env.update(
            JUPYTER_CONFIG_DIR=str(dirs["config"]),
            JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
            JUPYTER_DATA_DIR=str(dirs["data"]),
            JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
            JUPYTERLAB_SETTINGS_DIR=str(dirs["user-settings"]),
            IPYTHONDIR=str(dirs["ipython"]),
            JUPYTER_PLATFORM_DIRS="1",
        )
        settings = str(dirs["app-settings"])
        cmd = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root_dir}",
            f"--LabApp.app_settings_dir={settings}",
            f"--JupyterNotebookApp.app_settings_dir={settings}",
            f"--LabApp.workspaces_dir={dirs['workspaces']}",
            "--LabApp.expose_app_in_browser=True",
            "--JupyterNotebookApp.expose_app_in_browser=True",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        self.log = open(self.log_path, "w")  # closed in stop()
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.root_dir
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                self.api("GET", "/api/status")
                return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"jupyter lab did not answer within 90 s:\n{self.log_tail()}")

    def log_tail(self, lines=40):
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def api(self, method, path, timeout=10):
        request = urllib.request.Request(
            self.base + path, method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def sessions(self):
        return self.api("GET", "/api/sessions")

    def delete_sessions(self):
        """Shut down every kernel this server runs, so each notebook starts from a fresh one."""
        for session in self.sessions():
            self.api("DELETE", f"/api/sessions/{session['id']}", timeout=30)
        for kernel in self.api("GET", "/api/kernels"):
            self.api("DELETE", f"/api/kernels/{kernel['id']}", timeout=30)

    def kernel_state(self, path):
        for session in self.sessions():
            if session["path"] == path and session.get("kernel"):
                return session["kernel"]["execution_state"]
        return None

    def stop(self):
        """Stop the server by its PID (it shuts its kernels down on SIGTERM)."""
        if self.proc is None:
            return
        try:
            self.delete_sessions()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


# --------------------------------------------------------------------------- fixtures


class TimesReport:
    """A pytest plugin object: prints the per-notebook times after the test summary."""

    def pytest_terminal_summary(self, terminalreporter):
        if not TIMES:
            return
        terminalreporter.section("browser test: seconds per notebook")
        phases = ["open", "run all", "checks", "widgets", "a11y", "screenshot", "total"]
        terminalreporter.write_line(f"{'interface':<10} {'notebook':<36}" + "".join(f"{p:>11}" for p in phases))
        for interface, name, seconds in TIMES:
            row = "".join(f"{seconds.get(p, 0.0):>11.1f}" for p in phases)
            terminalreporter.write_line(f"{interface:<10} {name:<36}{row}")
        for interface, name, errors in PAGE_ERRORS:
            terminalreporter.write_line(f"page errors in {interface} {name} (not failures): {errors}")
        if accessibility.AXE_RESULTS:
            accessibility.write_axe_json(SCREENSHOTS / "axe.json")
            terminalreporter.section("browser test: accessibility")
            for line in accessibility.axe_table_lines():
                terminalreporter.write_line(line)
            terminalreporter.write_line(f"(every node: {SCREENSHOTS / 'axe.json'})")
            for theme in accessibility.THEMES:
                texts = [(n, bad) for t, n, bad in accessibility.TEXT_CHECKS if t == theme]
                terminalreporter.write_line(
                    f"text contrast, {theme} theme: {sum(n for n, _ in texts)} texts in the outputs checked, "
                    f"{sum(bad for _, bad in texts)} below {accessibility.MIN_CONTRAST}:1"
                )
        for name, log in KEYBOARD_LOG:
            terminalreporter.write_line(f"keyboard, {name}: " + "; ".join(log))


@pytest.fixture(scope="session")
def server(request):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (make browser-test does it)")
    request.config.pluginmanager.register(TimesReport(), "browser-times")
    srv = Server(NOTEBOOKS_DIR.parent)
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def browser(server):
    with playwright_sync.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser, server):
    server.delete_sessions()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    yield page
    context.close()
    server.delete_sessions()


# --------------------------------------------------------------------------- in the page

# Functions run in the page. `window.jupyterapp` is exposed by expose_app_in_browser; the
# commands are the ones the menus call (Edit > Clear Outputs of All Cells, Run > Run All Cells).
PANEL_JS = """
window.__panel = (path) => {
  const app = window.jupyterapp;
  if (!app || !app.shell) return null;
  for (const w of app.shell.widgets('main')) {
    if (w.context && w.context.path === path && w.content && w.content.model) return w;
  }
  return null;
};
// the widget views shown as cell outputs (not the widgets nested inside them)
window.__views = (root) => [...root.querySelectorAll(
  '.jp-Cell-outputArea > .jp-OutputArea-child > .jp-OutputArea-output')].filter(
  (o) => o.querySelector(':scope > .jupyter-widgets') !== null);
// the share of an image's pixels that differ from its corner: a blank figure has ~0
window.__ink = (img) => {
  if (!img.complete || img.naturalWidth === 0) return 0;
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.drawImage(img, 0, 0);
  const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
  let ink = 0;
  for (let i = 0; i < data.length; i += 4) {
    const d = Math.abs(data[i] - data[0]) + Math.abs(data[i + 1] - data[1]) + Math.abs(data[i + 2] - data[2]);
    if (d > 60) ink += 1;
  }
  return ink / (data.length / 4);
};
"""

READY_JS = """(path) => {
  const panel = window.__panel(path);
  return !!(panel && panel.context.isReady && panel.sessionContext.session
            && panel.sessionContext.session.kernel && panel.content.widgets.length > 0);
}"""

PREPARE_JS = """async (path) => {
  const app = window.jupyterapp, panel = window.__panel(path);
  app.shell.activateById(panel.id);
  await panel.sessionContext.ready;
  await app.commands.execute('notebook:clear-all-cell-outputs');
  const cells = panel.content.model.cells;
  let outputs = 0, counted = 0;
  for (let i = 0; i < cells.length; i++) {
    const cell = cells.get(i);
    if (cell.type === 'code') {
      outputs += cell.outputs.length;
      if (cell.executionCount !== null) counted += 1;
    }
  }
  // the settings this page really uses (the overrides arrive as the schemas' defaults)
  const settings = {};
  for (const [id, key] of [['@jupyterlab/notebook-extension:tracker', 'windowingMode'],
                           ['@jupyterlab/docmanager-extension:plugin', 'autosave']]) {
    const plugin = await app.serviceManager.settings.fetch(id);
    let user = {};  // the throwaway user-settings folder is empty: raw is '{}' or comments
    try { user = JSON.parse(plugin.raw); } catch (e) { user = {}; }
    settings[key] = key in user ? user[key] : plugin.schema.properties[key].default;
  }
  return {outputs, counted, settings};
}"""

RUN_ALL_JS = """async (path) => {
  const app = window.jupyterapp, panel = window.__panel(path);
  app.shell.activateById(panel.id);
  app.commands.execute('notebook:run-all-cells');  // resolves when all ran: do not await here
  return true;
}"""

# how far Run All has got: code cells, cells with an execution count, cells shown as [*]
PROGRESS_JS = """(path) => {
  const panel = window.__panel(path);
  let code = 0, counted = 0, pending = 0;
  panel.content.widgets.forEach((cell) => {
    if (cell.model.type !== 'code') return;
    code += 1;
    if (cell.model.executionCount !== null) counted += 1;
    const prompt = cell.node.querySelector('.jp-InputArea-prompt');
    if (prompt && prompt.textContent.includes('*')) pending += 1;
  });
  return {code, counted, pending};
}"""

IMAGES_LOADED_JS = """(path) => {
  const panel = window.__panel(path);
  return [...panel.content.node.querySelectorAll('.jp-OutputArea img')].every((img) => img.complete);
}"""

# Everything a learner would see, per code cell: the model's outputs and what the page shows.
INSPECT_JS = """(path) => {
  const panel = window.__panel(path);
  const result = [];
  panel.content.widgets.forEach((cell, index) => {
    if (cell.model.type !== 'code') return;
    const outputs = [];
    for (let i = 0; i < cell.model.outputs.length; i++) outputs.push(cell.model.outputs.get(i).toJSON());
    const node = cell.node;
    const images = [...node.querySelectorAll('.jp-OutputArea img')].map(
      (img) => ({complete: img.complete, width: img.naturalWidth, height: img.naturalHeight,
                 ink: window.__ink(img)}));
    const widgetViews = window.__views(node);
    result.push({
      index: index,
      source: cell.model.sharedModel.getSource().slice(0, 80),
      execution_count: cell.model.executionCount,
      outputs: outputs,
      images: images,
      widget_views: widgetViews.length,
      widget_views_rendered: widgetViews.filter((v) => !v.innerText.includes('Error displaying widget')).length,
      text: node.querySelector('.jp-Cell-outputWrapper') ? node.querySelector('.jp-Cell-outputWrapper').innerText : '',
    });
  });
  return result;
}"""

# Training monitors (08): each progress bar's width, and the lines of each SVG curve drawn in a widget.
LIVE_JS = """(path) => {
  const node = window.__panel(path).content.node;
  return {bars: [...node.querySelectorAll('.widget-hprogress .progress-bar')].map((bar) => bar.style.width),
          curves: [...node.querySelectorAll('.widget-html svg')].map((svg) => svg.querySelectorAll('polyline').length)};
}"""

# The explorers on the page: a top-level widget view holding a control and an Output widget.
EXPLORERS_JS = """(path) => {
  const panel = window.__panel(path);
  const views = window.__views(panel.content.node);
  const found = [];
  views.forEach((view, i) => {
    view.setAttribute('data-browser-test-view', String(i));
    const hasOutput = view.querySelector('.widget-output, .jupyter-widgets-output-area') !== null;
    const control = view.querySelector(
      '.noUi-handle, .ui-slider-handle, select, input[type=text], input[type=number], textarea, ' +
      'input[type=checkbox], .widget-toggle-button, button.jupyter-button');
    if (hasOutput && control) found.push(i);
  });
  return found;
}"""

# What the explorer's output shows now: its text and its pictures' bytes (as data URLs or blob URLs).
SIGNATURE_JS = """(index) => {
  const view = document.querySelector(`[data-browser-test-view="${index}"]`);
  const out = view.querySelector('.widget-output, .jupyter-widgets-output-area');
  const imgs = [...out.querySelectorAll('img')].map((img) => img.src.length + ':' + img.src.slice(-64));
  return out.innerText + '|' + imgs.join(',');
}"""

EXPLORER_TEXT_JS = """(index) => {
  const view = document.querySelector(`[data-browser-test-view="${index}"]`);
  const out = view.querySelector('.widget-output, .jupyter-widgets-output-area');
  const imgs = [...out.querySelectorAll('img')];
  return {text: view.innerText,
          images_ok: imgs.every((img) => img.complete && img.naturalWidth > 0),
          inks: imgs.map((img) => window.__ink(img)),
          stderr: [...out.querySelectorAll('[data-mime-type="application/vnd.jupyter.stderr"]')].map(
            (n) => n.innerText)};
}"""

# How tall the notebook is, to take a screenshot of all of it.
HEIGHT_JS = """(path) => {
  const panel = window.__panel(path);
  const scroller = panel.content.node.querySelector('.jp-WindowedPanel-outer') || panel.content.node;
  return scroller.scrollHeight;
}"""

TO_TOP_JS = """(path) => {
  const panel = window.__panel(path);
  for (const node of [panel.content.node, ...panel.content.node.querySelectorAll('.jp-WindowedPanel-outer')]) {
    node.scrollTop = 0;
  }
  window.scrollTo(0, 0);
}"""


# --------------------------------------------------------------------------- the steps


def wait_until(predicate, timeout, interval=0.25, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def run_all_and_wait(page, server, rel):
    """Run All, then wait until the kernel (asked through /api/sessions) is idle and no cell is [*]."""
    page.evaluate(RUN_ALL_JS, rel)
    deadline = time.monotonic() + RUN_TIMEOUT
    idle_since = None
    while time.monotonic() < deadline:
        state = server.kernel_state(rel)
        progress = page.evaluate(PROGRESS_JS, rel)
        settled = state == "idle" and progress["pending"] == 0
        if settled and progress["counted"] == progress["code"]:
            return progress
        # Run All stops at an error: the cells after it never get a count. Idle for 3 s = done.
        idle_since = (idle_since or time.monotonic()) if settled else None
        if idle_since and time.monotonic() - idle_since > 3:
            return progress
        time.sleep(0.25)
    raise AssertionError(f"Run All did not finish within {RUN_TIMEOUT:.0f} s (BROWSER_TEST_TIMEOUT)")


def problems_on_page(cells):
    """What a learner would see broken: errors, images that did not load, widgets that did not render."""
    problems = []
    for cell in cells:
        where = f"cell {cell['index']} ({cell['source'].splitlines()[0] if cell['source'] else ''!r})"
        if cell["execution_count"] is None:
            problems.append(f"{where} did not run")
        for output in cell["outputs"]:
            if output["output_type"] == "error":
                last = re.sub(r"\x1b\[[0-9;]*m", "", (output.get("traceback") or [""])[-1]).strip()
                problems.append(f"{where} raised {output['ename']}: {output['evalue']} ({last[:300]})")
        for image in cell["images"]:
            if not (image["complete"] and image["width"] > 0):
                problems.append(f"{where} shows an image that did not load")
            elif image["ink"] < BLANK:
                problems.append(f"{where} shows a blank image ({image['ink']:.2%} of its pixels drawn)")
        expected_images = sum(
            "image/png" in o.get("data", {}) or "image/jpeg" in o.get("data", {}) for o in cell["outputs"]
        )
        if len(cell["images"]) < expected_images:
            problems.append(f"{where}: {expected_images} image outputs but {len(cell['images'])} <img> shown")
        expected_widgets = sum(WIDGET_VIEW in o.get("data", {}) for o in cell["outputs"])
        if cell["widget_views_rendered"] < expected_widgets:
            problems.append(
                f"{where}: {expected_widgets} widget outputs but {cell['widget_views_rendered']} rendered widgets"
            )
        for phrase in ("Error displaying widget", "model not found", "Traceback (most recent call last)"):
            if phrase in cell["text"]:
                problems.append(f"{where} shows {phrase!r}")
    return problems


def move_control(page, index):
    """Move the explorer's first control the way a learner would (keys, clicks, typing)."""
    view = page.locator(f'[data-browser-test-view="{index}"]')
    handle = view.locator(".noUi-handle, .ui-slider-handle")
    if handle.count():
        # ArrowRight does not move a slider in Notebook 7; End/Home do, everywhere.
        handle.first.focus()
        now, top = (handle.first.get_attribute(name) for name in ("aria-valuenow", "aria-valuemax"))
        at_end = now is not None and top is not None and float(now) >= float(top)
        keys = ["Home", "End"] if at_end else ["End", "Home"]
        return [lambda key=key: handle.first.press(key) for key in keys + ["PageDown"]]
    return controls.other_moves(view)


def exercise_explorer(page, server, rel, index):
    """Move one explorer's control, see its output change, and no traceback or blank picture in it."""
    problems = []
    before = page.evaluate(SIGNATURE_JS, index)
    changed = False
    for action in move_control(page, index):
        action()
        try:
            wait_until(
                lambda: page.evaluate(SIGNATURE_JS, index) != before, timeout=10, what="the widget's output to change"
            )
            changed = True
            break
        except AssertionError:
            continue  # e.g. End on a slider already at its end: try the next move
    wait_until(lambda: server.kernel_state(rel) == "idle", timeout=60, what="the kernel after the widget")
    wait_until(
        lambda: page.evaluate(EXPLORER_TEXT_JS, index)["images_ok"], timeout=10, what="the widget's new picture to load"
    )
    seen = page.evaluate(EXPLORER_TEXT_JS, index)
    if not changed:
        problems.append(f"widget {index}: its output did not change when a control moved")
    if any(ink < BLANK for ink in seen["inks"]):
        problems.append(f"widget {index}: its picture is blank after moving a control")
    if any("Traceback" in s or "Error" in s for s in seen["stderr"]) or "Traceback" in seen["text"]:
        lines = [line for line in "\n".join(seen["stderr"]).splitlines() if line.strip()]
        problems.append(f"widget {index}: error after moving a control: {(lines or ['?'])[-1][:300]}")
    return problems


def live_training_problems(page, notebook, rel):
    """A notebook that trains with a monitor: after Run All every bar is full and the curve has its lines."""
    live = page.evaluate(LIVE_JS, rel)
    problems = [f"a progress bar stopped at {width or '0%'} of its run" for width in live["bars"] if width != "100%"]
    problems += ["a live curve (an SVG in a widget) has no line" for lines in live["curves"] if lines == 0]
    if "training_monitor(" in notebook.read_text(encoding="utf-8") and not (live["bars"] and live["curves"]):
        problems.append(
            f"the training monitor did not render: {len(live['bars'])} progress bars, {len(live['curves'])} curves"
        )
    return problems


def text_box_problems(page, server, rel, index):
    """An explorer with a text box: text typed there, then Enter, changes its output (the notebooks say "press
    Enter"; typing alone redraws only a box that updates as you type). -> problems, None without a text box."""
    box = page.locator(f'[data-browser-test-view="{index}"] {controls.TEXT_BOX}')
    if not box.count():
        return None

    def settle():
        wait_until(lambda: server.kernel_state(rel) == "idle", timeout=60, what="the kernel to answer the widget")

    typing, enter = controls.type_then_enter(page, box.first, lambda: page.evaluate(SIGNATURE_JS, index), settle)
    settle()
    return [] if typing or enter else [f"widget {index}: its output did not change after typing and Enter"]


def exercise_explorers(page, server, rel):
    """Every explorer in the notebook (a widget view with a control above an Output), and its text box if it has
    one. -> (the explorers, how many had a text box, problems)"""
    explorers = page.evaluate(EXPLORERS_JS, rel)
    problems, boxes = [], 0
    for index in explorers:
        problems += exercise_explorer(page, server, rel, index)
        typed = text_box_problems(page, server, rel, index)
        boxes += typed is not None
        problems += typed or []
    return explorers, boxes, problems


def tall_viewport(page, rel):
    """A viewport as tall as the notebook, so every output is on screen (axe skips what a scroller hides)."""
    height = min(max(page.evaluate(HEIGHT_JS, rel) + 200, 900), 30_000)
    page.set_viewport_size({"width": 1280, "height": height})
    page.wait_for_timeout(300)  # let the layout settle at the new size
    page.evaluate(TO_TOP_JS, rel)
    page.wait_for_timeout(200)


def screenshot(page, rel, path):
    tall_viewport(page, rel)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def accessibility_problems(page, server, notebook, rel, explorers):
    """The explorer by keyboard, then axe and the SVG text's contrast in the light and the dark theme."""
    problems = []
    if explorers:  # one explorer per notebook: its first
        keyboard, log = accessibility.keyboard_problems(page, server, rel, explorers[0], SIGNATURE_JS, wait_until)
        problems += [f"keyboard: {p}" for p in keyboard]
        KEYBOARD_LOG.append((notebook.name, log))
    try:
        for theme in ("light", "dark"):
            accessibility.set_theme(page, theme)
            tall_viewport(page, rel)
            problems += accessibility.run_axe(page, theme, notebook.stem)
            problems += accessibility.text_contrast_problems(page, theme)[0]
            if theme == "dark":
                SCREENSHOTS.mkdir(exist_ok=True)
                page.screenshot(path=str(SCREENSHOTS / f"lab-dark-{notebook.stem}.png"), full_page=True)
    finally:
        accessibility.set_theme(page, "light")  # the theme is saved in the settings: the next notebook opens light
        page.set_viewport_size({"width": 1280, "height": 900})
    return problems


def open_notebook(page, server, rel, interface):
    """Open the notebook, wait for its kernel, clear its outputs; check the test's settings took."""
    if interface == "lab":
        url = f"{server.base}/lab/tree/{rel}?token={server.token}&reset"  # &reset: no tabs from earlier runs
    else:
        url = f"{server.base}/notebooks/{rel}?token={server.token}"
    page.add_init_script(PANEL_JS)
    page.goto(url)
    page.wait_for_function(READY_JS, arg=rel, timeout=90_000, polling=250)
    wait_until(lambda: server.kernel_state(rel) == "idle", timeout=90, what="the kernel to start")
    prepared = page.evaluate(PREPARE_JS, rel)
    assert prepared["outputs"] == prepared["counted"] == 0, f"Clear Outputs of All Cells left {prepared}"
    assert prepared["settings"] == {"windowingMode": "none", "autosave": False}, prepared["settings"]


def check_notebook(page, server, notebook, interface):
    rel = notebook.relative_to(server.root_dir).as_posix()
    original = notebook.read_bytes()
    shot = SCREENSHOTS / f"{interface}-{notebook.stem}.png"
    seconds, problems, explorers = {}, [], []
    start = mark = time.monotonic()

    def lap(phase):
        nonlocal mark
        seconds[phase] = time.monotonic() - mark
        mark = time.monotonic()

    try:
        open_notebook(page, server, rel, interface)
        lap("open")
        progress = run_all_and_wait(page, server, rel)
        lap("run all")
        try:
            wait_until(lambda: page.evaluate(IMAGES_LOADED_JS, rel), timeout=20, what="images to load")
        except AssertionError:
            pass  # reported per image below
        problems += problems_on_page(page.evaluate(INSPECT_JS, rel))
        problems += live_training_problems(page, notebook, rel)
        lap("checks")
        explorers, boxes, widget_problems = exercise_explorers(page, server, rel)
        problems += widget_problems
        if has_widget(notebook) and not explorers:
            problems.append("the notebook shows a widget but no explorer (a control above an output) was found")
        if notebook.stem in controls.notebooks_with_a_text_box() and not boxes:
            problems.append(
                "its explorer has a text box, but none was found to type in (has controls.TEXT_BOX changed?)"
            )
        lap("widgets")
        if interface == "lab":
            problems += accessibility_problems(page, server, notebook, rel, explorers)
            lap("a11y")
        print(
            f"{interface} {notebook.name}: {progress['counted']}/{progress['code']} code cells ran, "
            f"{len(explorers)} explorer(s) moved, typed in the text box of {boxes}"
        )
    finally:
        try:  # a picture for a person, also (and especially) when something failed
            screenshot(page, rel, shot)
        except Exception as exc:  # noqa: BLE001 - the failure above matters more
            print(f"no screenshot of {notebook.name}: {exc}")
        lap("screenshot")
        seconds["total"] = time.monotonic() - start
        TIMES.append((interface, notebook.name, seconds))
        if page.errors:
            PAGE_ERRORS.append((interface, notebook.name, page.errors))

    assert notebook.read_bytes() == original, f"{rel} changed on disk during the test (autosave must be off)"
    assert not problems, f"{interface} {notebook.name} (screenshot {shot}):\n  " + "\n  ".join(problems)


DIRTY_JS = """(path) => window.__panel(path).context.model.dirty"""

SAVE_JS = """async (path) => {
  const app = window.jupyterapp, panel = window.__panel(path);
  app.shell.activateById(panel.id);
  await app.commands.execute('docmanager:save');
  return panel.context.model.dirty;
}"""


def check_opening_leaves_notebook_alone(page, server, notebook):
    """Open untouched, wait for the kernel, then save as a learner might: the file must not change."""
    rel = notebook.relative_to(server.root_dir).as_posix()
    original = notebook.read_bytes()
    try:
        page.add_init_script(PANEL_JS)
        page.goto(f"{server.base}/lab/tree/{rel}?token={server.token}&reset")
        page.wait_for_function(READY_JS, arg=rel, timeout=90_000, polling=250)
        wait_until(lambda: server.kernel_state(rel) == "idle", timeout=90, what="the kernel to start")
        page.wait_for_timeout(2000)  # anything JupyterLab rewrites on opening happens by now
        assert not page.evaluate(DIRTY_JS, rel), (
            f"{rel} is marked modified as soon as it opens: autosave would rewrite it (make execute tidies it)"
        )
        assert not page.evaluate(SAVE_JS, rel)
        changed = notebook.read_bytes() != original
    finally:
        notebook.write_bytes(original)
    assert not changed, f"saving the untouched {rel} in JupyterLab rewrote it: commit it as JupyterLab writes it"


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_opening_a_notebook_leaves_it_unmodified(page, server, notebook):
    check_opening_leaves_notebook_alone(page, server, notebook)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_in_jupyterlab(page, server, notebook):
    check_notebook(page, server, notebook, "lab")


@pytest.mark.parametrize("notebook", notebook7_choice(), ids=lambda p: p.name)
def test_notebook_in_notebook7(page, server, notebook):
    check_notebook(page, server, notebook, "notebook7")


def test_every_notebook_is_checked():
    """The glob found the notebooks (an empty folder would pass everything silently)."""
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOKS_DIR}"
    assert notebook7_choice(), "no notebook chosen for Notebook 7"
