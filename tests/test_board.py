"""The class board (deploy/board/) and the checks' reporter (helpers/board_report.py), without a hub.

The board's app runs here on tornado with a stand-in for the hub's OAuth (a token in the Authorization
header names a user); `make class-test` runs it as a real JupyterHub service with real learners.
"""

import asyncio
import contextlib
import json
import logging
import os
import socket
import sqlite3
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
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
import exercise_list  # noqa: E402
from board_store import Refused, Store, board, validate  # noqa: E402

EXERCISES = board_store.read_exercises(ROOT / "deploy" / "board" / "exercises.json")  # what the board reads
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


# --------------------------------------------------------------------------- the list of exercises


def test_the_boards_list_of_exercises_is_what_the_checks_register():
    registered = [(name, exercise.notebook) for name, exercise in checks.EXERCISES.items()]
    assert EXERCISES == registered, "deploy/board/exercises.json is out of date: run make api-docs"
    committed = (ROOT / "deploy" / "board" / "exercises.json").read_text(encoding="utf-8")
    assert committed == exercise_list.text(registered), "run make api-docs"
    assert exercise_list.main(["--check"]) == 0


def test_the_list_tool_writes_a_list_the_board_reads_and_check_finds_a_stale_one(tmp_path, capsys):
    written = tmp_path / "exercises.json"
    assert exercise_list.main(["--output", str(written)]) == 0
    assert board_store.read_exercises(written) == EXERCISES
    written.write_text(exercise_list.text(EXERCISES[:-1]), encoding="utf-8")  # an exercise added since
    assert exercise_list.main(["--check", "--output", str(written)]) == 1
    assert "out of date" in capsys.readouterr().out


@pytest.mark.parametrize(
    "content",
    [
        None,  # no file
        "not json",
        '{"exercises": "qkv_scores"}',
        '{"exercises": []}',
        '{"exercises": [{"name": "qkv_scores"}]}',
        '{"exercises": [{"name": "qkv scores; rm", "notebook": "03_queries_keys_values"}]}',
        '{"exercises": [{"name": 3, "notebook": "03_queries_keys_values"}]}',
        '{"exercises": [{"name": "a", "notebook": "03"}, {"name": "a", "notebook": "04"}]}',
    ],
)
def test_a_list_of_exercises_that_is_not_one_stops_the_board_with_a_clear_error(tmp_path, content):
    path = tmp_path / "exercises.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match="exercises"):
        board_store.read_exercises(path)


def test_the_board_never_runs_the_learners_python_or_imports_the_helpers():
    for name in ("board_app.py", "board_store.py"):
        source = (ROOT / "deploy" / "board" / name).read_text()
        assert "subprocess" not in source and "import helpers" not in source and "from helpers" not in source


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


def verdict_of(user, exercise, verdict="correct", mistake=None, message=""):
    return {"user": user, "exercise": exercise, "verdict": verdict, "mistake": mistake, "message": message}


def test_the_log_keeps_each_learners_newest_verdicts_and_the_board_every_mark(tmp_path):
    capped, whole = Store(tmp_path / "capped.sqlite", max_rows=5), Store(tmp_path / "whole.sqlite")
    posts = [("ana", "qkv_scores", "incorrect", "transposed", f"ana {i}") for i in range(0, 8, 2)]
    posts = [
        post
        for i, wrong in enumerate(posts)
        for post in (wrong, ("ana", "qkv_scores", "correct", None, f"ana {2 * i + 1}"))
    ]
    posts += [("ben", "cosine_similarity", "correct", None, f"ben {i}") for i in range(3)]
    posts += [("ana", "cosine_similarity", "not attempted", None, "ana 8")]
    for store in (capped, whole):
        fill(store, posts)
    log = capped.db.execute("SELECT user, message FROM verdicts ORDER BY id").fetchall()
    assert [m for u, m in log if u == "ana"] == ["ana 4", "ana 5", "ana 6", "ana 7", "ana 8"]  # her newest 5
    assert [m for u, m in log if u == "ben"] == ["ben 0", "ben 1", "ben 2"]  # under the cap: all kept
    assert capped.count() == whole.count() == len(posts)  # every verdict received is counted
    assert board(capped, EXERCISES) == board(whole, EXERCISES)  # the cap changes no mark, count or mistake
    assert board(capped, EXERCISES, names="anonymous") == board(whole, EXERCISES, names="anonymous")


