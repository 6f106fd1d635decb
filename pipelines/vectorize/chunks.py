"""Cutting documents into contiguous chunks for the vectorizing worker processes (pipelines/workers.py), and how
many workers a corpus gets: corpora of PARALLEL_MIN_DOCS documents or more are counted on all CPU cores."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from pipelines.shares import LineTexts
from pipelines.workers import WorkerPool, worker_count

# Fewer documents are counted in this process; no worker gets fewer than DOCS_PER_WORKER. Measured on news4
# (BENCHMARKS.md, "Cold start"): 9,650 documents counted by 16 forked workers + the merge beat one process.
PARALLEL_MIN_DOCS = 2_000


DOCS_PER_WORKER = 500


# A worker counts or transforms chunks of about this many characters of text: a worker does a small chunk faster
# per document than a big one (its temporary arrays are reused, not fresh pages), and a transform's progress moves
# on a big corpus; too many chunks cost their merge (docs/decisions.md, "Chunks of 16M characters").
CHUNK_CHARACTERS = 16_000_000


def _worker_count(n_docs: int, workers: int | None) -> int:
    return 1 if n_docs < PARALLEL_MIN_DOCS else worker_count(n_docs, DOCS_PER_WORKER, workers)


def vectorize_pool(n_docs: int, workers: int | None = None) -> WorkerPool:
    """The worker processes that fit_vectorizer and Vectorizer.transform would start for n_docs documents, to
    share between them (and to fork before the caller starts threads; see pipelines/workers.py)."""
    return WorkerPool(_worker_count(n_docs, workers))


def _chunk_count(texts: Sequence[str], pool: WorkerPool) -> int:
    """How many chunks the pool's workers take texts in: chunks of ~CHUNK_CHARACTERS (see there), their number a
    multiple of the workers', so that no worker idles through a last round (a million documents on 16 workers in 20
    chunks took 7.9-8.6 s to transform, in 32 6.8-7.3 s, H100 machine; BENCHMARKS.md, "Big corpora with no flags");
    one (empty) chunk for no texts."""
    workers = _worker_count(len(texts), pool.processes)
    characters = texts.characters() if isinstance(texts, LineTexts) else sum(map(len, texts))
    rounds = max(1, -(-characters // (workers * CHUNK_CHARACTERS)))
    return max(1, min(len(texts), workers * rounds))


def _map_chunks(
    pool: WorkerPool, fn: Callable, texts: Sequence[str], on_progress: Callable[[int, int], None] | None, *args
) -> list:
    """[fn(chunk, *args) for the pool's contiguous chunks of texts (_chunk_count)], computed by its workers;
    on_progress(documents done, of total) as each chunk's result arrives."""
    chunks = _chunks(texts, _chunk_count(texts, pool))
    sizes = np.cumsum([len(chunk) for chunk in chunks])
    done = None if on_progress is None else (lambda index: on_progress(int(sizes[index]), len(texts)))
    return pool.map(fn, chunks, *args, on_done=done)


def _chunks(texts: Sequence[str], parts: int) -> list[Sequence[str]]:
    bounds = np.linspace(0, len(texts), parts + 1).astype(int)
    return [texts[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
