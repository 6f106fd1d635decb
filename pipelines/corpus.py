"""Corpus readers: a folder of label folders, a CSV, or JSONL -> Corpus (texts, labels, skip counts).

Formats
- folder: corpus/<label>/<any file>; files in sub-folders of a label folder belong to that label.
  Dotfiles and hidden folders are skipped everywhere.
- CSV (.csv): without a header row, column 1 is the label and the other columns are joined as the text
  (AG News: class index, title, description). With a header row that has a "label" column, that column is
  the label and the others are joined. AG News writes newlines as a backslash; they become spaces.
- JSONL (.jsonl/.ndjson): one {"text": ..., "label": ...} object per line.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.documents import classify_file, decode_text, is_binary
from textclf.errors import CorpusError

FORMAT_HINT = "pass a folder with one sub-folder per label, a .csv or a .jsonl file"


@dataclass
class Corpus:
    texts: list[str]
    labels: list[str]
    source: str
    format: str
    # Files or rows left out, by reason; "non_utf8" counts documents decoded with a fallback (kept).
    skipped: dict[str, int] = field(default_factory=dict)
    non_utf8: int = 0
    fingerprint: str = ""  # sha256 of every (label, text) in reading order
    empty_labels: list[str] = field(default_factory=list)  # label folders whose every file was skipped

    @property
    def label_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(self.labels).items()))

    def __len__(self) -> int:
        return len(self.texts)


def read_corpus(path: str | Path, max_file_mb: float = 10.0) -> Corpus:
    """Read a corpus in any supported format and check it can be trained on (>= 2 labels, none empty)."""
    path = Path(path)
    if not path.exists():
        raise CorpusError(f"corpus path '{path}' does not exist: {FORMAT_HINT}")
    max_bytes = int(max_file_mb * 1024 * 1024)
    if path.is_dir():
        corpus = _read_folder(path, max_bytes)
    elif path.suffix.lower() == ".csv":
        corpus = _read_csv(path, max_bytes)
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        corpus = _read_jsonl(path, max_bytes)
    else:
        raise CorpusError(f"corpus path '{path}' is a file of unknown type '{path.suffix}': {FORMAT_HINT}")
    _check_usable(corpus)
    return corpus


def _fingerprint(labels: list[str], texts: list[str]) -> str:
    digest = hashlib.sha256()
    for label, text in zip(labels, texts):
        digest.update(label.encode())
        digest.update(b"\x00")
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\x01")
    return digest.hexdigest()


def _finish(texts, labels, path, fmt, skipped, non_utf8, empty_labels=()) -> Corpus:
    return Corpus(
        texts, labels, str(path), fmt, {k: v for k, v in skipped.items() if v}, non_utf8,
        fingerprint=_fingerprint(labels, texts), empty_labels=list(empty_labels),
    )


def _read_folder(root: Path, max_bytes: int) -> Corpus:
    skipped: Counter = Counter()
    label_dirs = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            skipped["hidden"] += 1
        elif entry.is_dir():
            label_dirs.append(entry)
    if not label_dirs:
        raise CorpusError(
            f"corpus folder '{root}' has no label folders: put each label's documents in "
            f"'{root}/<label>/', or pass a .csv or .jsonl file"
        )
    texts, labels, non_utf8, empty_labels = [], [], 0, []
    for label_dir in label_dirs:
        before = len(texts)
        for file in _walk_files(label_dir, skipped):
            text, reason, fallback = classify_file(file, max_bytes)
            if reason:
                skipped[reason] += 1
                continue
            non_utf8 += fallback
            texts.append(text)
            labels.append(label_dir.name)
        if len(texts) == before:
            empty_labels.append(label_dir.name)
    return _finish(texts, labels, root, "folder", skipped, non_utf8, empty_labels)


def _walk_files(folder: Path, skipped: Counter):
    """Files under folder in sorted order, recursing into sub-folders, skipping hidden entries."""
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            skipped["hidden"] += 1
        elif entry.is_dir():
            yield from _walk_files(entry, skipped)
        elif entry.is_file():
            yield entry


def _read_bytes_checked(path: Path, max_bytes: int, kind: str) -> str:
    data = path.read_bytes()
    if not data.strip():
        raise CorpusError(f"{kind} corpus '{path}' is empty: add one document per row")
    if is_binary(data):
        raise CorpusError(f"{kind} corpus '{path}' is a binary file, not text: {FORMAT_HINT}")
    return decode_text(data)[0]


def _read_csv(path: Path, max_bytes: int) -> Corpus:
    text = _read_bytes_checked(path, max_bytes, "CSV")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    skipped: Counter = Counter()
    label_col, text_cols = 0, None
    if rows and any(cell.strip().lower() == "label" for cell in rows[0]):
        header = [cell.strip().lower() for cell in rows[0]]
        label_col = header.index("label")
        text_cols = [i for i in range(len(header)) if i != label_col]
        rows = rows[1:]
    texts, labels = [], []
    for row in rows:
        if len(row) < 2:
            skipped["bad_row"] += 1
            continue
        cols = text_cols if text_cols is not None else range(1, len(row))
        body = " ".join(row[i] for i in cols if i < len(row)).replace("\\", " ").strip()
        label = row[label_col].strip()
        if not body or not label:
            skipped["empty"] += 1
            continue
        texts.append(body)
        labels.append(label)
    return _finish(texts, labels, path, "csv", skipped, 0)


def _read_jsonl(path: Path, max_bytes: int) -> Corpus:
    text = _read_bytes_checked(path, max_bytes, "JSONL")
    skipped: Counter = Counter()
    texts, labels = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(
                f"JSONL corpus '{path}' line {number} is not valid JSON ({exc.msg}): "
                'write one {"text": ..., "label": ...} object per line'
            ) from None
        if not isinstance(record, dict) or "text" not in record or "label" not in record:
            raise CorpusError(
                f"JSONL corpus '{path}' line {number} lacks a \"text\" or \"label\" key: "
                'write one {"text": ..., "label": ...} object per line'
            )
        body, label = str(record["text"]), str(record["label"]).strip()
        if not body.strip() or not label:
            skipped["empty"] += 1
            continue
        texts.append(body)
        labels.append(label)
    return _finish(texts, labels, path, "jsonl", skipped, 0)


def _check_usable(corpus: Corpus) -> None:
    where = f"corpus '{corpus.source}'"
    if not corpus.texts:
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(corpus.skipped.items())) or "no documents"
        raise CorpusError(f"{where} has no usable document ({reasons}): add non-empty text documents")
    if corpus.empty_labels:
        raise CorpusError(
            f"label '{corpus.empty_labels[0]}' in {where} has no usable document (all files empty, binary, too large or "
            f"unreadable): add text documents to it or remove the folder"
        )
    if len(set(corpus.labels)) < 2:
        raise CorpusError(
            f"{where} has only one label ('{corpus.labels[0]}'): a classifier needs at least 2 labels"
        )