def test_a_refresh_reads_a_row_per_learner_and_exercise_never_the_log(tmp_path):
    store = Store(tmp_path / "board.sqlite")
    fill(store, CLASS * 50)
    statements = []
    store.reader.set_trace_callback(statements.append)
    board(store, EXERCISES)
    store.reader.set_trace_callback(None)
    assert len(statements) >= 3
    for sql in statements:
        plan = " / ".join(row[-1] for row in store.reader.execute("EXPLAIN QUERY PLAN " + sql))
        assert "verdicts" not in plan, (sql, plan)  # the log (which grows with every post) is not read
    assert len(store.latest()) == len({(user, exercise) for user, exercise, *_ in CLASS})


def test_a_board_sqlite_with_only_the_log_gets_its_summaries_when_the_board_starts(tmp_path):
    old = sqlite3.connect(tmp_path / "board.sqlite")  # as a board that kept the log only left it
    old.execute(board_store.SCHEMA[0])
    old.executemany(
        "INSERT INTO verdicts (at, user, exercise, verdict, mistake, message) VALUES (0, ?, ?, ?, ?, ?)", CLASS
    )
    old.commit()
    old.close()
    store, reference = Store(tmp_path / "board.sqlite"), Store(tmp_path / "reference.sqlite")
    fill(reference, CLASS)
    assert board(store, EXERCISES, names="anonymous") == board(reference, EXERCISES, names="anonymous")
    assert store.newest == len(CLASS)
    store.add(verdict_of("eve", "qkv_scores"))
    reference.add(verdict_of("eve", "qkv_scores"))
    assert board(store, EXERCISES) == board(reference, EXERCISES)


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


def load_board_section(config, tmp_path, monkeypatch, euid=1000, user="nobody"):
    """The hub's board section run as a hub whose user id is `euid` would run it; (config, chown calls)."""
    from traitlets.config import Config

    monkeypatch.setenv("BOARD_FOLDER", str(tmp_path / "board"))
    monkeypatch.setenv("BOARD_INSTRUCTORS", "ana, ben")
    monkeypatch.setenv("BOARD_USER", user)
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    chowned = []
    monkeypatch.setattr(os, "chown", lambda path, uid, gid: chowned.append((str(path), uid, gid)))
    c = config or Config()
    exec((ROOT / "deploy" / "board" / "jupyterhub_config_board.py").read_text(), {"c": c})
    return c, chowned


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
    c, _ = load_board_section(config, tmp_path, monkeypatch)
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


def test_a_hub_running_as_root_starts_the_board_as_its_own_user_who_owns_its_folder(tmp_path, monkeypatch):
    import pwd

    folder = tmp_path / "board"
    folder.mkdir(mode=0o755)
    (folder / "board.sqlite").write_bytes(b"")  # left by a board that ran as root
    c, chowned = load_board_section(None, tmp_path, monkeypatch, euid=0, user="nobody")
    board_service = value(c.JupyterHub.services, [])[-1]
    assert board_service["user"] == "nobody"  # JupyterHub switches to this user before it runs the board
    nobody = pwd.getpwnam("nobody")
    assert sorted(chowned) == [(str(folder), nobody.pw_uid, nobody.pw_gid)] + [
        (str(folder / "board.sqlite"), nobody.pw_uid, nobody.pw_gid)
    ]
    assert folder.stat().st_mode & 0o777 == 0o700  # nobody else reads the learners' verdicts
    assert "BOARD_HELPERS_PYTHON" not in board_service["environment"]  # it runs nobody's Python but the hub's


