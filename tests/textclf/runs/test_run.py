import numpy as np
import pytest

from db import open_db, runs
from textclf.errors import CorpusError
from textclf.inference.artifacts import load_model
from textclf.runs.run import train
from textclf.settings import Settings
from textclf.training import network


def test_train_records_a_finished_run(corpus_dir, db_path, fast_settings):
    result = train(corpus_dir, fast_settings, db_path=db_path)
    run = runs.get_run(open_db(db_path), result.run_id)
    assert run["status"] == "finished" and run["error"] is None
    assert run["model_path"] == str(result.model_path) and result.model_path.exists()
    assert run["eval_kind"] == "validation" and run["n_train"] + run["n_eval"] == 36
    assert run["corpus_fingerprint"] and run["settings"]["batch_size"] == 8
    assert run["versions"]["jax"] == "0.11.2"
    assert len(run["epochs"]) == fast_settings.epochs_for(run["n_train"])
    assert {"read", "vectorize", "warmup", "compile", "train", "evaluate", "save"} <= set(run["phases"])
    assert run["eval_accuracy"] == result.eval_accuracy
    assert load_model(result.model_path).metadata["run_id"] == result.run_id
    import jax

    from textclf.training.backends import choose_backend, device_description

    # Filled in once JAX has started (textclf/runs/run.py starts it on a thread), with why that backend.
    expected = choose_backend("auto", "mlp", fast_settings.batch_size, jax.default_backend() == "gpu")
    assert (run["backend"], run["backend_reason"]) == expected and run["device"] == device_description()


def test_what_the_training_decides_is_recorded_once_after_it(corpus_dir, db_path, fast_settings, monkeypatch):
    """The trainers record nothing themselves: what fit_plan decides (the devices, the backend's reason, the
    settings it chose) reaches the run's row in one write once it returns (Fitted.record)."""
    from textclf.runs import fitting, run as run_module

    inside, writes = [], []
    real_update, real_fit = runs.update_run, fitting.fit_plan

    def update_run(db, run_id, **fields):
        writes.append((bool(inside), set(fields)))
        return real_update(db, run_id, **fields)

    def fit_plan(*args):
        inside.append(1)
        try:
            return real_fit(*args)
        finally:
            inside.clear()

    monkeypatch.setattr(runs, "update_run", update_run)
    monkeypatch.setattr(run_module, "fit_plan", fit_plan)
    result = train(corpus_dir, fast_settings.replace(ensemble=2), db_path=db_path)
    assert not [fields for during, fields in writes if during]
    assert sum("devices" in fields for _, fields in writes) == 1
    row = open_db(db_path)["runs"].get(result.run_id)
    assert row["devices"] == 1 and row["status"] == "finished"


def test_same_seed_same_model(corpus_dir, db_path, fast_settings, tmp_path):
    """Bit for bit on a CPU; on a GPU up to the order of the gradient scatter's atomic adds (docs/usage.md)."""
    import jax

    a = train(corpus_dir, fast_settings, db_path=db_path, model_path=tmp_path / "a.npz")
    b = train(corpus_dir, fast_settings, db_path=db_path, model_path=tmp_path / "b.npz")
    if jax.default_backend() == "gpu":
        np.testing.assert_allclose(a.model.params.w1, b.model.params.w1, atol=1e-4)
        assert abs(a.history[-1].loss - b.history[-1].loss) < 1e-4
    else:
        assert (a.model.params.w1 == b.model.params.w1).all() and a.history[-1].loss == b.history[-1].loss
    assert b.phases["compile"] < 0.1  # reuses the compiled epoch of the same shapes (runs earlier in this process)


def test_separate_test_corpus(corpus_dir, db_path, fast_settings, tmp_path):
    result = train(corpus_dir, fast_settings, test_path=corpus_dir, db_path=db_path)
    assert result.eval_kind == "test" and result.n_eval == 36 and result.n_train == 36
    other = tmp_path / "other"
    (other / "poetry").mkdir(parents=True)
    (other / "poetry" / "1.txt").write_text("roses are red")
    (other / "space").mkdir()
    (other / "space" / "1.txt").write_text("the moon")
    with pytest.raises(CorpusError, match="label 'poetry' that the training corpus lacks"):
        train(corpus_dir, fast_settings, test_path=other, db_path=db_path)


