"""What the class board costs: a learner's cell, the board's answers, its memory. Measured on the class test's hub.

    .class-test/hub/bin/python benchmarks/board.py            (after make class-test has set .class-test up)
    .class-test/hub/bin/python benchmarks/board.py --checks 100 --posts 3000

It starts the class test's real JupyterHub with the board configured as the README says
(deploy/board/jupyterhub_config_board.py), and prints three tables:
1. A learner's cell, in a real kernel on the hub: the time `report()` adds to a check (the call the
   check engine makes after printing its verdict: it only queues the post), and a whole check with
   reporting on and off; then how long the background post takes to reach the board (not waited for
   by the cell).
2. Bursts: N learners (their own hub users and tokens) post in the same second, through the hub's
   proxy: every answer's status and time.
3. The board's memory (RSS, PSS, peak RSS of its process) when it starts, and after a day of posts
   (--posts: 30 learners x 26 exercises x 4 checks each is about 3,000), with the time of the page's
   refresh (api/board) at that size.
"""

import argparse
import json
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "classroom"), str(ROOT / "deploy"), str(ROOT / "deploy" / "board")]

from board_store import read_exercises  # noqa: E402
from class_link import nbgitpuller_link  # noqa: E402
from hub import CLASS_DIR, REPO_NAME, USER_BIN, Hub, memory, publish_workshop  # noqa: E402
from learner import Learner  # noqa: E402

TRAINING = "03_queries_keys_values"

# run in the learner's kernel: the same check with reporting on and off, alternately (so both see the same
# load), each followed by a wait until the post has gone; then report() alone, and when its post arrives
IN_KERNEL = """
import io, json, time
from contextlib import redirect_stdout
from helpers import checks
from helpers import board_report as _report
exec(checks.EXERCISES["qkv_scores"].solution)
_times = {True: [], False: []}
for _ in range(N):
    for _on in (True, False):
        _report._state["on"] = _on
        with redirect_stdout(io.StringIO()):
            _t0 = time.perf_counter(); checks.qkv_scores(qkv_scores); _times[_on].append(time.perf_counter() - _t0)
        _report.wait_sent(10)
_report._state["on"] = True
_alone, _delivered = [], []
for _ in range(N):
    _t0 = time.perf_counter(); _report.report("qkv_scores", "correct", None, "✓ qkv_scores: correct!")
    _alone.append(time.perf_counter() - _t0)
    _report.wait_sent(10); _delivered.append(time.perf_counter() - _t0)
print(json.dumps({"on": _times[True], "off": _times[False], "report": _alone, "delivered": _delivered}))
"""


def ms(values):
    return f"{1000 * statistics.median(values):.3f} / {1000 * max(values):.3f}"


def cell_cost(hub, remote, n):
    learner = Learner(hub.url, "learner1")
    learner.arrive(nbgitpuller_link(hub.url, remote.as_uri(), notebook=f"notebooks/{TRAINING}.ipynb"))
    kernel = learner.open_notebook(f"{REPO_NAME}/notebooks/{TRAINING}.ipynb")
    setup = f"import os, sys; sys.path.insert(0, os.path.abspath('..')); N = {n}"  # the notebook's folder's parent
    run = learner.execute(kernel, setup + "\n" + IN_KERNEL)
    if run.error:
        raise RuntimeError(run.error)
    text = "".join(o.get("text", "") for o in run.outputs)
    data = json.loads(text.strip().splitlines()[-1])
    print(f"\n1. A learner's cell ({n} checks each, in a kernel on the hub)\n")
    print("| what | median / worst (ms) |\n|---|---|")
    print(f"| `report()` as the check engine calls it (what the cell waits for) | {ms(data['report'])} |")
    print(f"| a whole check of `qkv_scores`, reporting on | {ms(data['on'])} |")
    print(f"| the same check, reporting off, run alternately with the one above | {ms(data['off'])} |")
    print(f"| the post reaching the board, in the background (the cell does not wait) | {ms(data['delivered'])} |")
    return learner


