"""Reading a line file a share at a time in worker processes (pipelines/corpus.py, _read_lines_in_workers): each
share's documents, digests and skip counts (by pyarrow's JSON reader where it is sure, else line by line), and
the texts left in the file (FileTexts) that workers fetch, count or transform share by share."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json

from pipelines.errors import CorpusError
from pipelines.fingerprint import _label_hash, document_digest
from pipelines.formats.base import CorpusFormat, ReadStats, byte_share
from pipelines.formats.jsonl import JsonlFormat
from pipelines.formats.records import class_name

if TYPE_CHECKING:
    from pipelines.workers import WorkerPool

# FileTexts.fetch gives each worker this many groups of rows (a slow worker holds less back).
FETCH_GROUPS_PER_WORKER = 4


def _read_share(
    index: int, path: str, count: int, keep_texts: bool, fmt: CorpusFormat
) -> tuple[list[str], list[str] | np.ndarray, bytes, dict[str, int], int, int]:
    """A worker's part of _read_lines_in_workers: share `index` of `count` -> (labels, texts or, without
    keep_texts, their places (documents,) int64: the bytes their lines start at, or a Parquet file's rows), the
    documents' digests joined, skipped, non_utf8, bytes read). A JSONL share is parsed by pyarrow where it can be
    (_read_share_arrow)."""
    if not 0 <= index < count:
        raise ValueError(f"share {index} of {count}")
    if isinstance(fmt, JsonlFormat):
        parsed = _read_share_arrow(path, *byte_share(path, index, count), keep_texts, fmt)
        if parsed is not None:
            return parsed
    stats = ReadStats()
    return _collected_share(fmt.share_documents(Path(path), stats, index, count), keep_texts, stats)


def _collected_share(
    documents: Iterator[tuple[int, str, str]], keep_texts: bool, stats: ReadStats
) -> tuple[list[str], list[str] | np.ndarray, bytes, dict[str, int], int, int]:
    """A share's (place, label, text) documents as _read_share returns them: (labels, texts or, without keep_texts,
    their places (documents,) int64, the digests joined, skipped, non_utf8, bytes read); stats once they are read."""
    labels, texts, places, digests = [], [], [], []
    for place, label, text in documents:
        labels.append(label)
        digests.append(document_digest(label, text))
        if keep_texts:
            texts.append(text)
        else:
            places.append(place)
    return (
        labels,
        texts if keep_texts else np.array(places, np.int64),
        b"".join(digests),
        dict(stats.skipped),
        stats.non_utf8,
        stats.bytes_read,
    )


# Bytes -> 1 for an ASCII character that Python's str.strip keeps (str.isspace is False): a text that opens or ends
# with one is not empty once stripped. 0 for Python's ASCII whitespace and for every byte of a non-ASCII character,
# whose text str.strip itself then checks.
_KEPT_BY_STRIP = bytes(1 if byte < 128 and not chr(byte).isspace() else 0 for byte in range(256))


# Over 80 lines as formatted: pyarrow's parse and each check that hands the share back to the line reader.
def _read_share_arrow(
    path: str, start: int, end: int, keep_texts: bool, fmt: JsonlFormat = JsonlFormat()
) -> tuple[list[str], list[str] | np.ndarray, bytes, dict[str, int], int, int] | None:
    """_read_share of the lines that start in bytes [start, end), parsed by pyarrow's JSON reader (compiled: a 14
    MB share of synthetic posts in ~50 ms on one core, where reading it a line at a time took ~85 ms); the same labels,
    offsets or texts, digests, skip counts and bytes. None (then the share is read a line at a time, which words any
    error) where that is not sure: a share that is not UTF-8, a line pyarrow refuses (not JSON, a key
    twice, an unpaired surrogate escape), a text or label that is missing or null, a text that is not a string,
    labels that are not all strings or all integers (a fraction or a boolean goes a line at a time, where
    records.label_value formats or refuses it), a label the record contract refuses, a count of lines that differs
    from pyarrow's rows, or texts under several keys (fmt.text_keys: read a line at a time, where they are joined)."""
    data, position = _share_data(path, start, end)
    if not data or len(fmt.text_keys) != 1:
        return None
    text_key, label_key = fmt.text_keys[0], fmt.label_key
    for label_type in (pa.large_string(), pa.int64()):  # string labels, else class numbers (a dataset's ids)
        table = _parse_jsonl(data, **{text_key: pa.large_string(), label_key: label_type})
        if table is not None:
            break
    else:
        return None
    texts, labels = table.column(text_key).combine_chunks(), table.column(label_key).combine_chunks()
    if texts.null_count or labels.null_count:
        return None
    # Each row's line: the lines that are not blank, in order. A line that opens with "{" is not; the others (few,
    # if any) are looked at. pyarrow's rows must then be as many as those lines (two objects on one line, which
    # Python's json refuses, would make more).
    raw = np.frombuffer(data, np.uint8)
    row_starts = np.concatenate([[0], np.flatnonzero(raw[:-1] == ord("\n")) + 1])
    line_ends = np.append(row_starts[1:], len(data))
    written = raw[row_starts] == ord("{")
    for line in np.flatnonzero(~written):
        written[line] = bool(data[row_starts[line] : line_ends[line]].strip(b" \t\r\n"))
    row_starts = row_starts[written]
    if len(row_starts) != len(texts):
        return None
    # Skipped as reading skips them: a text empty once stripped, or a label. A text that opens or ends with a
    # character str.strip keeps is not; the others (few, if any) are stripped by Python.
    from pipelines.word_counts import (
        string_offsets,  # (here: word_counts brings scipy, which reading needs not)
    )

    text_offsets = string_offsets(texts)
    text_bytes = texts.buffers()[2]
    ends = np.frombuffer(text_bytes, np.uint8)
    kept_by_strip = np.frombuffer(_KEPT_BY_STRIP, np.uint8)
    nonempty = text_offsets[1:] > text_offsets[:-1]
    text_kept = np.zeros(len(texts), bool)
    text_kept[nonempty] = (
        kept_by_strip[ends[text_offsets[:-1][nonempty]]] | kept_by_strip[ends[text_offsets[1:][nonempty] - 1]]
    ) > 0
    for row in np.flatnonzero(~text_kept):
        text_kept[row] = bool(texts[int(row)].as_py().strip())
    # the record contract's class names (formats/records.py): a string stripped and composed, an integer in its
    # plain form; a label it refuses is read a line at a time, where its refusal names the line
    label_list = labels.to_pylist()
    if pa.types.is_large_string(labels.type):
        try:
            names = {label: class_name(label, "", 0) for label in set(label_list)}
        except CorpusError:
            return None
        label_list = [names[label] for label in label_list]
    else:
        label_list = [str(label) for label in label_list]
    documents = [row for row in np.flatnonzero(text_kept).tolist() if label_list[row]]
    no_label = sum(1 for label in label_list if not label)  # (skip_reason: no label before an empty text)
    # document_digest of each: the hash of a label and its separator taken once a label and copied a document
    view = memoryview(text_bytes)
    label_hashes = {label: _label_hash(label) for label in set(label_list)}
    digests = []
    for row in documents:
        digest = label_hashes[label_list[row]].copy()
        digest.update(view[text_offsets[row] : text_offsets[row + 1]])
        digests.append(digest.digest())
    skipped = len(texts) - len(documents)
    rows = np.array(documents, np.int64)
    # The texts (no copy where none was skipped), or where their lines start
    found = (
        (texts.take(pa.array(rows)) if skipped else texts).to_pylist() if keep_texts else position + row_starts[rows]
    )
    reasons = {reason: count for reason, count in (("no_label", no_label), ("empty", skipped - no_label)) if count}
    return [label_list[row] for row in documents], found, b"".join(digests), reasons, 0, len(data)


