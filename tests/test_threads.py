"""helpers.threads: BLAS held to one thread and restored, work shared by threads, errors raised."""

import os
import threading

import numpy as np
import pytest

from helpers import threads


def test_numpys_blas_is_found_and_can_be_held_to_one_thread():
    if not threads.blas_controllable():
        pytest.skip("this numpy's BLAS does not export a thread-count setter")
    before = threads.blas_threads()
    with threads.blas_single_thread():
        assert threads.blas_threads() == [1] * len(before)
        with threads.blas_single_thread():  # nested: still one, and not restored too early
            pass
        assert threads.blas_threads() == [1] * len(before)
    assert threads.blas_threads() == before


def test_blas_is_restored_after_an_exception():
    before = threads.blas_threads()
    with pytest.raises(RuntimeError), threads.blas_single_thread():
        raise RuntimeError("inside")
    assert threads.blas_threads() == before


@pytest.mark.parametrize("n_threads", [1, 2, 5])
def test_parallel_for_runs_every_item_once_with_a_scratch_per_thread(n_threads):
    seen, lock = [], threading.Lock()

    def work(item, scratch):
        scratch.setdefault("thread", threading.get_ident())
        assert scratch["thread"] == threading.get_ident()  # a scratch dict never moves between threads
        with lock:
            seen.append(item)

    threads.parallel_for(work, range(37), n_threads)
    assert sorted(seen) == list(range(37))


def test_parallel_for_raises_what_the_work_raised_and_restores_blas():
    before = threads.blas_threads()

    def work(item, scratch):
        if item == 3:
            raise ValueError("item 3 is bad")

    with pytest.raises(ValueError, match="item 3 is bad"):
        threads.parallel_for(work, range(8), 2)
    assert threads.blas_threads() == before


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity mask on this system")
@pytest.mark.parametrize("controllable", [True, False], ids=["blas-held", "blas-not-held"])
def test_default_threads_is_every_core_this_process_may_use_only_when_blas_can_be_held(monkeypatch, controllable):
    monkeypatch.setattr(threads, "blas_controllable", lambda: controllable)
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})  # one core, as a container or a hub may give a learner
    try:
        on_one_core = threads.default_threads()
    finally:
        os.sched_setaffinity(0, allowed)
    assert on_one_core == 1
    assert threads.default_threads() == (len(allowed) if controllable else 1)


def test_threads_share_numpy_work_and_get_the_same_answer():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 64, 64))
    out = np.empty_like(A)

    def work(i, scratch):
        out[i] = np.exp(A[i] / 8) @ A[i]

    threads.parallel_for(work, range(6), 3)
    assert np.allclose(out, np.exp(A / 8) @ A)


def test_in_the_browser_there_is_one_core_and_no_thread_is_started(monkeypatch):
    """JupyterLite's Python cannot start a thread: cpu_count is 1 and parallel_for runs every item in this thread."""
    monkeypatch.setattr(threads, "IN_BROWSER", True)
    assert threads.cpu_count() == 1 and threads.default_threads() == 1
    seen = []
    threads.parallel_for(lambda item, scratch: seen.append((item, threading.get_ident())), range(5), 4)
    assert seen == [(i, threading.get_ident()) for i in range(5)]
