"""A whole class on one real JupyterHub: `make class-test` (LEARNERS=N, default 5).

The hub is JupyterHub from PyPI with its dummy login and one local process per learner, behind
configurable-http-proxy from npm; the learners' environment is built from this repository's
requirement files only (requirements.txt, requirements-weights.txt, requirements-hub.txt).
A git repository made from this work tree is the "remote" nbgitpuller clones.

1. N learners start at the same moment. Each logs in, starts a server, clicks the nbgitpuller
   link, runs 00_setup_check and 03_queries_keys_values (a widget and training) cell by cell
   through the kernel's websocket, saves both with their outputs (as autosave does), changes a
   line of an exercise cell in 03 and keeps a notebook of their own.
2. The instructor commits a fix to a notebook nobody opened and, in 03, to a markdown cell, to a
   code cell whose outputs the learners' run changed, and to the very line the learners changed.
   Every learner clicks the link again: the untouched notebook has the fix, every learner's work
   is what it was except where the fixes merged in (the code cell gets the instructor's code and
   keeps the learner's outputs), the learner's line wins over the instructor's, nothing is
   left conflicted.
3. A learner who wants the fixed 03 renames their copy and clicks again: nbgitpuller restores it.
4. The class board (deploy/board/, configured as the README says): it runs as its own unprivileged
   user when the hub runs as root (as TLJH's does), owns its folder and cannot read the hub's secret,
   and starts no other process. In their 03 kernels the learners
   solve, fail and skip its two exercises through the real checks, which report to the board; a real
   browser (Playwright, Debian's chromium) logs in as the instructor and sees the grid and the
   mistake counts the plan makes; a learner (not an instructor) is refused, an admin let in; bad
   posts get a 4xx and are not stored; 30 learners posting in the same second are all stored; the
   board killed and restarted by the hub keeps every verdict.

The file name does not start with test_, so `make test` never collects it. Settings:
LEARNERS (default 5), CLASS_TEST_KEEP=1 keeps the hub's folder (.class-test/run-*) to look at, with
the board's screenshot (board.png); CHROMIUM (default /usr/bin/chromium).
"""

import json
import os
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
import requests

# deploy/ is on the path by pyproject.toml's pytest pythonpath, this file's folder as the folder of a test file
from class_link import nbgitpuller_link
from hub import CLASS_DIR, GIT_ID, REPO_NAME, ROOT, Hub, descendants, git, memory, owner, publish_workshop, run_as
from learner import Learner, LearnerError

LEARNERS = int(os.environ.get("LEARNERS", "5"))
NAMES = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
SETUP, TRAINING = "00_setup_check", "03_queries_keys_values"  # 03: a widget and a training loop
UNTOUCHED = next(n for n in NAMES if n not in (SETUP, TRAINING))  # nobody opens it
OWN_NOTEBOOK = "my_notes.ipynb"  # a notebook a learner makes, next to the workshop's
FIX = "Corrected during the workshop."
INSTRUCTOR_LINE = "  # the instructor's corrected line\n"


def nb_path(name):
    return f"{REPO_NAME}/notebooks/{name}.ipynb"


def code_source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def exercise_cell(notebook):
    """Index of the first exercise stub (a code cell that raises NotImplementedError)."""
    return next(
        i
        for i, c in enumerate(notebook["cells"])
        if c["cell_type"] == "code" and "raise NotImplementedError" in code_source(c)
    )


def with_first_line(source, suffix):
    first, _, rest = source.partition("\n")
    return first + suffix.rstrip("\n") + "\n" + rest


class Classroom:
    """What the three steps share: the hub, the remote, the learners and what they measured."""

    def __init__(self, hub, remote):
        self.hub, self.remote = hub, remote
        self.link = nbgitpuller_link(hub.url, remote.as_uri(), notebook=f"notebooks/{SETUP}.ipynb")
        self.learners = [Learner(hub.url, f"learner{i + 1}") for i in range(LEARNERS)]
        self.times = {}  # learner -> {phase: seconds since all started}
        self.memory = {}  # learner -> {process: memory()}
        self.before_update = {}  # learner -> {relative path: bytes}
        self.step_done = set()
        self.kernels = {}  # learner -> the kernel id of their 03
        self.expected = None  # what the board must show after the plan: {learner: {exercise: verdict}}
        self.board_memory = []  # (moment, memory()) of the board's process

    def home(self, learner):
        return self.hub.state / "home" / learner.name / REPO_NAME