def _share_data(path: str, start: int, end: int) -> tuple[bytes, int]:
    """The bytes of the lines that start in [start, end) of a file (b"" for none), and where the first starts."""
    with open(path, "rb") as handle:
        position = start
        if start > 0:
            handle.seek(start - 1)
            position = start - 1 + len(handle.readline())  # the end of the line holding byte start - 1
        if position >= end:
            return b"", position
        handle.seek(end - 1)
        last_end = end - 1 + len(handle.readline())  # the end of the last line that starts in the share
        handle.seek(position)
        return handle.read(last_end - position), position


def _parse_jsonl(data: bytes, **columns: pa.DataType) -> pa.Table | None:
    """JSONL lines -> a table of these keys' values (other keys ignored), by pyarrow's JSON reader in one block;
    None where the bytes are not UTF-8 (the reader does not check the bytes inside strings) or it refuses a line."""
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        return pa_json.read_json(
            pa.BufferReader(data),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=len(data) + 1),
            parse_options=pa_json.ParseOptions(
                explicit_schema=pa.schema(list(columns.items())), unexpected_field_behavior="ignore"
            ),
        )
    except pa.ArrowException:  # (what a line it refuses raises: ArrowInvalid)
        return None


@dataclass(frozen=True)
class FileTexts:
    """The texts of a JSONL, fastText, CSV, TSV or Parquet file that read_corpus(..., keep_texts=False) left in the file
    (`format`: how its lines, or rows, are documents; a Parquet file's `offsets` are its documents' rows and its
    shares whole row groups): a pool's workers parse its byte shares again to fetch some of them (fetch) or to turn
    each share's texts into something smaller (map_shares), so that this process never holds them all (a million
    documents' texts are 1.2 GB of text and ~1.3 GB of Python strings). The shares are those of the first reading, so
    a share's documents are the rows first_rows[i] .. first_rows[i + 1] - 1; offsets[row] is the byte its line starts
    at, so that a sample of the rows is read without parsing the lines around it."""

    path: Path
    first_rows: list[int]  # (shares + 1,) the row each share starts at; the last: the documents' count
    # (documents,) int64: where each document's line starts in the file. Left out of == and hash(): the file, its
    # stamp and the shares' rows decide it (and an array has no truth value or hash of its own).
    offsets: np.ndarray = field(repr=False, compare=False)
    stamp: tuple[int, int] = (0, 0)  # the file's (size, mtime_ns) when it was read
    format: CorpusFormat = JsonlFormat()  # how its lines (or rows) are documents

    @property
    def shares(self) -> int:
        return len(self.first_rows) - 1

    def _check_unchanged(self) -> None:
        """The rows name the documents of the file as it was read: a file rewritten since would pair texts with
        other documents' labels."""
        status = self.path.stat()
        if (status.st_size, status.st_mtime_ns) != self.stamp:
            raise CorpusError(
                f"corpus file '{self.path}' changed while it was being read for training: train "
                "again once it is written"
            )

    def __len__(self) -> int:
        return self.first_rows[-1]

    def fetch(self, rows: np.ndarray, pool: "WorkerPool") -> "FetchedTexts":
        """The texts of these rows (any order), read by the pool's workers from their lines alone (offsets):
        a sample costs its own lines, where parsing the shares that hold it read the whole file (the search's
        20,000 documents of a million, BENCHMARKS.md "Big corpora with no flags")."""
        rows = np.unique(np.asarray(rows, dtype=np.int64))
        groups = np.array_split(rows, min(len(rows), FETCH_GROUPS_PER_WORKER * pool.processes) or 1)
        texts: dict[int, str] = {}
        for group, part in zip(groups, pool.map(list, [self.lines(group) for group in groups])):
            texts.update(zip(group.tolist(), part))
        return FetchedTexts(len(self), texts)

    def lines(self, rows: np.ndarray) -> "LineTexts":
        """The texts of these rows, in this order, as a sequence that reads them when iterated (LineTexts)."""
        self._check_unchanged()
        rows = np.asarray(rows, dtype=np.int64)
        sizes = self.format.place_sizes(self.offsets, self.stamp[0])
        return LineTexts(str(self.path), self.offsets[rows], sizes[rows], self.format)

    def map_shares(
        self,
        pool: "WorkerPool",
        fn: Callable,
        *args,
        on_progress: Callable[[int, int], None] | None = None,
        arrow: bool = False,
    ) -> list:
        """[fn(the texts of share i, *args) for every share], computed by the pool's workers, in share order; fn
        a module-level function (the workers import it). on_progress(documents done, of all) as shares finish.
        arrow: fn takes the texts as a list of str or as a pyarrow string array (share_texts_arrow), which a share
        is handed where pyarrow's JSON reader parses it to the documents reading found."""
        return list(self.imap_shares(pool, fn, *args, on_progress=on_progress, arrow=arrow))

    def imap_shares(
        self,
        pool: "WorkerPool",
        fn: Callable,
        *args,
        on_progress: Callable[[int, int], None] | None = None,
        arrow: bool = False,
        share_args: Sequence | None = None,
    ) -> Iterator:
        """map_shares, each share's result yielded as it arrives (in share order), so that a caller can use and
        drop it before the next. share_args: one argument more for each share, passed after its texts."""
        self._check_unchanged()
        arrow = arrow and self.format.kind == "jsonl"  # (pyarrow parses JSON lines only)
        items = list(range(self.shares)) if share_args is None else list(zip(range(self.shares), share_args))
        results = pool.imap(
            _share_apply, items, str(self.path), self.shares, self.format, fn, args, self.first_rows if arrow else None
        )
        for share, result in enumerate(results):
            if on_progress is not None:
                on_progress(self.first_rows[share + 1], len(self))
            yield result


