"""Worker processes for the CPU-bound part of vectorization (scikit-learn's analyzers are pure Python).

Decision: fork the workers when that is safe, else fork them from a forkserver.
- A forked worker starts in milliseconds with scikit-learn already imported; a spawned one (joblib's loky, the
  first choice) imports it again (~1.5 s each on this project's machines), more than news4's whole count
  spread over 16 cores.
- Fork is only safe while the process has no threads: JAX starts runtime threads when it initializes a
  backend (or joins a distributed runtime), and a fork after that can copy a held lock into the child. So a
  pool forks this process only while it runs one Python thread and has not imported JAX (the CLI's `textclf
  train` before its GPU warm-up, see textclf/train.py).
- Otherwise (the daemon, the tests, a multi-process run) the workers are forked from multiprocessing's
  forkserver: a clean process started once, with the `preload` modules imported, that exits with this one.
  (loky's reusable workers were dropped here: they outlived a SIGKILLed daemon and held its stdout open.)
- A pool starts all its workers when it is created, so the caller may start threads right after; they exit
  when the pool is closed, or when this process dies (their task pipe closes).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Sequence


def fork_is_safe() -> bool:
    """True when forking cannot copy another thread's lock: Linux, one Python thread, JAX not imported (once
    imported it may have joined a distributed runtime or started a backend, both of which run native threads)."""
    return sys.platform == "linux" and threading.active_count() == 1 and "jax" not in sys.modules


def worker_count(n_items: int, per_worker: int, workers: int | None = None) -> int:
    """Processes for n_items: one per `per_worker` items, at most `workers` (None: every CPU core)."""
    limit = (os.cpu_count() or 1) if workers is None else workers
    return max(1, min(limit, n_items // max(1, per_worker)))


class WorkerPool:
    """fn(chunk, *args) over chunks in `processes` worker processes, results in chunk order. One process:
    everything runs here. preload: modules the forkserver imports once (fn's module, so workers start warm).
    Use as a context manager (the workers exit with it)."""

    def __init__(self, processes: int, preload: Sequence[str] = ()):
        self.processes = max(1, processes)
        self.forked = self.processes > 1 and fork_is_safe()
        self._executor = None
        if self.processes > 1:
            if self.forked:
                context = multiprocessing.get_context("fork")
            else:
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(list(preload))  # no effect once the server runs
            self._executor = ProcessPoolExecutor(self.processes, mp_context=context)
            # Start the workers now: a fork-based executor forks all of them on its first submit, before its
            # manager thread starts (others would start them one by one as work arrives).
            list(self._executor.map(int, range(self.processes)))

    def map(self, fn: Callable, chunks: Sequence, *args) -> list:
        if self._executor is None or len(chunks) <= 1:
            return [fn(chunk, *args) for chunk in chunks]
        return list(self._executor.map(fn, chunks, *(itertools.repeat(a, len(chunks)) for a in args)))

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
