import glob
import itertools
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from pipelines import workers
from pipelines.workers import WorkerPool, fork_is_safe
from tests.conftest import REPO


def test_fork_is_refused_once_jax_is_imported_or_a_thread_runs(monkeypatch):
    monkeypatch.delitem(sys.modules, "jax", raising=False)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert fork_is_safe() == (sys.platform == "linux")
    monkeypatch.setitem(sys.modules, "jax", object())
    assert not fork_is_safe()
    monkeypatch.delitem(sys.modules, "jax")
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert not fork_is_safe()


def test_a_pool_says_how_it_runs_and_why_it_did_not_fork(monkeypatch):
    assert WorkerPool(1).description == "this process"
    monkeypatch.setattr(threading, "active_count", lambda: 2)  # as if another thread ran
    with WorkerPool(2) as pool:
        assert not pool.forked
        assert pool.description.startswith("2 fresh worker processes (not forked: ")
        assert "other thread(s) running" in pool.description or "is not Linux" in pool.description


def test_results_come_back_in_chunk_order_with_the_extra_arguments(monkeypatch):
    monkeypatch.setattr(workers, "fork_refusal", lambda: "refused here")  # loky here; fork: the test below
    with WorkerPool(2) as pool:
        assert not pool.forked
        assert pool.map(pow, list(range(7)), 3) == [x**3 for x in range(7)]
    with WorkerPool(1) as alone:
        assert alone.map(pow, [3], 2) == [9]


def test_worker_count_is_bounded_by_items_and_cores(monkeypatch):
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 16)
    assert workers.worker_count(9_650, 500) == 16
    assert workers.worker_count(1_999, 500) == 3
    assert workers.worker_count(10, 500) == 1
    assert workers.worker_count(9_650, 500, workers=4) == 4


FRESH_PROCESS = """
import sys
import numpy as np
from pipelines import vectorize
from pipelines.corpus import read_corpus
from textclf.settings import Settings
vectorize.chunks.PARALLEL_MIN_DOCS, vectorize.chunks.DOCS_PER_WORKER = 0, 1
corpus = read_corpus(sys.argv[1])
with vectorize.vectorize_pool(len(corpus.texts), workers=3) as pool:
    assert pool.forked and "jax" not in sys.modules
    vec, matrix = vectorize.fit_vectorizer(corpus.texts, corpus.labels, Settings(features=300), pool=pool)
    again = vec.transform(corpus.texts, pool=pool)
np.savez(sys.argv[2], terms=np.array(vec.terms), data=matrix.toarray(), again=again.toarray())
"""


def test_a_fresh_process_forks_its_workers_and_fits_the_one_process_vocabulary(corpus_dir, tmp_path):
    """The CLI's path: no JAX yet, so the workers are forked; same terms and matrix as one process."""
    from pipelines.corpus import read_corpus
    from pipelines.vectorize import fit_vectorizer
    from textclf.settings import Settings

    out = tmp_path / "forked.npz"
    subprocess.run([sys.executable, "-c", FRESH_PROCESS, str(corpus_dir), str(out)], check=True, cwd=REPO)
    forked = np.load(out)
    corpus = read_corpus(corpus_dir)
    vec, matrix = fit_vectorizer(corpus.texts, corpus.labels, Settings(features=300), workers=1)
    assert list(forked["terms"]) == vec.terms
    np.testing.assert_array_equal(forked["data"], matrix.toarray())
    np.testing.assert_allclose(forked["again"], matrix.toarray(), atol=1e-6)


UNGUARDED_SCRIPT = """
import sys
import jax  # imported first: no fork, the workers are started fresh
from pipelines import vectorize
from pipelines.corpus import read_corpus
from textclf.settings import Settings
vectorize.chunks.PARALLEL_MIN_DOCS, vectorize.chunks.DOCS_PER_WORKER = 0, 1
corpus = read_corpus(sys.argv[1])
with vectorize.vectorize_pool(len(corpus.texts), workers=2) as pool:
    assert not pool.forked
    vec, matrix = vectorize.fit_vectorizer(corpus.texts, corpus.labels, Settings(features=300), pool=pool)
print(len(vec.terms), matrix.shape[0])
"""


