"""The class board's data: what a post may hold, the SQLite store, and the board the page draws.

Standard library only (the app around it, board_app.py, adds tornado and JupyterHub's OAuth).
A post is {"exercise", "verdict", "mistake", "message"} from a learner's check (helpers/board_report.py);
who sent it is the hub user its token belongs to, never a field of the body.
"""

import json
import re
import sqlite3
import subprocess
import time
from pathlib import Path

MAX_BODY = 4096  # bytes: a post is about 200
MAX_MESSAGE = 1000  # characters
VERDICTS = ("correct", "incorrect", "not attempted")
FIELDS = {"exercise", "verdict", "mistake", "message", "user"}
MISTAKE_CODE = re.compile(r"[a-z0-9][a-z0-9-]{0,47}")
# HTML or script in a message is refused (the page escapes every string anyway); the reporter sends such a message
# empty, with the same pattern (a test keeps the two equal)
LOOKS_LIKE_HTML = re.compile(r"<\s*[/?]?\s*[A-Za-z]|<!")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class Refused(Exception):
    """A post the board does not store: `status` is the HTTP status to answer (4xx), `reason` says why."""

    def __init__(self, status, reason):
        super().__init__(reason)
        self.status, self.reason = status, reason


def validate(body, user, exercises):
    """The verdict to store from a post's raw `body` (bytes) sent by hub user `user`; raises Refused (4xx).

    exercises: the names the board knows (the helpers' registry, read at start-up).
    """
    if len(body) > MAX_BODY:
        raise Refused(413, f"the post has {len(body)} bytes, more than {MAX_BODY}")
    try:
        post = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise Refused(400, "the post is not JSON") from None
    if not isinstance(post, dict):
        raise Refused(400, "the post is not a JSON object")
    if "user" in post and post["user"] != user:
        raise Refused(403, "a learner posts only their own verdicts")
    unknown = set(post) - FIELDS
    if unknown:
        raise Refused(400, f"unknown fields: {', '.join(sorted(map(str, unknown)))}")
    exercise, verdict = post.get("exercise"), post.get("verdict")
    mistake, message = post.get("mistake"), post.get("message", "")
    if exercise not in exercises:
        raise Refused(400, f"no exercise called {str(exercise)[:60]!r}")
    if verdict not in VERDICTS:
        raise Refused(400, f"the verdict must be one of {', '.join(VERDICTS)}")
    if mistake is not None and not (isinstance(mistake, str) and MISTAKE_CODE.fullmatch(mistake)):
        raise Refused(400, "the mistake must be a short code of lower-case letters, digits and dashes, or null")
    if mistake is not None and verdict != "incorrect":
        raise Refused(400, "only an incorrect verdict has a mistake")
    if message is None:
        message = ""
    if not isinstance(message, str) or len(message) > MAX_MESSAGE:
        raise Refused(400, f"the message must be text of at most {MAX_MESSAGE} characters")
    if LOOKS_LIKE_HTML.search(message) or CONTROL.search(message):
        raise Refused(400, "the message holds HTML or control characters")
    return {"user": user, "exercise": exercise, "verdict": verdict, "mistake": mistake, "message": message}


class Store:
    """Every verdict received, in SQLite; `add` commits before it returns, so an acknowledged post survives."""

    def __init__(self, path):
        self.path = Path(path)
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")  # committed means on disk, even if the machine stops
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS verdicts (id INTEGER PRIMARY KEY, at REAL NOT NULL, user TEXT NOT NULL, "
            "exercise TEXT NOT NULL, verdict TEXT NOT NULL, mistake TEXT, message TEXT NOT NULL)"
        )

    def add(self, verdict):
        with self.db:  # one transaction, committed on leaving
            cursor = self.db.execute(
                "INSERT INTO verdicts (at, user, exercise, verdict, mistake, message) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    time.time(),
                    verdict["user"],
                    verdict["exercise"],
                    verdict["verdict"],
                    verdict["mistake"],
                    verdict["message"],
                ),
            )
        return cursor.lastrowid

    def count(self):
        return self.db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]

    def latest(self):
        """[(user, exercise, verdict, mistake, message)]: each learner's latest verdict per exercise, oldest first."""
        return self.db.execute(
            "SELECT user, exercise, verdict, mistake, message FROM verdicts WHERE id IN "
            "(SELECT MAX(id) FROM verdicts GROUP BY user, exercise) ORDER BY id"
        ).fetchall()

    def first_seen(self):
        """Users in the order of their first post (for anonymous labels that stay put)."""
        rows = self.db.execute("SELECT user FROM verdicts GROUP BY user ORDER BY MIN(id)").fetchall()
        return [row[0] for row in rows]

    def close(self):
        self.db.close()


def board(store, exercises, names="hub"):
    """What the page shows, as JSON-ready data.

    exercises: [(name, notebook)] in notebook order. names: "hub" shows hub names, "anonymous" shows
    "learner 1", "learner 2", ... in the order learners first posted (the names never leave the board).
    A learner's mark is their latest verdict on an exercise.
    """
    order = store.first_seen()
    if names == "anonymous":
        label = {user: f"learner {i + 1}" for i, user in enumerate(order)}
    else:
        order = sorted(order)
        label = {user: user for user in order}
    marks = {user: {} for user in order}
    mistakes = {}  # (exercise, code) -> [learners, latest message]
    for user, exercise, verdict, mistake, message in store.latest():
        if user not in marks:
            continue
        marks[user][exercise] = verdict
        if verdict == "incorrect" and mistake:
            entry = mistakes.setdefault((exercise, mistake), [0, ""])
            entry[0] += 1
            entry[1] = message or entry[1]
    played = {notebook for name, notebook in exercises if any(name in m for m in marks.values())}
    shown = [(name, notebook) for name, notebook in exercises if notebook in played]
    counts = {}
    for name, _ in shown:
        got = [marks[user].get(name) for user in order]
        counts[name] = {
            "done": got.count("correct"),
            "stuck": got.count("incorrect"),
            "not started": len(got) - got.count("correct") - got.count("incorrect"),
        }
    position = {name: i for i, (name, _) in enumerate(exercises)}
    common = sorted(mistakes.items(), key=lambda item: (-item[1][0], position[item[0][0]], item[0][1]))
    return {
        "exercises": [{"name": name, "notebook": notebook} for name, notebook in shown],
        "learners": [{"name": label[user], "marks": marks[user]} for user in order],
        "counts": counts,
        "mistakes": [
            {"exercise": exercise, "mistake": code, "learners": n, "message": message}
            for (exercise, code), (n, message) in common[:10]
        ],
        "posts": store.count(),
    }


def read_exercises(python, workshop):
    """[(name, notebook)] of every exercise, in notebook order, from the helpers' registry.

    Read by `python` (an environment with the workshop's requirements, e.g. the learners') in a clone of the
    workshop at `workshop`, in a child process: the board itself never imports numpy.
    """
    code = (
        "import json; from helpers.checks import EXERCISES; "
        "print(json.dumps([[e.name, e.notebook] for e in EXERCISES.values()]))"
    )
    result = subprocess.run([python, "-c", code], cwd=workshop, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"could not read the exercises with {python} in {workshop}:\n{result.stderr[-2000:]}")
    return [tuple(pair) for pair in json.loads(result.stdout.strip().splitlines()[-1])]
