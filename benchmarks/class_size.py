"""How many learners one JupyterHub machine holds: memory per learner and time to first output, measured.

    make class-size                                  (sets up .class-test like make class-test)
    make class-size ARGS="--learners 1,5 --sections 1,2"

It runs the class test's real hub (tests/classroom) and prints four tables:
1. One learner opens every notebook in order, as a workshop goes. JupyterLab keeps a notebook's
   kernel running after its tab is closed, so every kernel stays. After each notebook: the
   kernel's memory (RSS; PSS, which splits shared pages among the processes sharing them; peak
   RSS), its CPU seconds, what holds memory (open matplotlib figures, arrays of 1 MiB or more, the
   weights file if the helpers keep it); then Run All again in the same kernel, twice, as learners
   do: memory must not keep growing.
2. N learners start at the same moment: seconds to the first output of 00, to the end of 00 and
   of 03, and the CPU seconds one learner's start costs (server, pull, 00).
3. Culling, on a time scale shrunk 60x: jupyterhub-idle-culler stops the server of a learner who
   left (and gives its memory back); jupyter_server's kernel culler shuts down the kernels of the
   notebooks a learner has closed, and keeps the one open in their browser.
4. Learners per machine (2/4/8 cores, 8/16/32 GB) from 1 and 2, and which limit binds: every kernel kept, at
   most two, and at most two for a class that stops before the last notebook (--start-cpu: size the CPU limit
   with another machine's seconds per start).
"""

import argparse
import json
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# runs in .class-test/hub's venv (make class-size): the class test's hub and learners, and deploy/'s link
sys.path[:0] = [str(ROOT / "tests" / "classroom"), str(ROOT / "deploy")]

from class_link import nbgitpuller_link  # noqa: E402
from hub import CLASS_DIR, REPO_NAME, Hub, cpu_seconds, memory, publish_workshop  # noqa: E402
from learner import Learner  # noqa: E402

NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
SETUP, TRAINING = "00_setup_check.ipynb", "03_queries_keys_values.ipynb"
GIB = 1024  # MiB
OS_RESERVE = 1 * GIB  # an assumption: the operating system and its services on a small VM
START_BURST = 120  # seconds: everybody clicks the link at once, and 00 must have run for all of them by then

# Run in a learner's kernel after a notebook: what keeps memory alive in its namespace, and the weights
# file if helpers.pretrained.load_tensors() holds it. Everything happens inside _held(), deleted
# after: names it left in the namespace would keep this run's arrays alive through the next Run All.
INSPECT = """
def _held():
    import json, sys, types

    def arrays(value, depth=0):  # three levels down: e.g. a model's list of layers' dicts of weights
        if isinstance(value, (type, types.ModuleType, types.FunctionType)) or depth > 3:
            return []
        if hasattr(value, "nbytes") and hasattr(value, "__array_interface__"):
            return [value]
        if isinstance(value, (list, tuple)):
            return [a for v in value for a in arrays(v, depth + 1)]
        if isinstance(value, dict):
            return [a for v in value.values() for a in arrays(v, depth + 1)]
        if hasattr(value, "__dict__"):
            return [a for v in vars(value).values() for a in arrays(v, depth + 1)]
        return []

    shell = {"In", "exit", "quit", "get_ipython"}  # IPython's own: through them lies the whole namespace again
    holders = [(k, v) for k, v in globals().items() if not k.startswith("_") and k not in shell]
    pretrained = sys.modules.get("helpers.pretrained")
    if pretrained is not None and pretrained.load_tensors.cache_info().currsize:
        holders.append(("load_tensors()", pretrained.load_tensors()))  # the whole file, cached
    seen, big = set(), []
    sized = [(sum(a.nbytes for a in arrays(v)), k, v) for k, v in holders]
    for _, name, value in sorted(sized, key=lambda t: -t[0]):  # an array two names share counts once, for the first
        found = {a.__array_interface__["data"][0]: a.nbytes for a in arrays(value)}
        size = sum(n for ptr, n in found.items() if ptr not in seen)
        seen |= set(found)
        if size >= 2**20:
            big.append([name, round(size / 2**20, 1)])
    plt = sys.modules.get("matplotlib.pyplot")
    print(json.dumps({"figures": len(plt.get_fignums()) if plt else 0, "big": big[:4]}))


_held()
del _held
"""


def new_remote(state):
    state.mkdir(parents=True)
    return publish_workshop(state / "remote")


