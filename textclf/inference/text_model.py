"""A trained text model: vectorizer + network + labels + settings.

Prediction runs in NumPy/SciPy on the host: a sparse (n, F) @ (F, H) product is fast on a CPU, and
`textclf predict` then starts without importing JAX. tests/textclf/inference/test_text_model.py checks it against the JAX model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import numpy as np
import scipy.sparse as sp

from pipelines.vectorize import Vectorizer
from textclf.models.weights import Params, host_scores
from textclf.settings import Settings


def softmax(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


@dataclass
class Model:
    kind: ClassVar[str] = "text"  # what it classifies: every face branches on this, never on attributes
    vectorizer: Vectorizer
    params: Params  # NumPy: w1 (F, H), b1 (H,), w2 (H, C), b2 (C,)
    labels: list[str]  # class names, index = output unit
    settings: Settings
    metadata: dict[str, Any] = field(default_factory=dict)  # run id, metrics, corpus, created ...

    def scores(self, matrix: sp.csr_matrix) -> np.ndarray:
        return host_scores(self.params, matrix)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """texts -> (n, C) class probabilities, columns in the order of `labels`."""
        return softmax(self.scores(self.vectorizer.transform(texts)))

    def predict(self, texts: Sequence[str]) -> list[str]:
        return [self.labels[i] for i in self.predict_proba(texts).argmax(axis=1)]


def encode_labels(labels: Sequence[str], classes: list[str]) -> np.ndarray:
    index = {c: i for i, c in enumerate(classes)}
    return np.array([index[label] for label in labels], dtype=np.int32)
