"""The class board: a JupyterHub managed service that shows the instructor where the room is.

JupyterHub starts it (deploy/board/jupyterhub_config_board.py is the hub's configuration for it) and
protects it with the hub's OAuth. Learners' checks POST their verdicts to {prefix}api/verdicts with
their server's token (helpers/board_report.py); members of the instructors' group and the hub's
admins open {prefix} in a browser: a grid of learners x exercises, how many are done / stuck / not
started, the most common mistakes. Everything is kept in board.sqlite in the working folder.

Settings (environment; the configuration sets them): BOARD_GROUP (default "instructors"),
BOARD_NAMES ("hub" or "anonymous"), BOARD_HELPERS_PYTHON and BOARD_WORKSHOP (a Python that can import
the workshop's helpers, and a clone of the workshop: the board reads the exercises from the helpers'
registry at start-up), BOARD_DB (default board.sqlite). JupyterHub sets the JUPYTERHUB_* variables.
Runs on JupyterHub's own Python: tornado and jupyterhub.services.auth; SQLite from the standard library.
"""

import json
import os
import sys
import time
from pathlib import Path
from urllib.parse import quote, urlparse

import tornado.httpclient
import tornado.ioloop
import tornado.web

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from board_store import MAX_BODY, Refused, Store, board, read_exercises, validate  # noqa: E402

PAGE_SECURITY = {
    # nothing from outside the hub, no inline script: the page's script and style are the board's own files
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class Settings:
    """What the handlers share: the store, the exercises, who may look, how names are shown."""

    def __init__(self, store, exercises, group="instructors", names="hub", lookup=None):
        self.store, self.exercises = store, list(exercises)
        self.known = {name for name, _ in self.exercises}
        self.group, self.names = group, names
        self.lookup = lookup  # async name -> hub user model (groups, admin), or None to trust the OAuth model
        self._cache = {}  # name -> (time, model)

    async def user_model(self, user):
        if self.lookup is None:
            return user
        name = user["name"]
        seen = self._cache.get(name)
        if seen and time.monotonic() - seen[0] < 30:
            return seen[1]
        model = await self.lookup(name) or user
        self._cache[name] = (time.monotonic(), model)
        return model

    async def is_instructor(self, user):
        model = await self.user_model(user)
        return bool(model.get("admin")) or self.group in (model.get("groups") or [])


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
                s = self.board_settings
                self.set_header("Content-Type", "application/json")
                self.finish(json.dumps(board(s.store, s.exercises, s.names)))

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
            row = self.board_settings.store.add(verdict)  # committed before we answer
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
        except Exception:
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

    prefix = os.environ["JUPYTERHUB_SERVICE_PREFIX"]  # e.g. /services/board/
    exercises = read_exercises(os.environ["BOARD_HELPERS_PYTHON"], os.environ["BOARD_WORKSHOP"])
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
    print(f"board: {len(exercises)} exercises, {store.count()} verdicts stored, on {url.hostname}:{url.port}{prefix}")
    sys.stdout.flush()
    tornado.ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