def test_a_hub_not_running_as_root_starts_the_board_as_its_own_user(tmp_path, monkeypatch):
    c, chowned = load_board_section(None, tmp_path, monkeypatch, euid=1000)
    assert "user" not in value(c.JupyterHub.services, [])[-1] and chowned == []


def test_a_missing_board_user_stops_the_hub_with_the_command_that_makes_it(tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match="useradd --system .* no-such-board-user"):
        load_board_section(None, tmp_path, monkeypatch, euid=0, user="no-such-board-user")


async def _instructor(settings, user):
    return await settings.is_instructor(user)


def test_the_board_asks_the_hub_who_is_an_instructor_and_remembers_it(tmp_path):
    asked = []

    async def lookup(name):
        asked.append(name)
        return {"ivy": {"name": "ivy", "groups": ["instructors"]}, "root": {"name": "root", "admin": True}}.get(
            name, {"name": name, "groups": []}
        )

    settings = board_app.Settings(Store(tmp_path / "board.sqlite"), EXERCISES, lookup=lookup)
    assert asyncio.run(_instructor(settings, {"name": "ivy"}))
    assert asyncio.run(_instructor(settings, {"name": "root"}))
    assert not asyncio.run(_instructor(settings, {"name": "ana", "groups": []}))
    assert not asyncio.run(_instructor(settings, {"name": "ana", "groups": []}))  # from the cache
    assert asked == ["ivy", "root", "ana"]


def test_the_board_remembers_a_bounded_number_of_visitors(tmp_path):
    async def lookup(name):
        return {"name": name, "groups": ["instructors"]}

    async def visits(settings, names):
        return [await settings.is_instructor({"name": name}) for name in names]

    settings = board_app.Settings(Store(tmp_path / "board.sqlite"), EXERCISES, lookup=lookup)
    names = [f"visitor{i}" for i in range(3 * board_app.MAX_VISITORS)]
    assert asyncio.run(visits(settings, names)) == [True] * len(names)
    assert list(settings.visitors) == names[-board_app.MAX_VISITORS :]  # the most recent ones


def test_a_failed_hub_lookup_is_logged_remembered_for_nobody_and_asked_again(tmp_path, caplog):
    with socket.socket() as probe:  # a port with nobody listening: the hub is down
        probe.bind(("127.0.0.1", 0))
        api = f"http://127.0.0.1:{probe.getsockname()[1]}/hub/api"

    async def visit_twice():
        settings = board_app.Settings(
            Store(tmp_path / "board.sqlite"), EXERCISES, lookup=board_app.hub_lookup(api, "t")
        )
        first = await settings.is_instructor({"name": "ivy", "groups": []})
        second = await settings.is_instructor({"name": "ivy", "groups": []})
        return first, second, dict(settings.visitors)

    with caplog.at_level(logging.WARNING, logger="board"):
        first, second, remembered = asyncio.run(visit_twice())
    assert (first, second, remembered) == (False, False, {})  # her login names no group: refused, nothing kept
    failures = [r for r in caplog.records if r.name == "board" and "could not look up 'ivy'" in r.getMessage()]
    assert len(failures) == 2, caplog.text  # both visits asked the hub, and each failure was logged


def test_the_boards_json_is_computed_again_only_after_a_new_verdict(tmp_path):
    store = Store(tmp_path / "board.sqlite")
    fill(store, CLASS)
    settings = board_app.Settings(store, EXERCISES)
    first = settings.board_json()
    statements = []
    store.reader.set_trace_callback(statements.append)
    assert settings.board_json() is first and statements == []  # 3 pages every 3 s: no query at all
    store.add(verdict_of("eve", "qkv_scores"))
    statements.clear()
    again = settings.board_json()
    assert statements and json.loads(again)["posts"] == json.loads(first)["posts"] + 1
    assert json.loads(again) == board(store, EXERCISES)