def make_learners(hub, count, prefix):
    names = [f"{prefix}{i:03d}" for i in range(count)]
    hub.api("POST", "/users", json={"usernames": names})
    tokens = [
        hub.api("POST", f"/users/{name}/tokens", json={"scopes": ["access:services!service=board"]})["token"]
        for name in names
    ]
    return names, tokens


def post(hub, token, exercise, verdict="correct"):
    body = {"exercise": exercise, "verdict": verdict, "mistake": None, "message": ""}
    t0 = time.monotonic()
    answer = requests.post(
        hub.board_url + "api/verdicts", json=body, headers={"Authorization": f"token {token}"}, timeout=60
    )
    return answer.status_code, time.monotonic() - t0


def bursts(hub, sizes, exercises):
    print("\n2. Learners posting in the same second, through the hub's proxy\n")
    print("| learners at once | all stored | answer time, median / slowest (s) |\n|---|---|---|")
    for size in sizes:
        names, tokens = make_learners(hub, size, f"burst{size}x")
        for token in tokens:  # the board checks each token with the hub once, then remembers it for 5 minutes
            post(hub, token, exercises[0])
        start = threading.Barrier(size)

        def send(token, start=start):
            start.wait()
            return post(hub, token, exercises[1])

        with ThreadPoolExecutor(size) as pool:
            answers = list(pool.map(send, tokens))
        stored = sum(code == 201 for code, _ in answers)
        times = [t for _, t in answers]
        print(f"| {size} | {stored} of {size} | {statistics.median(times):.3f} / {max(times):.3f} |")


def day_of_posts(hub, posts, exercises, instructor):
    print("\n3. The board's memory (its process) and the page's refresh\n")
    print("| when | verdicts stored | RSS | PSS | peak RSS (MiB) | api/board (ms) |\n|---|---|---|---|---|---|")

    def row(when):
        pid = hub.board_pid()
        times = []
        for _ in range(5):
            t0 = time.monotonic()
            answer = instructor.http.get(hub.board_url + "api/board", timeout=60)
            answer.raise_for_status()
            times.append(time.monotonic() - t0)
        mem = memory(pid)
        stored = answer.json()["posts"]
        print(
            f"| {when} | {stored} | {mem['rss']:.0f} | {mem['pss']:.0f} | {mem['peak']:.0f} | "
            f"{1000 * statistics.median(times):.0f} |"
        )

    row("after the posts above")
    names, tokens = make_learners(hub, 30, "day")
    plan = [
        (tokens[i % 30], exercises[(i // 30) % len(exercises)], ("correct", "incorrect")[i % 2]) for i in range(posts)
    ]
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda p: post(hub, *p), plan))
    row(f"after a day: {posts} more posts from 30 learners")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=200, help="checks per setting in the learner's kernel")
    parser.add_argument("--bursts", default="10,30,60", help="learners posting at once, comma-separated")
    parser.add_argument("--posts", type=int, default=3000, help="posts for the memory after a day")
    args = parser.parse_args()
    state = CLASS_DIR / f"bench-board-{int(time.time())}"
    state.mkdir(parents=True)
    remote = publish_workshop(state / "remote")
    with Hub(state=state, board_from=publish_workshop(state / "instructor")) as hub:
        deadline = time.monotonic() + 120
        while hub.board_pid() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        instructor = Learner(hub.url, "instructor")
        instructor.login()
        data = instructor.http.get(hub.board_url + "api/board", timeout=60)
        data.raise_for_status()
        started = memory(hub.board_pid())
        print(f"The board at start: RSS {started['rss']:.0f} MiB, PSS {started['pss']:.0f} MiB (no verdicts yet)")
        exercises = [name for name, _ in read_exercises(str(USER_BIN / "python"), ROOT)]
        exercises = exercises[exercises.index("qkv_scores") :] + exercises[: exercises.index("qkv_scores")]
        cell_cost(hub, remote, args.checks)
        bursts(hub, [int(n) for n in args.bursts.split(",")], exercises)
        day_of_posts(hub, args.posts, exercises, instructor)


if __name__ == "__main__":
    main()
