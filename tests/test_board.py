"""The class board (deploy/board/) and the checks' reporter (helpers/board_report.py), without a hub.

The board's app runs here on tornado with a stand-in for the hub's OAuth (a token in the Authorization
header names a user); `make class-test` runs it as a real JupyterHub service with real learners.
"""

import asyncio
import json
import socket
import sqlite3
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import requests
import tornado.httpserver
import tornado.ioloop
import tornado.web

from helpers import board_report as _report
from helpers import checks

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "deploy" / "board"))
import board_app  # noqa: E402
import board_store  # noqa: E402
from board_store import Refused, Store, board, validate  # noqa: E402

EXERCISES = [(ex.name, ex.notebook) for ex in checks.EXERCISES.values()]
KNOWN = {name for name, _ in EXERCISES}
PREFIX = "/services/board/"
USERS = {  # token -> the user model the hub would give
    "tok-ana": {"name": "ana", "groups": []},
    "tok-ben": {"name": "ben", "groups": ["learners"]},
    "tok-ivy": {"name": "ivy", "groups": ["instructors"]},
    "tok-root": {"name": "root", "groups": [], "admin": True},
}
USERS.update({f"tok-l{i}": {"name": f"l{i}", "groups": []} for i in range(30)})


def post(exercise="qkv_scores", verdict="incorrect", mistake="transposed", message="your scores are transposed"):
    return json.dumps({"exercise": exercise, "verdict": verdict, "mistake": mistake, "message": message}).encode()


# --------------------------------------------------------------------------- what a post may hold


def test_a_good_post_becomes_a_verdict_of_the_user_who_sent_it():
    verdict = validate(post(), "ana", KNOWN)
    assert verdict == {
        "user": "ana",
        "exercise": "qkv_scores",
        "verdict": "incorrect",
        "mistake": "transposed",
        "message": "your scores are transposed",
    }
    assert validate(post(verdict="correct", mistake=None, message=""), "ana", KNOWN)["verdict"] == "correct"
    # naming oneself is allowed (and ignored); the user always comes from the token
    assert validate(json.dumps({**json.loads(post()), "user": "ana"}).encode(), "ana", KNOWN)["user"] == "ana"


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"x" * (board_store.MAX_BODY + 1), 413),
        (b"not json", 400),
        (b"\xff\xfe", 400),
        (b"[1, 2]", 400),
        (post(exercise="no_such_exercise"), 400),
        (post(exercise=None), 400),
        (json.dumps({**json.loads(post()), "user": "ben"}).encode(), 403),
        (json.dumps({**json.loads(post()), "score": 1}).encode(), 400),
        (post(verdict="perfect"), 400),
        (post(mistake="Wrong Axis!"), 400),
        (post(mistake=3), 400),
        (post(verdict="correct", mistake="transposed"), 400),
        (post(message="x" * (board_store.MAX_MESSAGE + 1)), 400),
        (post(message=["a list"]), 400),
        (post(message="<script>alert(1)</script>"), 400),
        (post(message='<img src=x onerror="alert(1)">'), 400),
        (post(message="see </b> here"), 400),
        (post(message="< script>"), 400),
        (post(message="<!-- a comment -->"), 400),
        (post(message="a bell \x07"), 400),
    ],
)
def test_a_bad_post_is_refused_with_a_4xx(body, status):
    with pytest.raises(Refused) as refused:
        validate(body, "ana", KNOWN)
    assert refused.value.status == status, refused.value.reason


@pytest.mark.parametrize("message", ["if x < 0 the row is wrong", "a<3", "shape (4, 5) -> (5, 4)", "✗ 1 < 2 > 0"])
def test_a_message_with_a_less_than_sign_that_is_no_tag_is_kept(message):
    assert validate(post(message=message), "ana", KNOWN)["message"] == message


def test_the_reporter_and_the_board_agree_on_what_looks_like_html():
    assert _report.LOOKS_LIKE_HTML.pattern == board_store.LOOKS_LIKE_HTML.pattern
    assert _report.payload("qkv_scores", "incorrect", "crash", "✗ <function f at 0x1>\n  hint")["message"] == ""
    sent = _report.payload("qkv_scores", "incorrect", "transposed", "✗ qkv_scores: transposed\n  checks.hint(...)")
    assert sent == {
        "exercise": "qkv_scores",
        "verdict": "incorrect",
        "mistake": "transposed",
        "message": sent["message"],
    }
    assert sent["message"] == "✗ qkv_scores: transposed"  # the first line only, never the help line
    validate(json.dumps(sent).encode(), "ana", KNOWN)  # what the reporter sends, the board takes


