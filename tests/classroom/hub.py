"""A real JupyterHub on 127.0.0.1 for the class test and the sizing benchmark, and what it runs.

- `publish_workshop(folder)`: the "remote" an instructor pushes to: a git repository made from
  this work tree (tracked and new files), which nbgitpuller clones from.
- `Hub`: JupyterHub (dummy login, one local process per learner, configurable-http-proxy) with
  all its state in a throwaway folder; `stop()` ends every process it started, by PID.
- `processes(hub_pid)`, `memory(pid)`, `cpu_seconds(pid)`, `owner(pid)`: each learner's server and kernels,
  read from /proc (RSS, PSS, peak RSS, the user a process runs as).

The environments come from `make class-test`: .class-test/hub (JupyterHub and these tools,
requirements-class-test.txt) and .class-test/user (the learners': requirements.txt, the weights,
requirements-hub.txt), plus configurable-http-proxy from npm in .class-test/proxy.
"""

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
CLASS_DIR = Path(os.environ.get("CLASS_TEST_DIR", ROOT / ".class-test")).resolve()
USER_BIN = CLASS_DIR / "user" / "bin"
PROXY = CLASS_DIR / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
CONFIG = Path(__file__).with_name("jupyterhub_config.py")
REPO_NAME = "attention-from-scratch"  # the folder nbgitpuller clones into, as for the real repository
GIT_ID = ["-c", "user.name=Instructor", "-c", "user.email=instructor@example.org"]
PAGE = 1 << 12  # bytes
# the class board's own system user when the test runs as root (as TLJH's hub does): made for the test, removed after
BOARD_USER = "class-board-test"


def git(*args, cwd):
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL
    ).stdout


def publish_workshop(folder):
    """A git repository holding this work tree's files (committed or not, git-ignored ones left out)."""
    names = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).split("\0")
    remote = Path(folder) / REPO_NAME
    for name in filter(None, names):
        source = ROOT / name
        if source.is_file():  # a file deleted but not yet committed is listed too
            (remote / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, remote / name)
    git("init", "-q", "-b", "main", cwd=remote)
    git("add", "-A", cwd=remote)
    git(*GIT_ID, "commit", "-q", "-m", "The workshop as published", cwd=remote)
    return remote


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --------------------------------------------------------------------------- processes


