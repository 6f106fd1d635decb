"""TextClassifier as scikit-learn's tools expect an estimator to behave, training through `textclf train`'s
engine."""

from __future__ import annotations

import inspect
import json

import jax
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import cross_val_score
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.validation import check_is_fitted, validate_data

from textclf.errors import SettingsError
from textclf.estimator import TextClassifier, parameter_names
from textclf.settings import SEARCHED_FIELDS, Settings

FAST = dict(search="off", epochs=15, batch_size=8, hidden=16, optimizer="sgd", learning_rate=0.5, init_gain=4.0)


def _corpus(n=60):
    rng = np.random.default_rng(0)
    words = {0: ["goal", "match", "team", "league"], 1: ["oven", "bread", "recipe", "bake"]}
    labels = [i % 2 for i in range(n)]
    texts = [" ".join(rng.choice(words[label], 5)) for label in labels]
    return texts, labels


class NumbersAsText(TextClassifier):
    """scikit-learn's estimator checks feed numeric arrays, and with the tags of text input (string, no 2-D arrays)
    scikit-learn skips every one of them. So they run on this adapter, which writes each numeric row as a document
    ("c0v3 c1v-1 ...") and is otherwise the TextClassifier: its parameters, fit, fitted attributes, errors,
    classes, pickling and cloning are what the checks test. Not run: array API input (SCIPY_ARRAY_API unset) and
    pandas input (pandas not installed): scikit-learn reports those two as skipped."""

    def _documents(self, X, reset: bool) -> list[str]:
        X = validate_data(self, X, reset=reset)
        return [" ".join(f"c{j}v{int(round(v))}" for j, v in enumerate(row)) for row in X]

    def fit(self, X, y, sample_weight=None):
        documents = self._documents(X, reset=True)
        width = self.n_features_in_
        super().fit(documents, y, sample_weight=sample_weight)
        self.n_features_in_ = width  # the numeric columns, as the checks expect
        return self

    def predict_proba(self, X):
        check_is_fitted(self)
        return super().predict_proba(self._documents(X, reset=False))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array, tags.input_tags.string = True, False
        return tags


# Minibatch training: a weight scales a document's loss in its batch, which is not the same as repeating the document
# (other batches, another number of steps), as for scikit-learn's own SGD estimators.
EXPECTED = {"check_sample_weight_equivalence_on_dense_data": "a weight is not a repeat in minibatch training"}


# Batches of 8 and 100 minimum steps: the checks' small fits run a few epochs each, not hundreds of one step.
CHECKED = NumbersAsText(search="off", hidden=16, features=256, batch_size=8, min_steps=100)


@parametrize_with_checks([CHECKED], expected_failed_checks=lambda estimator: EXPECTED)
def test_scikit_learn_checks(estimator, check):
    check(estimator)


def test_the_estimator_declares_text_input():
    tags = TextClassifier().__sklearn_tags__()
    assert tags.input_tags.string and not tags.input_tags.two_d_array and tags.target_tags.required


def test_every_setting_is_an_explicit_parameter_and_nothing_else_is_set_in_init():
    signature = inspect.signature(TextClassifier.__init__)
    assert not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    params = TextClassifier().get_params()
    assert sorted(params) == sorted(parameter_names() + ["random_state"])
    assert all(params[name] is None for name in SEARCHED_FIELDS)  # left to the search
    estimator = TextClassifier(**FAST)
    assert vars(estimator) == {**TextClassifier().get_params(), **FAST}  # fitted state comes from fit alone


def test_an_unfitted_estimator_says_so():
    estimator = TextClassifier()
    assert not hasattr(estimator, "classes_")
    for call in (
        lambda: estimator.predict(["x"]),
        lambda: estimator.predict_proba(["x"]),
        lambda: estimator.save("m.npz"),
    ):
        with pytest.raises(NotFittedError):
            call()


