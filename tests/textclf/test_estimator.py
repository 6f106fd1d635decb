"""TextClassifier as scikit-learn's tools expect an estimator to behave."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score

from textclf.errors import InputError, SettingsError
from textclf.estimator import TextClassifier

FAST = dict(epochs=2, min_steps=60, batch_size=8, hidden=16, optimizer="sgd", learning_rate=0.5, init_gain=4.0)


def _corpus(n=60):
    rng = np.random.default_rng(0)
    words = {0: ["goal", "match", "team", "league"], 1: ["oven", "bread", "recipe", "bake"]}
    labels = [i % 2 for i in range(n)]
    texts = [" ".join(rng.choice(words[label], 5)) for label in labels]
    return texts, labels


def test_params_round_trip_and_clone():
    estimator = TextClassifier(**FAST)
    assert estimator.get_params() == FAST
    copy = clone(estimator)
    assert copy is not estimator and copy.get_params() == FAST
    assert estimator.set_params(epochs=3).get_params()["epochs"] == 3 and estimator.settings.epochs == 3
    with pytest.raises(SettingsError, match="epochs must be >= 1"):
        estimator.set_params(epochs=0)
    with pytest.raises(SettingsError):
        TextClassifier(hidden=0)
    for unsupported in (dict(ensemble=3), dict(char_ngrams=True)):  # refused, not trained as one network
        with pytest.raises(InputError, match="pass ensemble=1 and char_ngrams=False"):
            TextClassifier(**unsupported)
        with pytest.raises(InputError):
            estimator.set_params(**unsupported)


def test_cross_val_score_and_integer_labels_keep_their_type():
    texts, labels = _corpus()
    scores = cross_val_score(TextClassifier(**FAST), texts, labels, cv=2)
    assert scores.shape == (2,) and scores.min() > 0.9
    fitted = TextClassifier(**FAST).fit(texts, labels)
    predicted = fitted.predict(["bake the bread", "a goal for the team"])
    assert predicted.tolist() == [1, 0] and isinstance(predicted.tolist()[0], int)
    assert fitted.classes_.tolist() == [0, 1]


def test_save_and_load(tmp_path):
    texts, labels = _corpus()
    fitted = TextClassifier(**FAST).fit(texts, labels)
    path = fitted.save(tmp_path / "m.textclf.npz")
    loaded = TextClassifier.load(path)
    np.testing.assert_allclose(loaded.predict_proba(texts[:5]), fitted.predict_proba(texts[:5]), rtol=1e-6)
    assert loaded.predict(["recipe oven"]).tolist() == [1]
