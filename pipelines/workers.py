"""Worker processes for the CPU-bound part of vectorization (scikit-learn's analyzers are pure Python).

Decision: fork the workers when that is safe, else start fresh ones with loky.
- A forked worker starts in milliseconds with scikit-learn already imported; a fresh interpreter imports it
  again (~1.5 s each on this project's machines), more than news4's whole count spread over 16 cores.
- Fork is only safe while the process has no threads: JAX starts runtime threads when it initializes a
  backend (or joins a distributed runtime), and a fork after that can copy a held lock into the child. So a
  pool forks this process only while it runs one Python thread and has not imported JAX (the CLI's `textclf
  train` before its GPU warm-up, see textclf/runs/run.py; `textclf daemon` at start, keeping the pool for its life).
- Otherwise (the tests, a multi-process run, a user's script that imported JAX first) the
  workers are fresh interpreters started by loky (joblib's process executor), one executor per pool, shut down
  with it: no worker outlives the vectorizing (loky's reusable executor kept its workers, which then outlived a
  SIGKILLed daemon and held its stdout open), and unlike multiprocessing's spawn or forkserver, loky does not
  re-run the caller's main script in each worker (a script without an `if __name__ == "__main__"` guard
  re-ran itself in every forkserver worker and broke the pool).
- A forking pool forks all its workers when it is created, so the caller may start threads right after.
  Workers exit when the pool is closed.
- Workers die with this process, even when it is killed with SIGKILL (Linux: PR_SET_PDEATHSIG; a forked
  worker otherwise waited on its task queue forever, since it holds that queue's write end too).
- All workers of one pool share one hash seed (forked: this process's; loky: one set for the pool), so
  hash() of a string is the same in every worker of the pool.
- Large results come back through shared memory, not the executor's pipe (SharedResults): the pipe is read by one
  thread of this process, 254-269 MB/s against shared memory's 925-1,420 MB/s on 2 cores
  (benchmarks/vectorizing/result_transport.py, docs/decisions.md "A large file's vectorizing"), where a transformed
  million
  documents is 1.1 GB of arrays.
"""

from __future__ import annotations

import functools
import glob
import itertools
import mmap
import multiprocessing
import os
import pickle
import random
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence


def fork_refusal() -> str | None:
    """Why forking could copy another thread's lock here, or None when it cannot: forking needs Linux, one Python
    thread, and JAX not imported (once imported it may have joined a distributed runtime or started a backend, both
    of which run native threads)."""
    if sys.platform != "linux":
        return f"{sys.platform} is not Linux"
    if threading.active_count() != 1:
        return f"{threading.active_count() - 1} other thread(s) running: " + ", ".join(
            t.name for t in threading.enumerate() if t is not threading.current_thread()
        )
    if "jax" in sys.modules:
        return "JAX is imported"
    return None


def fork_is_safe() -> bool:
    """True when forking cannot copy another thread's lock (fork_refusal)."""
    return fork_refusal() is None


