"""TextClassifier: the scikit-learn-shaped estimator over the same vectorizer and training loop as `textclf train`."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from pipelines.vectorize import fit_vectorizer
from textclf.errors import InputError
from textclf.inference.text_model import Model, encode_labels
from textclf.settings import Settings


class TextClassifier:
    """scikit-learn-style estimator: TextClassifier(epochs=5).fit(texts, labels).predict(texts).

    Keyword arguments are the fields of textclf.settings.Settings. fit() uses the same vectorizer and training
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
        from textclf.training.backends import resolve_backend
        from textclf.training.loop import fit_network

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
