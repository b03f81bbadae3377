"""The class board's data: what a post may hold, the SQLite store, and the board the page draws.

Standard library only (the app around it, board_app.py, adds tornado and JupyterHub's OAuth).
A post is {"exercise", "verdict", "mistake", "message"} from a learner's check (helpers/board_report.py);
who sent it is the hub user its token belongs to, never a field of the body.
"""

import json
import re
import sqlite3
import time
from pathlib import Path

MAX_BODY = 4096  # bytes: a post is about 200
MAX_MESSAGE = 1000  # characters
VERDICTS = ("correct", "incorrect", "not attempted")
FIELDS = {"exercise", "verdict", "mistake", "message", "user"}
EXERCISE_NAME = re.compile(r"[A-Za-z0-9_]{1,80}")  # an exercise's name and its notebook's, in the list
MISTAKE_CODE = re.compile(r"[a-z0-9][a-z0-9-]{0,47}")
# HTML or script in a message is refused (the page escapes every string anyway); the reporter sends such a message
# empty, with the same pattern (a test keeps the two equal)
LOOKS_LIKE_HTML = re.compile(r"<\s*[/?]?\s*[A-Za-z]|<!")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
MAX_ROWS = 2000  # verdicts kept in the log per learner (a day's workshop is about 100); older ones are deleted
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS verdicts (id INTEGER PRIMARY KEY, at REAL NOT NULL, user TEXT NOT NULL, "
    "exercise TEXT NOT NULL, verdict TEXT NOT NULL, mistake TEXT, message TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS verdicts_by_learner ON verdicts (user, id)",
    "CREATE TABLE IF NOT EXISTS latest (user TEXT NOT NULL, exercise TEXT NOT NULL, verdict TEXT NOT NULL, "
    "mistake TEXT, message TEXT NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (user, exercise))",
    "CREATE TABLE IF NOT EXISTS learners (user TEXT PRIMARY KEY, first INTEGER NOT NULL, posts INTEGER NOT NULL)",
)
# a board.sqlite written by a board that kept the log only: its two summary tables, made once from the log
FROM_AN_OLDER_BOARD = (
    "INSERT INTO learners (user, first, posts) SELECT user, MIN(id), COUNT(*) FROM verdicts GROUP BY user",
    "INSERT INTO latest (user, exercise, verdict, mistake, message, id) SELECT user, exercise, verdict, mistake, "
    "message, id FROM verdicts WHERE id IN (SELECT MAX(id) FROM verdicts GROUP BY user, exercise)",
)


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
    """Every verdict received, in SQLite; `add` commits before it returns, so an acknowledged post survives.

    Three tables: `verdicts`, the log (each learner's newest `max_rows` verdicts: older ones are deleted);
    `latest`, each learner's latest verdict per exercise (what the board shows); `learners`, each learner's
    first post and how many they sent. The board reads only the last two, which hold a row per learner and
    exercise and a row per learner, however many verdicts were sent. Writes go through `db` (one thread at a
    time), reads through `reader`, which sees committed verdicts only, so a refresh never waits for a write.
    """

    def __init__(self, path, max_rows=MAX_ROWS):
        self.path, self.max_rows = Path(path), max_rows
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")  # committed means on disk, even if the machine stops
        with self.db:
            for statement in SCHEMA:
                self.db.execute(statement)
            if self.db.execute("SELECT NOT EXISTS (SELECT 1 FROM learners)").fetchone()[0]:
                self.db.execute(FROM_AN_OLDER_BOARD[0])  # no-ops on an empty log
                self.db.execute(FROM_AN_OLDER_BOARD[1])
        self.reader = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.newest = self.db.execute("SELECT MAX(id) FROM verdicts").fetchone()[0] or 0  # the last row committed

    def add(self, verdict):
        """Store one validated verdict; its row id (which only grows)."""
        return self.add_many([verdict])[0]

    def add_many(self, verdicts):
        """Store validated verdicts in one transaction (one write to the disk); their row ids."""
        ids = []
        with self.db:  # one transaction, committed on leaving
            for verdict in verdicts:
                ids.append(self._insert(verdict))
        self.newest = ids[-1]
        return ids

    def _insert(self, verdict):
        row = (verdict["user"], verdict["exercise"], verdict["verdict"], verdict["mistake"], verdict["message"])
        added = self.db.execute(
            "INSERT INTO verdicts (at, user, exercise, verdict, mistake, message) VALUES (?, ?, ?, ?, ?, ?)",
            (time.time(), *row),
        ).lastrowid
        self.db.execute(
            "INSERT INTO latest (user, exercise, verdict, mistake, message, id) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (user, exercise) DO UPDATE SET verdict = excluded.verdict, mistake = excluded.mistake, "
            "message = excluded.message, id = excluded.id",
            (*row, added),
        )
        self.db.execute(
            "INSERT INTO learners (user, first, posts) VALUES (?, ?, 1) "
            "ON CONFLICT (user) DO UPDATE SET posts = posts + 1",
            (verdict["user"], added),
        )
        posts = self.db.execute("SELECT posts FROM learners WHERE user = ?", (verdict["user"],)).fetchone()[0]
        if posts > self.max_rows:  # the learner's oldest verdicts leave the log (their marks stay in latest)
            self.db.execute(
                "DELETE FROM verdicts WHERE user = ?1 AND id <= "
                "(SELECT id FROM verdicts WHERE user = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)",
                (verdict["user"], self.max_rows),
            )
        return added

    def count(self):
        """How many verdicts were received (those the row cap deleted from the log included)."""
        return self.reader.execute("SELECT COALESCE(SUM(posts), 0) FROM learners").fetchone()[0]

    def latest(self):
        """[(user, exercise, verdict, mistake, message)]: each learner's latest verdict per exercise, oldest first."""
        return self.reader.execute(
            "SELECT user, exercise, verdict, mistake, message FROM latest ORDER BY id"
        ).fetchall()

    def first_seen(self):
        """Users in the order of their first post (for anonymous labels that stay put)."""
        return [row[0] for row in self.reader.execute("SELECT user FROM learners ORDER BY first").fetchall()]

    def close(self):
        self.reader.close()
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


def read_exercises(path):
    """[(name, notebook)] of every exercise, in notebook order, from the list in the JSON file at `path`.

    The file is deploy/board/exercises.json, written from the helpers' registry by exercise_list.py: the
    board reads a file, and never imports the helpers or runs the learners' Python.
    """
    try:
        exercises = json.loads(Path(path).read_text(encoding="utf-8"))["exercises"]
        pairs = [(exercise["name"], exercise["notebook"]) for exercise in exercises]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not the board's list of exercises ({exc!r}): see exercise_list.py") from None
    bad = [pair for pair in pairs if not all(isinstance(part, str) and EXERCISE_NAME.fullmatch(part) for part in pair)]
    if bad or not pairs or len({name for name, _ in pairs}) != len(pairs):
        raise ValueError(f"{path}: each exercise needs a unique name and a notebook (letters, digits, _): {bad}")
    return pairs