class Report:
    """Prints the measured times and memory after pytest's summary."""

    def __init__(self, classroom):
        self.room = classroom

    def pytest_terminal_summary(self, terminalreporter):
        room = self.room
        if room.times:
            terminalreporter.section(f"class test: {LEARNERS} learners starting at once (seconds from the start)")
            phases = ["server ready", "pulled", "first output", f"{SETUP} done", f"{TRAINING} done"]
            columns = [(p, max(14, len(p) + 2)) for p in phases]
            terminalreporter.write_line(f"{'learner':<10}" + "".join(f"{p:>{w}}" for p, w in columns))
            for name, times in sorted(room.times.items()):
                terminalreporter.write_line(
                    f"{name:<10}" + "".join(f"{times.get(p, float('nan')):>{w}.1f}" for p, w in columns)
                )
        if room.memory:
            terminalreporter.section("memory per learner after both notebooks, both kernels running (MiB)")
            terminalreporter.write_line(f"{'learner':<10}{'process':<36}{'RSS':>8}{'PSS':>8}{'peak RSS':>10}")
            for name, procs in sorted(room.memory.items()):
                for proc, mem in procs.items():
                    terminalreporter.write_line(
                        f"{name:<10}{proc:<36}{mem['rss']:>8.0f}{mem['pss']:>8.0f}{mem['peak']:>10.0f}"
                    )
                total = {k: sum(m[k] for m in procs.values()) for k in ("rss", "pss")}
                terminalreporter.write_line(f"{name:<10}{'total':<36}{total['rss']:>8.0f}{total['pss']:>8.0f}")
        if room.board_memory:
            terminalreporter.section("the class board's process (MiB)")
            terminalreporter.write_line(f"{'when':<44}{'RSS':>8}{'PSS':>8}{'peak RSS':>10}")
            for moment, mem in room.board_memory:
                terminalreporter.write_line(f"{moment:<44}{mem['rss']:>8.0f}{mem['pss']:>8.0f}{mem['peak']:>10.0f}")


@pytest.fixture(scope="module")
def room(request):
    state = Path(CLASS_DIR / f"run-{os.getpid()}-{int(time.time())}")
    state.mkdir(parents=True)
    remote = publish_workshop(state / "remote")
    keep = os.environ.get("CLASS_TEST_KEEP") == "1"
    # the board runs from a clone of its own, as an instructor's would, not from the learners' remote
    with Hub(state=state, keep_state=keep, board_from=publish_workshop(state / "instructor")) as hub:
        classroom = Classroom(hub, remote)
        request.config.pluginmanager.register(Report(classroom), "class-test-report")
        yield classroom


# --------------------------------------------------------------------------- 1. the class works


def learner_session(room, learner, start_line):
    start_line.wait()
    t0 = time.monotonic()
    learner.arrive(room.link)
    setup = learner.run_notebook(nb_path(SETUP))
    setup_done = time.monotonic()
    training = learner.run_notebook(nb_path(TRAINING))
    training_done = time.monotonic()
    room.times[learner.name] = {
        "server ready": learner.marks["server ready"] - t0,
        "pulled": learner.marks["pulled"] - t0,
        "first output": setup.first_output_at - t0,
        f"{SETUP} done": setup_done - t0,
        f"{TRAINING} done": training_done - t0,
    }
    # the learner's own work: a changed line in an exercise cell, and a notebook of their own
    notebook = learner.read_notebook(nb_path(TRAINING))
    cell = notebook["cells"][exercise_cell(notebook)]
    cell["source"] = with_first_line(code_source(cell), f"  # {learner.name}'s attempt")
    learner.save_notebook(nb_path(TRAINING), notebook)
    own = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"{learner.name}'s notes")])
    learner.save_notebook(f"{REPO_NAME}/{OWN_NOTEBOOK}", json.loads(nbformat.writes(own)))
    return setup, training