@pytest.mark.parametrize("with_test", [False, True])
def test_hashing_reads_and_vectorizes_in_one_stream(corpus_dir, db_path, fast_settings, tmp_path, with_test):
    """--vectorizer hashing goes through pipelines/stream.py: one read_vectorize phase, the same run record,
    a model that predicts like the training run scored it."""
    settings = fast_settings.replace(vectorizer="hashing", features=2048)
    result = train(
        corpus_dir,
        settings,
        db_path=db_path,
        model_path=tmp_path / "h.npz",
        test_path=corpus_dir if with_test else None,
    )
    run = runs.get_run(open_db(db_path), result.run_id)
    assert run["status"] == "finished" and "read_vectorize" in run["phases"] and "read" not in run["phases"]
    assert run["n_features"] == 2048 and run["corpus_fingerprint"] and not run["vectors_cached"]
    assert (run["n_train"], run["n_eval"]) == ((36, 36) if with_test else (result.n_train, result.n_eval))
    assert result.n_train + (0 if with_test else result.n_eval) == 36
    model = load_model(result.model_path)
    assert model.vectorizer.kind == "hashing" and model.metadata["eval_accuracy"] == result.eval_accuracy
    if with_test:  # the test corpus is the training corpus here: the model's own predictions must agree
        from pipelines.corpus import read_corpus

        corpus = read_corpus(corpus_dir)
        accuracy = sum(p == t for p, t in zip(model.predict(corpus.texts), corpus.labels)) / len(corpus)
        assert accuracy == pytest.approx(result.eval_accuracy)


def test_failure_marks_the_run_failed(tmp_path, db_path, fast_settings):
    with pytest.raises(CorpusError):
        train(tmp_path / "missing", fast_settings, db_path=db_path)
    [run] = runs.list_runs(open_db(db_path))
    assert run["status"] == "failed" and "does not exist" in run["error"] and run["model_path"] is None


def test_ctrl_c_marks_the_run_interrupted_and_writes_no_model(
    corpus_dir, db_path, fast_settings, monkeypatch, isolated_home
):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(network, "make_batches", interrupt)
    with pytest.raises(KeyboardInterrupt):
        train(corpus_dir, fast_settings, db_path=db_path)
    [run] = runs.list_runs(open_db(db_path))
    assert run["status"] == "interrupted" and run["ended_at"]
    assert not (isolated_home / "models").exists()


@pytest.mark.skipif(__import__("jax").default_backend() == "gpu", reason="checks the refusal on a CPU")
def test_pallas_backend_needs_a_gpu(corpus_dir, db_path, fast_settings):
    from textclf.errors import BackendError

    with pytest.raises(BackendError, match="needs a GPU and JAX sees none: use --backend xla"):
        train(corpus_dir, fast_settings.replace(backend="pallas"), db_path=db_path)
    [run] = runs.list_runs(open_db(db_path))
    assert run["status"] == "failed" and "needs a GPU" in run["error"] and run["device"] is None


@pytest.mark.parametrize("pallas_input", ["dense", "sparse", "pieces"])
def test_pallas_backend_trains_in_interpret_mode(corpus_dir, fast_settings, monkeypatch, pallas_input):
    """The product's Pallas path end to end (kernels interpreted on the CPU): it learns the sample corpus."""
    from pipelines.corpus import read_corpus
    from textclf.estimator import TextClassifier

    monkeypatch.setenv("TEXTCLF_PALLAS_INTERPRET", "1")
    corpus = read_corpus(corpus_dir)
    settings = fast_settings.replace(backend="pallas", pallas_input=pallas_input, epochs=15)
    classifier = TextClassifier.from_settings(settings).fit(corpus.texts, corpus.labels)
    assert classifier.score(corpus.texts, corpus.labels) >= 0.95
    assert classifier.history_[-1].loss < classifier.history_[0].loss


def test_auto_input_format_follows_batch_size():
    from textclf.training.steps.step import PIECES_MIN_BATCH, input_format_for

    small, large = PIECES_MIN_BATCH // 2, PIECES_MIN_BATCH
    assert input_format_for("auto", small) == "dense"
    assert input_format_for("auto", large) == "pieces"
    assert input_format_for("dense", large) == "dense"
    assert input_format_for("sparse", small) == "sparse"


