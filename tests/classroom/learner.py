"""A simulated learner: what a browser does on a JupyterHub, done over HTTP and a websocket.

It logs in with the hub's login form, starts its server (following the spawn progress stream
as the spawn page does), clicks the nbgitpuller link (the status page, then the event stream
its script opens, then the page it redirects to), opens notebooks as JupyterLab does (a
session, i.e. a kernel running in the notebook's folder), runs their cells one by one over the
kernel's websocket, and saves notebooks through the contents API as JupyterLab's autosave does.
"""

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from html import unescape
from urllib.parse import unquote, urlencode

import requests
import websocket  # websocket-client


class LearnerError(AssertionError):
    pass


@dataclass
class CellRun:
    index: int  # position among all cells
    outputs: list
    execution_count: int | None
    error: str | None
    seconds: float


@dataclass
class NotebookRun:
    path: str
    kernel_id: str
    cells: list = field(default_factory=list)
    first_output_at: float | None = None  # time.monotonic() of the first output of any cell

    @property
    def errors(self):
        return [(c.index, c.error) for c in self.cells if c.error]


def _ws_message(frame):
    """A kernel message from a websocket frame (text JSON, or binary with buffers after the JSON)."""
    if isinstance(frame, str):
        return json.loads(frame)
    count = int.from_bytes(frame[:4], "little")  # jupyter_server's legacy binary framing
    offsets = [int.from_bytes(frame[4 + 4 * i : 8 + 4 * i], "little") for i in range(count)]
    end = offsets[1] if count > 1 else len(frame)
    return json.loads(frame[offsets[0] : end].decode())


def _output(msg):
    """The notebook output a kernel message adds, as nbformat stores it (None for other messages)."""
    kind, content = msg["msg_type"], msg["content"]
    if kind == "stream":
        return {"output_type": "stream", "name": content["name"], "text": content["text"]}
    if kind in ("display_data", "execute_result"):
        out = {"output_type": kind, "data": content["data"], "metadata": content.get("metadata", {})}
        if kind == "execute_result":
            out["execution_count"] = content["execution_count"]
        return out
    if kind == "error":
        return {
            "output_type": "error",
            "ename": content["ename"],
            "evalue": content["evalue"],
            "traceback": content["traceback"],
        }
    return None