def inspect(learner, kernel_id):
    run = learner.execute(kernel_id, INSPECT)
    text = "".join(o.get("text", "") for o in run.outputs if o["output_type"] == "stream")
    return json.loads(text) if not run.error else {"figures": "?", "big": [["error", run.error]]}


# --------------------------------------------------------------------------- 1. one learner, every notebook


def one_learner(args):
    state = CLASS_DIR / f"size-{int(time.time())}"
    remote = new_remote(state)
    rows = []
    with Hub(state=state, user_env=args.user_env) as hub:
        learner = Learner(hub.url, "learner1")
        learner.arrive(nbgitpuller_link(hub.url, remote.as_uri()))
        baseline = hub.learner_processes()["learner1"]
        server_start = memory(baseline["server"])
        for name in args.notebooks:
            path = f"{REPO_NAME}/notebooks/{name}"
            start = time.monotonic()
            run = learner.run_notebook(path, save=False)
            seconds = time.monotonic() - start
            time.sleep(args.settle)
            pid = hub.learner_processes()["learner1"]["kernels"][run.kernel_id]
            first = memory(pid)
            cpu = cpu_seconds(pid)
            held = inspect(learner, run.kernel_id)
            again_rss = []  # after each Run All again: growing with every run would be a leak
            for _ in range(args.reruns):
                again = learner.run_notebook(path, save=False, kernel_id=run.kernel_id)
                time.sleep(args.settle)
                again_rss.append(memory(pid)["rss"])
            held_again = inspect(learner, run.kernel_id)
            rows.append(
                {
                    "notebook": name,
                    "kernel": run.kernel_id,
                    "seconds": seconds,
                    "cpu": cpu,
                    "errors": run.errors + again.errors,
                    "first": first,
                    "again": again_rss,
                    "held": held,
                    "held_again": held_again,
                }
            )
        procs = hub.learner_processes()["learner1"]
        server = memory(procs["server"])
        kernels = {kid: memory(pid) for kid, pid in procs["kernels"].items()}
        overhead = hub.overhead()
    return {"rows": rows, "server_start": server_start, "server": server, "kernels": kernels, "hub_pss": overhead}


def print_one_learner(result):
    print("\n1. One learner, every notebook in order, each in its own kernel (MiB; CPU and wall in seconds)")
    print(
        f"{'notebook':<38}{'wall':>6}{'CPU':>6}{'RSS':>7}{'PSS':>7}{'peak':>7}{'RSS again':>12}"
        f"{'figures':>9}  arrays of 1 MiB or more alive after the run"
    )
    for r in result["rows"]:
        big = ", ".join(f"{k} {v}" for k, v in r["held"]["big"]) or "-"
        figures = f"{r['held']['figures']}/{r['held_again']['figures']}"
        again = " ".join(f"{rss:.0f}" for rss in r["again"]) or "-"
        print(
            f"{r['notebook']:<38}{r['seconds']:>6.1f}{r['cpu']:>6.1f}{r['first']['rss']:>7.0f}"
            f"{r['first']['pss']:>7.0f}{r['first']['peak']:>7.0f}{again:>12}{figures:>9}  {big}"
        )
        if r["errors"]:
            print(f"    errors: {r['errors']}")
    server, kernels = result["server"], result["kernels"].values()
    total_pss = server["pss"] + sum(k["pss"] for k in kernels)
    print(
        f"server (jupyterhub-singleuser, JupyterLab): RSS {server['rss']:.0f}, PSS {server['pss']:.0f} "
        f"(at start {result['server_start']['rss']:.0f})"
    )
    print(
        f"learner with all {len(result['kernels'])} kernels running: PSS {total_pss:.0f} MiB; "
        f"hub and proxy: PSS {result['hub_pss']:.0f} MiB"
    )
    print("(figures: open after the first / last Run All; RSS again: after each Run All again in the same kernel)")


# --------------------------------------------------------------------------- 2. N learners at once


