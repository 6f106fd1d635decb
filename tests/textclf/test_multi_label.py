"""Multi-label corpora end to end: label sets read, trained with sigmoid outputs and a held-out threshold, predicted
and evaluated as sets, by the CLI and the estimator."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from textclf.frontends.cli import app

LABELS = ("grain", "trade", "crude", "money")
WORDS = {label: [f"{label}{i}" for i in range(6)] for label in LABELS}


def label_sets(n: int, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """Documents of 0-3 labels, each label saying itself through its own words, with shared noise words."""
    rng = np.random.default_rng(seed)
    texts, sets = [], []
    for _ in range(n):
        chosen = sorted(rng.choice(LABELS, rng.choice([0, 1, 1, 2, 2, 3]), replace=False).tolist())
        words = [w for label in chosen for w in rng.choice(WORDS[label], 3)]
        words += rng.choice([f"noise{i}" for i in range(30)], 6).tolist()
        rng.shuffle(words)
        texts.append(" ".join(words))
        sets.append(chosen)
    return texts, sets


def write_jsonl(path, texts, sets) -> None:
    path.write_text("".join(json.dumps({"text": t, "labels": s}) + "\n" for t, s in zip(texts, sets)))


FAST = ["--search", "off", "--hidden", "16", "--lr", "0.01"]


@pytest.fixture
def corpora(tmp_path):
    train, test = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    write_jsonl(train, *label_sets(500, 0))
    write_jsonl(test, *label_sets(120, 1))
    return train, test


def test_a_corpus_of_label_sets_trains_predicts_and_evaluates_as_sets(tmp_path, corpora):
    train, test = corpora
    runner = CliRunner()
    model = tmp_path / "m.npz"
    db = str(tmp_path / "runs.db")
    result = runner.invoke(app, ["train", str(train), "--test", str(test), "--out", str(model), "--db", db, *FAST])
    assert result.exit_code == 0, result.output
    assert "test micro-f1 0.9" in result.output or "test micro-f1 1.0" in result.output
    evaluated = runner.invoke(app, ["eval", str(test), "--model", str(model), "--json"])
    assert evaluated.exit_code == 0, evaluated.output
    scores = json.loads(evaluated.output)
    assert scores["multi_label"] and scores["micro_f1"] > 0.9 and 0 <= scores["hamming_loss"] < 0.1
    assert set(scores["per_label"]) == set(LABELS)
    doc = tmp_path / "doc.txt"
    doc.write_text("grain1 grain2 trade3 trade4 noise1")
    predicted = runner.invoke(app, ["predict", str(doc), "--model", str(model), "--json"])
    assert sorted(json.loads(predicted.output)["labels"]) == ["grain", "trade"]
    every = runner.invoke(app, ["predict", str(doc), "--model", str(model), "--format", "fasttext", "-k", "-1"])
    words = every.output.split()  # __label__X p __label__Y q: each predicted label with its probability
    assert sorted(words[::2]) == ["__label__grain", "__label__trade"] and all(0.5 < float(p) <= 1 for p in words[1::2])
    one = runner.invoke(app, ["predict", str(doc), "--model", str(model), "--format", "fasttext"])  # fastText's k=1
    assert one.output.split() == words[:2]
    labels = runner.invoke(app, ["predict", str(doc), "--model", str(model), "--format", "fasttext-labels", "-k", "2"])
    assert labels.output.split() == words[::2]
    # --threshold overrides the model's: at 0.999999 hardly anything is sure enough
    strict = runner.invoke(app, ["predict", str(doc), "--model", str(model), "--json", "-t", "1.0"])
    assert json.loads(strict.output)["labels"] == []


def test_the_model_file_keeps_the_thresholds_and_runs_record_the_metric(tmp_path, corpora):
    from db import open_db
    from textclf.inference.artifacts import load_model, read_header
    from textclf.runs.run import train as train_run
    from textclf.settings import Settings

    train, test = corpora
    result = train_run(
        train,
        Settings(search="off", hidden=16, learning_rate=0.01),
        test_path=test,
        db_path=tmp_path / "runs.db",
        model_path=tmp_path / "m.npz",
    )
    model = load_model(tmp_path / "m.npz")
    assert model.multi_label and model.thresholds.shape == (len(LABELS),)
    assert read_header(tmp_path / "m.npz")["format_version"] == 5
    assert model.labels == sorted(LABELS) and model.settings.multi_label is True
    row = next(open_db(tmp_path / "runs.db")["runs"].rows_where("id = ?", [result.run_id]))
    assert row["eval_metric"] == "micro-f1" and row["eval_score"] > 0.9
    assert json.loads(row["thresholds"])["metric"] == "micro-f1"
    assert json.loads(row["plan"])["multi_label"] is True


def test_fasttext_lines_of_several_labels_train_and_single_label_is_refused_by_name(tmp_path):
    texts, sets = label_sets(300, 2)
    path = tmp_path / "train.txt"
    path.write_text(
        "".join(" ".join(f"__label__{label}" for label in s) + " " + t + "\n" for t, s in zip(texts, sets) if s)
    )
    runner = CliRunner()
    refused = runner.invoke(app, ["train", str(path), "--no-multi-label", "--db", str(tmp_path / "r.db"), *FAST])
    assert refused.exit_code == 1
    assert "has documents with other than one label" in refused.output and "--no-multi-label" in refused.output
    trained = runner.invoke(
        app, ["train", str(path), "--db", str(tmp_path / "r.db"), "--out", str(tmp_path / "m.npz"), *FAST]
    )
    assert trained.exit_code == 0, trained.output
    assert "validation micro-f1" in trained.output
    planned = runner.invoke(app, ["train", str(path), "--plan-only", "--db", str(tmp_path / "r.db"), *FAST])
    assert "sigmoid (multi-label)" in planned.output


def test_the_estimator_takes_label_lists_or_an_indicator_matrix_and_answers_in_kind(corpora):
    from sklearn.preprocessing import MultiLabelBinarizer

    from textclf.estimator import TextClassifier

    texts, sets = label_sets(500, 0)
    test_texts, test_sets = label_sets(80, 1)
    estimator = TextClassifier(search="off", hidden=16, learning_rate=0.01).fit(texts, sets)
    predicted = estimator.predict(test_texts)
    assert list(estimator.classes_) == sorted(LABELS)
    assert all(isinstance(p, tuple) for p in predicted)
    binarizer = MultiLabelBinarizer(classes=sorted(LABELS))
    truth = binarizer.fit_transform(test_sets)
    from sklearn.metrics import f1_score

    assert f1_score(truth, binarizer.transform(predicted), average="micro") > 0.9
    matrix = TextClassifier(search="off", hidden=16, learning_rate=0.01).fit(texts, binarizer.transform(sets))
    as_matrix = matrix.predict(test_texts)
    assert as_matrix.shape == (80, len(LABELS)) and set(np.unique(as_matrix)) <= {0, 1}
    assert list(matrix.classes_) == list(range(len(LABELS)))
    assert f1_score(truth, as_matrix, average="micro") > 0.9
    # score: subset accuracy in either form, as scikit-learn scores a multi-label classifier
    from sklearn.metrics import accuracy_score

    subset = accuracy_score(truth, binarizer.transform(predicted))
    assert estimator.score(test_texts, test_sets) == pytest.approx(subset) and subset > 0.5
    assert matrix.score(test_texts, truth) == pytest.approx(accuracy_score(truth, as_matrix))
    assert estimator.score(test_texts[:1], [("a label it never saw",)]) == 0.0
    assert TextClassifier().__sklearn_tags__().classifier_tags.multi_label
    with pytest.raises(ValueError, match="column 1 of y is 0 for every document"):
        TextClassifier(search="off").fit(texts[:3], np.array([[1, 0], [1, 0], [0, 0]]))


def test_the_daemon_trains_label_sets_and_the_service_answers_them_in_both_protocols(corpora, db_path):
    from fastapi.testclient import TestClient

    from db import jobs, open_db
    from textclf.frontends.daemon import DaemonOptions, run_daemon
    from textclf.frontends.service import ServiceOptions, create_app
    from textclf.settings import Settings

    train, _ = corpora
    jobs.submit(open_db(db_path), str(train), Settings(search="off", hidden=16, learning_rate=0.01).to_dict(), "tags")
    run_daemon(DaemonOptions(db_path=db_path, once=True))
    texts = ["grain1 grain2 trade3 trade4 noise1", "noise2 noise3"]
    with TestClient(create_app(ServiceOptions(db_path=db_path))) as client:
        predictions = client.post("/v1/models/tags:predict", json={"instances": texts}).json()["predictions"]
        assert sorted(predictions[0]["labels"]) == ["grain", "trade"] and predictions[1]["labels"] == []
        assert predictions[1]["label"] is None
        request = {"inputs": [{"name": "text", "shape": [2], "datatype": "BYTES", "data": texts}]}
        labels, probabilities = client.post("/v2/models/tags/infer", json=request).json()["outputs"]
        assert sorted(labels["data"][0].split(",")) == ["grain", "trade"] and labels["data"][1] == ""
        assert probabilities["shape"] == [2, len(LABELS)]


@pytest.mark.parametrize("layout", ["flat", "pieces"])
def test_label_sets_train_alike_through_the_xla_and_the_pallas_steps(monkeypatch, layout):
    """fit_network with (n, C) label sets: binary cross-entropy in the XLA step (either batch layout) and in the
    Pallas kernels (pallas_kernels/sigmoid_bce.py; interpreted off a GPU): the loss falls, and both steps train
    the same network."""
    import jax
    from sklearn.feature_extraction.text import TfidfVectorizer

    from pipelines.labels import indicator, joined
    from textclf.settings import Settings
    from textclf.training import backends
    from textclf.training.inputs import TrainingRows
    from textclf.training.network import fit_network

    monkeypatch.setattr(backends, "device_kind", lambda: "gpu" if layout == "pieces" else "cpu")
    texts, sets = label_sets(96, 3)
    x = TfidfVectorizer().fit_transform(texts).astype(np.float32).tocsr()
    y = indicator([joined(s) if len(s) != 1 else s[0] for s in sets], sorted(LABELS))
    settings = Settings(hidden=16, batch_size=16, epochs=3, min_steps=0, learning_rate=0.01, optimizer="adam")
    rows = TrainingRows(x, y, len(LABELS), x, y)
    xla = fit_network(rows, settings, "xla")
    assert xla.history[-1].loss < xla.history[0].loss
    if layout == "flat" and jax.default_backend() == "cpu":
        from textclf.training.steps.step import kernel_config_for

        config = kernel_config_for(settings, 16).replace(input_format="dense", precision="highest", x_dtype="float32")
        pallas = fit_network(rows, settings, "pallas", kernel_config=config)
        for name, a, b in zip(("w1", "b1", "w2", "b2"), pallas.params, xla.params):
            np.testing.assert_allclose(a, b, atol=2e-4, err_msg=name)
        assert [s.train_accuracy for s in pallas.history] == [s.train_accuracy for s in xla.history]


def test_bench_scores_a_task_of_label_sets_by_micro_f1(tmp_path, db_path):
    from db import open_db

    task = tmp_path / "datasets" / "tags"
    task.mkdir(parents=True)
    write_jsonl(task / "train.jsonl", *label_sets(200, 0))
    write_jsonl(task / "test.jsonl", *label_sets(80, 1))
    # (textclf's own tool, a cold process that trains for ~13 s here, is run by tests/textclf/frontends/test_bench.py;
    # its label-set score is the run's eval_score, tested above)
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "tags",
            "--data",
            str(tmp_path / "datasets"),
            "--tools",
            "sklearn-svm,fasttext",  # (scikit-learn's other tools take the same one-vs-rest path)
            "--db",
            str(db_path),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = {r["tool"]: r for r in open_db(db_path)["bench_results"].rows}
    for tool in ("sklearn-svm", "fasttext"):
        assert rows[tool]["error"] is None and rows[tool]["metric"] == "micro-F1", rows[tool]
        assert 0.8 < rows[tool]["accuracy"] <= 1.0


def test_a_folder_corpus_with_multi_label_reads_a_document_in_several_label_folders_as_one(tmp_path):
    from textclf.inference.artifacts import load_model

    texts, sets = label_sets(300, 4)
    root = tmp_path / "corpus"
    for number, (text, labels) in enumerate(zip(texts, sets)):
        for label in labels or ["none"]:
            (root / label).mkdir(parents=True, exist_ok=True)
            (root / label / f"{number}.txt").write_text(text)
    runner = CliRunner()
    trained = runner.invoke(
        app,
        ["train", str(root), "--multi-label", "--out", str(tmp_path / "m.npz"), "--db", str(tmp_path / "r.db"), *FAST],
    )
    assert trained.exit_code == 0, trained.output
    assert "validation micro-f1" in trained.output
    model = load_model(tmp_path / "m.npz")
    assert model.multi_label and model.labels == sorted([*LABELS, "none"])
    evaluated = runner.invoke(app, ["eval", str(root), "--model", str(tmp_path / "m.npz"), "--json"])
    assert json.loads(evaluated.output)["n"] == len(set(texts))  # each document once, however many folders


def test_label_sets_train_with_the_character_view_too(tmp_path, corpora):
    """Two views: each network stopped by its own columns of the held-out documents, the joined one thresholded."""
    from textclf.runs.run import train as train_run
    from textclf.settings import Settings

    train, test = corpora
    result = train_run(
        train,
        Settings(search="off", hidden=16, learning_rate=0.01, char_ngrams=True),
        test_path=test,
        db_path=tmp_path / "runs.db",
        model_path=tmp_path / "m.npz",
    )
    assert result.model.multi_label and result.model.vectorizer.chars is not None
    assert result.model.metadata["eval_score"] > 0.9


def test_the_model_search_chooses_for_label_sets_by_micro_f1(tmp_path, corpora):
    """The search's rounds train label sets (binary cross-entropy side by side) and judge them by micro-F1; it
    chooses one network, and the plan trains the choice."""
    from textclf.runs.run import train as train_run
    from textclf.settings import Settings

    train, test = corpora
    result = train_run(
        train,
        Settings(hidden=16, search_steps=1500),
        test_path=test,
        db_path=tmp_path / "runs.db",
        model_path=tmp_path / "m.npz",
    )
    assert result.search.metric.startswith("micro-f1") and 0.8 < result.search.best_accuracy <= 1.0
    assert result.model.multi_label and result.model.settings.ensemble == 1
    assert result.model.metadata["eval_score"] > 0.9


@pytest.mark.parametrize("metric", ["micro-f1", "macro-f1", "samples-f1"])
def test_the_searchs_label_set_scores_are_scikit_learns(metric):
    """StackedStep.hits of label sets, scored by candidates.label_set_score, give each network's metric at
    probability 0.5 as scikit-learn's f1_score computes it from the same predictions."""
    import jax
    import scipy.sparse as sp
    from sklearn.metrics import f1_score

    from textclf.models.stacked import dense_scores, init_stacked
    from textclf.training.ensembles import device_batches
    from pipelines.batches import batch_shape
    from textclf.training.search.rounds import label_set_score
    from textclf.training.steps.stacked import stacked_hits

    rng = np.random.default_rng(5)
    x = sp.random(70, 30, density=0.2, format="csr", random_state=6, dtype=np.float32)
    y = (rng.random((70, 5)) < 0.3).astype(np.uint8)
    params = init_stacked(jax.random.PRNGKey(2), 30, 8, 5, 3, gain=4.0)
    batches = device_batches(x, y, 16, np.arange(70), batch_shape([x], 16))
    got = label_set_score(stacked_hits(params, *batches)[0], 70, metric)
    scores = np.asarray(dense_scores(params, np.asarray(x.todense())))  # (n, K, C)
    average = metric.split("-")[0]
    want = [
        f1_score(y, scores[:, k] > 0, average=average, zero_division=1 if average == "samples" else 0) for k in range(3)
    ]
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_one_threshold_a_label_is_kept_only_where_it_wins_on_held_out_halves():
    from textclf.models.thresholds import choose_thresholds

    rng = np.random.default_rng(0)
    truth = rng.random((400, 2)) < 0.5
    # label 0 is said with high scores, label 1 with low ones: one threshold cannot serve both
    scores = np.where(truth, [3.0, -1.0], [0.5, -3.0]) + rng.normal(0, 0.3, (400, 2))
    split = choose_thresholds(scores, truth)
    assert split.per_label and split.values[0] > 0.5 > split.values[1]
    assert split.scores["per_label"] > split.scores["global"]
    alike = np.where(truth, 2.0, -2.0) + rng.normal(0, 1.0, (400, 2))  # the same threshold suits both
    assert not choose_thresholds(alike, truth).per_label


def test_one_held_out_document_chooses_one_global_threshold():
    """A 12-document corpus holds one document out: no two halves to compare the kinds of threshold on."""
    from textclf.models.thresholds import GRID, choose_thresholds

    chosen = choose_thresholds(np.array([[2.0, -2.0, 0.5]]), np.array([[1, 0, 1]]))
    assert not chosen.per_label and chosen.scores == {} and len(set(chosen.values)) == 1
    assert chosen.values[0] in GRID


def test_a_twelve_document_label_set_corpus_trains_and_predicts(tmp_path):
    from textclf.runs.run import train
    from textclf.settings import Settings

    corpus = tmp_path / "twelve.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"text": f"{a} {b} word{i}", "labels": [a, b]}) + "\n"
            for i, (a, b) in enumerate([("red", "blue"), ("red", "green"), ("blue", "green")] * 4)
        )
    )
    result = train(corpus, Settings(epochs=3), db_path=tmp_path / "runs.db", model_path=tmp_path / "m.npz")
    assert result.n_train == 10 and result.n_eval == 1 and (tmp_path / "m.npz").exists()