def test_every_learner_runs_the_notebooks_on_one_hub(room):
    start_line = threading.Barrier(LEARNERS)
    with ThreadPoolExecutor(LEARNERS) as pool:
        futures = [pool.submit(learner_session, room, learner, start_line) for learner in room.learners]
        runs = [future.result() for future in futures]  # re-raises a learner's failure
    kernels = {}  # learner -> {kernel id: notebook}
    for learner, (setup, training) in zip(room.learners, runs, strict=True):
        kernels[learner.name] = {setup.kernel_id: SETUP, training.kernel_id: TRAINING}
        room.kernels[learner.name] = training.kernel_id
        for run in (setup, training):
            assert not run.errors, f"{learner.name}: {run.path}: {run.errors}"
            n_code = sum(c["cell_type"] == "code" for c in learner.read_notebook(run.path)["cells"])
            assert len(run.cells) == n_code, f"{learner.name}: {run.path} ran {len(run.cells)} of {n_code} cells"
        widget_shown = any(
            "application/vnd.jupyter.widget-view+json" in o.get("data", {}) for c in training.cells for o in c.outputs
        )
        assert widget_shown, f"{learner.name}: {TRAINING} showed no widget"
    for name, procs in room.hub.learner_processes().items():
        assert set(procs["kernels"]) == set(kernels[name]), f"{name}: kernels {procs['kernels']}"
        room.memory[name] = {"server": memory(procs["server"])}
        for kernel_id, pid in procs["kernels"].items():
            room.memory[name][f"kernel of {kernels[name][kernel_id]}"] = memory(pid)
    assert sorted(room.memory) == sorted(learner.name for learner in room.learners)
    for learner in room.learners:
        home = room.home(learner)
        room.before_update[learner.name] = {
            str(p.relative_to(home)): p.read_bytes() for p in home.rglob("*") if p.is_file() and ".git" not in p.parts
        }
    room.step_done.add(1)


# --------------------------------------------------------------------------- 2. a fix mid-workshop


def instructor_fixes(remote, learners_copy):
    """Commit fixes: to a notebook nobody opened; in 03, to a markdown cell, to the first line of a code
    cell whose outputs the learners' run changed, and to the very line the learners changed."""
    untouched = nbformat.read(remote / "notebooks" / f"{UNTOUCHED}.ipynb", as_version=4)
    first_markdown = next(c for c in untouched.cells if c.cell_type == "markdown")
    first_markdown.source += f"\n\n{FIX}"
    nbformat.write(untouched, remote / "notebooks" / f"{UNTOUCHED}.ipynb")

    training = nbformat.read(remote / "notebooks" / f"{TRAINING}.ipynb", as_version=4)
    exercise = exercise_cell(training)
    last_markdown = max(i for i, c in enumerate(training.cells) if c.cell_type == "markdown")
    assert last_markdown > exercise + 2, "the markdown fix must be cells away from the learners' line"
    training.cells[last_markdown].source += f"\n\n{FIX}"
    rerun = [
        i
        for i, (ours, theirs) in enumerate(zip(training.cells, learners_copy.cells, strict=True))
        if ours.cell_type == "code" and abs(i - exercise) > 1 and ours.outputs != theirs.outputs
    ]
    assert rerun, "the learners' run changed no outputs: this step would test less than it says"
    training.cells[rerun[0]].source = with_first_line(training.cells[rerun[0]].source, f"  # {FIX}")
    training.cells[exercise].source = with_first_line(training.cells[exercise].source, INSTRUCTOR_LINE)
    nbformat.write(training, remote / "notebooks" / f"{TRAINING}.ipynb")

    changed = git("diff", "--numstat", cwd=remote).split("\n")
    assert all(sum(map(int, line.split()[:2])) <= 8 for line in changed if line), f"not a small fix: {changed}"
    git(*GIT_ID, "commit", "-q", "-am", "Fix two notebooks mid-workshop", cwd=remote)
    return exercise, last_markdown, rerun[0]


