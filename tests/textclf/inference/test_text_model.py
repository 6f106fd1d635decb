import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from pipelines.batches import make_batches
from textclf.estimator import TextClassifier
from textclf.inference.text_model import Model
from textclf.models.mlp import Params, init_params, logits, masked_loss
from textclf.inference.device_scores import DeviceScores


def _random_problem(n=37, features=50, classes=3, seed=0):
    matrix = sp.random(n, features, density=0.15, format="csr", random_state=seed, dtype=np.float32)
    labels = np.random.default_rng(seed).integers(0, classes, n).astype(np.int32)
    return matrix, labels


def test_sparse_gradient_matches_dense_math():
    """The gather/segment-sum model must give the same loss and gradients as a dense X @ W1."""
    matrix, labels = _random_problem()
    params = init_params(jax.random.PRNGKey(1), 50, 8, 3)
    b = make_batches(matrix, labels, batch_size=37)
    sparse_args = [jnp.asarray(a[0]) for a in (b.indices, b.values, b.rows, b.labels, b.mask)]

    def sparse_loss(p):
        idx, val, row, y, m = sparse_args
        return masked_loss(logits(p, idx, val, row, 37), y, m)[0]

    def dense_loss(p):
        h = jax.nn.sigmoid(jnp.asarray(matrix.toarray()) @ p.w1 + p.b1)
        return masked_loss(h @ p.w2 + p.b2, jnp.asarray(labels), jnp.ones(37))[0]

    with jax.default_matmul_precision("highest"):
        np.testing.assert_allclose(sparse_loss(params), dense_loss(params), rtol=1e-5)
        for gs, gd in zip(jax.grad(sparse_loss)(params), jax.grad(dense_loss)(params)):
            np.testing.assert_allclose(gs, gd, rtol=1e-4, atol=1e-6)


def test_host_prediction_matches_device_model():
    matrix, _ = _random_problem(n=1500)
    params = init_params(jax.random.PRNGKey(2), 50, 8, 3)
    with jax.default_matmul_precision("highest"):  # GPUs default to TF32 matmuls
        device_scores = DeviceScores(params)(matrix)
    numpy_params = [np.asarray(p) for p in params]
    host_scores = Model(None, Params(*numpy_params), labels=["a", "b", "c"], settings=None).scores(matrix)
    np.testing.assert_allclose(device_scores, host_scores, rtol=1e-4, atol=1e-4)


def test_fit_learns_and_is_deterministic(corpus_dir, fast_settings):
    from pipelines.corpus import read_corpus

    corpus = read_corpus(corpus_dir)
    settings = fast_settings.replace(epochs=15)  # given to the estimator, the epoch count is kept as given
    first = TextClassifier.from_settings(settings).fit(corpus.texts, corpus.labels)
    second = TextClassifier.from_settings(settings).fit(corpus.texts, corpus.labels)
    assert first.score(corpus.texts, corpus.labels) == 1.0
    assert first.history_[-1].loss < first.history_[0].loss
    np.testing.assert_array_equal(first.model_.params.w1, second.model_.params.w1)
    assert list(first.classes_) == ["cooking", "space", "sports"]
    proba = first.predict_proba(["the rocket reached orbit"])
    assert proba.shape == (1, 3) and abs(proba.sum() - 1) < 1e-6
    assert first.predict(["bake the bread in the oven"])[0] == "cooking"
