"""Vectorized corpora cached by content: an unchanged corpus with unchanged word settings is not vectorized twice.

Key: sha256 of the training corpus fingerprint (pipelines/fingerprint.py: every label and text), the test corpus
fingerprint (or the validation split's seed and fraction), the label lists and every setting that changes the
matrices. Value: one .npz (no pickle) with the fitted vectorizer's arrays and the train/eval CSR matrices,
written atomically; a damaged or unreadable entry is treated as a miss and rewritten.
TEXTCLF_VECTOR_CACHE=off turns the cache off; old entries beyond MAX_ENTRIES are deleted, oldest first.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import Protocol

import numpy as np
import scipy.sparse as sp

from pipelines.files import write_arrays_atomically
from pipelines.vectorize import Vectorizer, WordSettings

FORMAT = 1
MAX_ENTRIES = 8


class CacheSettings(WordSettings, Protocol):
    """The word settings plus what decides the validation split (part of the key without a test corpus)."""

    seed: int
    validation_fraction: float


WORD_SETTINGS = (
    "features",
    "vectorizer",
    "feature_selection",
    "ngram_max",
    "stop_words",
    "min_df",
    "sublinear_tf",
    "nb_weighting",
    "char_ngrams",
    "start_token",
    "unspaced_as_characters",
)


def cache_key(
    train_fingerprint: str,
    test_fingerprint: str | None,
    settings: CacheSettings,
    train_labels: list[str],
    eval_labels: list[str],
) -> str:
    split = (
        {"test": test_fingerprint}
        if test_fingerprint
        else {"seed": settings.seed, "validation_fraction": settings.validation_fraction}
    )
    description = {
        "format": FORMAT,
        "train": train_fingerprint,
        "split": split,
        "settings": {name: getattr(settings, name) for name in WORD_SETTINGS},
        "labels": hashlib.sha256(json.dumps([train_labels, eval_labels]).encode()).hexdigest(),
    }
    return hashlib.sha256(json.dumps(description, sort_keys=True).encode()).hexdigest()[:32]


def _matrix_arrays(prefix: str, matrix: sp.csr_matrix) -> dict[str, np.ndarray]:
    return {
        f"{prefix}.data": matrix.data,
        f"{prefix}.indices": matrix.indices,
        f"{prefix}.indptr": matrix.indptr,
        f"{prefix}.shape": np.array(matrix.shape),
    }


def _matrix(prefix: str, arrays, width: int) -> sp.csr_matrix:
    """A cached matrix, checked whole before use (column indices within its width, row pointers in order, finite
    values, the vectorizer's width): a valid file with wrong numbers is a damaged entry, not vectors. ValueError."""
    matrix = sp.csr_matrix(
        (arrays[f"{prefix}.data"], arrays[f"{prefix}.indices"], arrays[f"{prefix}.indptr"]),
        shape=tuple(int(n) for n in arrays[f"{prefix}.shape"]),
    )
    matrix.check_format(full_check=True)
    if matrix.shape[1] != width or not np.isfinite(matrix.data).all():
        raise ValueError(f"{prefix} vectors of width {matrix.shape[1]} (the vectorizer's: {width}) or not finite")
    return matrix


def enabled() -> bool:
    return os.environ.get("TEXTCLF_VECTOR_CACHE", "on").lower() not in ("off", "0", "no")


def load(folder: Path, key: str) -> tuple[Vectorizer, sp.csr_matrix, sp.csr_matrix] | None:
    path = folder / f"{key}.npz"
    if not enabled() or not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as arrays:
            config = json.loads(str(arrays["config"]))
            vectorizer = Vectorizer.from_arrays(
                config, {k[len("vectorizer.") :]: arrays[k] for k in arrays.files if k.startswith("vectorizer.")}
            )
            width = vectorizer.n_features
            result = vectorizer, _matrix("train", arrays, width), _matrix("eval", arrays, width)
    except (OSError, ValueError, TypeError, KeyError, EOFError, zipfile.BadZipFile):
        path.unlink(missing_ok=True)  # damaged: a miss, and rewritten by this run
        return None
    os.utime(path)  # recently used: kept longest
    return result


def save(folder: Path, key: str, vectorizer: Vectorizer, train_x: sp.csr_matrix, eval_x: sp.csr_matrix) -> None:
    if not enabled():
        return
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {"config": np.array(json.dumps(vectorizer.config()))}
    arrays.update({f"vectorizer.{k}": v for k, v in vectorizer.to_arrays().items()})
    arrays.update(_matrix_arrays("train", train_x))
    arrays.update(_matrix_arrays("eval", eval_x))
    write_arrays_atomically(folder / f"{key}.npz", arrays)
    entries = sorted(folder.glob("*.npz"), key=lambda p: p.stat().st_mtime)
    for old in entries[:-MAX_ENTRIES]:
        old.unlink(missing_ok=True)
