"""TextClassifier: a scikit-learn estimator that trains through the same engine as `textclf train`.

`fit(texts, labels)` hands the documents, in memory, to textclf.runs.run.train: the same model search, training
plan and trainer as the CLI, with the run recorded in an in-memory database and no file written. So
`TextClassifier(random_state=0).fit(X, y)` and `textclf train train.jsonl --test test.jsonl --seed 0` choose the
same settings and train the same model. search="off" trains the settings as given (the fast single-network fit).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from textclf.settings import SEARCHED_FIELDS, Settings, spelled_out

# Settings that are not the estimator's: the image CNN's, reading files, the validation split (fit trains on every
# document it is given, as `textclf train --test` does), and the pins (a searched parameter left None is searched,
# one given a value is kept).
NOT_PARAMETERS = (
    "model",
    "conv_channels",
    "conv_kernel",
    "dropout",
    "augment",
    "max_file_mb",
    "validation_fraction",
    "pinned",
    "seed",
)


class TextClassifier(ClassifierMixin, BaseEstimator):
    """A text classifier by scikit-learn's rules: clone, get_params/set_params, pipelines, cross_val_score and
    GridSearchCV work on it; fit(X, y) with X a sequence of strings and y their labels (any hashable type:
    predict returns the same type). Multi-label: y as a list of label lists (predict returns tuples of labels,
    as MultiLabelBinarizer.inverse_transform does) or as an (n, C) 0/1 matrix (predict returns one, columns in the
    order of classes_); the model's sigmoid outputs and threshold as `textclf train` trains them.

    Parameters are textclf.settings.Settings' fields (`textclf train --help` says what each does), seed as
    scikit-learn's random_state. The searched ones (stop_words, ngram_max, nb_weighting, sublinear_tf, learning_rate,
    weight_decay, epochs, batch_size, ensemble, char_ngrams, char_learning_rate, char_epochs, family,
    linear_learning_rate, linear_weight_decay, linear_epochs) default to None: the model search chooses them by
    validation on the training documents, as `textclf train` does; a value given is kept (pinned), and with
    search="off" a None takes Settings' default. stop_words: "english" or "none". family: "network", "linear" or
    "network+linear" (the linear_* parameters are then the linear model's). linear_loss: "log" or "squared_hinge".
    search_seed seeds the search's folds and candidates, random_state the model: estimators that differ only in
    random_state make the same choice.
    """

    def __init__(
        self,
        *,
        search: str = "auto",
        search_steps: int = 0,
        search_budget: float = 0.0,
        search_seed: int = 0,
        stop_words: str | None = None,
        ngram_max: int | None = None,
        nb_weighting: bool | None = None,
        sublinear_tf: bool | None = None,
        learning_rate: float | None = None,
        weight_decay: float | None = None,
        epochs: int | None = None,
        batch_size: int | None = None,
        ensemble: int | None = None,
        char_ngrams: bool | None = None,
        char_learning_rate: float | None = None,
        char_epochs: int | None = None,
        family: str | None = None,
        linear_learning_rate: float | None = None,
        linear_weight_decay: float | None = None,
        linear_epochs: int | None = None,
        linear_loss: str = "log",
        features: int = 32754,
        vectorizer: str = "tfidf",
        feature_selection: str = "chi2",
        min_df: int = 2,
        start_token: bool = True,
        unspaced_as_characters: bool = True,
        hidden: int = 128,
        optimizer: str = "adam",
        min_steps: int = 300,
        lr_schedule: str | None = None,
        momentum: float = 0.9,
        init_gain: float = 1.0,
        backend: str = "auto",
        pallas_input: str = "auto",
        devices: int = 0,
        parallel: str = "auto",
        multi_label: bool | None = None,
        metric: str | None = None,
        random_state: int = 0,
    ):
        # One parameter a setting: scikit-learn reads them from this signature (get_params, clone).
        # Stored as given, nothing else (scikit-learn's rule): checked in fit.
        self.search = search
        self.search_steps = search_steps
        self.search_budget = search_budget
        self.search_seed = search_seed
        self.stop_words = stop_words
        self.ngram_max = ngram_max
        self.nb_weighting = nb_weighting
        self.sublinear_tf = sublinear_tf
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.epochs = epochs
        self.batch_size = batch_size
        self.ensemble = ensemble
        self.char_ngrams = char_ngrams
        self.char_learning_rate = char_learning_rate
        self.char_epochs = char_epochs
        self.family = family
        self.linear_learning_rate = linear_learning_rate
        self.linear_weight_decay = linear_weight_decay
        self.linear_epochs = linear_epochs
        self.linear_loss = linear_loss
        self.features = features
        self.vectorizer = vectorizer
        self.feature_selection = feature_selection
        self.min_df = min_df
        self.start_token = start_token
        self.unspaced_as_characters = unspaced_as_characters
        self.hidden = hidden
        self.optimizer = optimizer
        self.min_steps = min_steps
        self.lr_schedule = lr_schedule
        self.momentum = momentum
        self.init_gain = init_gain
        self.backend = backend
        self.pallas_input = pallas_input
        self.devices = devices
        self.parallel = parallel
        self.multi_label = multi_label
        self.metric = metric
        self.random_state = random_state

    @property
    def settings(self) -> Settings:
        """The Settings these parameters give (searched parameters left None are not pinned). Raises
        SettingsError (a ValueError) naming a bad value."""
        given = {name: value for name, value in self.get_params().items() if value is not None}
        given = spelled_out(given)
        given.pop("random_state", None)
        if self.random_state is not None:
            if not isinstance(self.random_state, (int, np.integer)):
                raise ValueError("random_state must be an int seed (a RandomState instance cannot be recorded)")
            given["seed"] = int(self.random_state)
        pinned = tuple(name for name in SEARCHED_FIELDS if getattr(self, name) is not None)
        return Settings(**given, pinned=pinned)

    def fit(self, X: Sequence[str], y: Sequence, sample_weight=None) -> TextClassifier:
        """Search and train on the documents X with labels y, as `textclf train` does with a --test corpus (every
        document trains; the search validates on folds of them). sample_weight: each document's weight (>= 0) in
        the training loss, each batch's weighted mean, taken relative to their mean (a weight 2 counts a document
        twice as much as a weight 1); the search's rounds train and validate with them, its trials train with them."""
        from pipelines.corpus import Corpus
        from pipelines.fingerprint import Fingerprint
        from textclf.runs.run import train

        texts = _texts(X, "X")
        targets = _targets(y, len(texts), self.multi_label)
        names, originals = targets.names, targets.originals
        classes = sorted(originals)
        if len(classes) < 2 and targets.form == "labels":
            raise ValueError(f"y has {len(classes)} class: fit needs at least 2 distinct labels")
        weights = _sample_weights(sample_weight, len(texts))
        fingerprint = Fingerprint()
        for label, text in zip(names, texts):
            fingerprint.add(label, text)
        if weights is not None:  # (another weighting, another search to record)
            fingerprint.add_digests(weights.tobytes())
        corpus = Corpus(
            texts, names, "TextClassifier.fit", "memory", fingerprint=fingerprint.hexdigest(), weights=weights
        )
        none = Corpus([], [], "TextClassifier.fit (no test documents)", "memory")
        settings = self.settings if targets.form == "labels" else self.settings.replace(multi_label=True)
        result = train(corpus, settings, test_path=none, db_path=":memory:", keep_files=False)
        result.model.metadata = {
            **(result.model.metadata or {}),
            "estimator_targets": targets.form,
            "estimator_labels": [_plain(originals[c]) for c in result.model.labels],
        }
        classes = result.model.labels
        self.model_ = result.model
        self.classes_ = np.array([originals[c] for c in classes])
        self.n_features_in_ = 1  # one column of text
        self.history_ = result.history
        self.search_ = result.search.to_record() if result.search else None  # as a saved model's metadata holds it
        return self

    def predict_proba(self, X: Sequence[str]) -> np.ndarray:
        """(n, C) class probabilities, columns in the order of classes_. A document with no text is refused, as
        `textclf predict` and the service refuse it: there is nothing to classify."""
        from textclf.inference.predict import first_empty

        check_is_fitted(self)
        texts = _texts(X, "X")
        empty = first_empty(texts)
        if empty is not None:
            raise ValueError(f"X[{empty}] is empty: there is nothing to classify; drop the documents with no text")
        return self.model_.predict_proba(texts)

    def predict(self, X: Sequence[str]):
        """Each document's label; multi-label in the form y was given: tuples of labels, or an (n, C) 0/1 matrix."""
        check_is_fitted(self)
        probabilities = self.predict_proba(X)
        if not self.model_.multi_label:
            return self.classes_[probabilities.argmax(axis=1)]
        chosen = self.model_.predicted_sets(probabilities)
        if self.model_.metadata.get("estimator_targets") == "indicator":
            return chosen.astype(np.int64)
        return [tuple(self.classes_[row]) for row in chosen]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.target_tags.required = True
        tags.classifier_tags.multi_label = True  # label sets: lists of labels or a 0/1 indicator matrix
        tags.non_deterministic = False
        return tags

    def score(self, X: Sequence[str], y, sample_weight=None) -> float:
        """Accuracy of predict(X) against y; for label sets (lists of labels or a 0/1 matrix, as fit takes them)
        subset accuracy, as scikit-learn scores a multi-label classifier."""
        from sklearn.metrics import accuracy_score

        check_is_fitted(self)
        predicted = self.predict(X)
        if self.model_.multi_label and self.model_.metadata.get("estimator_targets") != "indicator":
            from sklearn.preprocessing import MultiLabelBinarizer

            binarizer = MultiLabelBinarizer(classes=list(self.classes_))
            with warnings.catch_warnings():  # a label y holds that the model never saw: a miss, not an error
                warnings.filterwarnings("ignore", "unknown class", UserWarning)
                y, predicted = binarizer.fit_transform(y), binarizer.transform(predicted)
        return float(accuracy_score(y, predicted, sample_weight=sample_weight))

    def save(self, path: str | Path) -> Path:
        """Write the fitted model as a textclf model file (atomically; no pickle), readable by `textclf predict`
        and the service."""
        from textclf.inference.artifacts import save_model

        check_is_fitted(self)
        return save_model(self.model_, path)

    @classmethod
    def from_settings(cls, settings: Settings) -> TextClassifier:
        """The estimator of these Settings: a searched field is given where the search is off or it is pinned, and
        left to the search (None) otherwise."""
        stored = settings.to_dict()
        given = {name: stored[name] for name in parameter_names()}
        for name in SEARCHED_FIELDS:
            if settings.search != "off" and name not in settings.pinned:
                given[name] = None
        if given["stop_words"] is None and (settings.search == "off" or "stop_words" in settings.pinned):
            given["stop_words"] = "none"
        return cls(**given, random_state=settings.seed)

    @classmethod
    def load(cls, path: str | Path) -> TextClassifier:
        """A fitted TextClassifier from a text model file (from save() or `textclf train`); its parameters are the
        settings the model trained with."""
        from textclf.errors import InputError
        from textclf.inference.artifacts import load_model
        from textclf.inference.text_model import Model

        model = load_model(path)
        if not isinstance(model, Model):
            raise InputError(f"model file '{path}' holds an image model: load it with textclf.inference.artifacts")
        estimator = cls.from_settings(model.settings.replace(search="off"))
        labels = model.metadata.get("estimator_labels", model.labels)
        if model.multi_label and model.metadata.get("estimator_targets") == "indicator":
            labels = list(range(len(model.labels)))
        estimator.model_, estimator.classes_, estimator.n_features_in_ = model, np.array(labels), 1
        estimator.history_, estimator.search_ = [], model.metadata.get("search")
        return estimator