def _die_with_parent(parent: int) -> None:
    """Worker initializer: have the kernel kill this worker when its parent dies (Linux), exit at once if the
    parent is already gone, and leave Ctrl-C to the parent (which closes the pool) instead of printing a
    traceback from every worker."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform == "linux":
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def worker_count(n_items: int, per_worker: int, workers: int | None = None) -> int:
    """Processes for n_items: one per `per_worker` items, at most `workers` (None: every CPU core)."""
    limit = (os.cpu_count() or 1) if workers is None else workers
    return max(1, min(limit, n_items // max(1, per_worker)))


class WorkerPool:
    """fn(chunk, *args) over chunks in `processes` worker processes, results in chunk order. One process:
    everything runs here. Use as a context manager (the workers exit with it)."""

    def __init__(self, processes: int, shared_results: bool = True):
        """shared_results=False: every result through the executor's pipe (benchmarks/vectorizing/result_transport.py
        compares)."""
        self.processes = max(1, processes)
        refusal = fork_refusal() if self.processes > 1 else None
        self.forked = self.processes > 1 and refusal is None
        # How the work runs, for a run's record: the fresh interpreters' start-up and imports are the slow path.
        if self.processes == 1:
            self.description = "this process"
        elif self.forked:
            self.description = f"{self.processes} forked worker processes"
        else:
            self.description = f"{self.processes} fresh worker processes (not forked: {refusal})"
        self._executor = None
        self._shared = SharedResults.here() if self.processes > 1 and shared_results else None
        if self.forked:
            # The workers count terms with scikit-learn's text module (the character view, n-grams of 3): imported
            # here, before they fork, they inherit it instead of each importing it on its first chunk; and
            # a run imports it only once it forks its workers, so that it starts reading its corpus at once.
            import sklearn.feature_extraction.text  # noqa: F401

            context = multiprocessing.get_context("fork")
            self._executor = ProcessPoolExecutor(
                self.processes, mp_context=context, initializer=_die_with_parent, initargs=(os.getpid(),)
            )
            # Fork every worker now: a fork-based executor does so on its first submit, before its manager
            # thread starts.
            list(self._executor.map(int, range(self.processes)))
        elif self.processes > 1:
            from joblib.externals.loky import ProcessPoolExecutor as LokyExecutor

            # One hash seed for all of this pool's workers (a fork shares this process's): hash() values of the
            # same string then agree across chunks, which the vocabulary merge relies on (pipelines/vectorize/terms.py).
            seed = str(random.SystemRandom().randrange(1, 2**32))
            self._executor = LokyExecutor(
                self.processes, env={"PYTHONHASHSEED": seed}, initializer=_die_with_parent, initargs=(os.getpid(),)
            )

    def map(self, fn: Callable, chunks: Sequence, *args, on_done: Callable[[int], None] | None = None) -> list:
        """[fn(chunk, *args) for chunk in chunks], computed by the workers; on_done(i) as result i arrives
        (in chunk order)."""
        collected = []
        for index, result in enumerate(self.imap(fn, chunks, *args)):
            collected.append(result)
            if on_done is not None:
                on_done(index)
        return collected

    def imap(self, fn: Callable, chunks: Sequence, *args) -> Iterator:
        """fn(chunk, *args) for each chunk, computed by the workers, yielded in chunk order as they arrive."""
        if self._executor is None or len(chunks) <= 1:
            return (fn(chunk, *args) for chunk in chunks)
        if self._shared is None:
            return self._executor.map(fn, chunks, *(itertools.repeat(a, len(chunks)) for a in args))
        sent = self._executor.map(
            functools.partial(_call_sharing, self._shared, fn),
            chunks,
            *(itertools.repeat(a, len(chunks)) for a in args),
        )
        return map(SharedResults.received, sent)

    def close(self) -> None:
        if self._executor is not None:
            if self.forked:  # after an error or Ctrl-C: no chunk left to wait for (loky's has no such option)
                self._executor.shutdown(cancel_futures=True)
            else:
                self._executor.shutdown()
            self._executor = None
            if self._shared is not None:  # results the workers wrote that nothing received (an error, Ctrl-C)
                self._shared.remove_left()

    @property
    def shares_memory(self) -> bool:
        """Whether large results come back through shared memory (SharedResults), not the pipe."""
        return self._shared is not None

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


SHARED_MIN_BYTES = 1 << 20  # results of fewer bytes of arrays come through the pipe


@dataclass(frozen=True)
class SharedResults:
    """Where one pool's workers leave their large results: in a file of shared memory (`directory`, a tmpfs such
    as /dev/shm) that this process maps instead of reading it from the executor's pipe. A result is pickled with
    protocol 5, its arrays' buffers (numpy's, pyarrow's) out of band, each written to the file at a 64-byte
    boundary; here the pickle is loaded over views of the mapped file, so the arrays are the file's pages, not
    copies (mapped copy-on-write: writable, and a write stays in this process). The file is unlinked as soon as
    it is mapped: its memory goes when the arrays do.
    Files are named `textclf-<this pid>-<pool>-...`: a pool removes what it left when it closes, and a new pool
    removes the files of processes that no longer exist (killed before they could). Where the directory is
    missing or full, results come through the pipe as before."""

    directory: str
    prefix: str

    @classmethod
    def here(cls) -> "SharedResults | None":
        """A new pool's place in /dev/shm (its dead processes' files removed first), or None where there is none."""
        directory = "/dev/shm"
        if sys.platform != "linux" or not os.access(directory, os.W_OK | os.X_OK):
            return None
        _remove_orphans(directory)
        return cls(directory, f"textclf-{os.getpid()}-{next(_pool_numbers)}-")

    def sent(self, result):
        """In a worker: the result, or a _SharedResult naming the file that holds its arrays."""
        buffers: list[pickle.PickleBuffer] = []
        data = pickle.dumps(result, protocol=5, buffer_callback=buffers.append)
        views = [buffer.raw() for buffer in buffers]
        sizes = [view.nbytes for view in views]
        if sum(sizes) < SHARED_MIN_BYTES:
            return result
        path = os.path.join(self.directory, f"{self.prefix}{os.getpid()}-{next(_result_numbers)}")
        try:
            # Readable by this user only (the rows tell what the documents say); O_EXCL: never a file already there.
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:  # no room for another file, or the name taken: the pipe
            return result
        try:
            with os.fdopen(descriptor, "wb") as file:
                for view in views:
                    file.write(view)
                    file.write(bytes(-view.nbytes % 64))
        except OSError:  # the shared memory is full: the pipe
            _remove(path)
            return result
        return _SharedResult(data, path, tuple(sizes))

    @staticmethod
    def received(result):
        """Here: a worker's result, its arrays mapped from their file where it sent one (the file unlinked)."""
        if not isinstance(result, _SharedResult):
            return result
        with open(result.path, "rb") as file:
            mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_COPY)
        os.unlink(result.path)
        whole, views, at = memoryview(mapped), [], 0
        for size in result.sizes:
            views.append(whole[at : at + size])
            at += size + (-size % 64)
        return pickle.loads(result.data, buffers=views)

    def remove_left(self) -> None:
        for path in glob.glob(os.path.join(self.directory, glob.escape(self.prefix) + "*")):
            _remove(path)