def test_pieces_layout_trains_the_same_network_as_flat_batches(fast_settings, monkeypatch):
    """fit_network with the training set resident as pieces (the XLA backend's layout on a GPU) ends with the
    parameters the flat batches give: same documents per batch, same sums."""
    import scipy.sparse as sp

    from textclf.training.inputs import TrainingRows
    from textclf.training.steps.step import XlaStep

    rng = np.random.default_rng(0)
    matrix = sp.random(70, 90, density=0.2, format="csr", random_state=1, dtype=np.float32)
    labels = rng.integers(0, 3, 70).astype(np.int32)
    settings = fast_settings.replace(batch_size=16, epochs=3, min_steps=0)
    runs = {}
    for layout in ("flat", "pieces"):
        monkeypatch.setattr(network, "make_step", lambda *args, layout=layout: XlaStep(layout))
        runs[layout] = network.fit_network(TrainingRows(matrix, labels, 3), settings)
    for a, b in zip(runs["flat"].params, runs["pieces"].params):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert [h.loss for h in runs["flat"].history] == pytest.approx([h.loss for h in runs["pieces"].history], rel=1e-5)


def test_a_large_held_out_set_is_scored_on_the_device_where_training_ran_on_a_gpu(
    corpus_dir, db_path, fast_settings, monkeypatch
):
    import jax

    from textclf.runs import fitting as run_module

    result = train(corpus_dir, fast_settings, db_path=db_path)
    model = result.model
    matrix = model.vectorizer.transform(["the comet passed the sun", "knead the dough", "a late goal"] * 50)
    host = model.scores(matrix)
    np.testing.assert_array_equal(run_module.eval_scores(model, matrix), host)  # a CPU: the host's
    called = []
    real = network.held_out_scores_device
    monkeypatch.setattr(network, "held_out_scores_device", lambda *a: called.append(1) or real(*a))
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(run_module, "DEVICE_EVAL_WORK", matrix.shape[0] * model.params.w1.shape[1] + 1)
    np.testing.assert_array_equal(run_module.eval_scores(model, matrix), host)  # under the threshold: the host
    assert not called
    monkeypatch.setattr(run_module, "DEVICE_EVAL_WORK", matrix.shape[0] * model.params.w1.shape[1])
    # a GPU's float32 matmul rounds to TF32
    np.testing.assert_allclose(run_module.eval_scores(model, matrix), host, rtol=2e-3, atol=2e-4)
    assert called


def test_a_large_jsonl_corpus_is_read_by_the_workers_as_one_reader_sees_it(
    tmp_path, db_path, fast_settings, monkeypatch
):
    import json

    from pipelines import corpus as corpus_module
    from pipelines.corpus import read_corpus

    path = tmp_path / "train.jsonl"
    path.write_text(
        "".join(
            json.dumps({"text": f"{word} number {i}", "label": word}) + "\n"
            for i in range(300)
            for word in ("comet", "dough")
        )
    )
    in_workers = []
    real_read = corpus_module._read_lines_in_workers
    monkeypatch.setattr(
        corpus_module,
        "_read_lines_in_workers",
        lambda path, *a: in_workers.append(a[3].processes) or real_read(path, *a),
    )
    monkeypatch.setattr(corpus_module, "PARALLEL_READ_BYTES", 1000)

    monkeypatch.setattr("pipelines.vectorize.chunks.PARALLEL_MIN_DOCS", 1)  # a pool of workers for this small file
    monkeypatch.setattr("pipelines.vectorize.chunks.DOCS_PER_WORKER", 1)
    result = train(path, fast_settings.replace(search="off"), db_path=db_path)
    assert in_workers and in_workers[0] > 1  # the file was parsed by the workers (a pool of them)
    run = runs.get_run(open_db(db_path), result.run_id)
    assert run["status"] == "finished" and run["n_train"] + run["n_eval"] == 600
    assert run["corpus_fingerprint"] == read_corpus(path).fingerprint
    assert run["settings"]["start_token"] is True