def _sample_weights(sample_weight, n: int) -> np.ndarray | None:
    """fit's sample_weight as (n,) float64, or None: one finite weight >= 0 a document (a number: the same for
    every document), not all 0."""
    if sample_weight is None:
        return None
    try:
        weights = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("sample_weight must be numbers: one weight a document") from None
    if weights.ndim == 0:
        weights = np.full(n, float(weights))
    if weights.shape != (n,):
        raise ValueError(f"sample_weight has shape {weights.shape}: give one weight a document ({n},)")
    if not np.isfinite(weights).all():
        raise ValueError("sample_weight holds NaN or infinity: give each document a finite weight")
    if (weights < 0).any():
        raise ValueError("sample_weight holds a negative weight: give each document a weight >= 0")
    if not weights.sum() > 0:
        raise ValueError("sample_weight is zero for every document: give at least one a positive weight")
    return weights


def _texts(X, name: str) -> list[str]:
    """X as a list of documents: a bare string (which would be read as one document a character) and anything
    but strings refused, naming the fix."""
    if isinstance(X, (str, bytes)):
        raise ValueError(f"{name} is one string: pass a list of documents, e.g. [{X[:20]!r}]")
    if X is None:
        raise ValueError(f"{name} is None: pass a list of documents (strings)")
    array = np.asarray(X, dtype=object) if hasattr(X, "__array__") else None
    if array is not None and (array.ndim > 2 or (array.ndim == 2 and array.shape[1] != 1)):
        raise ValueError(f"{name} must be one column of documents (strings), got shape {array.shape}")
    try:
        texts = list(array.ravel()) if array is not None else list(X)
    except TypeError:
        raise ValueError(f"{name} must be a list of documents (strings), got {type(X).__name__}") from None
    bad = next((t for t in texts if not isinstance(t, str)), None)
    if bad is not None:
        raise ValueError(
            f"{name} must hold documents as strings, found {type(bad).__name__} {bad!r}: "
            "convert the column to text first"
        )
    return texts