# --------------------------------------------------------------------------- the store and the board


def test_an_added_verdict_is_committed_before_add_returns(tmp_path):
    store = Store(tmp_path / "board.sqlite")
    store.add(validate(post(), "ana", KNOWN))
    other = sqlite3.connect(tmp_path / "board.sqlite")  # another process's view: only what is committed
    assert other.execute("SELECT user, exercise, mistake FROM verdicts").fetchall() == [
        ("ana", "qkv_scores", "transposed")
    ]
    other.close()
    store.db.close()  # no close(), no commit at exit: as if the board were killed
    assert Store(tmp_path / "board.sqlite").count() == 1


def fill(store, posts):
    for user, exercise, verdict, mistake, message in posts:
        store.add({"user": user, "exercise": exercise, "verdict": verdict, "mistake": mistake, "message": message})


CLASS = [
    ("cat", "qkv_scores", "incorrect", "transposed", "transposed, told to cat"),
    ("ana", "qkv_scores", "incorrect", "transposed", "transposed, told to ana"),
    ("ana", "qkv_scores", "correct", None, ""),  # ana fixed it: her latest verdict counts
    ("ben", "qkv_scores", "incorrect", "transposed", "transposed, told to ben"),
    ("ben", "softmax_backward", "incorrect", "wrong-axis", "wrong axis"),
    ("cat", "softmax_backward", "not attempted", None, ""),
    ("dan", "softmax_backward", "incorrect", "wrong-axis", "wrong axis"),
    ("dan", "cosine_similarity", "correct", None, ""),
]


def test_the_board_shows_each_learners_latest_verdict_counts_and_common_mistakes(tmp_path):
    store = Store(tmp_path / "board.sqlite")
    fill(store, CLASS)
    data = board(store, EXERCISES)
    assert [ex["notebook"] for ex in data["exercises"]] == ["01_embeddings"] * 2 + ["03_queries_keys_values"] * 2
    assert [ex["name"] for ex in data["exercises"]] == [
        "cosine_similarity",
        "nearest_neighbours",
        "qkv_scores",
        "softmax_backward",
    ]  # notebook order, only the notebooks someone has reached
    assert [learner["name"] for learner in data["learners"]] == ["ana", "ben", "cat", "dan"]
    marks = {learner["name"]: learner["marks"] for learner in data["learners"]}
    assert marks["ana"] == {"qkv_scores": "correct"}
    assert marks["cat"] == {"qkv_scores": "incorrect", "softmax_backward": "not attempted"}
    assert data["counts"]["qkv_scores"] == {"done": 1, "stuck": 2, "not started": 1}
    assert data["counts"]["softmax_backward"] == {"done": 0, "stuck": 2, "not started": 2}
    assert data["counts"]["nearest_neighbours"] == {"done": 0, "stuck": 0, "not started": 4}
    assert data["mistakes"] == [
        {"exercise": "qkv_scores", "mistake": "transposed", "learners": 2, "message": "transposed, told to ben"},
        {"exercise": "softmax_backward", "mistake": "wrong-axis", "learners": 2, "message": "wrong axis"},
    ]
    assert data["posts"] == len(CLASS)


def test_anonymous_names_follow_the_first_post_and_never_show_hub_names(tmp_path):
    store = Store(tmp_path / "board.sqlite")
    fill(store, CLASS)
    data = board(store, EXERCISES, names="anonymous")
    assert [learner["name"] for learner in data["learners"]] == ["learner 1", "learner 2", "learner 3", "learner 4"]
    assert data["learners"][0]["marks"] == {"qkv_scores": "incorrect", "softmax_backward": "not attempted"}  # cat
    text = json.dumps(data)
    assert not any(f'"{name}"' in text for name in ("ana", "ben", "cat", "dan"))