def test_a_script_without_a_main_guard_can_vectorize_in_workers_after_importing_jax(corpus_dir, tmp_path):
    """No fork (JAX is imported): the fresh workers must not re-run the caller's script."""
    script = tmp_path / "user_script.py"  # a file, as `python script.py` runs it (no __name__ guard)
    script.write_text(UNGUARDED_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(corpus_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["300", "36"]


KILLED_PARENT = """
import os, sys, time
from pipelines.workers import WorkerPool
pool = WorkerPool(2)
pool._executor.submit(time.sleep, 60)
print(pool.forked, *[p.pid for p in pool._executor._processes.values()], flush=True)
time.sleep(120)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="forked workers and PR_SET_PDEATHSIG are Linux-only")
def test_forked_workers_die_when_their_parent_is_killed():
    """SIGKILL (or the OOM killer) gives the parent no chance to shut its pool down; the workers must not live on
    (a forked worker holds its task queue's write end, so it never sees end-of-file)."""
    parent = subprocess.Popen([sys.executable, "-c", KILLED_PARENT], cwd=REPO, stdout=subprocess.PIPE, text=True)
    forked, *children = parent.stdout.readline().split()
    assert forked == "True" and len(children) == 2
    parent.kill()
    parent.wait()
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(int(pid)) for pid in children):
        time.sleep(0.1)
    assert not any(_alive(int(pid)) for pid in children)


def _alive(pid: int) -> bool:
    """Running or sleeping (a zombie has exited: it only waits to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _pieces(seed: int) -> dict:
    """A result with a large array (shared memory) and a small one (in the pickle)."""
    return {"large": np.full(300_000, seed, np.float64), "small": np.arange(seed + 1), "seed": seed}


SHARED = pytest.mark.skipif(workers.SharedResults.here() is None, reason="no writable /dev/shm (not Linux)")


def _our_files(shared) -> list:
    return glob.glob(os.path.join(shared.directory, f"textclf-{os.getpid()}-*"))


@SHARED
def test_large_results_come_back_through_shared_memory_and_leave_no_file(monkeypatch):
    received = []
    original = workers.SharedResults.received
    monkeypatch.setattr(
        workers.SharedResults,
        "received",
        staticmethod(lambda result: received.append(type(result).__name__) or original(result)),
    )
    with WorkerPool(2) as pool:
        results = pool.map(_pieces, list(range(5)))
        assert not _our_files(pool._shared)  # each file unlinked once mapped
    assert received == ["_SharedResult"] * 5
    for seed, result in enumerate(results):
        assert result["seed"] == seed and np.array_equal(result["small"], np.arange(seed + 1))
        assert result["large"].shape == (300_000,) and (result["large"] == seed).all()
        assert result["large"].ctypes.data % 64 == 0 and result["large"].flags.writeable
        result["large"][0] = -1.0  # copy-on-write: this process's page only
        assert result["large"][0] == -1.0


@SHARED
def test_a_closed_pool_removes_what_nothing_received_and_a_new_one_what_dead_processes_left(tmp_path):
    with WorkerPool(2) as pool:
        shared = pool._shared
        sent = shared.sent(_pieces(1))  # as a worker leaves it, never received
        assert os.path.exists(sent.path) and os.stat(sent.path).st_mode & 0o077 == 0  # this user's only
    assert not os.path.exists(sent.path)
    dead = next(pid for pid in range(4_000_000, 4_100_000) if not os.path.exists(f"/proc/{pid}"))
    orphan = os.path.join(shared.directory, f"textclf-{dead}-0-1-1")
    open(orphan, "wb").close()
    workers.SharedResults.here()
    assert not os.path.exists(orphan)


def test_results_come_through_the_pipe_where_shared_memory_is_small_or_missing(tmp_path, monkeypatch):
    small = workers.SharedResults(str(tmp_path), "textclf-0-0-")
    assert isinstance(small.sent({"a": np.arange(10)}), dict)  # under SHARED_MIN_BYTES: in the pickle
    missing = workers.SharedResults(str(tmp_path / "absent"), "textclf-0-0-")
    result = missing.sent(_pieces(2))  # writing fails: the result itself
    assert isinstance(result, dict) and (result["large"] == 2).all()
    assert workers.SharedResults.received(result) is result
    taken = workers.SharedResults(str(tmp_path), "taken-")
    monkeypatch.setattr(workers, "_result_numbers", itertools.count(7))
    (tmp_path / f"taken-{os.getpid()}-7").write_bytes(b"theirs")
    result = taken.sent(_pieces(3))  # the name held by a file already there: left alone, the pipe instead
    assert isinstance(result, dict) and sorted(p.read_bytes() for p in tmp_path.iterdir()) == [b"theirs"]
