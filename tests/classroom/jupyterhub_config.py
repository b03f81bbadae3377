# The class test's JupyterHub (tests/classroom/hub.py starts it with the CLASS_HUB_* variables set).
# Only what a test needs differs from a real hub: the dummy login, the spawner, the loopback ports.
# ruff: noqa: F821  (`c` is the config object JupyterHub passes in)
import json
import os
from pathlib import Path

state = Path(os.environ["CLASS_HUB_STATE"])  # a throwaway folder: database, secrets, learners' homes
user_bin = Path(os.environ["CLASS_HUB_USER_BIN"])  # bin/ of the single-user venv

c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = int(os.environ["CLASS_HUB_PORT"])
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ["CLASS_HUB_API_PORT"])
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")

# configurable-http-proxy from npm, installed in .class-test/proxy by `make class-test`
c.ConfigurableHTTPProxy.command = [os.environ["CLASS_HUB_PROXY"]]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ['CLASS_HUB_PROXY_API_PORT']}"
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")

# Anyone may log in with any password: learners are simulated.
c.JupyterHub.authenticator_class = "dummy"

# SimpleLocalProcessSpawner runs every learner's server as the hub's own Unix user, in its own
# home folder under `state`. The ordinary LocalProcessSpawner would switch to a Unix account
# named after each learner, which must exist (useradd) and needs the hub to run as root; TLJH
# creates such accounts, Zero to JupyterHub gives each learner a container. Learners here are
# separated by folder only, which is all a test of one workshop needs.
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(state / "home" / "{username}")
c.Spawner.cmd = [str(user_bin / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.environment = {"PATH": f"{user_bin}:{os.environ['PATH']}"}  # git for nbgitpuller, the venv first
c.Spawner.environment.update(json.loads(os.environ.get("CLASS_HUB_USER_ENV", "{}")))
c.Spawner.args = ["--allow-root"] if os.geteuid() == 0 else []  # jupyter_server refuses root otherwise
c.Spawner.start_timeout = 300  # many servers starting at once on 2 cores
c.Spawner.http_timeout = 300

# The test's own token (a service): reads which servers run and stops them at the end; makes the board
# test's extra learners and their tokens.
c.JupyterHub.services = [{"name": "class-test", "api_token": os.environ["CLASS_HUB_TOKEN"]}]
c.JupyterHub.load_roles = [
    {
        "name": "class-test",
        "services": ["class-test"],
        "scopes": ["admin:users", "admin:servers", "list:users", "tokens"],
    }
]

# Optional: the class board exactly as the README's section configures it (CLASS_HUB_BOARD="port"), run from
# the published workshop (the instructor's clone), its database in the hub's state folder.
if os.environ.get("CLASS_HUB_BOARD"):
    os.environ.update(
        BOARD_PORT=os.environ["CLASS_HUB_BOARD"],
        BOARD_WORKSHOP=os.environ["CLASS_HUB_WORKSHOP"],
        BOARD_USER=os.environ["CLASS_HUB_BOARD_USER"],  # used when the hub runs as root (hub.py made the user)
        BOARD_FOLDER=str(state / "board"),
        BOARD_INSTRUCTORS="instructor",
    )
    load_subconfig(str(Path(os.environ["CLASS_HUB_WORKSHOP"]) / "deploy" / "board" / "jupyterhub_config_board.py"))
    c.Authenticator.admin_users = {"head"}  # an admin who is not in the instructors' group

# Optional: jupyterhub-idle-culler, as a real hub would run it (CLASS_HUB_CULL="timeout every").
# The benchmark shrinks the time scale: servers report activity every few seconds instead of 300.
if os.environ.get("CLASS_HUB_CULL"):
    timeout, every = os.environ["CLASS_HUB_CULL"].split()
    c.JupyterHub.services.append(
        {
            "name": "idle-culler",
            "command": [
                os.environ["CLASS_HUB_PYTHON"],
                "-m",
                "jupyterhub_idle_culler",
                f"--timeout={timeout}",
                f"--cull-every={every}",
            ],
        }
    )
    c.JupyterHub.load_roles.append(
        {
            "name": "idle-culler",
            "services": ["idle-culler"],
            "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        }
    )
if os.environ.get("CLASS_HUB_ACTIVITY_INTERVAL"):
    interval = int(os.environ["CLASS_HUB_ACTIVITY_INTERVAL"])
    c.JupyterHub.last_activity_interval = interval  # how often the hub reads the proxy's activity
    c.Spawner.environment["JUPYTERHUB_ACTIVITY_INTERVAL"] = str(interval)  # how often a server reports
# Optional: jupyter_server's own culler of idle kernels nobody is connected to
# (CLASS_HUB_KERNEL_CULL="timeout interval"), as the README suggests for a workshop.
if os.environ.get("CLASS_HUB_KERNEL_CULL"):
    timeout, interval = os.environ["CLASS_HUB_KERNEL_CULL"].split()
    c.Spawner.args += [
        f"--MappingKernelManager.cull_idle_timeout={timeout}",
        f"--MappingKernelManager.cull_interval={interval}",
    ]