def test_the_page_escapes_every_learner_string_and_loads_nothing_from_outside():
    page = (ROOT / "deploy" / "board" / "board.html").read_text()
    script = (ROOT / "deploy" / "board" / "board.js").read_text()
    assert "<script>" not in page  # no inline script: the policy forbids it
    assert all(src.startswith("static/") for src in __import__("re").findall(r'(?:src|href)="([^"]+)"', page))
    for unsafe in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert unsafe not in script
    assert "textContent" in script
    assert '"X-XSRFToken": xsrfToken()' in script  # JupyterHub refuses a script's cookie request without it
    policy = board_app.PAGE_SECURITY["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and "unsafe-inline" not in policy


# --------------------------------------------------------------------------- the hub's configuration


def load_board_section(config, tmp_path, monkeypatch):
    from traitlets.config import Config

    monkeypatch.setenv("BOARD_FOLDER", str(tmp_path / "board"))
    monkeypatch.setenv("BOARD_INSTRUCTORS", "ana, ben")
    c = config or Config()
    exec((ROOT / "deploy" / "board" / "jupyterhub_config_board.py").read_text(), {"c": c})
    return c


def value(setting, start):
    """A setting's value as JupyterHub will see it (a section may extend or update one set before it)."""
    return setting.get_value(start) if hasattr(setting, "get_value") else setting


@pytest.mark.parametrize("before", ["nothing", "the hub's own services and environment"])
def test_the_hub_section_adds_the_board_to_whatever_the_hub_had(tmp_path, monkeypatch, before):
    from traitlets.config import Config

    config = Config()
    if before != "nothing":
        config.JupyterHub.services = [{"name": "idle-culler", "command": ["cull"]}]
        config.Spawner.environment = {"PATH": "/usr/bin"}
    c = load_board_section(config, tmp_path, monkeypatch)
    services = value(c.JupyterHub.services, [])
    assert [s["name"] for s in services] == (["board"] if before == "nothing" else ["idle-culler", "board"])
    board_service = services[-1]
    assert board_service["command"][-1].endswith("deploy/board/board_app.py")
    assert board_service["cwd"] == str(tmp_path / "board") and (tmp_path / "board").is_dir()
    assert value(c.JupyterHub.load_groups, {}) == {"instructors": {"users": ["ana", "ben"]}}
    roles = {role["name"]: role for role in value(c.JupyterHub.load_roles, [])}
    assert roles["user"]["scopes"] == ["self", "access:services!service=board"]
    assert "access:services!service=board" in c.Spawner.server_token_scopes
    environment = value(c.Spawner.environment, {})
    assert environment["WORKSHOP_BOARD_URL"] == board_service["url"] + "/services/board/"
    assert _report.board_address({**environment, "JUPYTERHUB_API_TOKEN": "t", "JUPYTERHUB_BASE_URL": "/"})
    if before != "nothing":
        assert environment["PATH"] == "/usr/bin"


async def _instructor(settings, user):
    return await settings.is_instructor(user)


def test_the_board_asks_the_hub_who_is_an_instructor_and_remembers_it(tmp_path):
    asked = []

    async def lookup(name):
        asked.append(name)
        return {"ivy": {"name": "ivy", "groups": ["instructors"]}, "root": {"name": "root", "admin": True}}.get(name)

    settings = board_app.Settings(Store(tmp_path / "board.sqlite"), EXERCISES, lookup=lookup)
    assert asyncio.run(_instructor(settings, {"name": "ivy"}))
    assert asyncio.run(_instructor(settings, {"name": "root"}))
    assert not asyncio.run(_instructor(settings, {"name": "ana", "groups": []}))
    assert not asyncio.run(_instructor(settings, {"name": "ana", "groups": []}))  # from the cache
    assert asked == ["ivy", "root", "ana"]


# --------------------------------------------------------------------------- the app, over HTTP


class StandInHubAuth:
    """What HubOAuthenticated does for the board, minus the hub: the token names the user."""

    def get_current_user(self):
        return USERS.get(self.request.headers.get("Authorization", "").removeprefix("token "))


@pytest.fixture
def live_board(tmp_path):
    """The board's app on 127.0.0.1 in a thread of its own; yields (url, database path)."""
    store = Store(tmp_path / "board.sqlite")
    settings = board_app.Settings(store, EXERCISES)
    started, holder = threading.Event(), {}

    def serve():
        asyncio.set_event_loop(asyncio.new_event_loop())
        app = tornado.web.Application(board_app.handlers(StandInHubAuth, PREFIX, settings), login_url="/hub/login")
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        sock.setblocking(False)
        server = tornado.httpserver.HTTPServer(app, max_body_size=16 * board_store.MAX_BODY)
        server.add_sockets([sock])
        holder.update(loop=tornado.ioloop.IOLoop.current(), server=server, port=sock.getsockname()[1])
        started.set()
        holder["loop"].start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert started.wait(10)
    yield f"http://127.0.0.1:{holder['port']}{PREFIX}", tmp_path / "board.sqlite"
    holder["loop"].add_callback(holder["server"].stop)
    holder["loop"].add_callback(holder["loop"].stop)
    thread.join(10)
    store.close()


def stored(db):
    with sqlite3.connect(db) as connection:
        return connection.execute(
            "SELECT user, exercise, verdict, mistake, message FROM verdicts ORDER BY id"
        ).fetchall()


def as_user(token):
    return {"Authorization": f"token {token}"}


def test_a_learner_posts_a_verdict_over_http(live_board):
    url, db = live_board
    answer = requests.post(url + "api/verdicts", data=post(), headers=as_user("tok-ana"), timeout=10)
    assert answer.status_code == 201
    assert stored(db) == [("ana", "qkv_scores", "incorrect", "transposed", "your scores are transposed")]


@pytest.mark.parametrize(
    ("body", "token", "status"),
    [
        (b"x" * (board_store.MAX_BODY + 1), "tok-ana", 413),
        (post(exercise="no_such_exercise"), "tok-ana", 400),
        (json.dumps({**json.loads(post()), "user": "ben"}).encode(), "tok-ana", 403),
        (post(message="<script>alert(1)</script>"), "tok-ana", 400),
        (post(), "no-such-token", 403),
        (post(), None, 403),
    ],
)
def test_the_app_refuses_a_bad_post_and_stores_nothing(live_board, body, token, status):
    url, db = live_board
    headers = as_user(token) if token else {}
    answer = requests.post(url + "api/verdicts", data=body, headers=headers, timeout=10)
    assert answer.status_code == status, answer.text
    assert stored(db) == []


def test_thirty_posts_in_the_same_second_are_all_stored(live_board):
    url, db = live_board
    start = threading.Barrier(30)
    codes = []

    def send(i):
        start.wait()
        answer = requests.post(url + "api/verdicts", data=post(), headers=as_user(f"tok-l{i}"), timeout=30)
        codes.append(answer.status_code)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert codes == [201] * 30
    assert sorted(row[0] for row in stored(db)) == sorted(f"l{i}" for i in range(30))


@pytest.mark.parametrize(("token", "status"), [("tok-ivy", 200), ("tok-root", 200), ("tok-ana", 403), ("tok-ben", 403)])
def test_only_instructors_and_admins_see_the_board(live_board, token, status):
    url, _ = live_board
    for path in ("", "api/board"):
        answer = requests.get(url + path, headers=as_user(token), timeout=10)
        assert answer.status_code == status, (path, answer.text)
        if status == 200:
            assert answer.headers["Content-Security-Policy"] == board_app.PAGE_SECURITY["Content-Security-Policy"]
    anonymous = requests.get(url, timeout=10, allow_redirects=False)
    assert anonymous.status_code == 302 and anonymous.headers["Location"].startswith("/hub/login")


def test_the_board_data_is_what_was_posted(live_board):
    url, _ = live_board
    requests.post(url + "api/verdicts", data=post(), headers=as_user("tok-ana"), timeout=10).raise_for_status()
    data = requests.get(url + "api/board", headers=as_user("tok-ivy"), timeout=10).json()
    assert data["learners"] == [{"name": "ana", "marks": {"qkv_scores": "incorrect"}}]
    assert data["mistakes"][0]["learners"] == 1 and data["mistakes"][0]["mistake"] == "transposed"
    page = requests.get(url, headers=as_user("tok-ivy"), timeout=10)
    assert 'src="static/board.js"' in page.text
    script = requests.get(url + "static/board.js", timeout=10)
    assert script.status_code == 200 and "textContent" in script.text


# --------------------------------------------------------------------------- the reporter in a learner's kernel


@pytest.fixture
def reporter(monkeypatch):
    """The reporter as it starts in a fresh kernel; put back as it was afterwards."""
    for name in ("JUPYTERHUB_API_TOKEN", "JUPYTERHUB_SERVICE_PREFIX", "JUPYTERHUB_BASE_URL", _report.BOARD_URL):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setitem(_report._state, "on", True)
    yield monkeypatch
    assert _report.wait_sent(_report.TIMEOUT + 5)


def on_a_hub(monkeypatch, board_url, token="tok-ana"):
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", token)
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/ana/")
    monkeypatch.setenv(_report.BOARD_URL, board_url)


def answer(name, source):
    """The learner's function `name` defined by `source`, in a namespace like a notebook's."""
    namespace = {"np": np}
    exec(source, namespace)
    return namespace[name]


def solved(name):
    return answer(name, checks.EXERCISES[name].solution)


@pytest.mark.parametrize(
    "environ",
    [
        {},  # a laptop, Binder, the browser edition
        {"COLAB_RELEASE_TAG": "x"},  # Colab
        {"JUPYTERHUB_API_TOKEN": "t", "JUPYTERHUB_SERVICE_PREFIX": "/user/a/"},  # a hub without a board
        {"JUPYTERHUB_API_TOKEN": "t", _report.BOARD_URL: "http://127.0.0.1:1/services/board/"},  # no hub prefix
        {"JUPYTERHUB_SERVICE_PREFIX": "/user/a/", _report.BOARD_URL: "http://127.0.0.1:1/"},  # no token
        {"JUPYTERHUB_API_TOKEN": "t", "JUPYTERHUB_BASE_URL": "/", _report.BOARD_URL: "file:///etc/passwd"},
    ],
)
def test_off_a_hub_with_a_board_the_reporter_does_nothing(environ):
    assert _report.board_address(environ) is None


def test_on_a_hub_with_a_board_the_reporter_posts_to_it():
    environ = {
        "JUPYTERHUB_API_TOKEN": "t",
        "JUPYTERHUB_BASE_URL": "/",
        _report.BOARD_URL: "http://127.0.0.1:1/services/board",
    }
    assert _report.board_address(environ) == "http://127.0.0.1:1/services/board/api/verdicts"


def test_off_a_hub_a_check_prints_exactly_what_it_printed_before_and_sends_nothing(reporter, capsys):
    def refuse_to_send(*args, **kwargs):
        raise AssertionError("nothing may be sent off a hub")

    reporter.setattr(_report, "send", refuse_to_send)
    result = checks.qkv_scores(solved("qkv_scores"))
    assert bool(result) and capsys.readouterr().out == "✓ qkv_scores: correct!\n"
    assert _report.report("qkv_scores", "correct", None, "") is False


def test_a_check_on_a_hub_reports_its_verdict_to_the_board(live_board, reporter, capsys):
    url, db = live_board
    on_a_hub(reporter, url)
    wrong = answer("softmax_backward", checks.EXERCISES["softmax_backward"].mistakes["wrong-axis"])
    result = checks.softmax_backward(wrong)
    checks.qkv_scores(solved("qkv_scores"))
    assert _report.wait_sent(10)
    rows = stored(db)
    assert [row[:4] for row in rows] == [
        ("ana", "softmax_backward", "incorrect", "wrong-axis"),
        ("ana", "qkv_scores", "correct", None),
    ]
    assert rows[0][4] == result.message.splitlines()[0]  # the line the learner read
    assert capsys.readouterr().out == result.message + "\n✓ qkv_scores: correct!\n"  # the report printed nothing


def test_reporting_false_stops_the_posts_and_true_starts_them_again(live_board, reporter, capsys):
    url, db = live_board
    on_a_hub(reporter, url)
    checks.reporting(False)
    assert "off" in capsys.readouterr().out
    checks.qkv_scores(solved("qkv_scores"))
    assert _report.wait_sent(10) and stored(db) == []
    checks.reporting(True)
    checks.qkv_scores(solved("qkv_scores"))
    assert _report.wait_sent(10) and len(stored(db)) == 1
    with pytest.raises(TypeError, match="True or False"):
        checks.reporting("no")


def test_a_board_that_never_answers_costs_the_cell_nothing_and_is_given_up(reporter, capsys):
    silent = socket.socket()  # accepts connections (the backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/services/board/"
        on_a_hub(reporter, url)
        result = checks.qkv_scores(solved("qkv_scores"))  # returns at once: the post waits on the worker
        assert bool(result)
        assert _report.wait_sent(_report.TIMEOUT + 10)  # the worker gave up on it after its timeout
        started = time.monotonic()
        with pytest.raises(OSError):  # a timeout (socket.timeout / URLError), never an endless wait
            _report.send(url + "api/verdicts", "tok-ana", {}, timeout=0.5)
        assert time.monotonic() - started < 30
        assert capsys.readouterr().out == "✓ qkv_scores: correct!\n"  # the failure printed nothing
    finally:
        silent.close()


def test_a_board_that_is_down_fails_nothing(reporter, capsys):
    with socket.socket() as probe:  # a port with nobody listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    on_a_hub(reporter, f"http://127.0.0.1:{port}/services/board/")
    assert bool(checks.qkv_scores(solved("qkv_scores")))
    assert _report.wait_sent(10)
    assert capsys.readouterr().out == "✓ qkv_scores: correct!\n"