def _stat_fields(pid):
    """Fields of /proc/<pid>/stat after the command name (which may hold spaces)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()


def start_time(pid):
    """When the process started (clock ticks since boot): a PID plus this names one process for good."""
    return int(_stat_fields(pid)[19])


def cpu_seconds(pid, children=False):
    """User plus system CPU time the process has used so far (with its finished children's, if asked)."""
    fields = _stat_fields(pid)
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def memory(pid):
    """{'rss', 'pss', 'peak'} in MiB: resident, proportional (shared pages split among their users), peak resident."""
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    status = Path(f"/proc/{pid}/status").read_text()
    kib = {}
    for line in (rollup + status).splitlines():
        key, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            kib.setdefault(key, int(value.split()[0]))
    return {"rss": kib["Rss"] / 1024, "pss": kib["Pss"] / 1024, "peak": kib["VmHWM"] / 1024}


def run_as(user, command, **kwargs):
    """subprocess.run `command` as system user `user` (its user and group only), capturing its output."""
    account = pwd.getpwnam(user)
    return subprocess.run(
        command,
        user=account.pw_uid,
        group=account.pw_gid,
        extra_groups=[],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        **kwargs,
    )


def owner(pid):
    """The real user id a process runs as."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])


def _children_map():
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                children.setdefault(int(_stat_fields(entry.name)[1]), []).append(int(entry.name))
            except (OSError, ValueError):
                pass  # ended while we looked
    return children


def descendants(pid):
    children, found, todo = _children_map(), [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _environ(pid):
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def _cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def processes(hub_pid):
    """{learner: {"server": pid, "kernels": {kernel_id: pid}}} for every learner's running server."""
    learners = {}
    for pid in descendants(hub_pid):
        cmd = _cmdline(pid)
        if any(part.endswith("jupyterhub-singleuser") for part in cmd[:2]):
            learners[_environ(pid).get("JUPYTERHUB_USER", f"pid {pid}")] = {"server": pid, "kernels": {}}
    for entry in learners.values():
        for pid in descendants(entry["server"]):
            cmd = _cmdline(pid)
            if "ipykernel_launcher" in cmd:
                connection = cmd[cmd.index("-f") + 1]
                entry["kernels"][Path(connection).stem.removeprefix("kernel-")] = pid
    return learners


# --------------------------------------------------------------------------- the hub


class Hub:
    """JupyterHub with a throwaway state folder; `with Hub(...) as hub:` stops it whatever happens."""

    def __init__(
        self,
        state=None,
        user_env=None,
        cull=None,
        kernel_cull=None,
        activity_interval=None,
        keep_state=False,
        board_from=None,
    ):
        if not (USER_BIN / "jupyterhub-singleuser").exists() or not PROXY.exists():
            raise RuntimeError(f"{CLASS_DIR} is not set up: run `make class-test` (it installs the hub first)")
        self.state = Path(state or tempfile.mkdtemp(prefix="run-", dir=CLASS_DIR))
        self.keep_state = keep_state
        self.token = os.urandom(16).hex()
        self.port, self.api_port, self.proxy_api_port = free_port(), free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.board_url = f"{self.url}/services/board/" if board_from else None  # the class board, behind the proxy
        # a hub that runs as root starts the board as its own user (deploy/board/jupyterhub_config_board.py)
        self.board_user = BOARD_USER if board_from and os.geteuid() == 0 else None
        self._made_board_user = False
        self.env = dict(
            os.environ,
            CLASS_HUB_STATE=str(self.state),
            CLASS_HUB_USER_BIN=str(USER_BIN),
            CLASS_HUB_PORT=str(self.port),
            CLASS_HUB_API_PORT=str(self.api_port),
            CLASS_HUB_PROXY_API_PORT=str(self.proxy_api_port),
            CLASS_HUB_PROXY=str(PROXY),
            CLASS_HUB_TOKEN=self.token,
            CLASS_HUB_PYTHON=sys.executable,
            CLASS_HUB_USER_ENV=json.dumps(user_env or {}),
            CLASS_HUB_CULL=cull or "",
            CLASS_HUB_ACTIVITY_INTERVAL=str(activity_interval or ""),
            CLASS_HUB_KERNEL_CULL=kernel_cull or "",
            CLASS_HUB_BOARD=str(free_port()) if board_from else "",  # the board's port
            CLASS_HUB_WORKSHOP=str(board_from or ""),  # the clone of the workshop the board runs from
            CLASS_HUB_BOARD_USER=self.board_user or "",
        )
        for name in ("MPLBACKEND", "JUPYTER_CONFIG_DIR", "JUPYTER_CONFIG_PATH", "JUPYTER_PATH", "PYTHONPATH"):
            self.env.pop(name, None)  # nothing from the caller's environment reaches the learners
        self.proc = None
        self.seen = {}  # pid -> start time of every process seen under the hub, to stop them all
        self._watching = threading.Event()

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()  # what a hub that failed to start left: its proxy, the board's user
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        (self.state / "home").mkdir(parents=True, exist_ok=True)
        if self.board_user:
            self._make_board_user()
            os.chmod(self.state, 0o711)  # the board's user passes through to its own folder, and lists nothing
        self.log_path = self.state / "jupyterhub.log"
        self.log = open(self.log_path, "w")  # closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(CONFIG)],
            cwd=self.state,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            self.remember()  # the proxy, already: a hub that fails to start may leave it running
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyterhub exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if requests.get(f"{self.url}/hub/api/", timeout=5).ok:
                    self._watching.set()  # note the processes under the hub every second until stop()
                    threading.Thread(target=self._watch, daemon=True).start()
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"jupyterhub did not answer within 120 s:\n{self.log_tail()}")

    def _make_board_user(self):
        try:
            pwd.getpwnam(self.board_user)
        except KeyError:
            command = ["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent"]
            subprocess.run([*command, "--shell", "/usr/sbin/nologin", self.board_user], check=True)
            self._made_board_user = True
        probe = [sys.executable, "-c", "import jupyterhub.services.auth"]
        tried = run_as(self.board_user, probe, cwd="/")
        if tried.returncode != 0:
            raise RuntimeError(
                f"the board's user {self.board_user} cannot run the hub's Python {sys.executable}: "
                f"{tried.stderr.strip()[-300:]}\nMake .class-test/hub from a Python every user can read: "
                "rm -rf .class-test/hub && make class-test CLASS_PYTHON=/usr/bin/python3"
            )

    def log_tail(self, lines=60):
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def api(self, method, path, **kwargs):
        response = requests.request(
            method, f"{self.url}/hub/api{path}", timeout=60, headers={"Authorization": f"token {self.token}"}, **kwargs
        )
        response.raise_for_status()
        return response.json() if response.content else None

    def remember(self):
        """Note every process now under the hub (proxy, servers, kernels), so stop() can end each by PID."""
        if self.proc is None or self.proc.poll() is not None:
            return
        for pid in [self.proc.pid, *descendants(self.proc.pid)]:
            try:
                self.seen.setdefault(pid, start_time(pid))
            except OSError:
                pass

    def _watch(self):
        while self._watching.is_set():
            self.remember()
            time.sleep(1)

    def learner_processes(self):
        self.remember()
        return processes(self.proc.pid)

    def board_pid(self):
        """The class board's process (a service the hub started), or None."""
        self.remember()
        for pid in descendants(self.proc.pid):
            if any(part.endswith("board_app.py") for part in _cmdline(pid)):
                return pid
        return None

    def _own_pids(self):
        """The hub and what it runs besides the learners' servers: the proxy, services."""
        learners = set()
        for entry in processes(self.proc.pid).values():
            learners |= {entry["server"], *descendants(entry["server"])}
        return [self.proc.pid] + [p for p in descendants(self.proc.pid) if p not in learners]

    def overhead(self):
        """PSS (MiB) of the hub, the proxy and services."""
        return sum(memory(p)["pss"] for p in self._own_pids())

    def overhead_cpu(self):
        """CPU seconds used so far by the hub, the proxy and services."""
        return sum(cpu_seconds(p) for p in self._own_pids())

    def stop(self):
        """Stop the learners' servers, then the hub (which stops its proxy); then end anything left, by PID."""
        try:
            self._stop_processes()
        finally:
            if self._made_board_user:
                subprocess.run(["userdel", self.board_user], check=False, capture_output=True)
                self._made_board_user = False

    def _stop_processes(self):
        if self.proc is None:
            return
        self._watching.clear()
        self.remember()
        if self.proc.poll() is None:
            try:
                for user in self.api("GET", "/users"):
                    if user["servers"]:
                        requests.delete(
                            f"{self.url}/hub/api/users/{user['name']}/server",
                            timeout=60,
                            headers={"Authorization": f"token {self.token}"},
                        )
            except requests.RequestException:
                pass
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while self.survivors() and time.monotonic() < deadline:
            time.sleep(0.3)
        for pid in self.survivors():
            os.kill(pid, signal.SIGKILL)
        self.log.close()
        if not self.keep_state:
            shutil.rmtree(self.state, ignore_errors=True)

    def survivors(self):
        """Processes this hub started that still run (same PID and the same start time)."""
        alive = []
        for pid, started in self.seen.items():
            try:
                if start_time(pid) == started and _stat_fields(pid)[0] != "Z":
                    alive.append(pid)
            except OSError:
                pass
        return alive