class FetchedTexts(Sequence):
    """Some texts of a corpus of `total` documents, by row (FileTexts.fetch): len() is the corpus's; a row not
    fetched raises KeyError."""

    def __init__(self, total: int, texts: dict[int, str]):
        self.total, self.texts = total, texts

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, row: int) -> str:
        row = int(row)
        if not 0 <= row < self.total:
            raise IndexError(f"row {row} of {self.total}")
        return self.texts[row]


def _share_texts(index: int, path: str, count: int, fmt: CorpusFormat) -> list[str]:
    """The texts of the documents of a worker's share `index` of `count` (CorpusFormat.share_documents), as reading
    found them."""
    return [text for _, _, text in fmt.share_documents(Path(path), ReadStats(), index, count)]


class LineTexts(Sequence):
    """Texts of a file FileTexts holds, named by the offsets their lines start at (FileTexts.lines), read when iterated,
    by the process that iterates them. A slice is another LineTexts, and one pickles as its path and offsets (8 bytes
    a document): a fit sample sent to the workers in chunks is read there, where sending its texts cost the parent
    pickling and writing them after reading them (200,000 documents of a million: ~230 MB each way)."""

    def __init__(self, path: str, offsets: np.ndarray, line_bytes: np.ndarray, fmt: CorpusFormat = JsonlFormat()):
        self.path, self.offsets, self.line_bytes, self.format = path, offsets, line_bytes, fmt

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return LineTexts(self.path, self.offsets[index], self.line_bytes[index], self.format)
        return next(self.format.texts_at(Path(self.path), self.offsets[index : index + 1]))

    def __iter__(self) -> Iterator[str]:
        return self.format.texts_at(Path(self.path), self.offsets)

    def characters(self) -> int:
        """About the texts' characters, from their lines' bytes (the JSON around them included), without reading
        them: what sizes a chunk of them."""
        return int(self.line_bytes.sum())

    def arrow(self) -> pa.Array | None:
        """The texts as one pyarrow large_string array, their lines read whole and parsed at once (_arrow_texts,
        which says when it gives None: then iterate). A line's bytes run to the next document's line, so a
        skipped line between them makes the count differ, and None."""
        if not len(self) or self.format.kind != "jsonl":
            return None
        with open(self.path, "rb") as handle:
            descriptor = handle.fileno()
            data = b"".join(
                [os.pread(descriptor, int(size), int(offset)) for offset, size in zip(self.offsets, self.line_bytes)]
            )
        return _arrow_texts(data, len(self), self.format)