@pytest.mark.parametrize("searched, kind", [("a sample", "jsonl"), ("every text", "jsonl"), ("a sample", "parquet")])
def test_a_large_corpus_left_in_its_file_trains_the_model_its_texts_in_memory_train(
    tmp_path, monkeypatch, searched, kind
):
    """A JSONL file (or a Parquet file of several row groups: its documents named by their rows) large enough for
    the workers (shrunk here) keeps its texts in the file: the search fetches its
    sample's texts (or every text, where the search reads them all: a list it can slice), the vocabulary is fitted
    on the fit's sample (shrunk), the file is transformed share by share; the same choice, vectors and accuracy as
    with every text in memory. (A test file left in its file is transformed as the training file is:
    tests/pipelines/test_vectorize.py.)"""
    import json

    from pipelines import corpus as corpus_module
    from tests.textclf.training.search.test_halving import cpu_split_of_a_large_corpus, question_corpus
    from textclf.runs import text_data as run_module

    # A CPU's search reads a sample of the texts or all 600; a GPU's reads all 600 either way (its sample is
    # rules.search_documents, 20,000; shrinking it would also hold documents out for early stopping).
    sample = searched == "a sample"
    rules = cpu_split_of_a_large_corpus(*((100, 70) if sample else (10_000, 10_000)))
    monkeypatch.setattr("pipelines.vectorize.fit.FIT_DOCUMENTS", 200)  # so does the fit
    monkeypatch.setattr("pipelines.vectorize.chunks.PARALLEL_MIN_DOCS", 1)  # a pool of workers for this small file
    monkeypatch.setattr("pipelines.vectorize.chunks.DOCS_PER_WORKER", 1)
    monkeypatch.setattr(corpus_module, "SHARE_BYTES", 4000)
    texts, labels = question_corpus(600)
    path = tmp_path / f"train.{kind}"
    if kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"text": texts, "label": labels}), path, row_group_size=50)
        monkeypatch.setattr(corpus_module, "SHARE_BYTES", 500)
    else:
        path.write_text("".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in zip(texts, labels)))
    settings = Settings(
        epochs=2, search_budget=120, validation_fraction=0.2, char_ngrams=False, pinned=("char_ngrams",)
    )  # held-out documents: the split's rows map to the file's
    in_file = []
    real_fit = run_module.fit_vectorizer
    monkeypatch.setattr(
        run_module, "fit_vectorizer", lambda texts, *a, **k: in_file.append(len(texts)) or real_fit(texts, *a, **k)
    )
    trained = {}
    for read_bytes in (10**9, 1000):  # every text in memory, then left in the file
        monkeypatch.setattr(corpus_module, "PARALLEL_READ_BYTES", read_bytes)
        monkeypatch.setenv("TEXTCLF_HOME", str(tmp_path / f"home-{read_bytes}"))  # no vector cache between them
        result = train(path, settings, db_path=tmp_path / f"runs-{read_bytes}.db", rules=rules)
        trained[read_bytes] = (result, runs.get_run(open_db(tmp_path / f"runs-{read_bytes}.db"), result.run_id))
    (memory, memory_run), (left, left_run) = trained[10**9], trained[1000]
    assert in_file == [memory.n_train, 200]  # in memory the fit takes every text (and samples them itself)
    assert (
        left_run["settings"] == memory_run["settings"]
        and left_run["search"]["chosen"] == memory_run["search"]["chosen"]
    )
    assert left.model.vectorizer.terms == memory.model.vectorizer.terms
    np.testing.assert_array_equal(left.model.vectorizer.idf, memory.model.vectorizer.idf)
    assert (left.eval_accuracy, left.n_train, left.n_eval) == (memory.eval_accuracy, memory.n_train, memory.n_eval)
    assert left_run["corpus_fingerprint"] == memory_run["corpus_fingerprint"]


def _searched_sampled_questions(tmp_path, db_path, search_documents=None, rate_choice_features=None):
    """`train` with the search on 600 noisy questions (540 training documents) that the CPU search samples (170 of
    them), every rate of the winner's variant near it; search_documents: the rules' for the run, so that the
    corpus counts as larger than the search's sample; rate_choice_features: the rules' too.
    -> (TrainResult, its run record, a function that trains the same again and returns those two)."""
    import json

    from tests.textclf.training.search.test_halving import cpu_split_of_a_large_corpus, question_corpus

    # 540 documents stand for a large corpus; every rate of the winner's variant is near
    rules = cpu_split_of_a_large_corpus().replace(near_rate_errors=100.0)
    if search_documents is not None:
        rules = rules.replace(search_documents=search_documents)
    if rate_choice_features is not None:
        rules = rules.replace(rate_choice_features=rate_choice_features)
    texts, labels = question_corpus(600)
    labels = [("HUM" if i % 2 else "LOC") if i % 10 == 0 else label for i, label in enumerate(labels)]  # noise
    corpus = tmp_path / "questions.jsonl"
    corpus.write_text("".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in zip(texts, labels)))
    settings = Settings(
        epochs=3, search_budget=120, validation_fraction=0.1, char_ngrams=False, pinned=("char_ngrams",)
    )

    def trained():
        result = train(corpus, settings, db_path=db_path, rules=rules)
        return result, runs.get_run(open_db(db_path), result.run_id)

    return (*trained(), trained)


