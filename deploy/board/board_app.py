"""The class board: a JupyterHub managed service that shows the instructor where the room is.

JupyterHub starts it (deploy/board/jupyterhub_config_board.py is the hub's configuration for it) and
protects it with the hub's OAuth. Learners' checks POST their verdicts to {prefix}api/verdicts with
their server's token (helpers/board_report.py); members of the instructors' group and the hub's
admins open {prefix} in a browser: a grid of learners x exercises, how many are done / stuck / not
started, the most common mistakes. Everything is kept in board.sqlite in the working folder.

Settings (environment; the configuration sets them): BOARD_GROUP (default "instructors"),
BOARD_NAMES ("hub" or "anonymous"), BOARD_EXERCISES (the list of exercises, read at start-up; default
exercises.json beside this file, written from the helpers' registry by exercise_list.py), BOARD_DB
(default board.sqlite). JupyterHub sets the JUPYTERHUB_* variables. Runs on JupyterHub's own Python,
as its own unprivileged user (the configuration's BOARD_USER): tornado and jupyterhub.services.auth;
SQLite from the standard library. It never imports the workshop's helpers or runs the learners' Python.
"""

import asyncio
import json
import logging
import os
import sys
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote, urlparse

import tornado.httpclient
import tornado.ioloop
import tornado.web

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from board_store import MAX_BODY, Refused, Store, board, read_exercises, validate  # noqa: E402

log = logging.getLogger("board")
RATE, BURST = 5, 60  # a learner's posts: 60 at once, then 5 a second (a learner checks every minute or so)
MAX_LEARNERS = 1000  # learners whose rate the board tracks at once
MAX_VISITORS = 100  # instructors and admins whose groups the board remembers (for 30 s each)

PAGE_SECURITY = {
    # nothing from outside the hub, no inline script: the page's script and style are the board's own files
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class Recent(OrderedDict):
    """A dict of at most `size` entries: adding one more forgets the one least recently set."""

    def __init__(self, size):
        super().__init__()
        self.size = size

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


class RateLimit:
    """Per learner, `burst` posts at once and then `rate` a second (a token bucket); state for `learners` at most."""

    def __init__(self, rate=RATE, burst=BURST, learners=MAX_LEARNERS, clock=time.monotonic):
        self.rate, self.burst, self.clock = rate, burst, clock
        self.buckets = Recent(learners)  # user -> (posts allowed now, when)

    def allow(self, user):
        now = self.clock()
        tokens, then = self.buckets.get(user, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        self.buckets[user] = (tokens - 1, now) if tokens >= 1 else (tokens, now)
        return tokens >= 1


class Writer:
    """Stores the posts' verdicts on a thread of its own, so the board goes on answering while the disk writes.

    Verdicts that arrive during a write go in the next one, together: one transaction, one wait for the disk.
    Each post is answered once its verdict is committed.
    """

    def __init__(self, store):
        self.store, self.waiting, self.task = store, [], None
        self.thread = ThreadPoolExecutor(1, thread_name_prefix="board-writer")

    async def add(self, verdict):
        """The row id of `verdict`, once it is committed (raises what the store raised)."""
        committed = asyncio.get_running_loop().create_future()
        self.waiting.append((verdict, committed))
        if self.task is None:
            self.task = asyncio.ensure_future(self._write())
        return await committed

    async def _write(self):
        loop = asyncio.get_running_loop()
        try:
            while self.waiting:
                batch, self.waiting = self.waiting, []
                try:
                    ids = await loop.run_in_executor(self.thread, self.store.add_many, [v for v, _ in batch])
                except Exception as exc:  # e.g. a full disk: every post of the batch is answered 500
                    for _, committed in batch:
                        committed.set_exception(exc)
                else:
                    for (_, committed), row in zip(batch, ids, strict=True):
                        committed.set_result(row)
        finally:
            self.task = None


class Settings:
    """What the handlers share: the store, the exercises, who may look, how names are shown."""

    def __init__(self, store, exercises, group="instructors", names="hub", lookup=None, rate_limit=None):
        self.store, self.exercises = store, list(exercises)
        self.known = {name for name, _ in self.exercises}
        self.group, self.names = group, names
        self.lookup = lookup  # async name -> hub user model (groups, admin), or None to trust the OAuth model
        self.visitors = Recent(MAX_VISITORS)  # name -> (time, model): who opened the board lately
        self.rate_limit = rate_limit or RateLimit()
        self.writer = Writer(store)
        self._page = (None, None)  # (the store's newest row, the board's JSON then)

    async def user_model(self, user):
        if self.lookup is None:
            return user
        name = user["name"]
        seen = self.visitors.get(name)
        if seen and time.monotonic() - seen[0] < 30:
            return seen[1]
        model = await self.lookup(name)
        if model is None:  # the hub did not answer (logged): the login's own model decides, and nothing is remembered
            return user
        self.visitors[name] = (time.monotonic(), model)
        return model

    async def is_instructor(self, user):
        model = await self.user_model(user)
        return bool(model.get("admin")) or self.group in (model.get("groups") or [])

    def board_json(self):
        """The board as JSON, computed again only when a verdict has arrived since the last time."""
        if self._page[0] != self.store.newest:
            self._page = (self.store.newest, json.dumps(board(self.store, self.exercises, self.names)))
        return self._page[1]


class _Base(tornado.web.RequestHandler):
    def initialize(self, settings):
        self.board_settings = settings

    def set_default_headers(self):
        for name, value in PAGE_SECURITY.items():
            self.set_header(name, value)

    def refuse(self, status, reason):
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": reason}))

    async def require_instructor(self):
        """The current user when they may see the board; otherwise answers 403 and returns None."""
        user = self.current_user
        if user is None:
            raise tornado.web.HTTPError(403)
        if not await self.board_settings.is_instructor(user):
            self.refuse(403, f"the board is for the {self.board_settings.group} group and the hub's admins")
            return None
        return user


def handlers(auth, prefix, settings):
    """The board's routes under `prefix`, with `auth` the mixin that authenticates (HubOAuthenticated on a hub)."""

    class Page(auth, _Base):
        @tornado.web.authenticated
        async def get(self):
            if await self.require_instructor():
                self.set_header("Content-Type", "text/html; charset=utf-8")
                self.finish((HERE / "board.html").read_bytes())

    class BoardData(auth, _Base):
        @tornado.web.authenticated
        async def get(self):
            if await self.require_instructor():
                self.set_header("Content-Type", "application/json")
                self.finish(self.board_settings.board_json())

    class Verdicts(auth, _Base):
        # a kernel posts with its server's token (no XSRF check); a post with a browser's cookie must carry
        # the _xsrf token, which HubOAuthenticated checks
        async def post(self):
            user = self.current_user
            if user is None:
                return self.refuse(403, "post with your server's token")
            try:
                verdict = validate(self.request.body, user["name"], self.board_settings.known)
            except Refused as refused:
                return self.refuse(refused.status, refused.reason)
            limit = self.board_settings.rate_limit
            if not limit.allow(user["name"]):
                return self.refuse(429, f"more than {limit.burst} checks at once or {limit.rate} a second: not stored")
            row = await self.board_settings.writer.add(verdict)  # committed before we answer
            self.set_status(201)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"stored": row}))

    static = {"path": str(HERE), "default_filename": None}
    return [
        (prefix, Page, {"settings": settings}),
        (prefix + "api/board", BoardData, {"settings": settings}),
        (prefix + "api/verdicts", Verdicts, {"settings": settings}),
        (prefix + r"static/(board\.js|board\.css)", tornado.web.StaticFileHandler, static),
    ]


