"""A document's labels as one string, so that every reader, cache and fingerprint keeps one label a document: a
single label is itself; any other number of labels (none, two, ...) is each of them, sorted, after SEPARATOR
(none: SEPARATOR alone). A corpus is multi-label when any of its documents holds such a set."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

# ASCII's unit separator: no label a reader accepts holds it (labels are stripped, one line of text).
SEPARATOR = "\x1f"


def joined(labels: Iterable[str]) -> str:
    """A document's labels (repeats dropped) -> its one label string."""
    unique = sorted(set(labels))
    return unique[0] if len(unique) == 1 else SEPARATOR + SEPARATOR.join(unique)


def as_set(labels: Iterable[str]) -> str:
    """A document's labels as a set's label string even where it holds one label (a corpus the user or its form
    says is multi-label stays so, however few labels each document has)."""
    return SEPARATOR + SEPARATOR.join(sorted(set(labels)))


def label_set(label: str) -> list[str]:
    """One label string -> the document's labels (sorted)."""
    return [part for part in label.split(SEPARATOR) if part] if SEPARATOR in label else [label]


def is_multi_label(labels: Iterable[str]) -> bool:
    """Whether any document holds other than one label."""
    return any(SEPARATOR in label for label in labels)


def label_names(labels: Iterable[str], multi_label: bool) -> list[str]:
    """The classes of a corpus's labels, sorted: each distinct label string, or, multi-label, each label any
    document holds."""
    distinct = set(labels)
    if not multi_label:
        return sorted(distinct)
    return sorted({name for label in distinct for name in label_set(label)})


def indicator(labels: Sequence[str], classes: Sequence[str]) -> np.ndarray:
    """Multi-label documents' label strings -> their (n, C) 0/1 matrix (uint8) over the classes; a label the
    classes lack is left out."""
    index = {name: i for i, name in enumerate(classes)}
    matrix = np.zeros((len(labels), len(classes)), np.uint8)
    for row, label in enumerate(labels):
        for name in label_set(label):
            column = index.get(name)
            if column is not None:
                matrix[row, column] = 1
    return matrix


def shown(label: str) -> str:
    """A label string as a person reads it: a set's labels joined by ", " (none: "(none)")."""
    if SEPARATOR not in label:
        return label
    return ", ".join(label_set(label)) or "(none)"


def merged_documents(texts: Sequence[str], labels: Sequence[str]) -> tuple[list[str], list[str]]:
    """A folder corpus read as label sets: the same document in several label folders (the same text) is one
    document holding those labels, in the order of its first copy; -> (texts, label strings)."""
    first: dict[str, int] = {}
    kept_texts: list[str] = []
    sets: list[set[str]] = []
    for text, label in zip(texts, labels):
        if text in first:
            sets[first[text]].update(label_set(label))
            continue
        first[text] = len(kept_texts)
        kept_texts.append(text)
        sets.append(set(label_set(label)))
    return kept_texts, [as_set(names) for names in sets]