def _share_apply(
    item: int | tuple[int, object],
    path: str,
    count: int,
    fmt: CorpusFormat,
    fn: Callable,
    args: tuple,
    first_rows: list[int] | None = None,
):
    """A worker's part of FileTexts.map_shares: item, the share's index, or (its index, its own argument);
    first_rows given (its `arrow`): the share's texts as share_texts_arrow parses them where it can."""
    index, own = (item, ()) if isinstance(item, int) else (item[0], (item[1],))
    texts = None
    if first_rows is not None:
        texts = share_texts_arrow(path, *byte_share(path, index, count), first_rows[index + 1] - first_rows[index], fmt)
    return fn(_share_texts(index, path, count, fmt) if texts is None else texts, *own, *args)


def share_texts_arrow(
    path: str, start: int, end: int, documents: int, fmt: JsonlFormat = JsonlFormat()
) -> pa.Array | None:
    """The texts of the JSONL lines that start in bytes [start, end) of a file that reading found to hold
    `documents` documents there, as one pyarrow large_string array (_arrow_texts); None where pyarrow's parse is
    not sure to be what reading found (then the share is read line by line)."""
    data, _ = _share_data(path, start, end)
    return _arrow_texts(data, documents, fmt) if data else None


def _arrow_texts(data: bytes, documents: int, fmt: JsonlFormat = JsonlFormat()) -> pa.Array | None:
    """JSONL lines of a file that reading found to hold `documents` documents -> their texts as one pyarrow
    large_string array, parsed by pyarrow's JSON reader (compiled, no Python object per document: a 14 MB share
    of synthetic posts in ~21 ms on one core, where Python's json took ~69 ms a line at a time); None where it
    cannot be sure these are the texts reading found: bytes that are not UTF-8 (reading decodes them with
    fallbacks), a line pyarrow refuses (a key twice, an unpaired surrogate escape: Python's json takes them), or
    another number of documents (a line that reading skipped: an empty text or label). Every line parsed as JSON
    when the file was read (its callers check that the file is unchanged since), so the lines pyarrow takes hold
    the same strings."""
    if len(fmt.text_keys) != 1:  # (joined a line at a time)
        return None
    table = _parse_jsonl(data, **{fmt.text_keys[0]: pa.large_string()})
    if table is None:
        return None
    texts = table.column(fmt.text_keys[0]).combine_chunks()
    if len(texts) != documents or texts.null_count:
        return None
    return texts