def _labels(y, n: int) -> list:
    """y as a list of n class labels: None, a bare string, a missing label (NaN, None: each would become a class of
    its own) and continuous values refused (scikit-learn's check_classification_targets)."""
    if y is None:
        raise ValueError("TextClassifier requires y to be passed, but the target y is None: pass one label a document")
    if isinstance(y, (str, bytes)):
        raise ValueError("y is one string: pass one label a document")
    labels = list(column_or_1d(np.asarray(y, dtype=object), warn=True))
    if len(labels) != n:
        raise ValueError(f"X has {n} documents but y has {len(labels)} labels: pass one label a document")
    for label in labels:
        if label is None or (isinstance(label, (float, np.floating)) and math.isnan(label)):
            raise ValueError(f"y holds a missing label ({label!r}): drop those documents or give them a label")
    if all(isinstance(label, (int, float, np.number)) and not isinstance(label, bool) for label in labels):
        check_classification_targets(np.asarray(labels, dtype=float))  # refuses continuous targets
    return labels


@dataclasses.dataclass
class _Targets:
    form: str  # "labels" (one a document), "lists" (label lists) or "indicator" (an (n, C) 0/1 matrix)
    names: list[str]  # each document's label string (pipelines/labels.py for sets)
    originals: dict  # class name -> the label as the caller gave it


