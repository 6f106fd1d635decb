"""The linear family: K linear models side by side as the stacked step trains them, merged and joined as one model,
the search's family trial and its rule, and a linear model through the plan, the model file and predict."""

from __future__ import annotations

import json
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

from textclf.models.stacked import init_stacked, joined_views, merged, stacked_logits, stacked_loss
from textclf.models.weights import Params, host_scores, is_linear
from textclf.settings import Settings
from pipelines.batches import batch_shape
from textclf.training.search.rounds import fit_candidates, round_data
from textclf.training.steps.optimizers import adam
from textclf.training.search import search_settings
from textclf.training.search.rules import SearchRules
from textclf.training.steps.stacked import stacked_epoch

from tests.textclf.training.search.test_halving import _random_batch, question_corpus

RULES = SearchRules()
TRIED = RULES.replace(family_min_validation=0)  # the trial on these few hundred documents


def _softmax_regression_loss(w, b, indices, values, rows, labels, mask):
    """One linear model's mean cross-entropy, written out: scores = x W + b."""
    x = jnp.zeros((labels.shape[0], w.shape[0])).at[rows, indices].add(values)
    log_probs = jax.nn.log_softmax(jnp.matmul(x, w, precision="highest") + b)
    nll = -jnp.take_along_axis(log_probs, labels[:, None], axis=1)[:, 0]
    return jnp.sum(nll * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def test_linear_models_start_at_zero_and_score_features_times_weights():
    stacked = init_stacked(jax.random.PRNGKey(0), 50, 0, 3, 4)
    assert stacked.w1.shape == (50, 12) and stacked.w2.shape == (4, 0, 3) and is_linear(stacked)
    assert not any(np.asarray(p).any() for p in stacked)
    rng = np.random.default_rng(0)
    stacked = stacked._replace(
        w1=jnp.asarray(rng.normal(size=(50, 12)), jnp.float32), b1=jnp.asarray(rng.normal(size=12), jnp.float32)
    )
    indices, values, rows, labels, mask = _random_batch(rng)
    x = np.zeros((labels.shape[0], 50), np.float32)
    np.add.at(x, (np.asarray(rows), np.asarray(indices)), np.asarray(values))
    scores = stacked_logits(stacked, indices, values, rows, labels.shape[0])  # (B, K, C)
    for k in range(4):
        columns = slice(3 * k, 3 * k + 3)
        want = x @ np.asarray(stacked.w1[:, columns]) + np.asarray(stacked.b1[columns])
        np.testing.assert_allclose(scores[:, k], want, rtol=1e-5, atol=1e-5)


def test_each_linear_model_gets_the_gradient_of_its_own_softmax_regression():
    rng = np.random.default_rng(1)
    stacked = init_stacked(jax.random.PRNGKey(0), 50, 0, 3, 3)
    stacked = stacked._replace(w1=jnp.asarray(rng.normal(size=(50, 9)), jnp.float32))
    indices, values, rows, labels, mask = _random_batch(rng)
    mask = mask.at[-1].set(0.0)
    grads = jax.grad(stacked_loss)(stacked, indices, values, rows, labels, mask)
    for k in range(3):
        columns = slice(3 * k, 3 * k + 3)
        dw, db = jax.grad(_softmax_regression_loss, argnums=(0, 1))(
            stacked.w1[:, columns], stacked.b1[columns], indices, values, rows, labels, mask
        )
        np.testing.assert_allclose(grads.w1[:, columns], dw, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(grads.b1[columns], db, rtol=1e-4, atol=1e-6)
        assert not np.asarray(grads.b2).any()  # b2 stays zero


def _squared_hinge_loss(w, b, indices, values, rows, labels, mask):
    """One linear model's mean one-vs-rest squared hinge, written out as LinearSVC's loss: scores = x W + b, each
    class's target +1 for the document's class (label sets: its labels) and -1 for the others."""
    x = jnp.zeros((labels.shape[0], w.shape[0])).at[rows, indices].add(values)
    scores = jnp.matmul(x, w, precision="highest") + b
    targets = 2.0 * (labels if labels.ndim == 2 else jax.nn.one_hot(labels, w.shape[1])) - 1.0
    per_row = jnp.sum(jnp.maximum(0.0, 1.0 - targets * scores) ** 2, axis=1)
    return jnp.sum(per_row * mask) / jnp.maximum(jnp.sum(mask), 1.0)


@pytest.mark.parametrize("label_sets", [False, True], ids=["labels", "label sets"])
def test_each_linear_model_gets_the_gradient_of_its_own_squared_hinge(label_sets):
    rng = np.random.default_rng(4)
    stacked = init_stacked(jax.random.PRNGKey(0), 50, 0, 3, 3)
    stacked = stacked._replace(
        w1=jnp.asarray(rng.normal(size=(50, 9)) * 0.3, jnp.float32),
        b1=jnp.asarray(rng.normal(size=9) * 0.3, jnp.float32),
    )
    indices, values, rows, labels, mask = _random_batch(rng)
    if label_sets:
        labels = jnp.asarray(rng.random((labels.shape[0], 3)) < 0.4, jnp.float32)
    mask = mask.at[-1].set(0.0)
    loss, grads = jax.value_and_grad(stacked_loss)(stacked, indices, values, rows, labels, mask, "squared_hinge")
    each = []
    for k in range(3):
        columns = slice(3 * k, 3 * k + 3)
        value, (dw, db) = jax.value_and_grad(_squared_hinge_loss, argnums=(0, 1))(
            stacked.w1[:, columns], stacked.b1[columns], indices, values, rows, labels, mask
        )
        each.append(value)
        np.testing.assert_allclose(grads.w1[:, columns], dw, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(grads.b1[columns], db, rtol=1e-4, atol=1e-6)
    assert float(loss) == pytest.approx(float(sum(each)), rel=1e-5)  # the sum of each model's own loss


def test_the_plan_carries_the_linear_loss_to_the_linear_models_only():
    from textclf.errors import SettingsError
    from textclf.training.plan import plan_training

    plan = plan_training(Settings(family="linear", ensemble=1), None, 5000, (8000,), "xla")
    assert plan.views[0].loss == "log" and "(log loss)" in plan.lines()[3]
    hinge = Settings(family="linear", ensemble=1, linear_loss="squared_hinge")
    assert plan_training(hinge, None, 5000, (8000,), "xla").views[0].loss == "squared_hinge"
    sets = plan_training(hinge.replace(multi_label=True), None, 5000, (8000,), "xla")
    assert sets.views[0].loss == "squared_hinge"  # typed: kept for label sets too (one-vs-rest, each label's sign)
    beside = plan_training(Settings(family="network+linear", linear_loss="squared_hinge"), None, 5000, (8000,), "xla")
    assert beside.views[0].loss == "log" and beside.linear.loss == "squared_hinge"  # the network's stays log
    assert "squared hinge loss), its scores added" in "\n".join(beside.lines())
    assert type(plan).from_dict(plan.to_dict()) == plan
    with pytest.raises(SettingsError, match="linear_loss must be one of log, squared_hinge"):
        Settings(linear_loss="hinge")


def test_a_linear_epoch_is_k_adam_runs_with_their_own_decays():
    rng = np.random.default_rng(2)
    stacked = init_stacked(jax.random.PRNGKey(0), 50, 0, 3, 2)
    batches = [_random_batch(rng) for _ in range(3)]
    arrays = [jnp.stack([b[i] for b in batches]) for i in range(5)]
    rates, decays = [0.05, 0.05], [0.0, 0.1]
    # float32 products on a GPU too, for the epoch and the reference alike (a GPU's default rounds them to TF32:
    # where a weight's gradient is near zero, the rounding decides the sign of Adam's normalised step); the
    # programs compiled earlier at the default precision are dropped first
    with jax.default_matmul_precision("highest"):
        jax.clear_caches()
        trained, _, _ = stacked_epoch(stacked, adam().init(stacked), jnp.asarray(rates), jnp.asarray(decays), *arrays)
        for k in range(2):
            w, b = jnp.zeros((50, 3)), jnp.zeros(3)
            params, state = (w, b), adam().init((w, b))
            for indices, values, rows, labels, mask in batches:
                grads = jax.grad(lambda p: _softmax_regression_loss(*p, indices, values, rows, labels, mask))(params)
                params, state = adam(decays[k]).update(params, state, grads, rates[k])
            np.testing.assert_allclose(trained.w1[:, 3 * k : 3 * k + 3], params[0], rtol=2e-3, atol=2e-4)
    assert not np.allclose(trained.w1[:, :3], trained.w1[:, 3:])  # the decay made a difference


def test_merged_and_joined_linear_models_score_the_mean_of_theirs():
    rng = np.random.default_rng(3)
    stacked = init_stacked(jax.random.PRNGKey(0), 20, 0, 3, 4)
    stacked = stacked._replace(
        w1=jnp.asarray(rng.normal(size=(20, 12)), jnp.float32), b1=jnp.asarray(rng.normal(size=12), jnp.float32)
    )
    x = sp.random(7, 20, density=0.3, format="csr", random_state=0, dtype=np.float32)
    one = merged(stacked)
    assert one.w1.shape == (20, 3) and one.w2.shape == (0, 3) and is_linear(one)
    each = [
        host_scores(
            Params(
                np.asarray(stacked.w1[:, 3 * k : 3 * k + 3]),
                np.asarray(stacked.b1[3 * k : 3 * k + 3]),
                np.zeros((0, 3), np.float32),
                np.asarray(stacked.b2[k]),
            ),
            x,
        )
        for k in range(4)
    ]
    np.testing.assert_allclose(host_scores(one, x), np.mean(each, axis=0), rtol=1e-5, atol=1e-5)
    words, chars = merged(stacked), merged(stacked._replace(w1=stacked.w1[::-1]))
    x_chars = sp.random(7, 20, density=0.3, format="csr", random_state=1, dtype=np.float32)
    both = joined_views([words, chars])
    np.testing.assert_allclose(
        host_scores(both, sp.hstack([x, x_chars]).tocsr()),
        (host_scores(words, x) + host_scores(chars, x_chars)) / 2,
        rtol=1e-5,
        atol=1e-5,
    )


def test_fit_candidates_trains_linear_models_side_by_side():
    texts, labels = question_corpus(300)
    from sklearn.feature_extraction.text import TfidfVectorizer

    x = TfidfVectorizer().fit_transform(texts).astype(np.float32).tocsr()
    y = np.searchsorted(sorted(set(labels)), labels).astype(np.int32)
    data = round_data(x[:200], y[:200], x[200:], y[200:], 32, 0, batch_shape([x[:200]], 32), batch_shape([x[200:]], 32))
    for loss in ("log", "squared_hinge"):
        curves = fit_candidates(data, 3, [0.1, 0.1], [0.0, 1.0], 20, 0, 0, loss=loss)
        assert curves.shape == (20, 2) and curves[-1, 0] > 0.9  # the stop word decides: a linear model finds it
        assert curves[-1, 1] < curves[-1, 0]  # a decay of 1.0 holds the weights near zero


def test_the_family_trial_is_a_rule_of_data(pool):
    texts, labels = question_corpus(300)
    draw = random.Random(0)  # a quarter of the labels drawn at random: the network and the linear model then differ
    labels = [draw.choice(sorted(set(labels))) if draw.random() < 0.25 else label for label in labels]
    settings = Settings(epochs=3, search_budget=300)
    rules = TRIED.replace(cpu_linear_max_epochs=8)

    def search(family_errors: float, mixed_errors: float):
        found = search_settings(
            texts,
            labels,
            settings,
            pool,
            "cpu",
            rules=rules.replace(family_errors=family_errors, mixed_errors=mixed_errors),
        )
        return found.settings, found.summary.family.to_record()

    chosen, never = search(1e9, 1e9)
    assert chosen.family == "network" and never["chosen"] == "network"
    assert never["pairs"] == len(RULES.linear_pairs("cpu")) and never["margin"] > 1 and never["linear_loss"] == "log"
    assert never["mixed_score"] == pytest.approx(never["network_score"] + never["mixed_by"], abs=1e-5)
    assert never["mixed_standard_error"] > 0
    chosen, trial = search(-1e9, 1e9)
    assert chosen.family == "linear" and trial["chosen"] == "linear" and chosen.ensemble == 1
    assert not chosen.char_ngrams  # the character network is the network family's
    assert (chosen.learning_rate, chosen.weight_decay, chosen.epochs) == (
        trial["linear_learning_rate"],
        trial["linear_weight_decay"],
        trial["linear_epochs"],
    )
    assert (chosen.learning_rate, chosen.weight_decay) in RULES.linear_pairs("cpu")
    assert 1 <= chosen.epochs <= 8
    assert trial["linear_score"] > 0.75
    chosen, trial = search(1e9, -1e9)  # the linear model beside the network
    assert chosen.family == "network+linear" and trial["chosen"] == "network+linear"
    assert trial["mixed_by"] == never["mixed_by"]  # the same trial, another rule
    assert (chosen.linear_learning_rate, chosen.linear_weight_decay, chosen.linear_epochs) == (
        trial["linear_learning_rate"],
        trial["linear_weight_decay"],
        trial["linear_epochs"],
    )
    assert chosen.units == chosen.hidden  # the network keeps its hidden layer


def test_a_typed_family_is_kept(pool):
    texts, labels = question_corpus(300)
    network = search_settings(texts, labels, Settings(epochs=3, search_steps=1500, pinned=("family",)), pool, "cpu")
    assert network.settings.family == "network"
    assert network.summary.family.to_record() == {"chosen": "network", "linear_not_tried": "family set explicitly"}
    ensemble = search_settings(
        texts,
        labels,
        Settings(ensemble=3, epochs=3, search_steps=1500, pinned=("ensemble",)),
        pool,
        "cpu",
        rules=TRIED.replace(family_errors=-1e9),
    )
    assert ensemble.settings.family == "network" and ensemble.settings.ensemble == 3  # a typed value is kept
    assert ensemble.summary.family.linear_not_tried == "an ensemble set explicitly"
    # (a budget of one round: a typed family is tried whatever the budget left)
    linear = search_settings(
        texts,
        labels,
        Settings(family="linear", epochs=3, search_steps=1500, pinned=("family",)),
        pool,
        "cpu",
        rules=RULES.replace(family_errors=1e9, cpu_linear_max_epochs=4),
    )
    assert linear.summary.family.folds >= 1  # tried, though under family_min_validation: it was typed
    assert linear.settings.family == "linear" and linear.summary.family.chosen == "linear"


def test_a_linear_family_plan_trains_one_model_side_by_side_in_xla():
    from textclf.training.plan import plan_training

    plan = plan_training(Settings(family="linear", ensemble=1), None, 5000, (8000,), "pallas")
    assert (plan.family, plan.networks, plan.arrangement, plan.backend) == ("linear", 1, "side_by_side", "xla")
    assert plan.lines()[0].startswith("family               linear")
    big = plan_training(Settings(family="linear"), None, 400_000, (32754,), "xla")
    assert big.held_out_documents == 20_000 and big.rate_choice == "none"
    from textclf.errors import SettingsError

    with pytest.raises(SettingsError, match="ensemble 5: the linear family trains one model; drop --ensemble"):
        plan_training(Settings(family="linear", ensemble=5), None, 5000, (8000,), "xla")


@pytest.mark.parametrize("multi_label", [False, True], ids=["labels", "label sets"])
def test_a_linear_model_trains_saves_loads_and_predicts(tmp_path, multi_label):
    from textclf.inference.artifacts import load_model, read_header
    from textclf.runs.run import train

    texts, labels = question_corpus(300)
    corpus = tmp_path / "train.jsonl"
    rows = [
        {"text": t, "labels": [l, "PLACE"] if l == "LOC" else [l]} if multi_label else {"text": t, "label": l}
        for t, l in zip(texts, labels)
    ]
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows))
    settings = Settings(
        search="off", family="linear", stop_words=None, learning_rate=0.03, epochs=8, pinned=("family",)
    )
    result = train(corpus, settings, db_path=tmp_path / "runs.db", model_path=tmp_path / "m.npz")
    model = load_model(tmp_path / "m.npz")
    assert read_header(tmp_path / "m.npz")["format_version"] == 6 and model.settings.family == "linear"
    assert model.params.w1.shape == (model.vectorizer.n_features, len(model.labels))
    assert model.params.w2.shape == (0, len(model.labels))
    assert result.eval_accuracy > 0.8
    if multi_label:
        assert model.thresholds is not None
        assert [set(labels) for labels in model.predict(["who w1 w2 w3", "where w4 w5"])] == [{"HUM"}, {"LOC", "PLACE"}]
    else:
        assert model.predict(["who w1 w2 w3", "where w4 w5"]) == ["HUM", "LOC"]
        np.testing.assert_allclose(model.predict_proba(texts[:5]), result.model.predict_proba(texts[:5]), rtol=1e-6)
        # the service's scoring on the device (--score-on device) gives the host's scores
        from textclf.inference.device_scores import DeviceScores

        matrix = model.vectorizer.transform(texts[:5])
        np.testing.assert_allclose(DeviceScores(model.params)(matrix), model.scores(matrix), rtol=1e-4, atol=1e-5)


def test_a_linear_model_file_with_a_hidden_layer_is_refused(tmp_path):
    from textclf.errors import ArtifactError
    from textclf.inference.artifacts import load_model, save_model
    from textclf.runs.run import train

    texts, labels = question_corpus(200)
    corpus = tmp_path / "train.jsonl"
    corpus.write_text("".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in zip(texts, labels)))
    result = train(
        corpus, Settings(search="off", hidden=8, epochs=2), db_path=tmp_path / "runs.db", model_path=tmp_path / "m.npz"
    )
    network = result.model
    network.settings = network.settings.replace(family="linear")  # the header says linear, the weights do not
    save_model(network, tmp_path / "bad.npz")
    with pytest.raises(ArtifactError, match="inconsistent"):
        load_model(tmp_path / "bad.npz")


