"""Streaming vectorization for the "hashing" kind: a corpus larger than memory becomes its CSR matrix without
its texts ever being held together.

The documents are read one at a time (pipelines/corpus.open_documents) and cut into chunks of CHUNK_DOCS; each
chunk is hashed into raw counts by a worker process (joblib, a generator in and out, at most 2 chunks per
worker in flight) while the reader goes on; the main process keeps only each chunk's counts (data, indices,
row lengths) and labels, and the corpus fingerprint is updated as the documents pass. At the end the counts
are joined array by array (the join holds one array twice, never the whole matrix), the IDF is computed
from them and the TF-IDF weighting runs in place. Peak host memory: the finished matrix + half of it while
joining + the chunks in flight (2 per worker: 32 x 20,000 documents, about 1 GB of news-sized text, on 16
cores), a constant, whatever the size of the corpus. The matrix itself still grows with the corpus: training
keeps it resident (textclf/training/device_data.py), so the largest trainable corpus is set by its non-zeros.

Why only "hashing": a fitted vocabulary ("tfidf") needs every document's terms before the first column can
be numbered (and the chi-squared selection needs them all again), i.e. a second pass or the texts in memory.
Why no vector cache here: its key is the corpus fingerprint, known only after the whole corpus was read.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import HashingVectorizer

from pipelines.corpus import check_usable, open_documents
from pipelines.fingerprint import Fingerprint
from pipelines.formats.base import ReadStats
from pipelines.vectorize import WordSettings, Vectorizer, hashing_counter
from pipelines.vectorize.weights import _weight

CHUNK_DOCS = 20_000  # documents per worker task: large enough to amortise a task, small enough to bound memory


@dataclass
class HashedCorpus:
    source: str
    format: str
    stats: ReadStats
    labels: list[str]
    counts: sp.csr_matrix | None  # (documents, features) float32 raw counts
    fingerprint: str

    def __len__(self) -> int:
        return len(self.labels)


def _hash_chunk(texts: list[str], hasher: HashingVectorizer) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    counts = hasher.transform(texts).tocsr()
    return counts.data, counts.indices, np.diff(counts.indptr)


def hash_corpus(
    path: str | Path, settings: WordSettings, workers: int | None = None, chunk_docs: int = CHUNK_DOCS
) -> HashedCorpus:
    """Read and hash a corpus in one streaming pass; refuses unusable corpora like read_corpus does."""
    fmt, stats, documents = open_documents(path, settings.max_file_mb)
    labels: list[str] = []
    fingerprint = Fingerprint()

    failure: list[Exception] = []

    def chunks() -> Iterator[list[str]]:
        # Runs wherever joblib pulls tasks from: labels and fingerprint are only read after it is exhausted.
        # A reading error (bad JSON line, ...) ends the stream cleanly and is raised below, in the caller's
        # thread: raised inside joblib's dispatch it also left a traceback from loky's manager thread.
        try:
            while True:
                chunk = list(itertools.islice(documents, chunk_docs))
                if not chunk:
                    return
                for label, text in chunk:
                    labels.append(label)
                    fingerprint.add(label, text)
                yield [text for _, text in chunk]
        except Exception as exc:
            failure.append(exc)

    hasher = hashing_counter(
        settings.features,
        settings.ngram_max,
        settings.stop_words,
        settings.start_token,
        settings.unspaced_as_characters,
    )
    texts = chunks()
    first = next(texts, None)
    second = next(texts, None) if first is not None else None
    workers = os.cpu_count() or 1 if workers is None else workers
    pending = itertools.chain([chunk for chunk in (first, second) if chunk is not None], texts)
    if second is None or workers == 1:  # one chunk (or one worker): no processes to start
        parts = [_hash_chunk(chunk, hasher) for chunk in pending]
    else:
        from joblib import Parallel, delayed

        parts = list(
            Parallel(n_jobs=workers, return_as="generator", pre_dispatch="2*n_jobs")(
                delayed(_hash_chunk)(chunk, hasher) for chunk in pending
            )
        )
    if failure:
        raise failure[0]
    check_usable(str(path), labels, stats.skipped, stats.empty_labels)
    fmt.check_labels(str(path), labels)
    return HashedCorpus(str(path), fmt.kind, stats, labels, _join(parts, settings.features), fingerprint.hexdigest())


def _join(parts: list, n_features: int) -> sp.csr_matrix:
    """Chunks' (data, indices, row lengths) -> one CSR matrix; each array's pieces are freed once joined, so
    the join holds one array twice, never the whole matrix."""
    columns = [list(column) for column in zip(*parts)] or [[], [], []]
    parts.clear()  # the three lists now hold the only references to the pieces
    joined = []
    for pieces, empty in zip(columns, (np.float32, np.int32, np.int64)):
        joined.append(np.concatenate(pieces) if pieces else np.zeros(0, empty))
        pieces.clear()
    data, indices, lengths = joined
    indptr = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    if indptr[-1] < np.iinfo(np.int32).max:
        indptr = indptr.astype(np.int32)
    return sp.csr_matrix((data, indices, indptr), shape=(len(lengths), n_features))


def weigh(counts: sp.csr_matrix, vectorizer: Vectorizer) -> sp.csr_matrix:
    """Raw counts -> the vectorizer's TF-IDF rows, in place: `counts` itself becomes the weighted matrix."""
    return _weight(counts, vectorizer.idf, vectorizer.sublinear_tf, copy=False)