def learners_at_once(n, args):
    state = CLASS_DIR / f"size-{n}-{int(time.time())}"
    remote = new_remote(state)
    with Hub(state=state, user_env=args.user_env) as hub:
        link = nbgitpuller_link(hub.url, remote.as_uri())
        start_line = threading.Barrier(n)

        def session(learner):
            start_line.wait()
            t0 = time.monotonic()
            learner.arrive(link)
            setup = learner.run_notebook(f"{REPO_NAME}/notebooks/{SETUP}", save=False)
            setup_done = time.monotonic() - t0
            procs = hub.learner_processes()[learner.name]
            start_cpu = cpu_seconds(procs["server"], children=True) + cpu_seconds(procs["kernels"][setup.kernel_id])
            training = learner.run_notebook(f"{REPO_NAME}/notebooks/{TRAINING}", save=False)
            errors = setup.errors + training.errors
            return {
                "first output": setup.first_output_at - t0,
                "00 done": setup_done,
                "03 done": time.monotonic() - t0,
                "start CPU": start_cpu,
                "errors": errors,
            }

        hub_cpu = hub.overhead_cpu()
        with ThreadPoolExecutor(n) as pool:
            results = list(pool.map(session, [Learner(hub.url, f"learner{i + 1}") for i in range(n)]))
        hub_cpu = (hub.overhead_cpu() - hub_cpu) / n
    for r in results:
        r["start CPU"] += hub_cpu  # the hub's and the proxy's share of a start
    return results


def print_at_once(rounds):
    print("\n2. N learners click the link at the same moment (seconds from the click; median / slowest)")
    print(
        f"{'N':>4}{'first output of 00':>22}{'00 done':>16}{'03 done':>16}{'CPU s per start':>18}"
        "   (CPU: hub, proxy, the learner's server with git, 00's kernel)"
    )
    for n, results in rounds.items():
        cells = []
        for key in ("first output", "00 done", "03 done"):
            values = [r[key] for r in results]
            cells.append(f"{statistics.median(values):>8.1f} / {max(values):>5.1f}")
        cpu = statistics.median(r["start CPU"] for r in results)
        print(f"{n:>4}{cells[0]:>22}{cells[1]:>16}{cells[2]:>16}{cpu:>18.1f}")
        for r in results:
            if r["errors"]:
                print(f"    errors: {r['errors']}")


# --------------------------------------------------------------------------- 3. culling


def learner_pss(hub, name):
    procs = hub.learner_processes().get(name)
    if not procs:
        return 0.0, 0
    return memory(procs["server"])["pss"] + sum(memory(p)["pss"] for p in procs["kernels"].values()), len(
        procs["kernels"]
    )


def culling(args):
    """Both cullers, 60x faster than a real hub: servers idle 60 s (a real hour), kernels idle 20 s (20 min).

    One learner leaves after 00. The other works through 00-03, each notebook closed after its run,
    then reads 03 with its tab open (a websocket connected) for 40 s, then runs cells again.
    """
    state = CLASS_DIR / f"size-cull-{int(time.time())}"
    remote = new_remote(state)
    with Hub(state=state, user_env=args.user_env, cull="60 5", kernel_cull="20 5", activity_interval=5) as hub:
        link = nbgitpuller_link(hub.url, remote.as_uri())
        leaving, staying = Learner(hub.url, "leaves"), Learner(hub.url, "stays")
        leaving.arrive(link)
        leaving.run_notebook(f"{REPO_NAME}/notebooks/{SETUP}", save=False)
        left_at = time.monotonic()
        freed = learner_pss(hub, "leaves")[0]
        staying.arrive(link)
        for name in [n for n in args.notebooks if n <= TRAINING]:
            run = staying.run_notebook(f"{REPO_NAME}/notebooks/{name}", save=False)
        worked = learner_pss(hub, "stays")
        tab, session_id = staying._connect(run.kernel_id)  # 03 open in JupyterLab: a connected websocket
        try:
            time.sleep(40)  # reading, running nothing
            read = learner_pss(hub, "stays")
            tab_kernel_alive = run.kernel_id in hub.learner_processes()["stays"]["kernels"]
            culled_after = None
            while time.monotonic() - left_at < 240:
                staying._execute(tab, session_id, 0, "x = 1", run)  # back at work in 03
                if not {u["name"]: bool(u["servers"]) for u in hub.api("GET", "/users")}["leaves"]:
                    culled_after = time.monotonic() - left_at
                    break
                time.sleep(3)
            stays_running = {u["name"]: bool(u["servers"]) for u in hub.api("GET", "/users")}["stays"]
        finally:
            tab.close()
    return {
        "culled_after": culled_after,
        "freed": freed,
        "stays_running": stays_running,
        "worked": worked,
        "read": read,
        "tab_kernel_alive": tab_kernel_alive,
    }