def test_bad_input_is_refused_with_the_fix():
    texts, labels = _corpus()
    estimator = TextClassifier(**FAST)
    with pytest.raises(ValueError, match="X is one string: pass a list of documents"):
        estimator.fit("fry the onions", ["cooking"])
    with pytest.raises(ValueError, match="missing label"):
        estimator.fit(texts, labels[:-1] + [float("nan")])
    with pytest.raises(ValueError, match="has 60 documents but y has 59"):
        estimator.fit(texts, labels[:-1])
    with pytest.raises(ValueError, match="documents as strings"):
        estimator.fit([1.5] * 60, labels)
    with pytest.raises(SettingsError, match="epochs must be 1 to 10,000"):
        TextClassifier(**{**FAST, "epochs": 0}).fit(texts, labels)  # checked in fit, not in __init__
    fitted = estimator.fit(texts, labels)
    with pytest.raises(ValueError, match="X is one string"):
        fitted.predict("fry the onions")  # not 14 predictions, one a character
    for method in (fitted.predict, fitted.predict_proba):  # as `textclf predict` and the service refuse it
        with pytest.raises(ValueError, match=r"X\[1\] is empty: there is nothing to classify"):
            method(["goal match", "  ", "oven bread"])


def test_params_round_trip_and_clone():
    estimator = TextClassifier(**FAST, random_state=3)
    copy = clone(estimator)
    assert copy is not estimator and copy.get_params() == estimator.get_params()
    assert estimator.set_params(epochs=3).settings.epochs == 3 and estimator.settings.seed == 3
    assert estimator.settings.search_seed == 0 and TextClassifier(search_seed=5).settings.search_seed == 5
    assert estimator.settings.pinned == ("learning_rate", "epochs", "batch_size")  # given: kept by a search
    assert TextClassifier(stop_words="none").settings.stop_words is None
    assert TextClassifier.from_settings(Settings(search="off", epochs=4)).settings.epochs == 4


def test_cross_val_score_and_integer_labels_keep_their_type():
    texts, labels = _corpus()
    scores = cross_val_score(TextClassifier(**FAST), texts, labels, cv=2)
    assert scores.shape == (2,) and scores.min() > 0.9
    fitted = TextClassifier(**FAST).fit(texts, labels)
    predicted = fitted.predict(["bake the bread", "a goal for the team"])
    assert predicted.tolist() == [1, 0] and isinstance(predicted.tolist()[0], int)
    assert fitted.classes_.tolist() == [0, 1] and fitted.n_features_in_ == 1


def test_ensembles_and_the_character_view_train_as_the_cli_trains_them():
    texts, labels = _corpus()
    fitted = TextClassifier(**{**FAST, "ensemble": 3, "char_ngrams": True}).fit(texts, labels)
    assert fitted.model_.settings.ensemble == 3 and fitted.model_.settings.char_ngrams
    assert fitted.score(texts, labels) > 0.9


def test_save_and_load(tmp_path):
    texts, labels = _corpus()
    fitted = TextClassifier(**FAST).fit(texts, labels)
    path = fitted.save(tmp_path / "m.textclf.npz")
    loaded = TextClassifier.load(path)
    np.testing.assert_allclose(loaded.predict_proba(texts[:5]), fitted.predict_proba(texts[:5]), rtol=1e-6)
    assert loaded.predict(["recipe oven"]).tolist() == [1]
    assert loaded.get_params()["epochs"] == 15


def test_the_estimator_searches_and_trains_the_model_textclf_train_trains(tmp_path):
    """No arguments: the same search, plan and trainer as `textclf train TRAIN --test TEST` with the same seed, so
    the same chosen settings, weights and test predictions."""
    from typer.testing import CliRunner

    from textclf.frontends.cli import app
    from textclf.inference.artifacts import load_model

    from tests.textclf.training.search.test_halving import question_corpus

    texts, labels = question_corpus(300)
    test_texts, test_labels = question_corpus(90, seed=1)
    for name, (x, y) in (("train", (texts, labels)), ("test", (test_texts, test_labels))):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(json.dumps({"text": t, "label": lab}) + "\n" for t, lab in zip(x, y))
        )
    done = CliRunner().invoke(
        app,
        [
            "train",
            str(tmp_path / "train.jsonl"),
            "--test",
            str(tmp_path / "test.jsonl"),
            "--db",
            str(tmp_path / "runs.db"),
            "--out",
            str(tmp_path / "m.npz"),
            "--search-steps",
            "600",
            "--json",
        ],
    )
    assert done.exit_code == 0, done.output
    cli = json.loads(done.stdout)
    fitted = TextClassifier(search_steps=600).fit(texts, labels)
    assert (
        "skipped" not in cli["search"] and len(fitted.search_["leaderboard"]) == len(cli["search"]["leaderboard"]) > 1
    )
    if jax.default_backend() != "cpu":
        return  # a GPU's scatter-adds sum in no fixed order: the same weights bit for bit only on a CPU
    assert cli["search"]["chosen"] == fitted.search_["chosen"]
    assert fitted.model_.settings == load_model(tmp_path / "m.npz").settings
    for a, b in zip(fitted.model_.params, load_model(tmp_path / "m.npz").params):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert fitted.score(test_texts, test_labels) == cli["eval_accuracy"]


