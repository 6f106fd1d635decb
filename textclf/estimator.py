"""TextClassifier: the scikit-learn-shaped estimator over the same vectorizer and training loop as `textclf train`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from pipelines.vectorize import fit_vectorizer
from textclf.errors import InputError
from textclf.inference.text_model import Model, encode_labels
from textclf.settings import Settings


def _check(settings: Settings) -> None:
    """What fit() cannot honour is refused, not ignored: it trains one network on the words."""
    if settings.ensemble > 1 or settings.char_ngrams:
        raise InputError("TextClassifier trains one network on the words: ensembles and the character view are "
                         "`textclf train`'s; pass ensemble=1 and char_ngrams=False")


class TextClassifier(ClassifierMixin, BaseEstimator):
    """A scikit-learn estimator: TextClassifier(epochs=5).fit(texts, labels).predict(texts), and clone(),
    get_params/set_params, cross_val_score, GridSearchCV ... work on it.

    Keyword arguments are the fields of textclf.settings.Settings (checked at once, so a bad value fails here,
    not inside a cross-validation). fit() uses the same vectorizer and training loop as `textclf train`, without
    a run database or a model file, and without the model search (tune it with scikit-learn's own tools, or use
    `textclf train`). Labels keep their type: fitted on ints, predict returns ints. save(path) / load(path):
    the model file format of `textclf train` (readable by `textclf predict` and the service).
    """

    def __init__(self, **settings: Any):
        _check(Settings(**settings))  # validate now
        self._params = dict(settings)  # exactly as given: clone() checks that get_params returns these objects
        self.model_: Model | None = None
        self.history_: list = []

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return dict(self._params)

    def set_params(self, **params: Any) -> "TextClassifier":
        _check(Settings(**{**self._params, **params}))
        self._params.update(params)
        return self

    @property
    def settings(self) -> Settings:
        return Settings(**self._params)

    def fit(self, texts: Sequence[str], labels: Sequence, eval_texts: Sequence[str] | None = None,
            eval_labels: Sequence | None = None) -> "TextClassifier":
        import jax

        from textclf.training.backends import choose_backend, resolve_backend
        from textclf.training.loop import fit_network

        texts, labels = list(texts), list(labels)
        originals = {str(label): label for label in labels}  # the class name -> the label as the caller gave it
        classes = sorted(originals)
        if len(classes) < 2:
            raise InputError("fit needs at least 2 distinct labels")
        settings = self.settings
        labels = [str(label) for label in labels]
        vectorizer, train_x = fit_vectorizer(texts, labels, settings)
        eval_x = eval_y = None
        if eval_texts is not None:
            eval_x = vectorizer.transform(list(eval_texts))
            eval_y = encode_labels([str(label) for label in eval_labels], classes)
        backend, _ = choose_backend(resolve_backend(settings.backend), "mlp", settings.batch_size,
                                    jax.default_backend() == "gpu")
        result = fit_network(train_x, encode_labels(labels, classes), len(classes), settings, backend, eval_x,
                             eval_y)
        self.model_ = Model(vectorizer, result.params, labels=classes, settings=settings,
                            metadata={"estimator_labels": [_plain(originals[c]) for c in classes]})
        self.history_ = result.history
        return self

    def _model(self) -> Model:
        if self.model_ is None:
            raise InputError("this TextClassifier is not fitted yet: call fit(texts, labels) first")
        return self.model_

    @property
    def classes_(self) -> np.ndarray:
        model = self._model()
        return np.array(model.metadata.get("estimator_labels", model.labels))

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """(n, C) class probabilities, columns in the order of classes_."""
        return self._model().predict_proba(list(texts))

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.classes_[self.predict_proba(texts).argmax(axis=1)]

    def save(self, path: str | Path) -> Path:
        """Write the fitted model as a textclf model file (atomically; no pickle)."""
        from textclf.inference.artifacts import save_model

        return save_model(self._model(), path)

    @classmethod
    def load(cls, path: str | Path) -> "TextClassifier":
        """A fitted TextClassifier from a text model file (from save() or `textclf train`)."""
        from textclf.inference.artifacts import load_model

        model = load_model(path)
        if not isinstance(model, Model):
            raise InputError(f"model file '{path}' holds an image model: load it with textclf.inference.artifacts")
        settings = {k: v for k, v in model.settings.to_dict().items() if k != "pinned"}
        estimator = cls(**settings)
        estimator.model_ = model
        return estimator


def _plain(label):
    """numpy scalars as Python ones, so the model file's JSON header can hold them."""
    return label.item() if isinstance(label, np.generic) else label