def assert_clean_merge(home, name):
    assert not (home / ".git" / "MERGE_HEAD").exists(), f"{name}: a merge was left half done"
    status = git("status", "--porcelain", cwd=home).splitlines()
    unmerged = [line for line in status if line[:2] in ("DD", "AU", "UD", "UA", "DU", "AA", "UU")]
    assert not unmerged, f"{name}: unmerged files {unmerged}"
    subprocess.run(["git", "merge-base", "--is-ancestor", "origin/main", "HEAD"], cwd=home, check=True)
    for path in home.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            text = path.read_bytes()
            assert b"\n<<<<<<< " not in text and b"\n>>>>>>> " not in text, f"{name}: conflict markers in {path}"


def test_the_instructors_fix_reaches_every_learner_and_keeps_their_work(room):
    if 1 not in room.step_done:
        pytest.skip("the learners did not get through step 1")
    learners_copy = nbformat.reads(room.before_update["learner1"][f"notebooks/{TRAINING}.ipynb"].decode(), as_version=4)
    exercise, fixed_markdown, fixed_code = instructor_fixes(room.remote, learners_copy)
    with ThreadPoolExecutor(LEARNERS) as pool:
        list(pool.map(lambda learner: learner.click(room.link), room.learners))

    upstream_training = nbformat.reads((room.remote / "notebooks" / f"{TRAINING}.ipynb").read_text(), as_version=4)
    for learner in room.learners:
        home, before = room.home(learner), room.before_update[learner.name]
        assert_clean_merge(home, learner.name)
        # the notebook nobody opened is the instructor's, byte for byte
        untouched = f"notebooks/{UNTOUCHED}.ipynb"
        assert (home / untouched).read_bytes() == (room.remote / untouched).read_bytes(), learner.name
        assert FIX in (home / untouched).read_text()
        # nothing the learner had is gone, and everything but 03 is exactly as they left it
        now = {str(p.relative_to(home)): p for p in home.rglob("*") if p.is_file() and ".git" not in p.parts}
        assert set(before) <= set(now), f"{learner.name} lost {set(before) - set(now)}"
        for path, content in before.items():
            if path not in (untouched, f"notebooks/{TRAINING}.ipynb"):
                assert now[path].read_bytes() == content, f"{learner.name}: {path} changed"
        assert f"{learner.name}'s notes" in (home / OWN_NOTEBOOK).read_text()
        # 03: the learner's cells and outputs as saved, the fixes merged in, but the learner's line kept
        mine = nbformat.reads(before[f"notebooks/{TRAINING}.ipynb"].decode(), as_version=4)
        merged = nbformat.read(home / "notebooks" / f"{TRAINING}.ipynb", as_version=4)
        nbformat.validate(merged)
        assert len(merged.cells) == len(mine.cells)
        for i, (old, new) in enumerate(zip(mine.cells, merged.cells, strict=True)):
            if i == fixed_markdown:
                assert new == upstream_training.cells[i], f"{learner.name}: the markdown fix did not merge in"
            elif i == fixed_code:  # the instructor's code, the learner's outputs
                assert new.source == upstream_training.cells[i].source, f"{learner.name}: the code fix is missing"
                assert (new.outputs, new.execution_count) == (old.outputs, old.execution_count), learner.name
            else:
                assert new == old, f"{learner.name}: cell {i} of {TRAINING} changed"
        assert f"{learner.name}'s attempt" in merged.cells[exercise].source
        assert INSTRUCTOR_LINE.strip() not in merged.cells[exercise].source  # the learner's line wins
    room.step_done.add(2)


# --------------------------------------------------------------------------- 3. starting a notebook over


def test_a_learner_gets_the_fixed_notebook_by_renaming_their_copy(room):
    if 2 not in room.step_done:
        pytest.skip("step 2 did not pass")
    learner = room.learners[0]
    home = room.home(learner)
    mine = (home / "notebooks" / f"{TRAINING}.ipynb").read_bytes()
    learner.rename(nb_path(TRAINING), nb_path(f"{TRAINING}_mine"))
    learner.click(room.link)
    assert_clean_merge(home, learner.name)
    fixed = (room.remote / "notebooks" / f"{TRAINING}.ipynb").read_bytes()
    assert (home / "notebooks" / f"{TRAINING}.ipynb").read_bytes() == fixed
    assert INSTRUCTOR_LINE.strip().encode() in fixed
    assert (home / "notebooks" / f"{TRAINING}_mine.ipynb").read_bytes() == mine


