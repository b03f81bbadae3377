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
4. A load: 30 learners post 200 verdicts each, evenly over a minute (100 a second in all), through the
   hub's proxy, while the board is open in 3 Chromium browsers (two instructors and an admin, logged in
   through the hub). Every verdict must be stored (answered 201, and in board.sqlite); the table gives
   the page's refresh as the browsers time it (fetch, read, draw: board.js's data-refresh-ms) during the
   load and after it, the api/board answer time, and the board's memory before and after.
   --only load runs this part alone.
"""

import argparse
import json
import sqlite3
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
from hub import CLASS_DIR, REPO_NAME, Hub, memory, publish_workshop  # noqa: E402
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


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]


def percentiles(values):
    """'p50 / p95' of `values` (ms)."""
    ordered = sorted(values)
    return f"{statistics.median(ordered):.1f} / {ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]:.1f}"


def open_board(pw, hub, name):
    """A Chromium of its own, logged in to the hub as `name`, showing the board; (browser, page)."""
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(f"{hub.url}/hub/login?next=/services/board/")
    page.fill("#username_input", name)
    page.fill("#password_input", "any password")
    page.click("#login_submit")
    page.wait_for_url("**/services/board/", timeout=120_000)
    page.wait_for_selector("body[data-refreshes]", timeout=120_000)
    return browser, page


def refresh_samples(pages, busy):
    """Every refresh the pages make while `busy()`: [(verdicts shown, refresh ms)] (board.js's own timing).

    Playwright's pages are read from this (the main) thread only.
    """
    samples, last = [], [None] * len(pages)
    while busy():
        for i, page in enumerate(pages):
            count, ms, posts = page.eval_on_selector(
                "body", "b => [b.dataset.refreshes, b.dataset.refreshMs, b.dataset.posts]"
            )
            if count != last[i]:
                last[i] = count
                samples.append((int(posts), float(ms)))
        time.sleep(0.25)
    return samples


def load(hub, exercises, instructor, learners, verdicts, seconds, browsers):
    from playwright.sync_api import sync_playwright  # requirements-class-test.txt; the browser is Debian's

    print(f"\n4. {learners} learners x {verdicts} verdicts over {seconds} s, the board open in {browsers} browsers\n")
    names, tokens = make_learners(hub, learners, "load")
    before = instructor.http.get(hub.board_url + "api/board", timeout=60).json()["posts"]
    rss_before = memory(hub.board_pid())
    gap = seconds / verdicts  # each learner's pace; learner i starts i / learners of a gap after the first

    def learner(i):
        session, codes = requests.Session(), []
        start = t0 + gap * i / learners
        for k in range(verdicts):
            time.sleep(max(0.0, start + k * gap - time.monotonic()))
            body = {"exercise": exercises[(i + k) % len(exercises)], "verdict": ("correct", "incorrect")[k % 2]}
            answer = session.post(
                hub.board_url + "api/verdicts", json=body, headers={"Authorization": f"token {tokens[i]}"}, timeout=60
            )
            codes.append(answer.status_code)
        return codes

    with sync_playwright() as pw:
        opened = [open_board(pw, hub, ("instructor", "head")[i % 2]) for i in range(browsers)]
        pages = [page for _, page in opened]
        try:
            t0 = time.monotonic() + 1
            with ThreadPoolExecutor(learners) as pool:
                posting = [pool.submit(learner, i) for i in range(learners)]
                during = refresh_samples(pages, lambda: not all(f.done() for f in posting))
                codes = [f.result() for f in posting]
                took = time.monotonic() - t0
            time.sleep(4)  # every page has drawn the last verdict
            end = time.monotonic() + 30
            after = refresh_samples(pages, lambda: time.monotonic() < end)
        finally:
            for browser, _ in opened:
                browser.close()
    api = []
    for _ in range(20):
        t = time.monotonic()
        instructor.http.get(hub.board_url + "api/board", timeout=60).raise_for_status()
        api.append(1000 * (time.monotonic() - t))
    rss_after = memory(hub.board_pid())
    total = instructor.http.get(hub.board_url + "api/board", timeout=60).json()["posts"]
    with sqlite3.connect(f"file:{hub.state / 'board' / 'board.sqlite'}?mode=ro", uri=True) as db:
        rows = dict(db.execute("SELECT user, COUNT(*) FROM verdicts WHERE user LIKE 'load%' GROUP BY user"))
    acknowledged = sum(code == 201 for learner_codes in codes for code in learner_codes)
    every = all(rows.get(name) == verdicts for name in names) and total - before == learners * verdicts
    print("| | measured |\n|---|---|")
    print(
        f"| verdicts sent / acknowledged (201) / in board.sqlite | {learners * verdicts} / {acknowledged} / "
        f"{sum(rows.values())}: {'every one stored' if every else 'SOME MISSING'} (posting took {took:.1f} s) |"
    )
    print(
        f"| page refresh in the browsers during the load, p50 / p95 (ms) | {percentiles([ms for _, ms in during])} "
        f"({len(during)} refreshes) |"
    )
    final = [ms for posts, ms in after if posts == total]
    print(
        f"| page refresh at the end ({total} verdicts), p50 / p95 (ms) | {percentiles(final)} "
        f"({len(final)} refreshes, {browsers} browsers) |"
    )
    print(f"| api/board through the proxy at the end, p50 / p95 (ms) | {percentiles(api)} (20 requests) |")
    print(
        f"| the board's RSS before / after (MiB); peak RSS | {rss_before['rss']:.0f} / {rss_after['rss']:.0f}; "
        f"{rss_after['peak']:.0f} |"
    )
    if not every:
        raise SystemExit("not every verdict was stored")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=200, help="checks per setting in the learner's kernel")
    parser.add_argument("--bursts", default="10,30,60", help="learners posting at once, comma-separated")
    parser.add_argument("--posts", type=int, default=3000, help="posts for the memory after a day")
    parser.add_argument("--load", default="30,200,60,3", help="learners, verdicts each, seconds, browsers")
    parser.add_argument("--only", choices=["load"], help="run the load part alone")
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
        exercises = [name for name, _ in read_exercises(ROOT / "deploy" / "board" / "exercises.json")]
        exercises = exercises[exercises.index("qkv_scores") :] + exercises[: exercises.index("qkv_scores")]
        if args.only != "load":
            cell_cost(hub, remote, args.checks)
            bursts(hub, [int(n) for n in args.bursts.split(",")], exercises)
            day_of_posts(hub, args.posts, exercises, instructor)
        learners, verdicts, seconds, browsers = (int(n) for n in args.load.split(","))
        load(hub, exercises, instructor, learners, verdicts, seconds, browsers)


if __name__ == "__main__":
    main()
