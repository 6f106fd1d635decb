"""Reading a corpus -> Corpus (texts, labels, skip counts, fingerprint): a folder of label folders, a CSV, TSV,
JSONL, fastText or Parquet file, each format in its own module (pipelines/formats/); a large file of one document
a line is read by worker processes a share at a time (pipelines/shares.py, _read_lines_in_workers).

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

from pipelines.documents import is_binary
from pipelines.errors import CorpusError
from pipelines.fingerprint import Fingerprint
from pipelines.formats.base import (
    FORMAT_HINT,
    TSV_SUFFIXES,
    LineBreakInField,
    LineFormat,
    ReadStats,
    _check_text_file,
    _file_head,
    _part,
)
from pipelines.formats.fasttext import FASTTEXT_LABEL_PREFIX, is_fasttext_file
from pipelines.formats.folder import _folder_documents, check_corpus_path
from pipelines.formats.jsonl import _jsonl_documents, jsonl_format
from pipelines.formats.lines import _fasttext_documents, line_format
from pipelines.formats.parquet import _parquet_documents, open_parquet
from pipelines.formats.table import _csv_documents, check_table_labels
from pipelines.shares import FileTexts, _read_share, _share_bounds

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
    path: str | Path, max_file_mb: float = 10.0, share: tuple[int, int] = (0, 1)
) -> tuple[str, ReadStats, Iterator[tuple[str, str]]]:
    """-> (format, stats, iterator of (label, text) in reading order). The path's kind, a folder's label folders
    and a file's first bytes are checked now; the documents are read one at a time as the iterator is
    consumed (so a corpus larger than memory can be streamed), and stats are complete once it is exhausted.
    share: (index, count): only that part of the corpus (module docstring)."""
    path = Path(path)
    index, count = share
    if not 0 <= index < count:
        raise ValueError(f"share {index} of {count}")
    check_corpus_path(path)
    max_bytes = int(max_file_mb * 1024 * 1024)
    stats = ReadStats()
    if path.is_dir():
        return "folder", stats, _folder_documents(path, max_bytes, stats, share)
    if path.suffix.lower() == ".csv" or path.suffix.lower() in TSV_SUFFIXES:
        tsv = path.suffix.lower() in TSV_SUFFIXES
        _check_text_file(path, "TSV" if tsv else "CSV")
        stats.bytes_total = path.stat().st_size
        documents = _csv_documents(path, stats, tsv)
        if count > 1:
            documents = iter(_part(list(documents), index, count))
        return "tsv" if tsv else "csv", stats, documents
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        _check_text_file(path, "JSONL")
        start, end = _share_bounds(path, index, count)
        stats.bytes_total = end - start
        return "jsonl", stats, _jsonl_documents(path, stats, start, end, jsonl_format(path))
    if path.suffix.lower() == ".parquet":
        stats.bytes_total = path.stat().st_size
        return "parquet", stats, _parquet_documents(path, stats, share)
    if is_fasttext_file(path):
        start, end = _share_bounds(path, index, count)
        stats.bytes_total = end - start
        return "fasttext", stats, _fasttext_documents(path, stats, start, end)
    kind = f"unknown type '{path.suffix}'" if path.suffix else "no known type (no suffix, no \"__label__\" first line)"
    if FASTTEXT_LABEL_PREFIX.encode() in _file_head(path) and not is_binary(_file_head(path)):
        raise CorpusError(
            f"corpus path '{path}' reads as fastText's format but its first line holds no "
            f"\"{FASTTEXT_LABEL_PREFIX}\": give every line a \"{FASTTEXT_LABEL_PREFIX}<label>\" (or remove the "
            "first line if it is a header)"
        )
    if _first_line_has_tab(path):  # e.g. Reuters R8/R52's "r8-train-all-terms.txt": label, a tab, the text
        raise CorpusError(
            f"corpus path '{path}' is a file of {kind}: its lines hold tabs; if each is a label, a tab "
            f"and its text, name the file .tsv (e.g. '{path.with_suffix('.tsv').name}')"
        )
    raise CorpusError(f"corpus path '{path}' is a file of {kind}: {FORMAT_HINT}")


def _first_line_has_tab(path: Path) -> bool:
    """Whether the file's first line (within its first BINARY_SNIFF_BYTES) holds a tab."""
    return b"\t" in _file_head(path).split(b"\n", 1)[0]


# read_corpus's on_progress is called once per this many documents read (and once at the end).
PROGRESS_DOCUMENTS = 20_000


# A file of one document a line of at least this many bytes is read by a WorkerPool's workers, a share each
# (parallel_read says why); a smaller one in this process.
PARALLEL_READ_BYTES = 64 * 1024 * 1024


# Workers read a large file in byte shares of at most about this many bytes (_share_count): a share's texts are
# in a worker's memory at once, and pipelines/vectorize/chunks.py found chunks of ~16M characters transformed fastest
# (CHUNK_CHARACTERS).
SHARE_BYTES = 16 * 1024 * 1024