@dataclass(frozen=True)
class _SharedResult:
    data: bytes  # the result pickled, its buffers out of band
    path: str
    sizes: tuple[int, ...]  # each buffer's bytes, in order, each from a 64-byte boundary of the file


_pool_numbers = itertools.count()
_result_numbers = itertools.count()


def _call_sharing(shared: SharedResults, fn: Callable, chunk, *args):
    return shared.sent(fn(chunk, *args))


def _remove_orphans(directory: str) -> None:
    """Remove the shared result files of textclf processes that no longer run."""
    for path in glob.glob(os.path.join(directory, "textclf-*-*-*")):
        owner = os.path.basename(path).split("-")[1]
        if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            _remove(path)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:  # removed meanwhile, or not ours to remove
        pass


def return_freed_memory() -> None:
    """Hand the heap memory freed so far back to the system (glibc's malloc_trim): glibc keeps the pages of
    freed small and mid-sized allocations (a text of ~1 KB each; arrays under its mmap threshold, which rises to
    32 MB as large arrays are freed), and a million documents' texts kept ~1.3 GB resident through training.
    Called after steps that free much (the search, the vocabulary's fit, each part stacked into a matrix);
    milliseconds each. Elsewhere (no glibc) nothing is done."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        return getattr(libc, "malloc_trim", None)
    except OSError:
        return None