# --------------------------------------------------------------------------- 4. the class board

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
QKV, BACKWARD = "qkv_scores", "softmax_backward"  # 03's exercises, in notebook order
# what learner i does in their 03 kernel (the plan cycles): for each exercise the solution or one of the
# check's registered mistakes (by its code); an exercise left out is skipped (still "not attempted" from Run All)
PLAN = [
    {QKV: "solution", BACKWARD: "solution"},
    {QKV: "transposed", BACKWARD: "solution"},
    {QKV: "transposed", BACKWARD: "wrong-axis"},
    {QKV: "solution"},
    {},
]
MARK = {"correct": "✓", "incorrect": "✗", "not attempted": "·"}


def plan_of(room, learner):
    return PLAN[room.learners.index(learner) % len(PLAN)]


def attempts(plan):
    """The code a learner runs in their 03 kernel: each planned answer checked by the real check, then
    wait until the reporter has sent every verdict (on its background thread)."""
    lines = ["from helpers import checks", "from helpers import board_report as _report"]
    for exercise, answer in plan.items():
        source = f"checks.EXERCISES[{exercise!r}]." + ("solution" if answer == "solution" else f"mistakes[{answer!r}]")
        lines += [f"exec({source})", f"print('mistake:', checks.{exercise}({exercise}).mistake)"]
    lines.append("print('all sent:', _report.wait_sent(30))")
    return "\n".join(lines)


def instructor_session(room, name="instructor"):
    person = Learner(room.hub.url, name)
    person.login()
    return person


def board_data(session, room):
    """The board's JSON, fetched as a browser would (the board sends the visitor through the hub's OAuth)."""
    answer = session.http.get(room.hub.board_url + "api/board", timeout=60)
    answer.raise_for_status()
    return answer.json()


def board_pid(room, timeout=120):
    """The board's process, once the hub has started it."""
    deadline = time.monotonic() + timeout
    while (pid := room.hub.board_pid()) is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert pid, f"the hub did not start the board:\n{room.hub.log_tail()}"
    return pid


def test_the_board_runs_as_its_own_unprivileged_user(room):
    pid = board_pid(room)
    folder = room.hub.state / "board"
    if room.hub.board_user is None:  # the hub is not root: the board runs as the hub's user, it cannot switch
        assert owner(pid) == os.geteuid()
    else:
        import pwd

        uid = pwd.getpwnam(room.hub.board_user).pw_uid
        assert owner(pid) == uid != 0, f"the board runs as user id {owner(pid)}"
        assert folder.stat().st_uid == uid and folder.stat().st_mode & 0o777 == 0o700
        assert all(path.stat().st_uid == uid for path in folder.iterdir()), list(folder.iterdir())
        secret = room.hub.state / "jupyterhub_cookie_secret"  # the hub's own, readable by root only
        as_board = run_as(room.hub.board_user, ["cat", str(secret)])
        assert as_board.returncode != 0 and "Permission denied" in as_board.stderr, as_board
    assert (folder / "board.sqlite").exists()
    assert descendants(pid) == []  # it runs nobody's Python, the learners' included: it reads exercises.json
    room.board_memory.append(("at start", memory(pid)))


