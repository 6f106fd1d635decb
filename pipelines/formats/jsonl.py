"""JSONL corpora (.jsonl/.ndjson): one {"text": ..., "label": ...} object per line; where the first record has no
"text" or "label" key, its keys as a table's header names columns (jsonl_format: GLUE's {"idx", "sentence",
"label"}). A label list is the document's labels (pipelines/labels.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from pipelines.documents import decode_text
from pipelines.errors import CorpusError
from pipelines.formats.base import LABEL_COLUMNS, TEXT_COLUMNS, ReadStats, _check_text_file, _placed_lines
from pipelines.formats.lines import LinesFormat
from pipelines.formats.records import joined_texts, label_value, skip_reason, text_value


@dataclass(frozen=True)
class JsonlFormat(LinesFormat):
    """A JSONL corpus's keys (jsonl_format), decided once for every share."""

    text_keys: tuple[str, ...] = ("text",)  # joined where several
    label_key: str = "label"

    kind = "jsonl"
    name = "JSONL"

    @classmethod
    def of(cls, path: Path) -> "JsonlFormat":
        _check_text_file(path, cls.name)
        return jsonl_format(path)

    def placed_documents(
        self, path: Path, stats: ReadStats, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, str, str]]:
        return _placed_jsonl_documents(path, stats, start, end, self)

    def line_text(self, line: str) -> str:
        return record_text(json.loads(line), self.text_keys)


def jsonl_format(path: Path) -> JsonlFormat:
    """A JSONL corpus's keys, from its first record, as a table's header names its columns: "text" and "label",
    else the first key LABEL_COLUMNS names as the label and the keys TEXT_COLUMNS names as the text, joined in the
    record's order (GLUE's {"idx", "sentence", "label"}; DBpedia's {"label", "title", "content"} as Hugging Face
    writes it). Every record then holds them; a file whose first record names none keeps "text" and "label", and
    reading it says what to rename."""
    record = None
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                try:
                    record = json.loads(decode_text(raw)[0])
                except json.JSONDecodeError:
                    pass
                break
    if not isinstance(record, dict):
        return JsonlFormat()
    keys = [key for key in record if isinstance(key, str)]
    label = (
        "label"
        if "label" in record
        else next((key for name in LABEL_COLUMNS for key in keys if key.lower() == name), "label")
    )
    return JsonlFormat(record_text_keys(record) or ("text",), label)


def record_text_keys(record: dict) -> tuple[str, ...]:
    """A JSONL record's text keys: "text", else the keys TEXT_COLUMNS names, in the record's order (none of them a
    label name: the two lists share none); () where it holds none."""
    if "text" in record:
        return ("text",)
    return tuple(key for key in record if isinstance(key, str) and key.lower() in TEXT_COLUMNS)


def record_text(record: dict, keys: tuple[str, ...], where: str = "JSONL record", number: int = 0) -> str:
    """A JSONL record's text (the record contract, records.py): its one text key's value, a string; or the values
    of several, each a string or null, joined by spaces."""
    if len(keys) == 1:
        return text_value(record[keys[0]], where, number, keys[0])
    return joined_texts({key: record.get(key) for key in keys}, where, number)


def _placed_jsonl_documents(
    path: Path, stats: ReadStats, start: int, end: int | None, fmt: JsonlFormat
) -> Iterator[tuple[int, str, str]]:
    """(the byte offset its line starts at, label, text) of each document whose line starts in [start, end)."""
    text_keys, label_key = fmt.text_keys, fmt.label_key
    shape = "{" + ", ".join(f'"{key}": ...' for key in (*text_keys, label_key)) + "}"
    where = fmt.where(path, start)
    for number, (offset, line) in enumerate(_placed_lines(path, stats, start, end), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(
                f"{where} {number} is not valid JSON ({exc.msg}): write one {shape} object per line"
            ) from None
        if not isinstance(record, dict) or label_key not in record or not all(key in record for key in text_keys):
            missing = " or ".join(f'"{key}"' for key in (*text_keys, label_key))
            hint = _key_hint(record) if fmt.text_keys == ("text",) and label_key == "label" else ""
            raise CorpusError(
                f"{where} {number} lacks a {missing} key: write one {shape} object per line"
                + (hint or _keys_of(record))
            )
        text = record_text(record, text_keys, where, number)
        label = label_value(record[label_key], where, number, label_key)
        reason = skip_reason(label, text)
        if reason:
            stats.skipped[reason] += 1
            continue
        yield offset, label, text


def _key_hint(record) -> str:
    """For a JSONL record without "text" or "label": the renames that would make it one, from the names a table's
    header may give those columns (LABEL_COLUMNS, TEXT_COLUMNS), e.g. ' (rename "sentence" to "text")'; else ''."""
    if not isinstance(record, dict):
        return ""
    renames = []
    for wanted, names in (("text", TEXT_COLUMNS), ("label", LABEL_COLUMNS)):
        found = [key for key in record if isinstance(key, str) and key.lower() in names]
        if wanted not in record and found:
            renames.append(f'"{found[0]}" to "{wanted}"')
    return f" (rename {' and '.join(renames)})" if renames else ""


def _keys_of(record) -> str:
    """For a JSONL record without the keys wanted: the keys it has, e.g. ' (its keys: "category", "texts")'."""
    if not isinstance(record, dict) or not record:
        return ""
    keys = [json.dumps(str(key), ensure_ascii=False) for key in list(record)[:8]]
    return f" (its keys: {', '.join(keys)}{', ...' if len(record) > 8 else ''})"