def test_the_estimators_defaults_are_the_settings_defaults():
    """An estimator made with no arguments trains with Settings() (nothing pinned), and each default it spells out
    is the Settings field's own: a default changed in settings.py and not here (or the reverse) fails."""
    import inspect

    assert TextClassifier().settings == Settings()
    defaults = Settings()
    for name, parameter in inspect.signature(TextClassifier).parameters.items():
        field = "seed" if name == "random_state" else name
        if parameter.default is not None:
            assert parameter.default == getattr(defaults, field), name


def test_sample_weight_of_ones_is_no_weight_and_weights_decide_a_contested_document():
    """Weights of 1 train the very model no weights train; a text labelled both ways is predicted as its heavier
    copy is labelled, whichever that is."""
    texts, labels = _corpus()
    plain = TextClassifier(**FAST, random_state=0).fit(texts, labels)
    ones = TextClassifier(**FAST, random_state=0).fit(texts, labels, sample_weight=np.ones(len(texts)))
    # bit for bit on a CPU; a GPU's scatter-adds sum in no fixed order (two fits of one corpus differ there too)
    tolerance = 0 if jax.default_backend() == "cpu" else 1e-4
    np.testing.assert_allclose(plain.model_.params.w1, ones.model_.params.w1, rtol=0, atol=tolerance)
    contested = "zebra quagga okapi"
    texts, labels = texts + [contested] * 6, labels + [0, 1] * 3
    for heavy in (0, 1):
        weights = [1.0] * 60 + [8.0 if label == heavy else 0.5 for label in labels[60:]]
        fitted = TextClassifier(**FAST, random_state=0).fit(texts, labels, sample_weight=weights)
        assert fitted.predict([contested])[0] == heavy


@pytest.mark.parametrize(
    "weights, message",
    [
        ([1.0] * 59, r"sample_weight has shape \(59,\): give one weight a document \(60,\)"),
        ([1.0] * 59 + [-1.0], "a negative weight"),
        ([1.0] * 59 + [float("nan")], "NaN or infinity"),
        ([0.0] * 60, "zero for every document"),
        (["heavy"] * 60, "sample_weight must be numbers"),
    ],
)
def test_bad_sample_weights_are_refused_with_the_fix(weights, message):
    texts, labels = _corpus()
    with pytest.raises(ValueError, match=message):
        TextClassifier(**FAST).fit(texts, labels, sample_weight=weights)


def test_sample_weights_reach_the_search_with_its_documents(monkeypatch):
    """The search's corpus holds the searched documents' weights (its sample's), at a mean of 1."""
    from textclf.training.search import halving, prepare
    from tests.textclf.training.search.test_halving import question_corpus

    seen = []

    class Seen(Exception):
        pass

    def searched_corpus(search, texts, labels, weights=None):
        seen.append((list(labels), weights))
        raise Seen

    monkeypatch.setattr(prepare, "searched_corpus", searched_corpus)
    monkeypatch.setattr(halving, "searched_corpus", searched_corpus)
    texts, labels = question_corpus(300)
    weights = np.where(np.array(labels) == labels[0], 3.0, 1.0)
    with pytest.raises(Seen):
        TextClassifier(search="auto", epochs=3).fit(texts, labels, sample_weight=weights)
    searched_labels, searched_weights = seen[0]
    assert len(searched_weights) == len(searched_labels) and searched_weights.mean() == pytest.approx(1.0)
    heavy = np.array(searched_labels) == labels[0]
    np.testing.assert_allclose(searched_weights[heavy], 3 * searched_weights[~heavy][0], rtol=1e-6)
    np.testing.assert_allclose(searched_weights[~heavy], searched_weights[~heavy][0], rtol=1e-6)
