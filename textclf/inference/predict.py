"""Classifying documents with a saved model: reading inputs safely and ranking labels."""

from __future__ import annotations

import stat
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from pipelines.formats.base import TSV_SUFFIXES
from pipelines.formats.fasttext import fasttext_line, is_fasttext_file
from pipelines.formats.folder import folder_files
from pipelines.formats.jsonl import record_text, record_text_keys
from pipelines.formats.parquet import PARQUET_BATCH_ROWS, open_parquet, parquet_columns, parquet_text
from pipelines.formats.table import TABLE_SNIFF_BYTES, newline_escapes, table_columns, table_reader, table_text
from pipelines.documents import classify_file, decode_text, is_binary
from pipelines.errors import CorpusError
from textclf.inference.text_model import Model
from textclf.errors import InputError


@dataclass
class Prediction:
    source: str  # file name, "-" for stdin, or an index
    label: str | None  # None: no label reached the threshold
    top: list[tuple[str, float]]  # (label, probability), best first
    labels: list[str] | None = None  # a multi-label model's: every label above its threshold, most probable first
    label_probabilities: list[float] | None = None  # the probability of each of `labels`


def read_document(path: str, max_file_mb: float, stdin_bytes: bytes | None = None) -> str:
    """One input document as text; refuses missing, binary, empty and oversized inputs with the fix."""
    name = "standard input" if path == "-" else f"'{path}'"
    if path == "-":
        data = stdin_bytes or b""
    else:
        file = Path(path)
        check_input_file(file, "a text file or - for stdin")
        if file.stat().st_size > max_file_mb * 1024 * 1024:
            raise InputError(
                f"input file {name} is {file.stat().st_size / 2**20:.1f} MB, over the {max_file_mb:g} MB limit: "
                "split it or raise --max-file-mb"
            )
        data = file.read_bytes()
    if len(data) > max_file_mb * 1024 * 1024:
        raise InputError(f"{name} is over the {max_file_mb:g} MB limit: split it or raise --max-file-mb")
    if is_binary(data):
        raise InputError(f"input {name} is a binary file, not text: pass a text document")
    text = decode_text(data)[0]
    if not text.strip():
        raise InputError(f"input {name} is empty: there is nothing to classify")
    return text


def check_input_file(file: Path, what: str) -> None:
    """An input that exists and is a regular file: a FIFO or a device (/dev/zero) would block or never end."""
    if not file.exists():
        raise InputError(f"input file '{file}' does not exist: pass {what}")
    if not stat.S_ISREG(file.stat().st_mode):
        raise InputError(f"input '{file}' is not a regular file (a folder, FIFO, device or socket): pass {what}")


LINE_SUFFIXES = (".jsonl", ".ndjson", ".csv") + TSV_SUFFIXES


def read_inputs(
    paths: list[str], max_file_mb: float, stdin_bytes: bytes | None = None, lines: bool = False
) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """The documents of every input, in order -> ([(source, text)], the files of folders skipped, by reason). A
    file or "-" as read_documents reads it; a folder's files one document each, as training reads a label folder's
    (source: the file's path; hidden files skipped; binary, empty, unreadable files and files over max_file_mb
    skipped and counted, as training skips them). All inputs are read before any is classified."""
    documents, skipped = [], Counter()
    for path in paths:
        if path == "-" or not Path(path).is_dir():
            documents += read_documents(path, max_file_mb, stdin_bytes, lines)
            continue
        files, walk_skipped = folder_files(Path(path))
        skipped.update(walk_skipped)
        found = 0
        for file in files:
            text, reason, _ = classify_file(file, int(max_file_mb * 1024 * 1024))
            if reason:
                skipped[reason] += 1
            else:
                documents.append((str(file), text))
                found += 1
        if not found:
            reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items())) or "no files"
            raise InputError(f"folder '{path}' holds no text file to classify ({reasons}): pass a folder of text files")
    return documents, dict(skipped)


