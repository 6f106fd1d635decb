"""Classifying documents with a saved model: reading inputs safely and ranking labels."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipelines.documents import decode_text, is_binary
from textclf.inference.text_model import Model
from textclf.errors import InputError


@dataclass
class Prediction:
    source: str  # file name, "-" for stdin, or an index
    label: str
    top: list[tuple[str, float]]  # (label, probability), best first


def read_document(path: str, max_file_mb: float, stdin_bytes: bytes | None = None) -> str:
    """One input document as text; refuses missing, binary, empty and oversized inputs with the fix."""
    name = "standard input" if path == "-" else f"'{path}'"
    if path == "-":
        data = stdin_bytes or b""
    else:
        file = Path(path)
        if not file.is_file():
            raise InputError(f"input file {name} does not exist: pass an existing text file or - for stdin")
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


def top_labels(labels: list[str], probabilities: np.ndarray, top_k: int) -> list[list[tuple[str, float]]]:
    """(n, C) probabilities -> per row the top_k (label, probability) pairs, best first."""
    k = max(1, min(top_k, len(labels)))
    best = np.argsort(-probabilities, axis=1, kind="stable")[:, :k]
    return [[(labels[i], float(row[i])) for i in order] for row, order in zip(probabilities, best)]


def rank(model: Model, texts: list[str], sources: list[str], top_k: int) -> list[Prediction]:
    ranked = top_labels(model.labels, model.predict_proba(texts), top_k)
    return [Prediction(source, top[0][0], top) for source, top in zip(sources, ranked)]