def test_the_rate_choice_narrows_to_the_columns_most_tied_to_the_labels():
    import scipy.sparse as sp

    from textclf.runs.fitting import _rate_choice_columns

    rng = np.random.default_rng(0)
    y = np.arange(40) % 2
    dense = rng.random((40, 6)) * (rng.random((40, 6)) < 0.5)
    dense[:, 4] = 3.0 * y  # the one column that tells the classes apart
    dense[:, 1] = 2.0 * (1 - y) + 0.1  # the next: high on class 0, low on class 1
    train_x, held_x = sp.csr_matrix(dense[:30]), sp.csr_matrix(dense[30:])
    narrow_train, narrow_held = _rate_choice_columns(train_x, y[:30], held_x, 2)
    assert narrow_train.shape == (30, 2) and narrow_held.shape == (10, 2)
    for narrow, full in ((narrow_train, dense[:30]), (narrow_held, dense[30:])):
        kept = full[:, [1, 4]]  # in column order, each row scaled to unit length
        np.testing.assert_allclose(narrow.toarray(), kept / np.linalg.norm(kept, axis=1, keepdims=True), rtol=1e-6)
    for features in (0, 6):  # 0: every column; 6: no narrower than the matrix is
        same_train, same_held = _rate_choice_columns(train_x, y[:30], held_x, features)
        assert same_train is train_x and same_held is held_x


def _reuses_the_rate_choice(run, again) -> None:
    """A second run of the same documents and settings (`again`) takes the first's search and rate choice."""
    second, rerun = again()
    assert rerun["search"]["reused_from"] == run["id"] and "rate_candidates" not in rerun["search"]
    assert rerun["search"]["rate_choice"] == run["search"]["rate_choice"]
    assert "rates" not in rerun["phases"] and "search" not in rerun["phases"] and not rerun["search_trials"]
    assert rerun["settings"] == run["settings"] and second.model.settings == Settings.from_dict(run["settings"])


@pytest.mark.skipif(
    __import__("jax").default_backend() != "cpu",
    reason="the search's rules here are a CPU's (cpu_split_of_a_large_corpus); a GPU's search makes another choice",
)
def test_a_corpus_beyond_the_search_sample_lets_its_held_out_documents_choose_the_rate(tmp_path, db_path, monkeypatch):
    # a corpus "larger than the search's sample": 540 training documents against a sample of 150
    result, run, again = _searched_sampled_questions(tmp_path, db_path, search_documents=150)
    choice = run["search"]["rate_choice"]
    assert len(choice["candidates"]) == 3 and len(choice["held_out"]) == 3
    chosen = choice["candidates"][choice["chosen"]]
    stopping = run["early_stopping"]
    assert stopping["chosen_rate"] == choice["chosen"] and stopping["rate_accuracies"] == choice["held_out"]
    best = max(max(curve) for curve in choice["held_out"])
    assert max(choice["held_out"][choice["chosen"]]) == best  # the best held-out network was kept
    assert run["search"]["leaderboard"]  # kept when the rate choice was recorded after the search
    # the model file and the run say which rate and epoch were kept
    assert run["settings"]["learning_rate"] == chosen["learning_rate"] == result.model.settings.learning_rate
    assert run["settings"]["epochs"] == stopping["best_epoch"] == result.model.settings.epochs
    assert run["status"] == "finished" and result.eval_accuracy > 0.8
    from textclf.frontends.cli.training import _rate_chosen

    rates = ", ".join(f"{c['learning_rate']:g}" for c in choice["candidates"])
    from textclf.training.search.summary import SearchSummary

    assert (
        _rate_chosen(SearchSummary.from_record(run["search"]), chosen["learning_rate"])
        == f"lr {chosen['learning_rate']:g} (held-out documents' choice of {rates})"
    )
    from textclf.frontends.cli.training import _rate_choice_line
    from textclf.training.search.summary import RateChoice

    assert _rate_choice_line(RateChoice.from_record(choice)).startswith("by the early-stopping documents: lr ")
    assert _rate_choice_line(RateChoice.from_record(choice)).count("(kept)") == 1
    _reuses_the_rate_choice(run, again)