def hub_lookup(api_url, token):
    """An async lookup of a user's model (groups, admin) with the board's own hub token."""
    client = tornado.httpclient.AsyncHTTPClient()

    async def lookup(name):
        try:
            response = await client.fetch(
                f"{api_url.rstrip('/')}/users/{quote(name, safe='')}",
                headers={"Authorization": f"token {token}"},
                request_timeout=10,
            )
        except Exception as exc:  # the hub is down or slow, or has no such user
            log.warning("could not look up %r at the hub: %r", name, exc)
            return None
        return json.loads(response.body)

    return lookup


def cookie_secret(path):
    """The secret that signs the instructors' login cookies, kept beside the database so a restart keeps them."""
    if not path.exists():
        path.touch(mode=0o600)
        path.write_bytes(os.urandom(32).hex().encode())
    return path.read_bytes().strip()


def main():
    from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated
    from jupyterhub.utils import url_path_join

    logging.basicConfig(format="[board %(levelname)s %(asctime)s] %(message)s", level=logging.INFO)
    logging.getLogger("tornado.access").setLevel(logging.ERROR)  # not a line per post; a 5xx still is one
    prefix = os.environ["JUPYTERHUB_SERVICE_PREFIX"]  # e.g. /services/board/
    exercises = read_exercises(os.environ.get("BOARD_EXERCISES", HERE / "exercises.json"))
    store = Store(os.environ.get("BOARD_DB", "board.sqlite"))
    settings = Settings(
        store,
        exercises,
        group=os.environ.get("BOARD_GROUP", "instructors"),
        names=os.environ.get("BOARD_NAMES", "hub"),
        lookup=hub_lookup(os.environ["JUPYTERHUB_API_URL"], os.environ["JUPYTERHUB_API_TOKEN"]),
    )
    routes = handlers(HubOAuthenticated, prefix, settings)
    routes.append((url_path_join(prefix, "oauth_callback"), HubOAuthCallbackHandler))
    app = tornado.web.Application(routes, cookie_secret=cookie_secret(Path("board_cookie_secret")))
    url = urlparse(os.environ["JUPYTERHUB_SERVICE_URL"])
    app.listen(url.port, url.hostname, max_body_size=16 * MAX_BODY)
    log.info(
        "%d exercises, %d verdicts stored, on %s:%s%s", len(exercises), store.count(), url.hostname, url.port, prefix
    )
    tornado.ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