def read_corpus(
    path: str | Path,
    max_file_mb: float = 10.0,
    on_progress: Callable[[int, ReadStats], None] | None = None,
    share: tuple[int, int] = (0, 1),
    pool: "WorkerPool | None" = None,
    keep_texts: bool = True,
) -> Corpus:
    """Read a corpus in any supported format and check it can be trained on (>= 2 labels, none empty).
    on_progress(documents read, stats) every PROGRESS_DOCUMENTS documents and at the end: stats.bytes_read of
    stats.bytes_total for a file. share (index, count): read only that part (module docstring), unchecked: the
    caller checks the union of the shares; the part's empty label folders are in Corpus.empty_labels.
    pool: parse a large file of one document a line in its workers (parallel_read); the same Corpus.
    keep_texts=False: such a file's texts stay in it (Corpus.texts is a FileTexts; a Parquet file's and other
    corpora's are read whole)."""
    check_corpus_path(Path(path))
    if pool is not None and pool.processes > 1 and share == (0, 1) and parallel_read(path):
        return _read_lines_in_workers(Path(path), line_format(Path(path)), max_file_mb, on_progress, pool, keep_texts)
    fmt, stats, documents = open_documents(path, max_file_mb, share)
    labels, texts, fingerprint = [], [], Fingerprint()
    # (A file read here is read a line at a time, telling its progress every PROGRESS_DOCUMENTS documents; pyarrow's
    # parse, _read_share_arrow, would save ~50 ms of news4's 20 MB and tell nothing until its end.)
    for label, text in documents:
        labels.append(label)
        texts.append(text)
        fingerprint.add(label, text)
        if on_progress is not None and len(texts) % PROGRESS_DOCUMENTS == 0:
            on_progress(len(texts), stats)
    if on_progress is not None:
        on_progress(len(texts), stats)
    corpus = Corpus(
        texts,
        labels,
        str(path),
        fmt,
        {k: v for k, v in stats.skipped.items() if v},
        stats.non_utf8,
        fingerprint=fingerprint.hexdigest(),
        empty_labels=list(stats.empty_labels),
    )
    if share[1] == 1:
        check_usable(str(path), labels, stats.skipped, stats.empty_labels)
        check_table_labels(str(path), fmt, labels)
    return corpus


def parallel_read(path: str | Path) -> bool:
    """Whether read_corpus(path, pool=...) parses the file in the pool's workers (given more than one): a file of
    one document a line (line_format) of at least PARALLEL_READ_BYTES. Parsing JSON a line at a time in one
    process read a million documents (1.2 GB) at ~80 MB/s on the H100 machine, and a CSV, fastText or Parquet file
    of them took 7-14 s on the H200 machine (BENCHMARKS.md, "A million documents in each format"); each worker
    parses its share of the bytes (the lines that start in it, as several processes' shares do) and sends back
    its labels and texts, or where each text's line starts (a Parquet file of two row groups or more: a share of
    whole row groups each, and the rows of its texts)."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size < PARALLEL_READ_BYTES:
        return False
    if path.suffix.lower() == ".parquet":  # its shares are whole row groups: one group is read by one reader
        return open_parquet(path).num_row_groups >= 2
    return line_format(path) is not None


def _share_count(path: Path, pool: "WorkerPool") -> int:
    """Byte shares of a file for the pool's workers: shares of at most ~SHARE_BYTES, their number a multiple of
    the workers' (no worker idles through a last round), at least 2 a worker (progress moves, and a slow worker
    holds less back)."""
    rounds = max(2, -(-path.stat().st_size // (pool.processes * SHARE_BYTES)))
    return pool.processes * rounds


def _read_lines_in_workers(
    path: Path, fmt: LineFormat, max_file_mb: float, on_progress, pool: "WorkerPool", keep_texts: bool = True
) -> Corpus:
    """read_corpus of a file of one document a line (or a row), its shares parsed in the pool's workers and joined in
    order as they arrive: the documents one reader sees, in its order, so the same fingerprint. Without keep_texts
    the texts stay in the file (Corpus.texts is a FileTexts). Where a share cannot be parsed, or a CSV's quoted field
    holds a line break (its lines are not its rows), or nothing usable is found, this process reads the file itself:
    the same corpus, or the error naming the line from the top of the file."""
    if fmt.kind != "parquet":
        _check_text_file(path, {"jsonl": "JSONL", "fasttext": "fastText"}.get(fmt.kind, fmt.kind.upper()))
    status = path.stat()
    stats = ReadStats(bytes_total=status.st_size)
    count = _share_count(path, pool)
    if fmt.kind == "parquet":  # whole row groups a share
        count = min(count, open_parquet(path).num_row_groups)
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
        return read_corpus(path, max_file_mb, on_progress)
    if not labels:
        return read_corpus(path, max_file_mb, on_progress)
    check_usable(str(path), labels, stats.skipped, stats.empty_labels)
    check_table_labels(str(path), fmt.kind, labels)
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