def test_verdicts_that_arrive_during_a_write_are_committed_together_each_answered_with_its_row(tmp_path):
    store = Store(tmp_path / "board.sqlite")
    batches, add_many = [], store.add_many
    store.add_many = lambda verdicts: batches.append(len(verdicts)) or add_many(verdicts)
    writer = board_app.Writer(store)

    async def at_once(n):
        return await asyncio.gather(*(writer.add(verdict_of(f"l{i}", "qkv_scores")) for i in range(n)))

    ids = asyncio.run(at_once(30))
    assert len(set(ids)) == 30 and ids == sorted(ids)  # each post its own row, in the order they came
    assert sum(batches) == 30 and len(batches) < 30  # fewer writes to the disk than posts
    assert stored(tmp_path / "board.sqlite") == [(f"l{i}", "qkv_scores", "correct", None, "") for i in range(30)]
    assert store.newest == ids[-1] and store.count() == 30


def test_a_write_that_fails_fails_every_post_it_held_and_the_next_ones_are_written(tmp_path):
    store = Store(tmp_path / "board.sqlite")
    add_many, failing = store.add_many, [True]

    def disk(verdicts):
        if failing.pop():
            raise sqlite3.OperationalError("disk I/O error")
        return add_many(verdicts)

    store.add_many, writer = disk, board_app.Writer(store)

    async def post_three():
        return await asyncio.gather(*(writer.add(verdict_of(n, "qkv_scores")) for n in "abc"), return_exceptions=True)

    assert [type(result) for result in asyncio.run(post_three())] == [sqlite3.OperationalError] * 3
    failing.append(False)
    assert asyncio.run(writer.add(verdict_of("d", "qkv_scores"))) == 1 and store.count() == 1


def test_a_learner_may_post_a_burst_then_a_steady_rate_and_the_limit_tracks_few_learners():
    now = [0.0]
    limit = board_app.RateLimit(rate=2, burst=3, learners=2, clock=lambda: now[0])
    assert [limit.allow("ana") for _ in range(4)] == [True, True, True, False]
    assert limit.allow("ben")  # each learner has their own
    now[0] = 0.5  # one more post after 1 / rate seconds
    assert [limit.allow("ana") for _ in range(2)] == [True, False]
    now[0] = 100.0  # a long pause refills the burst, no more
    assert [limit.allow("ana") for _ in range(4)] == [True, True, True, False]
    limit.allow("cat")
    assert list(limit.buckets) == ["ana", "cat"]  # ben, the least recent, is forgotten


# --------------------------------------------------------------------------- the app, over HTTP


class StandInHubAuth:
    """What HubOAuthenticated does for the board, minus the hub: the token names the user."""

    def get_current_user(self):
        return USERS.get(self.request.headers.get("Authorization", "").removeprefix("token "))


@contextlib.contextmanager
def serving(settings):
    """The board's app with `settings` on 127.0.0.1, in a thread of its own; yields its URL."""
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
    try:
        yield f"http://127.0.0.1:{holder['port']}{PREFIX}"
    finally:
        holder["loop"].add_callback(holder["server"].stop)
        holder["loop"].add_callback(holder["loop"].stop)
        thread.join(10)
        settings.store.close()


@pytest.fixture
def live_board(tmp_path):
    """The board's app on 127.0.0.1; yields (url, database path)."""
    with serving(board_app.Settings(Store(tmp_path / "board.sqlite"), EXERCISES)) as url:
        yield url, tmp_path / "board.sqlite"


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