class Learner:
    def __init__(self, hub_url, name, timeout=600):
        self.hub_url, self.name, self.timeout = hub_url, name, timeout
        self.http = requests.Session()
        self.server = f"{hub_url}/user/{name}/"  # the learner's own server, behind the proxy
        self.marks = {}  # phase -> time.monotonic(), for the timings

    # ------------------------------------------------------------------ the hub

    def _form_xsrf(self, html):
        match = re.search(r'name="_xsrf"\s+value="([^"]+)"', html)
        return unescape(match.group(1)) if match else None

    def login(self):
        page = self.http.get(f"{self.hub_url}/hub/login", timeout=60)
        page.raise_for_status()
        form = {"username": self.name, "password": "any password", "_xsrf": self._form_xsrf(page.text) or ""}
        done = self.http.post(f"{self.hub_url}/hub/login", data=form, timeout=120, allow_redirects=False)
        if done.status_code != 302 or "jupyterhub-hub-login" not in {c.name for c in self.http.cookies}:
            raise LearnerError(f"{self.name}: login failed ({done.status_code})")
        self.marks["logged in"] = time.monotonic()

    def arrive(self, link):
        """Log in, start a server and click the workshop's link: what every learner does first."""
        self.marks["start"] = time.monotonic()
        self.login()
        self.start_server()
        return self.click(link)

    def _hub_xsrf(self):
        return self.http.cookies.get("_xsrf", path="/hub/") or ""

    def start_server(self):
        """Ask the hub for a server, then follow its progress stream until the server is ready."""
        response = self.http.post(
            f"{self.hub_url}/hub/api/users/{self.name}/server", timeout=120, headers={"X-XSRFToken": self._hub_xsrf()}
        )
        if response.status_code not in (201, 202):
            raise LearnerError(f"{self.name}: the hub did not start a server: {response.status_code} {response.text}")
        for event in self._events(f"{self.hub_url}/hub/api/users/{self.name}/server/progress"):
            if event.get("failed"):
                raise LearnerError(f"{self.name}: spawn failed: {event.get('message')}")
            if event.get("ready"):
                break
        else:
            raise LearnerError(f"{self.name}: the progress stream ended before the server was ready")
        self.marks["server ready"] = time.monotonic()

    def _events(self, url, params=None):
        """The JSON objects of a server-sent event stream."""
        with self.http.get(
            url, params=params, stream=True, timeout=self.timeout, headers={"Accept": "text/event-stream"}
        ) as response:
            response.raise_for_status()
            for line in response.iter_lines(decode_unicode=True):
                if line and line.startswith("data:"):
                    yield json.loads(line[5:])

    # ------------------------------------------------------------------ nbgitpuller

    def click(self, link):
        """Open an nbgitpuller link as a browser does; returns the lines git printed."""
        page = self.http.get(link, timeout=120)  # the hub redirects to the server, which logs us in (OAuth)
        page.raise_for_status()
        attrs = {key: unquote(unescape(value)) for key, value in re.findall(r'data-([a-z-]+)="([^"]*)"', page.text)}
        if "repo" not in attrs:
            raise LearnerError(f"{self.name}: {page.url} is not nbgitpuller's status page:\n{page.text[:500]}")
        params = {"_xsrf": attrs["xsrf"], "repo": attrs["repo"], "targetpath": attrs["targetpath"]}
        params.update({key: attrs[key] for key in ("branch", "depth", "backup") if key in attrs})
        base = self.hub_url + attrs["base-url"]  # the server's path, e.g. /user/learner1/
        lines = []
        for event in self._events(f"{base}git-pull/api", params=params):
            lines.append(event.get("output", ""))
            if event["phase"] == "error":
                raise LearnerError(f"{self.name}: nbgitpuller failed: {event.get('message')}\n{''.join(lines)}")
            if event["phase"] == "finished":
                break
        else:
            raise LearnerError(f"{self.name}: nbgitpuller's stream ended without 'finished'")
        landing = self.http.get(base + attrs["path"], timeout=120)  # where the page's script goes next
        if landing.status_code != 200:
            raise LearnerError(f"{self.name}: {landing.url} answered {landing.status_code}")
        self.marks["pulled"] = time.monotonic()
        return "".join(lines)

    # ------------------------------------------------------------------ the server's REST API

    def api(self, method, path, **kwargs):
        xsrf = self.http.cookies.get("_xsrf", path=f"/user/{self.name}/") or ""
        response = self.http.request(
            method, f"{self.server}api/{path}", timeout=120, headers={"X-XSRFToken": xsrf}, **kwargs
        )
        if not response.ok:
            raise LearnerError(f"{self.name}: {method} api/{path}: {response.status_code} {response.text[:300]}")
        return response.json() if response.content else None

    def read_notebook(self, path):
        return self.api("GET", f"contents/{path}", params={"content": 1, "type": "notebook"})["content"]

    def save_notebook(self, path, notebook):
        self.api("PUT", f"contents/{path}", json={"type": "notebook", "format": "json", "content": notebook})

    def rename(self, path, new_path):
        self.api("PATCH", f"contents/{path}", json={"path": new_path})

    def shutdown_kernels(self):
        for session in self.api("GET", "sessions"):
            self.api("DELETE", f"sessions/{session['id']}")

    # ------------------------------------------------------------------ running a notebook

    def open_notebook(self, path):
        """What JupyterLab does on opening a notebook: a session whose kernel runs in the notebook's folder."""
        session = self.api(
            "POST",
            "sessions",
            json={"path": path, "name": path.rsplit("/", 1)[-1], "type": "notebook", "kernel": {"name": "python3"}},
        )
        return session["kernel"]["id"]

    def _connect(self, kernel_id):
        session_id = uuid.uuid4().hex
        url = f"{self.server}api/kernels/{kernel_id}/channels?" + urlencode({"session_id": session_id})
        cookies = "; ".join(f"{c.name}={c.value}" for c in self.http.cookies)
        ws = websocket.create_connection(
            url.replace("http", "ws", 1),
            cookie=cookies,
            timeout=self.timeout,
            origin=self.hub_url,
            enable_multithread=False,
        )
        return ws, session_id

    def run_notebook(self, path, save=True, kernel_id=None):
        """Open `path` (or reuse `kernel_id`), run every code cell in order (stopping at the first error)
        and save the notebook with its outputs, as JupyterLab's Run All and autosave do."""
        notebook = self.read_notebook(path)
        run = NotebookRun(path, kernel_id or self.open_notebook(path))
        ws, session_id = self._connect(run.kernel_id)
        try:
            for index, cell in enumerate(notebook["cells"]):
                if cell["cell_type"] != "code":
                    continue
                source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                result = self._execute(ws, session_id, index, source, run)
                run.cells.append(result)
                cell["outputs"], cell["execution_count"] = result.outputs, result.execution_count
                if result.error:
                    break
        finally:
            ws.close()
        if save:
            self.save_notebook(path, notebook)
        return run

    def execute(self, kernel_id, code):
        """Run one piece of code in a running kernel; its CellRun (outputs, error)."""
        ws, session_id = self._connect(kernel_id)
        try:
            return self._execute(ws, session_id, -1, code, NotebookRun("", kernel_id))
        finally:
            ws.close()

    def _execute(self, ws, session_id, index, source, run):
        msg_id = uuid.uuid4().hex
        ws.send(
            json.dumps(
                {
                    "header": {
                        "msg_id": msg_id,
                        "msg_type": "execute_request",
                        "username": self.name,
                        "session": session_id,
                        "date": "",
                        "version": "5.3",
                    },
                    "parent_header": {},
                    "metadata": {},
                    "channel": "shell",
                    "buffers": [],
                    "content": {
                        "code": source,
                        "silent": False,
                        "store_history": True,
                        "user_expressions": {},
                        "allow_stdin": False,
                        "stop_on_error": True,
                    },
                }
            )
        )
        start, outputs, count, error, replied, idle, clear_next = time.monotonic(), [], None, None, False, False, False
        while not (replied and idle):
            if time.monotonic() - start > self.timeout:
                raise LearnerError(f"{self.name}: {run.path} cell {index} did not finish in {self.timeout} s")
            msg = _ws_message(ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "execute_reply":
                replied, count = True, msg["content"].get("execution_count")
                if msg["content"]["status"] != "ok" and not error:
                    error = f"{msg['content'].get('ename')}: {msg['content'].get('evalue')}"
            elif kind == "status":
                idle = msg["content"]["execution_state"] == "idle"
            elif kind == "clear_output":
                if msg["content"].get("wait"):
                    clear_next = True
                else:
                    outputs = []
            elif (out := _output(msg)) is not None:
                if clear_next:
                    outputs, clear_next = [], False
                if run.first_output_at is None:
                    run.first_output_at = time.monotonic()
                if out["output_type"] == "error":
                    error = f"{out['ename']}: {out['evalue']}"
                if out["output_type"] == "stream" and outputs and outputs[-1].get("name") == out["name"]:
                    outputs[-1]["text"] += out["text"]  # JupyterLab joins a stream's pieces
                else:
                    outputs.append(out)
        return CellRun(index, outputs, count, error, time.monotonic() - start)