def test_a_network_with_a_linear_model_beside_it_scores_the_sum_of_theirs():
    from textclf.models.stacked import with_linear
    from textclf.inference.device_scores import DeviceScores

    rng = np.random.default_rng(4)
    words, chars, hidden, classes = 30, 20, 6, 3
    network = joined_views(
        [
            Params(
                *(
                    rng.normal(size=shape).astype(np.float32)
                    for shape in ((rows, hidden), (hidden,), (hidden, classes), (classes,))
                )
            )
            for rows in (words, chars)
        ]
    )  # a word and a character network
    linear = Params(
        rng.normal(size=(words, classes)).astype(np.float32),
        rng.normal(size=classes).astype(np.float32),
        np.zeros((0, classes), np.float32),
        np.zeros(classes, np.float32),
    )
    both = with_linear(network, linear)
    assert both.w1.shape == (words + chars, 2 * hidden + classes) and both.w2.shape == (2 * hidden, classes)
    x = sp.random(9, words + chars, density=0.3, format="csr", random_state=2, dtype=np.float32)
    want = host_scores(network, x) + host_scores(linear, x[:, :words])
    np.testing.assert_allclose(host_scores(both, x), want, rtol=1e-5, atol=1e-5)
    # the service's scoring on the device gives the host's
    with jax.default_matmul_precision("highest"):  # GPUs default to TF32 matmuls
        np.testing.assert_allclose(DeviceScores(both)(x), want, rtol=1e-4, atol=1e-4)