def test_a_learner_posting_faster_than_the_limit_gets_429_and_nothing_more_is_stored(tmp_path):
    limit = board_app.RateLimit(rate=0.001, burst=3)  # 3 at once, then one every 1,000 s
    settings = board_app.Settings(Store(tmp_path / "board.sqlite"), EXERCISES, rate_limit=limit)
    with serving(settings) as url:

        def send(token):
            return requests.post(url + "api/verdicts", data=post(), headers=as_user(token), timeout=10).status_code

        codes = [send("tok-ana") for _ in range(5)]
        other = send("tok-ben")
    assert codes == [201, 201, 201, 429, 429] and other == 201
    assert [row[0] for row in stored(tmp_path / "board.sqlite")] == ["ana"] * 3 + ["ben"]


def test_thirty_learners_posting_while_three_pages_refresh_lose_nothing_and_the_caps_hold(tmp_path):
    """The load benchmark (benchmarks/board.py) in small: 30 learners x 20 verdicts at once, 3 pages open."""
    per_learner, learners = 20, [f"l{i}" for i in range(30)]
    limit = board_app.RateLimit(learners=10)  # fewer than the learners: forgetting one refuses nothing
    store = Store(tmp_path / "board.sqlite", max_rows=per_learner)
    settings = board_app.Settings(store, EXERCISES, rate_limit=limit)
    plan = {  # learner -> their posts: each exercise in turn, the verdict alternating, each message its own
        name: [
            {
                "exercise": EXERCISES[(i + k) % len(EXERCISES)][0],
                "verdict": ("correct", "not attempted")[(i + k) % 2],
                "message": f"{name} post {k}",
            }
            for k in range(per_learner)
        ]
        for i, name in enumerate(learners)
    }
    done, pages = threading.Event(), [("tok-ivy", []), ("tok-root", []), ("tok-ivy", [])]  # 3 instructors' pages

    def learner(name):
        return [
            requests.post(url + "api/verdicts", json=body, headers=as_user(f"tok-{name}"), timeout=60).status_code
            for body in plan[name]
        ]

    def page(token, answers):
        while not done.is_set():  # as board.js does, without the 3 s pause
            answer = requests.get(url + "api/board", headers=as_user(token), timeout=60)
            answers.append((answer.status_code, answer.json()["posts"]))

    with serving(settings) as url:
        readers = [threading.Thread(target=page, args=reader) for reader in pages]
        for thread in readers:
            thread.start()
        with ThreadPoolExecutor(len(learners)) as pool:
            codes = dict(zip(learners, pool.map(learner, learners), strict=True))
        done.set()
        for thread in readers:
            thread.join(60)
        final = requests.get(url + "api/board", headers=as_user("tok-ivy"), timeout=60).json()
        # one more post each: every learner's log is now over its cap
        for name in learners:
            body = {"exercise": "qkv_scores", "verdict": "correct", "message": f"{name} last"}
            assert requests.post(url + "api/verdicts", json=body, headers=as_user(f"tok-{name}"), timeout=60).ok
        after = requests.get(url + "api/board", headers=as_user("tok-root"), timeout=60).json()
    assert codes == dict.fromkeys(learners, [201] * per_learner)  # every verdict acknowledged...
    rows = stored(tmp_path / "board.sqlite")
    logged = {name: [row[4] for row in rows if row[0] == name] for name in learners}
    assert logged == {name: [f"{name} post {k}" for k in range(1, per_learner)] + [f"{name} last"] for name in learners}
    assert final["posts"] == len(learners) * per_learner  # ...and stored; then the cap dropped the oldest only
    expected = {name: {} for name in learners}
    for name, bodies in plan.items():
        for body in bodies:
            expected[name][body["exercise"]] = body["verdict"]
    assert {row["name"]: row["marks"] for row in final["learners"]} == expected
    assert after["posts"] == final["posts"] + len(learners)
    assert all(row["marks"]["qkv_scores"] == "correct" for row in after["learners"])
    for _, answers in pages:
        assert answers and all(status == 200 for status, _ in answers)
        assert [posts for _, posts in answers] == sorted(posts for _, posts in answers)  # never goes back
    assert len(limit.buckets) <= 10 and len(settings.visitors) <= board_app.MAX_VISITORS


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