def test_the_learners_checks_report_to_the_board(room):
    if 1 not in room.step_done:
        pytest.skip("the learners did not get through step 1")

    def attempt(learner):
        run = learner.execute(room.kernels[learner.name], attempts(plan_of(room, learner)))
        assert not run.error, f"{learner.name}: {run.error}"
        text = "".join(o.get("text", "") for o in run.outputs)
        assert "all sent: True" in text, f"{learner.name}: {text}"
        expected_codes = [None if a == "solution" else a for a in plan_of(room, learner).values()]
        codes = [line.removeprefix("mistake: ") for line in text.splitlines() if line.startswith("mistake: ")]
        assert codes == [str(code) for code in expected_codes], text

    with ThreadPoolExecutor(LEARNERS) as pool:
        list(pool.map(attempt, room.learners))
    room.expected = {
        learner.name: {
            exercise: {None: "not attempted", "solution": "correct"}.get(
                plan_of(room, learner).get(exercise), "incorrect"
            )
            for exercise in (QKV, BACKWARD)
        }
        for learner in room.learners
    }
    data = board_data(instructor_session(room), room)
    assert [ex["name"] for ex in data["exercises"]] == [QKV, BACKWARD]  # only 03 was reached, in its order
    assert {row["name"]: row["marks"] for row in data["learners"]} == room.expected
    for exercise in (QKV, BACKWARD):
        verdicts = [marks[exercise] for marks in room.expected.values()]
        assert data["counts"][exercise] == {
            "done": verdicts.count("correct"),
            "stuck": verdicts.count("incorrect"),
            "not started": verdicts.count("not attempted"),
        }
    assert {(m["exercise"], m["mistake"]): m["learners"] for m in data["mistakes"]} == expected_mistakes(room)
    assert all(m["message"].startswith(f"✗ {m['exercise']}: ") for m in data["mistakes"])
    room.board_memory.append(("after the class's checks", memory(room.hub.board_pid())))
    room.step_done.add(4)


def expected_mistakes(room):
    counts = {}
    for learner in room.learners:
        for exercise, answer in plan_of(room, learner).items():
            if answer != "solution":
                counts[(exercise, answer)] = counts.get((exercise, answer), 0) + 1
    return counts


def test_the_instructor_sees_the_grid_and_the_mistakes_in_a_browser(room):
    if 4 not in room.step_done:
        pytest.skip("the learners' verdicts did not reach the board")
    from playwright.sync_api import sync_playwright  # requirements-class-test.txt; the browser is Debian's

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: apt-get install -y chromium (make class-test does it)"
    outside = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.on("request", lambda r: None if r.url.startswith(room.hub.url) else outside.append(r.url))
            page.goto(f"{room.hub.url}/hub/login?next=/services/board/")
            page.fill("#username_input", "instructor")
            page.fill("#password_input", "any password")
            page.click("#login_submit")
            page.wait_for_url("**/services/board/", timeout=60_000)
            # the page's policy forbids eval, so wait with a selector, not a script
            page.wait_for_selector(f"#grid tbody tr:nth-child({LEARNERS})", timeout=60_000)
            read = "rows => rows.map(r => Array.from(r.cells, c => c.textContent))"
            header = page.eval_on_selector_all("#grid thead tr:last-child th", read.replace("r.cells", "[r]"))
            grid = page.eval_on_selector_all("#grid tbody tr", read)
            counts = page.eval_on_selector_all("#grid tfoot tr", read)
            mistakes = page.eval_on_selector_all("#mistakes tr", read)
            font = page.eval_on_selector("#grid td", "td => parseFloat(getComputedStyle(td).fontSize)")
            page.screenshot(path=str(CLASS_DIR / "board.png"), full_page=True)
        finally:
            browser.close()
    assert outside == [], f"the board loaded from outside the hub: {outside}"
    assert [h[0] for h in header] == ["learner", QKV, BACKWARD]
    shown = {row[0]: row[1:] for row in grid}
    assert shown == {name: [MARK[m[QKV]], MARK[m[BACKWARD]]] for name, m in room.expected.items()}
    for row, key in zip(counts, ["correct", "incorrect", "not attempted"], strict=True):
        assert row[1:] == [str(sum(m[ex] == key for m in room.expected.values())) for ex in (QKV, BACKWARD)], row
    seen = {(row[1], row[2]): int(row[0]) for row in mistakes[1:]}
    assert seen == expected_mistakes(room)
    assert font >= 20, f"the grid's type is {font}px: too small for a projector"


def test_only_instructors_and_admins_open_the_board(room):
    if 4 not in room.step_done:
        pytest.skip("the board has no verdicts")
    learner = room.learners[0]  # logged in to the hub, not in the instructors' group
    for path in ("", "api/board"):
        answer = learner.http.get(room.hub.board_url + path, timeout=60)
        assert answer.status_code == 403, f"{path}: {answer.status_code}"
    admin = instructor_session(room, "head")  # an admin of the hub, in no group
    assert admin.http.get(room.hub.board_url, timeout=60).status_code == 200
    assert len(board_data(admin, room)["learners"]) == LEARNERS


