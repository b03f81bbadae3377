"""Reporting each check's verdict to the class board, on a JupyterHub that runs one (deploy/board/).

What is sent, and only when every check finishes on such a hub: the exercise's name, the verdict
(correct / incorrect / not attempted), the mistake's code (e.g. "wrong-axis") and the first line
of the message the learner saw. Who sent it is not in the post: the board learns it from the
hub's token of the learner's own server. Nothing else (no code, no data, no outputs).

It does nothing off a hub: it needs the variables JupyterHub sets in a learner's server
(JUPYTERHUB_API_TOKEN, JUPYTERHUB_SERVICE_PREFIX or JUPYTERHUB_BASE_URL) and WORKSHOP_BOARD_URL,
which the hub's board configuration sets. A post goes out on a background thread with a short
timeout, so a cell waits only for a queue's put (microseconds); it never raises and never prints.
`checks.reporting(False)` switches it off for the rest of the kernel's life (`True` back on).

Importing this module hands it every verdict (`checks.on_verdict`): the hub's board configuration
names it in WORKSHOP_CHECK_HOOKS, which `helpers.checks` imports in each learner's kernel.
"""

import json
import os
import queue
import re
import threading
import urllib.request

from helpers import checks

BOARD_URL = "WORKSHOP_BOARD_URL"  # the variable the hub's board configuration sets in learners' servers
TIMEOUT = 3.0  # seconds a post may take on the background thread before it is given up
MAX_MESSAGE = 500  # characters of the message's first line that are sent
# a message that looks like HTML (a tag, a comment) is refused by the board; it is sent empty instead
LOOKS_LIKE_HTML = re.compile(r"<\s*[/?]?\s*[A-Za-z]|<!")

_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the board is on the hub: no http_proxy
_state = {"on": True, "worker": None}
_posts = queue.Queue(maxsize=200)  # full (the board is down, the class posts fast): new verdicts are dropped


def board_address(environ=None):
    """The board's URL for verdicts, or None when this kernel is not on a hub with a board."""
    env = os.environ if environ is None else environ
    on_hub = env.get("JUPYTERHUB_API_TOKEN") and (
        env.get("JUPYTERHUB_SERVICE_PREFIX") or env.get("JUPYTERHUB_BASE_URL")
    )
    board = env.get(BOARD_URL, "").strip()
    if not (on_hub and board.startswith(("http://", "https://"))):
        return None
    return board.rstrip("/") + "/api/verdicts"


def switch(on):
    """`checks.reporting(on)` switched sending on or off: say what holds now."""
    _state["on"] = on
    if board_address() is None:
        return "Reporting to the class board: no board here (not on a hub that runs one), so nothing is sent."
    if on:
        return (
            "Reporting to the class board: on (the exercise, the verdict, the mistake's code and the message's "
            "first line). checks.reporting(False) stops it."
        )
    return "Reporting to the class board: off. Nothing is sent."


def payload(exercise, verdict, mistake, message):
    """The post's body: the exercise, the verdict, the mistake's code and the message's first line."""
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    first = first[:MAX_MESSAGE]
    if LOOKS_LIKE_HTML.search(first):
        first = ""
    return {"exercise": exercise, "verdict": verdict, "mistake": mistake, "message": first}


def report(exercise, verdict, mistake, message):
    """Queue one verdict for the board (on a hub with a board, unless switched off); never raises or prints."""
    try:
        url = board_address()
        if url is None or not _state["on"]:
            return False
        _posts.put_nowait((url, os.environ["JUPYTERHUB_API_TOKEN"], payload(exercise, verdict, mistake, message)))
        worker = _state["worker"]
        if worker is None or not worker.is_alive():
            worker = threading.Thread(target=_send_all, name="board-reporter", daemon=True)
            _state["worker"] = worker
            worker.start()
        return True
    except Exception:  # a full queue, a thread that cannot start: the verdict is not sent, the cell goes on
        return False


def _send_all():
    while True:
        url, token, body = _posts.get()
        try:
            send(url, token, body)
        except Exception:
            pass  # the board is down or slow: this verdict is lost, the learner's cell never knew
        finally:
            _posts.task_done()


def send(url, token, body, timeout=TIMEOUT):
    """POST one verdict to the board with the server's token; the HTTP status (raises on network errors)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    with _DIRECT.open(request, timeout=timeout) as response:
        return response.status


def wait_sent(timeout=5.0):
    """Wait until every queued verdict has been sent or given up (for tests and the benchmark); True if so."""
    done = threading.Event()

    def join():
        _posts.join()
        done.set()

    threading.Thread(target=join, daemon=True).start()
    return done.wait(timeout)


report.switch = switch
checks.on_verdict(report)