def test_an_ensemble_side_by_side_stops_early_on_held_out_rows_of_the_same_matrix(tmp_path, db_path, monkeypatch):
    """Beyond the search's sample, an ensemble side by side (a GPU's) trains on the rows of the matrix that are not
    held out for early stopping, without a copy of them (ensembles.StackedEpochs' rows)."""
    import json

    from tests.textclf.training.search.test_halving import question_corpus
    from textclf.training import ensembles
    from textclf.training import plan as plan_module
    from textclf.training.search.rules import SearchRules

    rules = SearchRules(search_documents=150)
    monkeypatch.setattr(ensembles, "stacked_is_faster", lambda: True)
    trained_rows = []
    real = ensembles.StackedEpochs

    def recording(rows, *args):
        trained_rows.append((rows.x.shape[0], rows.n_training, type(rows.x).__name__))
        return real(rows, *args)

    monkeypatch.setattr(ensembles, "StackedEpochs", recording)
    texts, labels = question_corpus(600)
    corpus = tmp_path / "questions.jsonl"
    corpus.write_text("".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in zip(texts, labels)))
    settings = Settings(epochs=3, ensemble=3, search_budget=60, char_ngrams=False, pinned=("char_ngrams", "ensemble"))
    result = train(corpus, settings, db_path=db_path, rules=rules)
    run = runs.get_run(open_db(db_path), result.run_id)
    held = min(plan_module.STOPPING_DOCUMENTS, int(540 * plan_module.STOPPING_FRACTION))
    # the whole matrix, put on the device before the training (its host copy freed), its training rows named
    assert trained_rows[-1] == (540, 540 - held, "ResidentRows")
    assert run["status"] == "finished" and run["early_stopping"]["held_out"] == held
    assert result.n_train == 540 - held


def test_a_large_file_goes_to_the_device_share_by_share_and_trains_the_same_networks(tmp_path, monkeypatch):
    """A corpus left in its file, with a test file, whose networks train side by side with held-out rows: each
    share's rows go to the device as the workers finish them (the host never holds the whole matrix, and the
    vector cache is not written); the same networks, epochs and accuracy as from the matrix built on the host."""
    import json

    from pipelines import corpus as corpus_module
    from tests.textclf.training.search.test_halving import cpu_split_of_a_large_corpus, question_corpus
    from textclf.runs import text_data as run_module
    from textclf.training import ensembles, device_data
    from textclf.training import plan as plan_module

    monkeypatch.setattr(ensembles, "stacked_is_faster", lambda: True)
    monkeypatch.setattr(
        "pipelines.vectorize.fit.FIT_DOCUMENTS", 300
    )  # the vocabulary from a sample: the texts stay in the file
    rules = cpu_split_of_a_large_corpus().replace(search_documents=150)  # and the search's (a sample, as ever there)
    monkeypatch.setattr("pipelines.vectorize.chunks.PARALLEL_MIN_DOCS", 1)  # a pool of workers for this small file
    monkeypatch.setattr("pipelines.vectorize.chunks.DOCS_PER_WORKER", 1)
    monkeypatch.setattr(corpus_module, "SHARE_BYTES", 4000)
    monkeypatch.setattr(corpus_module, "PARALLEL_READ_BYTES", 1000)
    texts, labels = question_corpus(700)
    for name, rows in (("train", slice(0, 600)), ("test", slice(600, 700))):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in zip(texts[rows], labels[rows]))
        )
    settings = Settings(epochs=3, ensemble=3, search_budget=60, char_ngrams=False, pinned=("char_ngrams", "ensemble"))
    import dataclasses

    from textclf.runs import run as run_steps

    streamed, drafts = [], []
    real = device_data.resident_from_parts
    monkeypatch.setattr(device_data, "resident_from_parts", lambda *a: streamed.append(1) or real(*a))
    draft = plan_module.draft_plan
    for module in (run_module, run_steps):  # every draft the run makes, wherever it makes it
        monkeypatch.setattr(module, "draft_plan", lambda *a, **k: drafts.append(1) or draft(*a, **k))
    results = {}
    for share_by_share in (True, False):
        if not share_by_share:  # the same run with the matrix on the host
            drafted = run_module.one_process_draft
            monkeypatch.setattr(
                run_module, "one_process_draft", lambda *a: dataclasses.replace(drafted(*a), rows="host")
            )
        home = tmp_path / f"home-{share_by_share}"
        monkeypatch.setenv("TEXTCLF_HOME", str(home))
        db = tmp_path / f"runs-{share_by_share}.db"
        result = train(tmp_path / "train.jsonl", settings, test_path=tmp_path / "test.jsonl", db_path=db, rules=rules)
        results[share_by_share] = (result, runs.get_run(open_db(db), result.run_id), home)
        assert len(streamed) == 1  # the first run only
        assert len(drafts) == (1 if share_by_share else 2)  # planned once a run: vectorizing's draft, completed
    (device, device_run, device_home), (host, host_run, host_home) = results[True], results[False]
    assert device_run["status"] == "finished" and device_run["early_stopping"] == host_run["early_stopping"]
    assert [s.loss for s in device.history] == [s.loss for s in host.history]
    assert device.eval_accuracy == host.eval_accuracy and device.n_train == host.n_train == 600 - min(
        plan_module.STOPPING_DOCUMENTS, int(600 * plan_module.STOPPING_FRACTION)
    )
    for a, b in zip(device.model.params, host.model.params):
        np.testing.assert_array_equal(a, b)
    assert not list(device_home.rglob("*.npz")) or all("models" in str(p) for p in device_home.rglob("*.npz"))
    assert any("models" not in str(p) for p in host_home.rglob("*.npz"))  # the host's matrix is cached