def read_documents(
    path: str, max_file_mb: float, stdin_bytes: bytes | None = None, lines: bool = False
) -> list[tuple[str, str]]:
    """The documents of one input -> [(source, text)]. Standard input, .jsonl / .csv / .tsv files and files in
    fastText's format hold one document a line, as fastText reads them (source "FILE:LINE"): a JSONL line is
    {"text": ...} (other keys, such as a label, are ignored) or a JSON string; a CSV or TSV row's text columns where
    its first row is a header naming a label or a text column (pipelines.formats.table.table_columns: the label column
    left out, as training reads the file), else its cells joined, written line breaks as spaces (table_text); a
    fastText line's words but its "__label__" ones.
    A .parquet file holds one document a row (source "FILE:ROW"), its text columns as training reads them (the
    label column, if any, left out). Any other path is one document (source: the path). A line or row with no text
    (blank, or a fastText line of labels alone) is a document "" (rank: an empty prediction), so that the output
    has one line an input line."""
    suffix = "" if path == "-" else Path(path).suffix.lower()
    if suffix == ".parquet":
        return _parquet_rows(path, max_file_mb)
    fasttext = path != "-" and suffix not in LINE_SUFFIXES and Path(path).is_file() and is_fasttext_file(path)
    if path != "-" and suffix not in LINE_SUFFIXES and not fasttext and not lines:
        return [(path, read_document(path, max_file_mb, stdin_bytes))]
    whole = read_document(path, max_file_mb, stdin_bytes)  # the same checks: exists, size, binary, empty
    text_lines = whole.splitlines()
    if suffix == ".csv" or suffix in TSV_SUFFIXES:
        return _table_rows(path, text_lines, suffix in TSV_SUFFIXES)
    documents = []
    for number, line in enumerate(text_lines, 1):
        text = ""
        if not line.strip():
            pass
        elif suffix in (".jsonl", ".ndjson"):
            text = _json_text(path, number, line)
        elif fasttext:
            text = fasttext_line(line)[1]
        else:
            text = line
        documents.append((f"{path}:{number}", text))
    return documents


def _parquet_rows(path: str, max_file_mb: float) -> list[tuple[str, str]]:
    file = Path(path)
    check_input_file(file, "an existing .parquet file")
    if file.stat().st_size > max_file_mb * 1024 * 1024:
        raise InputError(
            f"input file '{path}' is {file.stat().st_size / 2**20:.1f} MB, over the {max_file_mb:g} MB "
            "limit: split it or raise --max-file-mb"
        )
    try:
        parquet = open_parquet(file, "input")
        schema = parquet.schema_arrow
        _, text_columns = parquet_columns(file, schema, labelled=False, kind="input")
    except CorpusError as exc:
        raise InputError(str(exc)) from None
    documents, row = [], 0
    for batch in parquet.iter_batches(PARQUET_BATCH_ROWS, columns=[schema.names[i] for i in text_columns]):
        for cells in zip(*(column.to_pylist() for column in batch.columns)):
            row += 1
            documents.append((f"{path}:{row}", parquet_text(cells)))  # as training reads a row
    if not any(text for _, text in documents):
        raise InputError(f"input '{path}' holds no text: there is nothing to classify")
    return documents


def _json_text(path: str, number: int, line: str) -> str:
    import json

    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"'{path}' line {number} is not valid JSON ({exc.msg}): write one {{\"text\": ...}} object per line"
        ) from None
    text = record
    if isinstance(record, dict):  # its text keys, as training reads a JSONL record's
        keys = record_text_keys(record)
        text = record_text(record, keys) if keys else None
    if not isinstance(text, str):
        raise InputError(f"'{path}' line {number} has no \"text\" string: write one {{\"text\": ...}} object per line")
    return text


def _table_rows(path: str, lines: list[str], tsv: bool) -> list[tuple[str, str]]:
    escapes = newline_escapes("\n".join(lines).encode()[:TABLE_SNIFF_BYTES])  # line breaks as training reads them
    rows = list(table_reader(lines, tsv))
    try:
        columns = table_columns(rows[0], labelled=False, where=f"input '{path}'") if rows else None
    except CorpusError as exc:
        raise InputError(str(exc)) from None
    text_columns = columns[1] if columns is not None else None
    documents = []
    for number, row in enumerate(rows, 1):
        if number == 1 and columns is not None:  # the header
            continue
        if not any(cell.strip() for cell in row):  # a blank row: an empty prediction
            documents.append((f"{path}:{number}", ""))
            continue
        cells = [row[i] for i in text_columns if i < len(row)] if text_columns is not None else row
        documents.append((f"{path}:{number}", table_text(cells, escapes)))
    return documents


