"""A saved model's network scored on the device (textclf/inference/device_scores.py) gives the host's scores, and a
service that scores there answers a label-set model with its own (sigmoid) probabilities."""

import jax
import numpy as np
import scipy.sparse as sp

from pipelines.vectorize import fit_vectorizer
from textclf.inference.device_scores import SCORE_BATCH, DeviceScores
from textclf.inference.text_model import Model
from textclf.models.weights import Params, host_scores
from textclf.settings import Settings


def _params(features: int, hidden: int, classes: int, seed: int = 0) -> Params:
    rng = np.random.default_rng(seed)
    return Params(
        rng.normal(0, 0.3, (features, hidden)).astype(np.float32),
        np.zeros(hidden, np.float32),
        rng.normal(0, 0.5, (hidden, classes)).astype(np.float32),
        rng.normal(0, 0.1, classes).astype(np.float32),
    )


def test_device_scores_are_the_hosts_across_batches():
    matrix = sp.random(SCORE_BATCH + 37, 60, density=0.1, format="csr", dtype=np.float32, random_state=1)
    params = _params(60, 8, 3)
    with jax.default_matmul_precision("highest"):  # a GPU's default is TF32
        got = DeviceScores(params)(matrix)
    assert got.shape == (SCORE_BATCH + 37, 3)
    np.testing.assert_allclose(got, host_scores(params, matrix), rtol=1e-4, atol=1e-4)


def test_a_label_set_model_scored_on_the_device_answers_its_own_probabilities():
    from textclf.frontends.service.serving import Scorer  # (the service's scorer, on the device)

    texts = ["rocket orbit launch", "flour sugar oven", "rocket oven mix", "goal match team"] * 5
    vectorizer, _ = fit_vectorizer(texts, ["a", "b", "a", "b"] * 5, Settings(stop_words=None))
    model = Model(
        vectorizer,
        _params(vectorizer.n_features, 8, 3),
        ["x", "y", "z"],
        Settings(),
        thresholds=np.array([0.5, 0.5, 0.5], np.float32),
    )
    with jax.default_matmul_precision("highest"):
        on_device = Scorer(model, "device")(texts[:4])
    np.testing.assert_allclose(on_device, model.predict_proba(texts[:4]), rtol=1e-4, atol=1e-5)
    assert not np.allclose(on_device.sum(axis=1), 1.0)  # each label's own probability, not a softmax
