# The class board: one section of a JupyterHub's configuration (README, "Running it for a class").
# On TLJH: copy this file to /opt/tljh/config/jupyterhub_config.d/board.py, set the settings below,
# then `sudo tljh-config reload hub`. Elsewhere: add it to jupyterhub_config.py, or load it from there
# with `load_subconfig("/path/to/jupyterhub_config_board.py")`. The class test loads it as it is.
# ruff: noqa: F821  (`c` is the config object JupyterHub passes in)
import os
import pwd
import sys

BOARD_WORKSHOP = os.environ.get("BOARD_WORKSHOP", "/srv/attention-from-scratch")  # a clone of the workshop
BOARD_USER = os.environ.get("BOARD_USER", "class-board")  # the board's own system user (useradd, README)
BOARD_FOLDER = os.environ.get("BOARD_FOLDER", "/srv/board")  # the board's own folder: board.sqlite lives here
BOARD_GROUP = os.environ.get("BOARD_GROUP", "instructors")  # who may open the board (and the hub's admins)
BOARD_INSTRUCTORS = os.environ.get("BOARD_INSTRUCTORS", "")  # hub names put in that group, comma-separated
BOARD_NAMES = os.environ.get("BOARD_NAMES", "hub")  # "hub": learners by hub name; "anonymous": learner 1, 2, ...
BOARD_PORT = int(os.environ.get("BOARD_PORT", "10101"))  # on 127.0.0.1, behind the hub's proxy

board_url = f"http://127.0.0.1:{BOARD_PORT}"
board = {
    "name": "board",
    "url": board_url,  # the proxy serves it at <hub>/services/board/
    # the hub's own Python (tornado, JupyterHub's OAuth); the exercises come from deploy/board/exercises.json
    "command": [sys.executable, os.path.join(BOARD_WORKSHOP, "deploy", "board", "board_app.py")],
    "cwd": BOARD_FOLDER,
    "oauth_no_confirm": True,
    "display": True,  # listed in the hub's Services menu
    "environment": {"BOARD_GROUP": BOARD_GROUP, "BOARD_NAMES": BOARD_NAMES},
}
os.makedirs(BOARD_FOLDER, mode=0o700, exist_ok=True)
if os.geteuid() == 0:
    # a hub that runs as root (TLJH's does) starts the board as BOARD_USER, which owns the board's folder and
    # files and nothing else; a hub that runs as another user starts it as that user (it cannot switch)
    try:
        owner = pwd.getpwnam(BOARD_USER)
    except KeyError:
        raise SystemExit(
            f"The class board runs as the system user {BOARD_USER!r}, which does not exist: create it with\n"
            f"  sudo useradd --system --home-dir {BOARD_FOLDER} --shell /usr/sbin/nologin {BOARD_USER}\n"
            "(README, 'The class board'), or set BOARD_USER in this file to another unprivileged user."
        ) from None
    for path in [BOARD_FOLDER] + [e.path for e in os.scandir(BOARD_FOLDER) if e.is_file(follow_symlinks=False)]:
        os.chown(path, owner.pw_uid, owner.pw_gid)  # board.sqlite and its secret, from a board run as root too
    os.chmod(BOARD_FOLDER, 0o700)
    board["user"] = BOARD_USER
# .append/.update/.extend work whether or not an earlier section set these already
c.JupyterHub.services.append(board)
# adds these users to the group (it never removes one: that is done on the hub's admin page or its API)
c.JupyterHub.load_groups.update(
    {BOARD_GROUP: {"users": [n.strip() for n in BOARD_INSTRUCTORS.split(",") if n.strip()]}}
)
c.JupyterHub.load_roles.extend(
    [
        # the board reads a visitor's groups and admin flag from the hub
        {"name": "board", "services": ["board"], "scopes": ["read:users"]},
        # every user may reach the board: learners to post their verdicts, the board itself decides who sees it
        {"name": "user", "scopes": ["self", "access:services!service=board"]},
    ]
)
# the token in each learner's server (and its kernels) may post to the board, and nothing more than before
c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server", "access:services!service=board"]
# the checks in a learner's kernel hand each verdict to helpers.board_report, which helpers.checks imports
# because WORKSHOP_CHECK_HOOKS names it; it sends them to the board's own address, which the learners'
# servers reach directly on this machine
c.Spawner.environment.update(
    {"WORKSHOP_BOARD_URL": f"{board_url}/services/board/", "WORKSHOP_CHECK_HOOKS": "helpers.board_report"}
)