def print_culling(result):
    print(
        "\n3. Culling, 60x faster than a real hub: jupyterhub-idle-culler --timeout=60 --cull-every=5 (servers;"
        " activity reported every 5 s), MappingKernelManager.cull_idle_timeout=20 cull_interval=5 (kernels)"
    )
    when = f"{result['culled_after']:.0f} s" if result["culled_after"] is not None else "not within 240 s"
    print(f"a learner who leaves after 00: server stopped {when} later, giving back PSS {result['freed']:.0f} MiB")
    (pss_worked, n_worked), (pss_read, n_read) = result["worked"], result["read"]
    print(
        f"a learner after 00-03: {n_worked} kernels, PSS {pss_worked:.0f} MiB; after 40 s reading 03 with its tab "
        f"open: {n_read} kernel(s), PSS {pss_read:.0f} MiB, 03's kernel kept: {result['tab_kernel_alive']}; "
        f"server still running at the end: {result['stays_running']}"
    )


# --------------------------------------------------------------------------- 4. the sizing table


def sizing(one, rounds, start_cpu=None):
    """Learners per machine: min(memory bound, CPU bound), with the numbers measured above.

    Three kinds of learner: every kernel kept, at most two kernels (the two largest), and at most two for a class that
    stops before the last notebook (12: SmolLM2's kernel is by far the largest). start_cpu: the CPU seconds of one
    start to size with (another machine's); by default the median measured at the largest class size.
    """
    server = one["server"]["pss"]
    last = one["rows"][-1]
    kernels = sorted((k["pss"] for k in one["kernels"].values()), reverse=True)
    before = sorted((k["pss"] for kid, k in one["kernels"].items() if kid != last["kernel"]), reverse=True)
    per_learner = {
        "all kernels kept": server + sum(kernels),
        "two kernels": server + sum(kernels[:2]),
        f"two, stopping before {last['notebook'][:2]}": server + sum(before[:2]),
    }
    n_max = max(rounds)
    measured = statistics.median(r["start CPU"] for r in rounds[n_max])
    start_cpu = start_cpu or measured
    print("\n4. Learners per machine = min(memory, CPU)")
    print(
        "memory per learner (PSS): "
        + ", ".join(f"{per:.0f} MiB with {how}" for how, per in per_learner.items())
        + f"; reserved: {OS_RESERVE} MiB for the system + {one['hub_pss']:.0f} MiB hub and proxy"
    )
    print(
        f"CPU: one learner's start (server, pull, 00) costs {measured:.1f} CPU s here"
        + (f" (sized with {start_cpu:.1f})" if start_cpu != measured else "")
        + f"; everybody clicking the link at once must have run 00 within {START_BURST} s: learners <= cores x "
        f"{START_BURST} / {start_cpu:.1f}"
    )
    print(f"{'cores':>5} {'RAM':>5}" + "".join(f"  {how:>28}" for how in per_learner))
    for cores in (2, 4, 8):
        cpu_bound = int(cores * START_BURST / start_cpu)
        for ram in (8, 16, 32):
            free = ram * GIB - OS_RESERVE - one["hub_pss"]
            cells = []
            for per in per_learner.values():
                mem_bound = int(free // per)
                cells.append(f"{min(mem_bound, cpu_bound)} ({'memory' if mem_bound <= cpu_bound else 'CPU'} binds)")
            print(f"{cores:>5} {ram:>3}GB" + "".join(f"  {cell:>28}" for cell in cells))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", default="1,5,10", help="class sizes that start at once (default 1,5,10)")
    parser.add_argument("--notebooks", default=",".join(NOTEBOOKS), help="notebooks for table 1 (default: all)")
    parser.add_argument("--settle", type=float, default=2.0, help="seconds to wait before reading memory")
    parser.add_argument("--reruns", type=int, default=2, help="Run All again this many times in each kernel")
    parser.add_argument("--blas-threads", type=int, help="OPENBLAS_NUM_THREADS / OMP_NUM_THREADS for kernels")
    parser.add_argument("--sections", default="1,2,3", help="which tables to measure (the sizing table needs 1 and 2)")
    parser.add_argument("--start-cpu", type=float, help="CPU seconds per start to size with")
    args = parser.parse_args()
    args.notebooks = [n for n in args.notebooks.split(",") if n]
    threads = args.blas_threads
    args.user_env = {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)} if threads else {}
    sections = set(args.sections.split(","))
    print(f"hub: {CLASS_DIR}; kernels' BLAS threads: {threads or 'default'}")
    if "1" in sections:
        one = one_learner(args)
        print_one_learner(one)
    if "2" in sections:
        rounds = {n: learners_at_once(n, args) for n in map(int, args.learners.split(","))}
        print_at_once(rounds)
    if "3" in sections:
        print_culling(culling(args))
    if {"1", "2"} <= sections:
        sizing(one, rounds, args.start_cpu)


if __name__ == "__main__":
    main()