def board_token(room, name):
    """A token of hub user `name` that may reach the board, as the one in their server is."""
    made = room.hub.api("POST", f"/users/{name}/tokens", json={"scopes": ["access:services!service=board"]})
    return made["token"]


def post_verdict(room, token, body):
    return requests.post(
        room.hub.board_url + "api/verdicts",
        data=body if isinstance(body, bytes) else json.dumps(body).encode(),
        headers={"Authorization": f"token {token}"} if token else {},
        timeout=60,
    )


def test_bad_posts_are_refused_and_not_stored(room):
    if 4 not in room.step_done:
        pytest.skip("the board has no verdicts")
    instructor = instructor_session(room)
    before = board_data(instructor, room)
    token = board_token(room, room.learners[0].name)
    good = {"exercise": QKV, "verdict": "incorrect", "mistake": "transposed", "message": "✗ transposed"}
    bad = [
        (b'{"exercise": "' + b"x" * 5000 + b'"}', 413),  # oversized
        ({**good, "exercise": "no_such_exercise"}, 400),
        ({**good, "user": room.learners[1].name}, 403),  # another learner's name
        ({**good, "message": "<script>alert('the room')</script>"}, 400),
        ({**good, "message": '<img src=x onerror="alert(1)">'}, 400),
    ]
    for body, status in bad:
        answer = post_verdict(room, token, body)
        assert answer.status_code == status, f"{body!r:.80}: {answer.status_code} {answer.text[:200]}"
    assert post_verdict(room, None, good).status_code in (401, 403)  # no token at all
    assert board_data(instructor, room) == before


def test_thirty_learners_posting_in_the_same_second_are_all_stored(room, record_property):
    if 4 not in room.step_done:
        pytest.skip("the board has no verdicts")
    instructor = instructor_session(room)
    before = board_data(instructor, room)["posts"]
    names = [f"burst{i:02d}" for i in range(30)]
    room.hub.api("POST", "/users", json={"usernames": names})
    tokens = [board_token(room, name) for name in names]
    start = threading.Barrier(30)
    answers, took = {}, {}

    def send(name, token):
        start.wait()
        t0 = time.monotonic()
        answers[name] = post_verdict(room, token, {"exercise": QKV, "verdict": "correct", "mistake": None})
        took[name] = time.monotonic() - t0

    with ThreadPoolExecutor(30) as pool:
        list(pool.map(send, names, tokens))
    assert {name: a.status_code for name, a in answers.items()} == dict.fromkeys(names, 201)
    data = board_data(instructor, room)
    assert data["posts"] == before + 30
    marks = {row["name"]: row["marks"] for row in data["learners"]}
    assert all(marks[name] == {QKV: "correct"} for name in names)
    slowest = max(took.values())
    room.board_memory.append((f"after 30 posts at once (slowest {slowest:.2f} s)", memory(room.hub.board_pid())))
    print(f"30 posts at once: all 201, median {sorted(took.values())[15]:.3f} s, slowest {slowest:.3f} s")


def test_a_restarted_board_keeps_every_verdict(room):
    if 4 not in room.step_done:
        pytest.skip("the board has no verdicts")
    instructor = instructor_session(room)
    before = board_data(instructor, room)
    old = room.hub.board_pid()
    os.kill(old, signal.SIGKILL)  # no chance to save anything: only what was committed survives
    t0 = time.monotonic()
    deadline = t0 + 120  # the hub looks at its services every 30 s and starts a stopped one again
    while time.monotonic() < deadline:
        new = room.hub.board_pid()
        if new and new != old:
            try:
                after = board_data(instructor, room)  # the instructor's login survives the restart too
                break
            except (requests.RequestException, LearnerError):
                pass
        time.sleep(1)
    else:
        pytest.fail(f"the hub did not restart the board within 120 s:\n{room.hub.log_tail()}")
    assert after == before
    room.board_memory.append((f"restarted after {time.monotonic() - t0:.0f} s", memory(new)))
    token = board_token(room, room.learners[0].name)
    assert post_verdict(room, token, {"exercise": BACKWARD, "verdict": "not attempted"}).status_code == 201
    assert board_data(instructor, room)["posts"] == before["posts"] + 1
