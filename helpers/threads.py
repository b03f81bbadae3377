"""Run numpy work on every core: Python threads, with the BLAS library held to one thread.

numpy releases the GIL inside matrix products and element-wise loops, so plain Python
threads run them in parallel. The BLAS library behind `@` (OpenBLAS in numpy's wheels)
starts its own threads inside every product too; two layers of threads then fight over
the same cores, and small products get many times slower. So while our threads run, BLAS
is held to one thread (found with ctypes, no extra package), and restored afterwards.

Taught in 10_efficient_attention.
"""

import contextlib
import ctypes
import glob
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# In the browser (JupyterLite: Pyodide, WebAssembly) a program has one thread: Python cannot start another
# ("can't start new thread"), so everything here runs on that one.
IN_BROWSER = sys.platform == "emscripten"

# (set, get) function pairs, by the names the BLAS builds numpy ships with export
_SETTERS = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),  # numpy >= 2 wheels
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),  # numpy < 2 wheels, Debian, conda
    ("MKL_Set_Num_Threads", "MKL_Get_Max_Threads"),  # conda's MKL
)
_lock = threading.Lock()
_depth = 0  # how many calls are inside blas_single_thread() right now
_saved = []  # the thread counts to restore when the last one leaves


def _loaded_blas_paths():
    """Paths of the BLAS libraries this process has loaded (Linux), or numpy ships (macOS, Windows)."""
    paths = []
    try:
        with open("/proc/self/maps") as maps:
            fields = [line.split(maxsplit=5) for line in maps]
        paths = [f[5].strip() for f in fields if len(f) == 6]  # the 6th field is the mapped file
    except OSError:  # not Linux: numpy's wheels keep their BLAS next to the package
        root = os.path.dirname(np.__file__)
        paths = glob.glob(os.path.join(root, ".dylibs", "*")) + glob.glob(os.path.join(root, "..", "numpy.libs", "*"))
    names = [p for p in paths if any(word in os.path.basename(p).lower() for word in ("blas", "mkl_rt"))]
    return list(dict.fromkeys(names))  # each once, in load order


def _find_controls():
    """[(set_threads, get_threads)] for every BLAS library found; empty if none can be controlled."""
    controls = []
    for path in _loaded_blas_paths():
        try:
            lib = ctypes.CDLL(path)  # already loaded: this only looks it up
        except OSError:
            continue
        for set_name, get_name in _SETTERS:
            if hasattr(lib, set_name) and hasattr(lib, get_name):
                setter, getter = getattr(lib, set_name), getattr(lib, get_name)
                setter.restype, getter.restype = None, ctypes.c_int
                controls.append((setter, getter))
                break
    return controls


_CONTROLS = _find_controls()


def blas_controllable():
    """True if this process's BLAS thread count can be set (then our threads may use every core)."""
    return bool(_CONTROLS)


def blas_threads():
    """The thread counts of the BLAS libraries found (one number per library)."""
    return [getter() for _, getter in _CONTROLS]


@contextlib.contextmanager
def blas_single_thread():
    """Hold BLAS to one thread inside the `with` block (process-wide), then restore it."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = blas_threads()
            for setter, _ in _CONTROLS:
                setter(1)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for (setter, _), n in zip(_CONTROLS, _saved, strict=True):
                    setter(n)


def cpu_count():
    """The cores this process may run on (the affinity mask where the OS has one; 1 in the browser)."""
    if IN_BROWSER:
        return 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def default_threads():
    """Every core if BLAS can be held to one thread, else 1 (BLAS keeps its own threads)."""
    return cpu_count() if blas_controllable() else 1


def parallel_for(work, items, n_threads):
    """Call work(item, scratch) for every item on n_threads threads, BLAS held to one thread.

    Each thread takes the next item when it is free (so uneven items balance out) and
    passes its own `scratch` dict, where work() may keep buffers between items.
    Exceptions raised by work() are raised here.
    """
    queue = iter(list(items))
    queue_lock = threading.Lock()

    def next_item():
        with queue_lock:
            return next(queue, None)

    def worker():
        scratch = {}
        while (item := next_item()) is not None:
            work(item, scratch)

    with blas_single_thread():
        if n_threads == 1 or IN_BROWSER:  # the browser has no threads: the same work, one item after another
            worker()
            return
        with ThreadPoolExecutor(max_workers=n_threads) as pool:
            futures = [pool.submit(worker) for _ in range(n_threads)]
            for future in futures:
                future.result()