ALL_LABELS = -1  # top_k that asks for every label (fastText's `-k -1`)


def first_empty(texts: list[str]) -> int | None:
    """The position of the first document with no text (blank or whitespace), which no face classifies, or None."""
    return next((i for i, text in enumerate(texts) if not text.strip()), None)


def check_top_k(top_k: int) -> int:
    if top_k < 1 and top_k != ALL_LABELS:
        raise InputError(f"--top-k is {top_k}: give how many labels to show (1 or more), or -1 for all of them")
    return top_k


def check_threshold(threshold: float, name: str = "--threshold") -> float:
    """A threshold every face takes (predict -t, the service's "threshold"): a probability from 0 to 1."""
    if not 0.0 <= threshold <= 1.0:  # NaN fails too
        raise InputError(f"{name} is {threshold}: give a probability from 0 to 1")
    return threshold


def top_labels(
    labels: list[str], probabilities: np.ndarray, top_k: int, threshold: float = 0.0
) -> list[list[tuple[str, float]]]:
    """(n, C) probabilities -> per row the top_k (-1: every) (label, probability) pairs, best first, those under
    `threshold` left out (a row may then have none)."""
    k = len(labels) if top_k == ALL_LABELS else max(1, min(top_k, len(labels)))
    best = np.argsort(-probabilities, axis=1, kind="stable")[:, :k]
    return [
        [(labels[i], float(row[i])) for i in order if row[i] >= threshold] for row, order in zip(probabilities, best)
    ]


def rank(
    model: Model, texts: list[str], sources: list[str], top_k: int, threshold: float | None = None
) -> list[Prediction]:
    """Each document's top_k labels with their probabilities (those under `threshold` left out). A multi-label
    model's predictions are the labels above its thresholds, or above `threshold` where given (fastText's -t),
    however many that is; its `top` the top_k probabilities as for one label a document. A document with no text
    (a blank input line) gets an empty prediction: no label, no probabilities."""
    scored = [i for i, text in enumerate(texts) if text.strip()]
    empty = Prediction("", None, [], [] if model.multi_label else None, [] if model.multi_label else None)
    predictions = [replace(empty, source=source) for source in sources]
    if not scored:
        return predictions
    probabilities = model.predict_proba([texts[i] for i in scored])
    for i, prediction in zip(
        scored, predictions_of(model, probabilities, [sources[i] for i in scored], top_k, threshold)
    ):
        predictions[i] = prediction
    return predictions


def predictions_of(
    model, probabilities: np.ndarray, sources: list[str], top_k: int, threshold: float | None = None
) -> list[Prediction]:
    """Each scored document's prediction from its probabilities, by the one rule every face answers with
    (`textclf predict` through rank, the service's :predict): the top_k labels (-1: every) at or above
    `threshold`; the label the first of them (none where none reaches it), a multi-label model's labels those above
    its thresholds or above `threshold` where given."""
    ranked = top_labels(model.labels, probabilities, top_k, threshold or 0.0)
    multi = getattr(model, "multi_label", False)  # (an image model has one label an image)
    sets = chosen_labels(model, probabilities, threshold) if multi else [None] * len(ranked)
    column = {label: number for number, label in enumerate(model.labels)}
    out = []
    for source, top, names, row in zip(sources, ranked, sets, probabilities):
        chances = None if names is None else [float(row[column[name]]) for name in names]
        label = top[0][0] if top else None
        out.append(Prediction(source, label if names is None else (names[0] if names else None), top, names, chances))
    return out


def chosen_labels(model, probabilities: np.ndarray, threshold: float | None = None) -> list:
    """Each document's prediction from its probabilities: the most probable label, or a multi-label model's list
    of the labels above their thresholds (or above `threshold` where given), most probable first."""
    if not getattr(model, "multi_label", False):
        return [model.labels[i] for i in probabilities.argmax(axis=1)]
    chosen = model.predicted_sets(probabilities) if threshold is None else probabilities > threshold
    return [
        [model.labels[i] for i in np.argsort(-row, kind="stable") if yes[i]] for row, yes in zip(probabilities, chosen)
    ]
