"""A trained text model: vectorizer + network + labels + settings.

Prediction runs in NumPy/SciPy on the host: a sparse (n, F) @ (F, H) product is fast on a CPU, and
`textclf predict` then starts without importing JAX. tests/textclf/inference/test_text_model.py checks it against the
JAX model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import numpy as np
import scipy.sparse as sp

from pipelines.labels import indicator
from pipelines.vectorize import Vectorizer
from textclf.models.weights import Params, host_scores, sigmoid
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
    # A multi-label model's (C,) probability thresholds (textclf/models/thresholds.py): its outputs are sigmoids,
    # label c predicted where its probability > thresholds[c]. None: one label a document (softmax).
    thresholds: np.ndarray | None = None

    @property
    def multi_label(self) -> bool:
        return self.thresholds is not None

    def scores(self, matrix: sp.csr_matrix) -> np.ndarray:
        return host_scores(self.params, matrix)

    def probabilities(self, scores: np.ndarray) -> np.ndarray:
        """(n, C) output scores -> probabilities: each label's own (sigmoid) for label sets, else softmax."""
        return sigmoid(scores) if self.multi_label else softmax(scores)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """texts -> (n, C) class probabilities, columns in the order of `labels` (multi-label: each label's own)."""
        return self.probabilities(self.scores(self.vectorizer.transform(texts)))

    def predicted_sets(self, probabilities: np.ndarray) -> np.ndarray:
        """A multi-label model's (n, C) probabilities -> (n, C) bool: the labels above their thresholds."""
        return probabilities > self.thresholds

    def predict(self, texts: Sequence[str]) -> list:
        """texts -> the label of each, or (multi-label) the list of its labels above their thresholds."""
        probabilities = self.predict_proba(texts)
        if self.multi_label:
            return [[self.labels[i] for i in np.flatnonzero(row)] for row in self.predicted_sets(probabilities)]
        return [self.labels[i] for i in probabilities.argmax(axis=1)]


def encode_labels(labels: Sequence[str], classes: list[str], multi_label: bool = False) -> np.ndarray:
    """Documents' label strings -> (n,) class numbers (int32), or multi-label their (n, C) 0/1 matrix (uint8)."""
    if multi_label:
        return indicator(labels, classes)
    index = {c: i for i, c in enumerate(classes)}
    return np.array([index[label] for label in labels], dtype=np.int32)