@pytest.mark.skipif(
    __import__("jax").default_backend() != "cpu",
    reason="a CPU's search samples a corpus this small; a GPU's searches all of it (no refit to test)",
)
def test_a_sampled_corpus_chooses_its_rate_on_held_out_documents_then_trains_on_all(tmp_path, db_path, monkeypatch):
    from textclf.training.plan import REFIT_HELD_OUT_FRACTION

    # the candidates train on the 64 columns most tied to the labels (the product's: rules.round_features); the
    # CPU search samples 170 of the 540 training documents; the corpus is under rules.search_documents
    result, run, again = _searched_sampled_questions(tmp_path, db_path, rate_choice_features=64)
    choice = run["search"]["rate_choice"]
    assert choice["refit"] and choice["held_out_documents"] == int(540 * REFIT_HELD_OUT_FRACTION)
    assert choice["features"] == 64 < result.model.params.w1.shape[0]  # the final network: every column
    assert len(choice["candidates"]) == 3
    chosen = choice["candidates"][choice["chosen"]]
    curve = choice["held_out"][choice["chosen"]]
    assert max(curve) == max(max(c) for c in choice["held_out"])
    best_epoch = curve.index(max(curve)) + 1
    # then the chosen rate and epoch count train on every training document, as the final model
    assert run["settings"]["learning_rate"] == chosen["learning_rate"] == result.model.settings.learning_rate
    assert run["settings"]["epochs"] == best_epoch == len(run["epochs"]) and run["n_train"] == 540
    assert run["early_stopping"] is None and run["status"] == "finished" and "rates" in run["phases"]
    # the rate choice, recorded after the search, keeps the search's leaderboard in the run
    assert run["search"]["leaderboard"] and run["search"]["leaderboard"][0]["settings"]["learning_rate"] in {
        c["learning_rate"] for c in choice["candidates"]
    }
    from typer.testing import CliRunner

    from textclf.frontends.cli import app

    shown = CliRunner().invoke(app, ["runs", "show", str(result.run_id), "--db", str(db_path)])
    assert shown.exit_code == 0
    assert (
        f"by {int(540 * REFIT_HELD_OUT_FRACTION)} held-out training documents (networks on 64 columns), then "
        "all of them"
    ) in shown.output and f"{max(curve):.4f} at epoch {best_epoch} (kept)" in shown.output
    _reuses_the_rate_choice(run, again)
