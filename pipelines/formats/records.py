"""The one record contract every corpus format reads into: a document's text is a string; its label is a non-empty
string, or a list of them (a label set). Each reader hands the values it found to these functions with where they stand
(the file, and its line or row): a value of another type is refused in the same words whatever the format (JSONL and
Parquet, the formats whose values have types; a CSV, TSV or fastText file and a folder name hold only strings). A
missing value (null, or an empty string) is no value: the reader skips the document and counts it by reason
(skip_reason: "no_label" before "empty"). A label is stripped and put in Unicode's composed form (NFC: "é" typed as one
character or as "e" and an accent is one class), and one that holds a control character (the project's own separator of
a label set among them) is refused: it would print as another label or split into several.
"""

from __future__ import annotations

import math
import unicodedata

from pipelines.errors import CorpusError
from pipelines.labels import joined


def kind_of(value) -> str:
    """A value's type in words: "null", "a bool", "an int", ..."""
    if value is None:
        return "null"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def class_name(label: str, where: str, number: int, key: str = "label") -> str:
    """A label string as its class name: stripped, composed (NFC); one holding a control character refused."""
    name = label.strip()
    if not name.isascii():
        name = unicodedata.normalize("NFC", name)
    control = next((c for c in name if unicodedata.category(c) == "Cc"), None) if not name.isprintable() else None
    if control is not None:
        raise CorpusError(
            f"{where} {number} has a \"{key}\" holding the control character {ascii(control)}: remove it from the label"
        )
    return name


def label_value(value, where: str, number: int, key: str = "label") -> str:
    """A typed label (JSONL's, a Parquet cell's) as its class name: a string as class_name; a number in its plain
    form, so that 1, "1" and 1.0 are one class ("1"); a flat list, the document's labels (pipelines/labels.py; []
    none of them); null, no label (""); a boolean, an object, a list of lists and a number that is not finite
    refused."""
    if value is None:
        return ""
    if isinstance(value, str):
        return class_name(value, where, number, key)
    if isinstance(value, (list, tuple)):
        if any(isinstance(item, (list, tuple)) for item in value):
            raise CorpusError(
                f"{where} {number} has a \"{key}\" list that holds a list: write the document's labels "
                "as one flat list of strings"
            )
        return joined(name for name in (label_value(item, where, number, key) for item in value) if name)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # any size: Python's ints are exact
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CorpusError(
                f"{where} {number} has a \"{key}\" of {value!r}, not a finite number: write the label "
                "as a string or a finite number"
            )
        return str(int(value)) if value.is_integer() else repr(value)
    raise CorpusError(
        f"{where} {number} has a \"{key}\" that is {kind_of(value)}: write the label as a string or a "
        "number, or the labels as a list of them"
    )


def text_value(value, where: str, number: int, key: str = "text") -> str:
    """A typed text (JSONL's, a Parquet cell's) as the document's text: a string (null: none, ""); anything else
    refused."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise CorpusError(
        f"{where} {number} has a \"{key}\" that is {kind_of(value)}, not a string: write the "
        "document's text as a string"
    )


def joined_texts(values: dict, where: str, number: int) -> str:
    """A record's several text fields ({key: value}) as one text: each a string or null (left out), joined by
    spaces; a value of another type refused as text_value refuses it."""
    return " ".join(text_value(value, where, number, key) for key, value in values.items() if value is not None)


def skip_reason(label: str, text: str) -> str | None:
    """Why a document read as (label, text) is skipped, the reason it is counted under; None: it is kept."""
    if not label:
        return "no_label"
    if not text.strip():
        return "empty"
    return None
