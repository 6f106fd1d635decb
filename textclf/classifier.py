"""A trained model (vectorizer + network + labels + settings) and the scikit-learn-shaped TextClassifier.

Prediction runs in NumPy/SciPy on the host: a sparse (n, F) @ (F, H) product is fast on a CPU, and
`textclf predict` then starts without importing JAX. tests/test_classifier.py checks it against the JAX model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from pipelines.vectorize import Vectorizer, fit_vectorizer
from textclf.config import Settings
from textclf.errors import InputError


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # overflow-free form of 1 / (1 + exp(-x))


def _softmax(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


@dataclass
class Model:
    vectorizer: Vectorizer
    w1: np.ndarray  # (F, H)
    b1: np.ndarray  # (H,)
    w2: np.ndarray  # (H, C)
    b2: np.ndarray  # (C,)
    labels: list[str]  # class names, index = output unit
    settings: Settings
    metadata: dict[str, Any] = field(default_factory=dict)  # run id, metrics, corpus, created ...

    def scores(self, matrix: sp.csr_matrix) -> np.ndarray:
        hidden = _sigmoid(np.asarray(matrix @ self.w1) + self.b1)
        return hidden @ self.w2 + self.b2

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """texts -> (n, C) class probabilities, columns in the order of `labels`."""
        return _softmax(self.scores(self.vectorizer.transform(texts)))

    def predict(self, texts: Sequence[str]) -> list[str]:
        return [self.labels[i] for i in self.predict_proba(texts).argmax(axis=1)]


def encode_labels(labels: Sequence[str], classes: list[str]) -> np.ndarray:
    index = {c: i for i, c in enumerate(classes)}
    return np.array([index[label] for label in labels], dtype=np.int32)


class TextClassifier:
    """scikit-learn-style estimator: TextClassifier(epochs=5).fit(texts, labels).predict(texts).

    Keyword arguments are the fields of textclf.config.Settings. fit() uses the same vectorizer and training
    loop as `textclf train`, without a run database or a model file.
    """

    def __init__(self, **settings: Any):
        self.settings = Settings(**settings)
        self.model_: Model | None = None
        self.history_: list = []

    @property
    def classes_(self) -> np.ndarray:
        return np.array(self._model().labels)

    def fit(self, texts: Sequence[str], labels: Sequence[str], eval_texts: Sequence[str] | None = None,
            eval_labels: Sequence[str] | None = None) -> "TextClassifier":
        from textclf.backends import resolve_backend
        from textclf.trainloop import fit_network

        classes = sorted(set(map(str, labels)))
        if len(classes) < 2:
            raise InputError("fit needs at least 2 distinct labels")
        labels = [str(label) for label in labels]
        vectorizer, train_x = fit_vectorizer(texts, labels, self.settings)
        eval_x = eval_y = None
        if eval_texts is not None:
            eval_x = vectorizer.transform(eval_texts)
            eval_y = encode_labels([str(label) for label in eval_labels], classes)
        result = fit_network(train_x, encode_labels(labels, classes), len(classes), self.settings,
                             resolve_backend(self.settings.backend), eval_x, eval_y)
        self.model_ = Model(vectorizer, *result.params, labels=classes, settings=self.settings)
        self.history_ = result.history
        return self

    def _model(self) -> Model:
        if self.model_ is None:
            raise InputError("this TextClassifier is not fitted yet: call fit(texts, labels) first")
        return self.model_

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return self._model().predict_proba(texts)

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return np.array(self._model().predict(texts))

    def score(self, texts: Sequence[str], labels: Sequence[str]) -> float:
        return float((self.predict(texts) == np.asarray(labels, dtype=str)).mean())