def _targets(y, n: int, multi_label: bool | None) -> _Targets:
    """y as the documents' label strings: one label each, label lists, or a 0/1 indicator matrix (whose columns
    become the classes 0 .. C-1, named so that they sort in column order)."""
    from pipelines.labels import as_set

    if multi_label is not False and y is not None and not isinstance(y, (str, bytes)):
        array = np.asarray(y) if hasattr(y, "__array__") or _is_matrix(y) else None
        # (an (n, 1) column is one label a document, as scikit-learn reads it)
        if array is not None and array.ndim == 2 and array.shape[1] > 1 and array.dtype != object:
            if array.shape[0] != n:
                raise ValueError(f"X has {n} documents but y has {array.shape[0]} rows: pass one row a document")
            if not np.isin(array, (0, 1)).all():
                raise ValueError(
                    "y is a matrix of other values than 0 and 1: pass a 0/1 label indicator matrix "
                    "(as MultiLabelBinarizer makes) or one label a document"
                )
            never = np.flatnonzero(array.sum(axis=0) == 0)
            if len(never):
                raise ValueError(
                    f"column {int(never[0])} of y is 0 for every document: drop the labels no document has"
                )
            width = len(str(array.shape[1] - 1))
            columns = [f"{c:0{width}d}" for c in range(array.shape[1])]
            names = [as_set(columns[c] for c in np.flatnonzero(row)) for row in array]
            return _Targets("indicator", names, dict(zip(columns, range(len(columns)))))
        items = list(array) if array is not None and array.ndim == 1 else list(y) if array is None else []
        if items and all(isinstance(item, (list, tuple, set, frozenset)) for item in items):
            if len(items) != n:
                raise ValueError(f"X has {n} documents but y has {len(items)} label lists: pass one a document")
            originals = {str(label): label for item in items for label in item}
            return _Targets("lists", [as_set(str(label) for label in item) for item in items], originals)
    labels = _labels(y, n)
    return _Targets("labels", [str(label) for label in labels], {str(label): label for label in labels})


def _is_matrix(y) -> bool:
    items = list(y) if isinstance(y, Sequence) else []
    # rows as lists, tuples or 1-D arrays of 0/1 integers, all as long (a list of indicator rows)
    items = [list(item) if isinstance(item, np.ndarray) and item.ndim == 1 else item for item in items]
    return (
        bool(items)
        and all(
            isinstance(item, (list, tuple))
            and item
            and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in item)
            for item in items
        )
        and len({len(item) for item in items}) == 1
        and all(v in (0, 1) for item in items for v in item)
    )


def _plain(label):
    """numpy scalars as Python ones, so the model file's JSON header can hold them."""
    return label.item() if isinstance(label, np.generic) else label


def parameter_names() -> list[str]:
    """The estimator's parameters that are Settings fields (all but NOT_PARAMETERS; random_state is the seed)."""
    return [f.name for f in dataclasses.fields(Settings) if f.name not in NOT_PARAMETERS]