def test_a_network_with_a_linear_model_trains_saves_loads_and_predicts(tmp_path):
    from textclf.errors import ArtifactError, SettingsError
    from textclf.inference.artifacts import load_model, read_header, save_model
    from textclf.runs.run import train
    from textclf.inference.device_scores import DeviceScores
    from textclf.training.plan import plan_training

    texts, labels = question_corpus(300)
    corpus = tmp_path / "train.jsonl"
    corpus.write_text("".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in zip(texts, labels)))
    settings = Settings(
        search="off",
        family="network+linear",
        stop_words=None,
        hidden=16,
        learning_rate=0.01,
        epochs=4,
        min_steps=0,
        linear_learning_rate=0.03,
        linear_epochs=6,
        pinned=("family",),
    )
    plan = plan_training(settings, None, 300, (500,), "xla")
    assert plan.linear is not None and (plan.linear.learning_rate, plan.linear.epochs) == (0.03, 6)
    assert any(line.startswith("linear model         on the words") for line in plan.lines())
    result = train(corpus, settings, db_path=tmp_path / "runs.db", model_path=tmp_path / "m.npz")
    assert len(result.history) == 4 + 6  # the network's epochs, then the linear model's
    model = load_model(tmp_path / "m.npz")
    assert read_header(tmp_path / "m.npz")["format_version"] == 7 and model.settings.family == "network+linear"
    assert model.params.w1.shape == (model.vectorizer.n_features, 16 + len(model.labels))
    assert model.predict(["who w1 w2 w3", "where w4 w5"]) == ["HUM", "LOC"] and result.eval_accuracy > 0.8
    matrix = model.vectorizer.transform(texts[:5])
    with jax.default_matmul_precision("highest"):  # GPUs default to TF32 matmuls
        np.testing.assert_allclose(DeviceScores(model.params)(matrix), model.scores(matrix), rtol=1e-4, atol=1e-4)
    model.settings = model.settings.replace(family="network")  # the header says a network alone: it is not
    save_model(model, tmp_path / "bad.npz")
    with pytest.raises(ArtifactError, match="inconsistent"):
        load_model(tmp_path / "bad.npz")
    with pytest.raises(SettingsError, match="family network\\+linear is for one label a document"):
        plan_training(settings.replace(multi_label=True), None, 300, (500,), "xla")
