"""Reading a corpus -> Corpus (texts, labels, skip counts, fingerprint): a folder of label folders, a CSV, TSV,
JSONL, fastText or Parquet file, its format decided once (pipelines/formats/detect.py) and read by that format's
module (pipelines/formats/); a large file of one document a line is read by worker processes a share at a time
(pipelines/shares.py, _read_lines_in_workers).

Shares (several processes training together, each reading only its part; `share=(index, count)`): share i of n
holds a contiguous run of the corpus in reading order, so the shares laid end to end are the whole corpus in
the order one reader sees it.
- folder: the files are listed (names only), and share i reads files [i N / n, (i + 1) N / n) of the N;
- JSONL and fastText's format: share i reads the lines that start in bytes [i S / n, (i + 1) S / n) of the
  file's S bytes;
- Parquet: share i reads rows [i N / n, (i + 1) N / n) of the N;
- CSV: every share parses the whole file and keeps its contiguous part of the documents. Decision: a quoted
  CSV field may hold line breaks, so a byte offset is not known to start a row without reading from the top.
A share is not checked for usability on its own (it may lack a label): the caller checks the union
(check_usable on every share's labels; an empty label folder is one that is empty in every share).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import numpy as np

from pipelines.errors import CorpusError
from pipelines.fingerprint import Fingerprint
from pipelines.formats.base import CorpusFormat, LineBreakInField, ReadStats
from pipelines.formats.detect import corpus_format
from pipelines.shares import FileTexts, _read_share

if TYPE_CHECKING:
    from pipelines.workers import WorkerPool


@dataclass
class Corpus:
    texts: "list[str] | FileTexts"  # FileTexts: left in the file (read_corpus's keep_texts)
    labels: list[str]
    source: str
    format: str
    # Files or rows left out, by reason; "non_utf8" counts documents decoded with a fallback (kept).
    skipped: dict[str, int] = field(default_factory=dict)
    non_utf8: int = 0
    fingerprint: str = ""  # sha256 of every (label, text) in reading order
    empty_labels: list[str] = field(default_factory=list)  # label folders with no usable document (of this share)
    # (documents,) each document's weight in the training loss (TextClassifier.fit's sample_weight); None: 1 each
    weights: "np.ndarray | None" = None

    @property
    def label_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(self.labels).items()))

    def __len__(self) -> int:
        return len(self.texts)


def open_documents(
    path: str | Path, max_file_mb: float = 10.0, share: tuple[int, int] = (0, 1), fmt: CorpusFormat | None = None
) -> tuple[CorpusFormat, ReadStats, Iterator[tuple[str, str]]]:
    """-> (format, stats, iterator of (label, text) in reading order). The path and its format are decided now
    (corpus_format, unless fmt is given: its decision); the documents are read one at a time as the iterator is
    consumed (so a corpus larger than memory can be streamed), and stats are complete once it is exhausted.
    share: (index, count): only that part of the corpus (module docstring)."""
    path = Path(path)
    index, count = share
    if not 0 <= index < count:
        raise ValueError(f"share {index} of {count}")
    fmt = fmt or corpus_format(path)
    stats = ReadStats()
    return fmt, stats, fmt.documents(path, int(max_file_mb * 1024 * 1024), stats, share)


# read_corpus's on_progress is called once per this many documents read (and once at the end).
PROGRESS_DOCUMENTS = 20_000


# A file of one document a line of at least this many bytes is read by a WorkerPool's workers, a share each
# (parallel_read says why); a smaller one in this process.
PARALLEL_READ_BYTES = 64 * 1024 * 1024


# Workers read a large file in byte shares of at most about this many bytes (_share_count): a share's texts are
# in a worker's memory at once, and pipelines/vectorize/chunks.py found chunks of ~16M characters transformed fastest
# (CHUNK_CHARACTERS).
SHARE_BYTES = 16 * 1024 * 1024


# Eight arguments: the corpus, then each a separate choice of how a face reads it (its limit, progress, share,
# workers, whether texts stay in the file, a format already decided, label sets), all with defaults.
def read_corpus(
    path: str | Path,
    max_file_mb: float = 10.0,
    on_progress: Callable[[int, ReadStats], None] | None = None,
    share: tuple[int, int] = (0, 1),
    pool: "WorkerPool | Callable[[], WorkerPool] | None" = None,
    keep_texts: bool = True,
    fmt: CorpusFormat | None = None,
    label_sets: bool = False,
) -> Corpus:
    """Read a corpus in any supported format and check it can be trained on (>= 2 labels, none empty).
    on_progress(documents read, stats) every PROGRESS_DOCUMENTS documents and at the end: stats.bytes_read of
    stats.bytes_total for a file. share (index, count): read only that part (module docstring), unchecked: the
    caller checks the union of the shares; the part's empty label folders are in Corpus.empty_labels.
    pool: parse a large file of one document a line in its workers (parallel_read); the same Corpus. A function
    that forks them is called only where they are needed.
    keep_texts=False: such a file's texts stay in it (Corpus.texts is a FileTexts; a Parquet file's and other
    corpora's are read whole). fmt: the corpus's format where the caller decided it (corpus_format). label_sets:
    read for a multi-label model (CorpusFormat.as_label_sets: a document in several label folders is one document
    of those labels), checked as read."""
    fmt = fmt or corpus_format(path)
    if pool is not None and share == (0, 1) and parallel_read(path, fmt):
        pool = pool() if callable(pool) else pool
        if pool.processes > 1:
            return _read_lines_in_workers(Path(path), fmt, max_file_mb, on_progress, pool, keep_texts)
    fmt, stats, documents = open_documents(path, max_file_mb, share, fmt)
    labels, texts, fingerprint = [], [], Fingerprint()
    # (A file read here is read a line at a time, telling its progress every PROGRESS_DOCUMENTS documents; pyarrow's
    # parse, _read_share_arrow, would save little at this size and tell nothing until its end.)
    for label, text in documents:
        labels.append(label)
        texts.append(text)
        fingerprint.add(label, text)
        if on_progress is not None and len(texts) % PROGRESS_DOCUMENTS == 0:
            on_progress(len(texts), stats)
    if on_progress is not None:
        on_progress(len(texts), stats)
    if label_sets:
        texts, labels = fmt.as_label_sets(texts, labels)
    corpus = Corpus(
        texts,
        labels,
        str(path),
        fmt.kind,
        {k: v for k, v in stats.skipped.items() if v},
        stats.non_utf8,
        fingerprint=fingerprint.hexdigest(),
        empty_labels=list(stats.empty_labels),
    )
    if share[1] == 1:
        check_usable(str(path), labels, stats.skipped, stats.empty_labels)
        fmt.check_labels(str(path), labels)
    return corpus


def parallel_read(path: str | Path, fmt: CorpusFormat) -> bool:
    """Whether read_corpus(path, pool=...) parses the file in the pool's workers (given more than one): a file of
    at least PARALLEL_READ_BYTES that its format lets workers read a share each (a file of one document a line; a
    Parquet file of two row groups or more). Parsing JSON a line at a time in one process is slow for a file of
    millions of documents (BENCHMARKS.md, "A million documents in each format"); each worker parses its share (the
    lines that start in its bytes, as several processes' shares do; or whole row groups) and sends back its labels
    and texts, or where each text stands. fmt: the corpus's format (corpus_format)."""
    path = Path(path)
    return path.is_file() and path.stat().st_size >= PARALLEL_READ_BYTES and fmt.most_shares(path) >= 2


def _share_count(path: Path, pool: "WorkerPool") -> int:
    """Byte shares of a file for the pool's workers: shares of at most ~SHARE_BYTES, their number a multiple of
    the workers' (no worker idles through a last round), at least 2 a worker (progress moves, and a slow worker
    holds less back)."""
    rounds = max(2, -(-path.stat().st_size // (pool.processes * SHARE_BYTES)))
    return pool.processes * rounds


def _read_lines_in_workers(
    path: Path, fmt: CorpusFormat, max_file_mb: float, on_progress, pool: "WorkerPool", keep_texts: bool = True
) -> Corpus:
    """read_corpus of a file of one document a line (or a row), its shares parsed in the pool's workers and joined in
    order as they arrive: the documents one reader sees, in its order, so the same fingerprint. Without keep_texts
    the texts stay in the file (Corpus.texts is a FileTexts). Where a share cannot be parsed, or a CSV's quoted field
    holds a line break (its lines are not its rows), or nothing usable is found, this process reads the file itself:
    the same corpus, or the error naming the line from the top of the file."""
    status = path.stat()
    stats = ReadStats(bytes_total=status.st_size)
    count = min(_share_count(path, pool), fmt.most_shares(path))
    labels, texts, offsets, fingerprint, first_rows = [], [], [], Fingerprint(), [0]
    try:
        for part_labels, texts_or_offsets, digests, skipped, non_utf8, bytes_read in pool.imap(
            _read_share, list(range(count)), str(path), count, keep_texts, fmt
        ):
            fingerprint.add_digests(digests)
            labels += part_labels
            first_rows.append(len(labels))
            if keep_texts:
                texts += texts_or_offsets
            else:
                offsets.append(texts_or_offsets)
            stats.skipped.update(skipped)
            stats.non_utf8 += non_utf8
            stats.bytes_read += bytes_read
            if on_progress is not None:
                on_progress(len(labels), stats)
    except (CorpusError, LineBreakInField):
        return read_corpus(path, max_file_mb, on_progress, fmt=fmt)
    if not labels:
        return read_corpus(path, max_file_mb, on_progress, fmt=fmt)
    check_usable(str(path), labels, stats.skipped, stats.empty_labels)
    fmt.check_labels(str(path), labels)
    left = (
        None
        if keep_texts
        else FileTexts(path, first_rows, np.concatenate(offsets), (status.st_size, status.st_mtime_ns), fmt)
    )
    return Corpus(
        texts if keep_texts else left,
        labels,
        str(path),
        fmt.kind,
        {k: v for k, v in stats.skipped.items() if v},
        stats.non_utf8,
        fingerprint=fingerprint.hexdigest(),
    )


def check_usable(source: str, labels: list[str], skipped: dict[str, int], empty_labels: list[str]) -> None:
    """After reading: refuse a corpus with no documents, an empty label folder, or a single label."""
    where = f"corpus '{source}'"
    if not labels:
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(skipped.items()) if n) or "no documents"
        raise CorpusError(f"{where} has no usable document ({reasons}): add non-empty text documents")
    if empty_labels:
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(skipped.items()) if n) or "no files"
        raise CorpusError(
            f"label '{empty_labels[0]}' in {where} has no usable document (the corpus left out: {reasons}): add "
            f"text documents to it or remove the folder"
        )
    if len(set(labels)) < 2:
        raise CorpusError(f"{where} has {_only_label(labels[0])}: a classifier needs at least 2 labels")


def _only_label(label: str) -> str:
    """The one label (or label set) of a corpus, as a person reads it: never the set's internal separator."""
    from pipelines.labels import SEPARATOR, label_set

    if SEPARATOR not in label:
        return f"only one label ({label!r})"
    names = label_set(label)
    return "no label on any document" if not names else f"the same labels on every document ({', '.join(names)})"
