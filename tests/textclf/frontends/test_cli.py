"""CLI tests through typer's CliRunner: exit codes, output and error text, and that failures leave no state."""

import csv
import io
import json
import sqlite3

import numpy as np
import pytest
from hypothesis import given, strategies as st
from typer.testing import CliRunner

from db import open_db
from textclf.paths import run_db_path
from db import runs
from textclf.inference import artifacts
from textclf.frontends.cli import app

# 75 epochs: the ~300 steps the small-corpus rule gave the 36-document sample corpus before a typed --epochs
# was kept as typed
FAST = [
    "--epochs",
    "75",
    "--batch-size",
    "8",
    "--hidden",
    "16",
    "--optimizer",
    "sgd",
    "--lr",
    "0.5",
    "--init-gain",
    "4",
]


@pytest.fixture
def runner():
    return CliRunner()


def invoke(runner, *args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


@pytest.fixture
def trained(runner, corpus_dir, tmp_path):
    model = tmp_path / "model.npz"
    result = invoke(runner, "train", corpus_dir, "--out", model, *FAST)
    assert result.exit_code == 0, result.output
    return model


def test_train_predict_eval_runs(runner, corpus_dir, trained, tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text("The striker scored a late goal and the team won the match.")
    result = invoke(runner, "predict", doc, "--model", trained)
    assert result.exit_code == 0 and "\tsports\t" in result.output
    result = invoke(runner, "predict", doc, "--json", "-k", "2")  # default model: newest finished run
    [record] = [json.loads(line) for line in result.stdout.splitlines()]  # JSON Lines
    assert record["label"] == "sports" and len(record["top"]) == 2
    result = invoke(runner, "predict", "-", "--model", trained, input="bake the bread in a hot oven")
    assert result.exit_code == 0 and result.output.startswith("-:1\tcooking")
    # standard input and JSONL: one document a line, as fastText reads them; a blank line an empty prediction
    result = invoke(
        runner,
        "predict",
        "-",
        "--model",
        trained,
        input="bake the bread in a hot oven\n\nthe striker scored a late goal\n",
    )
    assert [line.split("\t")[:2] for line in result.stdout.splitlines()] == [
        ["-:1", "cooking"],
        ["-:2", ""],
        ["-:3", "sports"],
    ]
    assert result.stderr == "1 input line(s) with no text: an empty prediction each\n"
    lines = tmp_path / "docs.jsonl"
    lines.write_text(
        json.dumps({"text": "bake the bread in a hot oven", "label": "x"})
        + "\n"
        + json.dumps("the striker scored a late goal")
        + "\n"
    )
    result = invoke(runner, "predict", lines, "--model", trained, "--json")
    assert [json.loads(line)["label"] for line in result.stdout.splitlines()] == ["cooking", "sports"]

    result = invoke(runner, "eval", corpus_dir, "--model", trained, "--json")
    report = json.loads(result.stdout)
    assert report["accuracy"] > 0.9 and report["n"] == 36 and len(report["confusion_matrix"]) == 3
    assert "confusion matrix" in invoke(runner, "eval", corpus_dir, "--model", trained).output
    # the averages of scikit-learn's classification_report: unweighted and support-weighted means
    per_class = report["per_class"]
    macro_f1 = sum(c["f1"] for c in per_class.values()) / len(per_class)
    assert abs(report["averages"]["macro"]["f1"] - macro_f1) < 1e-9
    weighted = sum(c["f1"] * c["support"] for c in per_class.values()) / report["n"]
    assert abs(report["averages"]["weighted"]["f1"] - weighted) < 1e-9
    assert "macro avg" in invoke(runner, "eval", corpus_dir, "--model", trained).output

    listed = json.loads(invoke(runner, "runs", "list", "--json").stdout)
    assert listed[0]["status"] == "finished" and listed[0]["id"] == 1
    assert invoke(runner, "runs", "list", "--csv").stdout.startswith("id,status,started_at")
    shown = invoke(runner, "runs", "show", 1)
    assert shown.exit_code == 0 and "phases (s)" in shown.output and "epochs" in shown.output
    last = json.loads(invoke(runner, "runs", "show", 1, "--epochs", 2, "--json").stdout)["epochs"]
    assert [e["epoch"] for e in last] == [74, 75]  # FAST trains 75 epochs
    assert "epochs (the last 2)" in invoke(runner, "runs", "show", 1, "--epochs", 2).output
    assert json.loads(invoke(runner, "runs", "show", 1, "--epochs", 0, "--json").stdout)["epochs"] == []
    negative = invoke(runner, "runs", "show", 1, "--epochs", -1)
    assert negative.exit_code == 1 and "--epochs -1: pass 0 or more" in negative.output
    # which backend trained and why (on a CPU: XLA, auto: no GPU; on a GPU what the measured table chose)
    import jax

    on_cpu = jax.default_backend() == "cpu"
    assert ("backend_reason       auto: no GPU" in shown.output) == on_cpu
    assert "backend_reason       auto" in shown.output
    invoke(runner, "train", corpus_dir, *FAST, "--lr", "0.3")
    compared = json.loads(invoke(runner, "runs", "compare", 1, 2, "--json").stdout)
    assert compared["settings.learning_rate"] == {"a": 0.5, "b": 0.3}
    png = tmp_path / "curves.png"
    assert invoke(runner, "runs", "plot", 1, "--out", png).exit_code == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = invoke(runner, "runs", "plot", 1, "--out", tmp_path / "run1.html")
    assert html.exit_code == 1 and "not a picture file" in html.output and not (tmp_path / "run1.html").exists()


def test_train_json_output(runner, corpus_dir):
    result = invoke(runner, "train", corpus_dir, *FAST, "--json")
    data = json.loads(result.stdout)
    assert data["eval_kind"] == "validation" and data["run_id"] == 1 and "train" in data["phases"]


def test_dataset_command(runner, tmp_path):
    csv_path = tmp_path / "test.csv"
    csv_path.write_text("".join(f'"{i % 4 + 1}","title {i}","description {i}"\n' for i in range(20)))
    (tmp_path / "classes.txt").write_text("World\nSports\nBusiness\nSci/Tech\n")
    result = invoke(runner, "dataset", "agnews7600", csv_path, tmp_path / "ag")
    assert result.exit_code == 0 and "train: " in result.output and "(16 documents)" in result.output
    first = json.loads((tmp_path / "ag" / "train.jsonl").read_text().splitlines()[0])
    assert first["label"] in ("World", "Sports", "Business", "Sci/Tech")
    assert invoke(runner, "dataset", "imagenet", csv_path, tmp_path / "x").exit_code == 1


# ---- the bad-input table: every row gives a one-line "Error: ..." naming the thing and the fix, exit 1,
# ---- and leaves no model file and no run marked finished.


def _setup_missing(d):
    return ["train", d / "nope"], "does not exist"


def _setup_empty_folder(d):
    (d / "empty").mkdir()
    return ["train", d / "empty"], "has no label folders"


def _setup_one_label(d):
    (d / "one" / "a").mkdir(parents=True)
    (d / "one" / "a" / "1.txt").write_text("hello world")
    return ["train", d / "one"], "only one label"


def _setup_empty_files(d):
    for label in ("a", "b"):
        (d / "c" / label).mkdir(parents=True)
        (d / "c" / label / "1.txt").write_text("")
    return ["train", d / "c"], "no usable document (2 empty)"


def _setup_binary_only_label(d):
    (d / "c" / "a").mkdir(parents=True)
    (d / "c" / "a" / "1.txt").write_text("some text")
    (d / "c" / "b").mkdir(parents=True)
    (d / "c" / "b" / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00")
    return ["train", d / "c"], "label 'b'"


def _setup_predict_empty(d):
    (d / "empty.txt").write_text("  \n")
    return ["predict", d / "empty.txt"], "is empty: there is nothing to classify"


def _setup_predict_binary(d):
    (d / "x.bin").write_bytes(b"\x00\x01\x02")
    return ["predict", d / "x.bin"], "binary file"


def _setup_predict_huge(d):
    with (d / "big.txt").open("wb") as f:
        f.seek(50 * 1024 * 1024)
        f.write(b"x")
    return ["predict", d / "big.txt"], "over the 10 MB limit"


def _setup_missing_model(d):
    (d / "doc.txt").write_text("a document")
    return ["predict", d / "doc.txt", "--model", d / "nope.npz"], "does not exist: train one"


def _setup_no_model_at_all(d):
    (d / "doc.txt").write_text("a document")
    return ["predict", d / "doc.txt"], "no model given and no finished run"


def _setup_bad_setting(d):
    return ["train", d, "--backend", "tpu"], "backend must be one of"


def _setup_unknown_linear_loss(d):
    return ["train", d, "--linear-loss", "hinge"], "linear_loss must be one of log, squared_hinge"


def _setup_char_ngrams_with_hashing(d):
    return ["train", d, "--char-ngrams", "--vectorizer", "hashing"], "char_ngrams needs the tfidf vectorizer"


def _setup_unknown_stop_words(d):
    return ["train", d, "--stop-words", "french"], "stop_words must be 'english' or 'none'"


def _setup_metric_for_one_label(d):
    path = d / "cooking.train"
    path.write_text("__label__baking bread\n__label__sauce mac and cheese\n")
    return ["train", path, "--metric", "macro-f1"], "--metric macro-f1 judges label sets"


@pytest.mark.parametrize(
    "setup",
    [
        _setup_missing,
        _setup_empty_folder,
        _setup_one_label,
        _setup_empty_files,
        _setup_binary_only_label,
        _setup_predict_empty,
        _setup_predict_binary,
        _setup_predict_huge,
        _setup_missing_model,
        _setup_no_model_at_all,
        _setup_bad_setting,
        _setup_char_ngrams_with_hashing,
        _setup_metric_for_one_label,
        _setup_unknown_stop_words,
        _setup_unknown_linear_loss,
    ],
    ids=lambda f: f.__name__[7:],
)
def test_bad_input(runner, tmp_path, isolated_home, setup):
    args, message = setup(tmp_path)
    result = invoke(runner, *args)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1  # one line, no traceback
    assert not (isolated_home / "models").exists() or not any((isolated_home / "models").iterdir())
    if (isolated_home / "runs.db").exists():
        assert all(r["status"] != "finished" for r in runs.list_runs(open_db(run_db_path(isolated_home / "runs.db"))))


def test_a_fasttext_file_trains_and_a_parquet_file_evaluates_and_predicts(runner, corpus_dir, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    documents = sorted(
        (folder.name, " ".join(file.read_text().split()))
        for folder in corpus_dir.iterdir()
        for file in folder.iterdir()
    )
    train = tmp_path / "sample.train"  # fastText's format, as its tutorial's files are named
    train.write_text("".join(f"__label__{label} {text}\n" for label, text in documents))
    model = tmp_path / "model.npz"
    result = invoke(runner, "train", train, "--out", model, *FAST, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["read_documents"] == 36
    test = tmp_path / "test.parquet"
    pq.write_table(
        pa.table({"text": [text for _, text in documents], "label": [label for label, _ in documents]}), test
    )
    report = json.loads(invoke(runner, "eval", test, "--model", model, "--json").stdout)
    assert report["n"] == 36 and report["accuracy"] > 0.9
    result = invoke(runner, "predict", test, "--model", model)  # one document a row, the label column left out
    assert result.exit_code == 0
    predicted = [line.split("\t")[:2] for line in result.output.splitlines()]
    assert [source for source, _ in predicted] == [f"{test}:{row}" for row in range(1, 37)]
    assert {label for _, label in predicted} == {"cooking", "space", "sports"}  # the names, not "__label__..."


def test_predict_reads_a_folder_as_one_document_a_file(runner, trained, tmp_path):
    inbox = tmp_path / "inbox"
    (inbox / "2024").mkdir(parents=True)
    (inbox / "match.txt").write_text("The striker scored a late goal and the team won the match.")
    (inbox / "2024" / "recipe.md").write_text("Bake the bread in a hot oven with butter and flour.")
    (inbox / ".notes").write_text("hidden")
    (inbox / "scan.pdf").write_bytes(b"%PDF-1.4\x00\x01")
    result = invoke(runner, "predict", inbox, "--model", trained)
    assert result.exit_code == 0, result.output
    assert [line.split("\t")[:2] for line in result.stdout.splitlines()] == [
        [str(inbox / "2024" / "recipe.md"), "cooking"],
        [str(inbox / "match.txt"), "sports"],
    ]
    assert "skipped files: 1 binary, 1 hidden" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke(runner, "predict", empty, "--model", trained)
    assert (
        result.exit_code == 1
        and "folder '" in result.stderr
        and "holds no text file to classify (no files)" in result.stderr
    )


def test_kept_but_reported_inputs(runner, corpus_dir):
    """Dotfiles, nested folders, non-UTF-8 files and oversized files: training goes on and says what it did."""
    (corpus_dir / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (corpus_dir / "space" / ".notes.txt").write_text("hidden")
    (corpus_dir / "space" / "missions" / "apollo").mkdir(parents=True)
    (corpus_dir / "space" / "missions" / "apollo" / "11.txt").write_text("the lunar module landed on the moon")
    (corpus_dir / "cooking" / "crepes.txt").write_bytes("cr\xeapes au beurre, farine et \u0153ufs".encode("cp1252"))
    with (corpus_dir / "sports" / "dump.log").open("wb") as f:
        f.seek(50 * 1024 * 1024)
        f.write(b"x")
    (corpus_dir / "sports" / "blank.txt").write_text("")
    result = invoke(runner, "train", corpus_dir, *FAST, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["skipped"] == {"hidden": 2, "too_large": 1, "empty": 1}
    assert data["non_utf8"] == 1 and data["n_train"] + data["n_eval"] == 38
    result = invoke(runner, "train", corpus_dir, *FAST)
    assert "left out of the corpus: 1 empty, 2 hidden, 1 too large" in result.stderr
    assert "1 documents were not UTF-8" in result.stderr


def test_newer_format_model(runner, trained, tmp_path):
    with np.load(trained) as archive:
        arrays = {k: archive[k] for k in archive.files}
    header = json.loads(str(arrays["header"]))
    header["format_version"] = artifacts.FORMAT_VERSION + 1
    arrays["header"] = np.array(json.dumps(header))
    np.savez(trained, **arrays)
    (tmp_path / "doc.txt").write_text("a rocket")
    result = invoke(runner, "predict", tmp_path / "doc.txt", "--model", trained)
    assert result.exit_code == 1 and "upgrade textclf" in result.stderr


def test_locked_database(runner, corpus_dir, tmp_path):
    db_path = tmp_path / "runs.db"
    open_db(run_db_path(db_path))
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        result = invoke(runner, "train", corpus_dir, *FAST, "--db", db_path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.exit_code == 1 and "is locked by another writer" in result.stderr
    assert runs.list_runs(open_db(run_db_path(db_path))) == []


def test_interrupted_model_write_keeps_the_previous_model(runner, corpus_dir, trained, monkeypatch):
    before = trained.read_bytes()

    def crash(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", crash)
    result = invoke(runner, "train", corpus_dir, "--out", trained, *FAST)
    assert result.exit_code != 0
    assert trained.read_bytes() == before and sorted(p.name for p in trained.parent.iterdir()).count("model.npz") == 1
    assert not [p for p in trained.parent.iterdir() if p.name.endswith(".tmp")]
    last = runs.list_runs(open_db(run_db_path()))[0]
    assert last["status"] == "failed" and "No space left" in last["error"]


def test_cold_train_in_a_real_process_forks_its_vectorizing_workers(tmp_path):
    """`textclf train` as a user starts it: a corpus big enough for worker processes, forked (no JAX imported
    and no other thread yet: the run's heartbeat starts with the JAX warm-up, after the fork; with it running,
    pipelines/workers.py started fresh interpreters instead), JAX started on a thread meanwhile; the run finishes
    and records the device and how it vectorized."""
    import os
    import subprocess
    import sys

    from db import open_db, runs
    from pipelines import vectorize
    from tests.conftest import REPO

    words = {label: [f"{label}{i}" for i in range(50)] for label in ("red", "green")}
    lines = [
        json.dumps({"label": label, "text": " ".join(words[label][(i * 7 + k) % 50] for k in range(8))})
        for i in range(vectorize.chunks.PARALLEL_MIN_DOCS // 2 + 10)
        for label in words
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "TEXTCLF_HOME": str(tmp_path / "home")}
    # The search runs, on a short budget (its own tests time it; this one is about the fork).
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "textclf",
            "train",
            str(corpus),
            "--epochs",
            "1",
            "--search-budget",
            "3",
            "--json",
            "--profile",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["eval_accuracy"] > 0.9 and {"search", "vectorize", "warmup"} <= set(result["phases"])
    # --profile: from the process's start, every phase and the rest, then the exit on stderr
    profile = result["profile"]
    assert list(profile)[1:-1] == list(result["phases"]) and 0 < profile["start-up (interpreter, imports)"] < 60
    assert "profile  exit (handlers, output)" in done.stderr
    [run] = runs.list_runs(open_db(run_db_path(tmp_path / "home" / "runs.db")))
    assert run["status"] == "finished" and run["device"].split(":")[0] in ("cpu", "gpu")
    if os.cpu_count() > 1:  # the run records how it vectorized: forked workers
        assert run["vectorize_workers"].endswith(" forked worker processes"), run["vectorize_workers"]
    # What makes the fork safe: nothing on the way from the command to the vectorizer imports JAX.
    probe = (
        "import sys, textclf.frontends.cli, textclf.runs.run, textclf.training.parallel.processes as d; "
        "d.initialize(); "
        "assert d.is_primary() and 'jax' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, check=True, timeout=120)


def test_the_command_leaves_through_the_exit_handlers_with_its_status_and_output(tmp_path):
    """textclf.frontends.cli.main skips Python's teardown: the exit status, the output written to a pipe and the
    exit handlers must all still be there."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    script = (
        "import atexit, sys; atexit.register(lambda: print('exit handler ran', file=sys.stderr)); "
        "from textclf.frontends.cli import main; sys.argv = ['textclf', *sys.argv[1:]]; main()"
    )
    env = {**os.environ, "TEXTCLF_HOME": str(tmp_path / "home")}

    def textclf(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", script, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )

    failed = textclf("predict", str(tmp_path / "missing.txt"))
    assert failed.returncode == 1
    assert failed.stderr.splitlines()[0].startswith("Error: input file") and "exit handler ran" in failed.stderr
    done = textclf("--version")
    assert done.returncode == 0 and done.stdout.startswith("textclf ") and "exit handler ran" in done.stderr


def test_submit_refuses_a_name_that_leaves_the_models_folder(runner, corpus_dir, db_path):
    result = runner.invoke(app, ["submit", str(corpus_dir), "--name", "../../escaped", "--db", str(db_path)])
    assert result.exit_code == 1
    assert "model name '../../escaped' is not allowed" in result.output
    assert result.output.count("\n") == 1  # one line


def test_version_and_completion(runner):
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("textclf ")
    assert "--install-completion" in runner.invoke(app, ["--help"]).output


def test_error_messages_keep_their_brackets(runner, tmp_path):
    missing = tmp_path / "nonexist_[gpu]"
    result = runner.invoke(app, ["train", str(missing)])
    assert result.exit_code == 1 and "nonexist_[gpu]" in result.output


def test_sigterm_marks_the_run_interrupted(tmp_path):
    """`textclf train` stopped by SIGTERM (a job scheduler's stop): exit 143 and the run recorded interrupted,
    not left 'running'."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    rng = np.random.default_rng(0)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"label": label, "text": " ".join(rng.choice([f"word{i}" for i in range(40)], 30))}) + "\n"
            for label in ("x", "y")
            for _ in range(600)
        )
    )
    env = {**os.environ, "TEXTCLF_HOME": str(tmp_path / "home")}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "textclf",
            "train",
            str(corpus),
            "--search",
            "off",
            "--epochs",
            "500",
            "--batch-size",
            "4",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    db_file = tmp_path / "home" / "runs.db"
    deadline = time.time() + 120
    while time.time() < deadline:  # wait until training has started (an epoch row exists)
        if db_file.exists() and open_db(db_file).execute("select count(*) from epochs").fetchone()[0]:
            break
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr
    [run] = runs.list_runs(open_db(db_file))
    assert run["status"] == "interrupted" and "SIGTERM" in run["error"]


def test_a_typed_epoch_count_is_not_rewritten(runner, corpus_dir, tmp_path):
    result = invoke(
        runner, "train", corpus_dir, "--epochs", "2", "--batch-size", "8", "--json", "--out", tmp_path / "m.npz"
    )
    assert result.exit_code == 0, result.output
    [run] = runs.list_runs(open_db(run_db_path()))
    assert run["settings"]["epochs"] == 2 and len(runs.get_run(open_db(run_db_path()), run["id"])["epochs"]) == 2


def test_typed_nb_weighting_and_weight_decay_are_pinned(runner, corpus_dir, tmp_path):
    result = invoke(
        runner,
        "train",
        corpus_dir,
        "--no-nb-weighting",
        "--weight-decay",
        "0.0001",
        "--epochs",
        "2",
        "--json",
        "--out",
        tmp_path / "m.npz",
    )
    assert result.exit_code == 0, result.output
    [run] = runs.list_runs(open_db(run_db_path()))
    settings = runs.get_run(open_db(run_db_path()), run["id"])["settings"]
    assert settings["nb_weighting"] is False and settings["weight_decay"] == 0.0001
    assert {"nb_weighting", "weight_decay", "epochs"} <= set(settings["pinned"])


def test_no_start_token_trains_a_model_without_it(runner, corpus_dir, tmp_path):
    from textclf.inference.artifacts import read_header

    result = invoke(
        runner,
        "train",
        corpus_dir,
        "--no-start-token",
        "--search",
        "off",
        "--epochs",
        "2",
        "--json",
        "--out",
        tmp_path / "m.npz",
    )
    assert result.exit_code == 0, result.output
    [run] = runs.list_runs(open_db(run_db_path()))
    assert runs.get_run(open_db(run_db_path()), run["id"])["settings"]["start_token"] is False
    header = read_header(tmp_path / "m.npz")
    assert header["format_version"] == 1 and "start_token" not in header["vectorizer"]


def test_chinese_text_trains_on_its_characters_unless_told_otherwise(runner, tmp_path):
    """Each Chinese character a word by default (the model holds the characters and predicts by them); with
    --no-unspaced-as-characters the runs between punctuation stay whole, as scikit-learn's pattern splits them."""
    from textclf.inference.artifacts import load_model

    corpus = tmp_path / "reviews"
    for label, texts in (
        ("good", ["房间很干净，服务很好", "早餐很好吃", "位置很好，交通方便"]),
        ("bad", ["房间太脏了，服务很差", "早餐太难吃", "位置太偏，交通不便"]),
    ):
        (corpus / label).mkdir(parents=True)
        for i, text in enumerate(texts * 4):
            (corpus / label / f"{i}.txt").write_text(text, encoding="utf-8")
    result = invoke(
        runner,
        "train",
        corpus,
        "--search",
        "off",
        "--epochs",
        "30",
        "--lr",
        "0.01",
        "--json",
        "--out",
        tmp_path / "chars.npz",
    )
    assert result.exit_code == 0, result.output
    model = load_model(tmp_path / "chars.npz")
    assert {"很", "好", "太", "很 好"} <= set(model.vectorizer.terms)
    (tmp_path / "new.txt").write_text("服务太差", encoding="utf-8")  # no training text holds it whole
    result = invoke(runner, "predict", tmp_path / "new.txt", "--model", tmp_path / "chars.npz")
    assert result.exit_code == 0 and "bad" in result.output, result.output
    result = invoke(
        runner,
        "train",
        corpus,
        "--search",
        "off",
        "--epochs",
        "2",
        "--no-unspaced-as-characters",
        "--json",
        "--out",
        tmp_path / "runs.npz",
    )
    assert result.exit_code == 0, result.output
    assert "早餐很好吃" in load_model(tmp_path / "runs.npz").vectorizer.terms


def test_submit_takes_every_training_option_and_model_names_resolve(runner, corpus_dir, tmp_path):
    from db import jobs
    from textclf.frontends.daemon import DaemonOptions, run_daemon

    result = invoke(
        runner,
        "submit",
        corpus_dir,
        "--name",
        "sample",
        "--stop-words",
        "none",
        "--ngrams",
        "1",
        "--no-nb-weighting",
        "--search",
        "off",
        *FAST,
    )
    assert result.exit_code == 0, result.output
    job = jobs.get(open_db(run_db_path()), int(result.stdout))
    assert job["settings"]["stop_words"] is None and job["settings"]["ngram_max"] == 1
    assert job["settings"]["hidden"] == 16 and job["settings"]["search"] == "off"
    assert "epochs" in job["settings"]["pinned"]
    assert run_daemon(DaemonOptions(db_path=None, once=True)) == 1
    doc = tmp_path / "doc.txt"
    doc.write_text("The striker scored a late goal and the team won the match.")
    for name in ("sample", "sample@1"):
        result = invoke(runner, "predict", doc, "--model", name)
        assert result.exit_code == 0 and "\tsports\t" in result.output, result.output
    result = invoke(runner, "predict", doc, "--model", "sample@2")
    assert result.exit_code == 1 and "neither a model file nor a published model" in result.output
    result = invoke(runner, "submit", corpus_dir, "--dropout", "0.5")
    assert result.exit_code == 1 and "--dropout applies to image models only" in result.output


def test_runs_list_keeps_its_key_columns_at_80_columns(runner, corpus_dir, trained, tmp_path):
    import re

    from textclf.frontends.cli.records import _runs_table
    from rich.console import Console

    database = open_db(run_db_path())
    failed = runs.start_run(
        database,
        status="running",
        started_at=runs.now(),
        corpus="/a/long/path/to/a_corpus_with_a_rather_long_file_name.jsonl",
        settings={},
    )
    runs.end_run(database, failed, "failed", error="training failed: " + "a long explanation " * 6)
    rows = runs.list_runs(database)
    console = Console(width=80, record=True)
    console.print(_runs_table(rows, 80))
    lines = console.export_text().splitlines()
    assert all(len(line) <= 80 for line in lines)
    data = [line for line in lines if re.match(r"\s*\d+\s", line)]
    assert len(data) == len(rows)
    for row, line in zip(rows, data):
        assert line.split()[0] == str(row["id"]) and row["status"] in line
        if row["eval_accuracy"] is not None:
            assert f"{row['eval_accuracy']:.4f} {row['eval_kind'][:3]}" in line


def test_progress_is_plain_lines_when_stderr_is_not_a_terminal(runner, corpus_dir, tmp_path):
    result = invoke(runner, "train", corpus_dir, "--out", tmp_path / "m.npz", *FAST)
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith("reading the corpus: ") and lines[0].endswith(" s")
    assert any(line.startswith("vectorizing: ") for line in lines)
    assert "epoch 75/75: loss " in result.stderr and "━" not in result.stderr  # every epoch, no bar


def test_progress_names_the_test_corpus_and_each_networks_epochs(runner, tmp_path):
    """With a character network beside the word network, the epochs are numbered across both (as recorded) and
    each line says whose epoch it is; the test file's reading is said to be the test corpus's."""
    rows = [
        {"text": f"{words} {i}", "label": label}
        for i in range(12)
        for label, words in (("space", "rocket orbit moon"), ("cooking", "onion pan garlic"))
    ]
    train, test = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in rows))
    test.write_text("".join(json.dumps(r) + "\n" for r in rows[:6]))
    result = invoke(
        runner,
        "train",
        train,
        "--test",
        test,
        "--char-ngrams",
        "--out",
        tmp_path / "m.npz",
        "--epochs",
        "2",
        "--batch-size",
        "8",
        "--hidden",
        "8",
        "--search",
        "off",
    )
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert sum(line.startswith("reading the corpus: ") for line in lines) == 1
    assert sum(line.startswith("reading the test corpus: ") for line in lines) == 1
    assert "training 4 epochs: the word network, then the character network (the first epoch of each compiles)" in lines
    epochs = [line.split(":")[0] for line in lines if line.startswith("epoch ")]
    assert epochs == [
        "epoch 1/4 (word network, its epoch 1)",
        "epoch 2/4 (word network, its epoch 2)",
        "epoch 3/4 (character network, its epoch 1)",
        "epoch 4/4 (character network, its epoch 2)",
    ]


def test_out_naming_a_folder_is_refused_before_training(runner, corpus_dir, tmp_path):
    result = invoke(runner, "train", corpus_dir, "--out", tmp_path, *FAST)
    assert result.exit_code == 1 and "is a folder: name the model file" in result.stderr
    assert runs.list_runs(open_db(run_db_path())) == []  # refused before any run was recorded


def test_model_files_follow_the_umask(runner, corpus_dir, tmp_path):
    import os

    previous = os.umask(0o027)
    try:
        assert invoke(runner, "train", corpus_dir, "--out", tmp_path / "m.npz", *FAST).exit_code == 0
    finally:
        os.umask(previous)
    assert (tmp_path / "m.npz").stat().st_mode & 0o777 == 0o640


def test_standard_input_is_read_up_to_the_limit_only(runner, trained):
    result = invoke(runner, "predict", "-", "--model", trained, "--max-file-mb", "0.001", input="word " * 1000)
    assert result.exit_code == 1 and "standard input is over --max-file-mb" in result.stderr


def test_a_run_whose_process_is_gone_is_shown_interrupted(runner):
    import socket
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()  # its pid now names no process (or, if reused, one with another start time)
    database = open_db(run_db_path())
    orphan = runs.start_run(
        database, corpus="c.jsonl", settings={}, owner_host=socket.gethostname(), owner_pid=gone.pid, owner_started="1"
    )
    elsewhere = runs.start_run(
        database, corpus="c.jsonl", settings={}, owner_host="another-host", owner_pid=1, heartbeat_at=runs.now()
    )
    from datetime import datetime, timedelta, timezone

    from textclf.runs.owner import STALE_SECONDS

    long_ago = (datetime.now(timezone.utc) - timedelta(seconds=STALE_SECONDS + 60)).isoformat(timespec="seconds")
    silent = runs.start_run(
        database, corpus="c.jsonl", settings={}, owner_host="another-host", owner_pid=2, heartbeat_at=long_ago
    )
    listed = {r["id"]: r for r in json.loads(invoke(runner, "runs", "list", "--json").stdout)}
    assert listed[orphan]["status"] == "interrupted" and f"pid {gone.pid}" in listed[orphan]["error"]
    # another host's process cannot be checked from here: its heartbeat decides
    assert listed[elsewhere]["status"] == "running"
    assert (
        listed[silent]["status"] == "interrupted"
        and f"no heartbeat from its process (pid 2 on another-host) since {long_ago}" in listed[silent]["error"]
    )


def test_a_run_beats_in_phases_without_epochs(tmp_path, monkeypatch):
    """The heartbeat comes from a thread: a long phase with no epoch (here the vectorizing, held for 0.5 s)
    still shows life."""
    import time as clock

    from textclf.runs import owner, run as run_module, text_data
    from textclf.settings import Settings

    monkeypatch.setattr(owner, "HEARTBEAT_SECONDS", 0.05)
    beats = []
    real_update = runs.update_run

    def spy(db, run_id, **fields):
        if "heartbeat_at" in fields:
            beats.append(clock.monotonic())
        return real_update(db, run_id, **fields)

    monkeypatch.setattr(runs, "update_run", spy)
    texts = [f"fry the onions {i}" for i in range(30)] + [f"the rocket launched {i}" for i in range(30)]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"text": t, "label": t.split()[1]}) + "\n" for t in texts))
    real_fit = text_data.fit_vectorizer

    def slow_fit(*args, **kwargs):
        clock.sleep(0.5)
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(text_data, "fit_vectorizer", slow_fit)
    run_module.train(
        corpus,
        Settings(search="off", epochs=1, min_steps=0, hidden=4, features=64),
        db_path=tmp_path / "runs.db",
        model_path=tmp_path / "m.npz",
    )
    assert len(beats) >= 5  # ~10 beats in the half second of vectorizing alone


def test_a_locked_database_mid_training_delays_the_epoch_rows_not_the_training(
    runner, corpus_dir, tmp_path, monkeypatch
):
    from db.errors import DatabaseError

    real, calls = runs.add_epoch, []

    def locked_twice(*args, **kwargs):
        calls.append(1)
        if len(calls) in (3, 4):  # another writer holds the lock during epochs 3 and 4
            raise DatabaseError("run database is locked by another writer")
        return real(*args, **kwargs)

    monkeypatch.setattr(runs, "add_epoch", locked_twice)
    result = invoke(runner, "train", corpus_dir, "--out", tmp_path / "m.npz", *FAST)
    assert result.exit_code == 0, result.output
    [run] = runs.list_runs(open_db(run_db_path()))
    recorded = runs.get_run(open_db(run_db_path()), run["id"])
    assert run["status"] == "finished" and [e["epoch"] for e in recorded["epochs"]] == list(range(1, 76))
    assert recorded["owner_pid"] and recorded["heartbeat_at"]


def test_a_damaged_database_is_one_line_in_every_command(runner, tmp_path):
    path = tmp_path / "runs.db"
    database = open_db(path)
    for i in range(400):  # enough rows for pages beyond the schema's
        runs.start_run(database, corpus=f"corpus-{i}.jsonl" * 20, settings={"seed": i})
    database.conn.close()
    data = bytearray(path.read_bytes())
    page = 4096
    damaged = len(data) - 3 * page
    data[page:damaged] = b"\xff" * (damaged - page)  # every page but the header's and the last two
    path.write_bytes(bytes(data))
    for command in (["runs", "list"], ["runs", "show", "3"], ["jobs", "list"]):
        result = invoke(runner, *command, "--db", path)
        assert result.exit_code == 1, (command, result.output)
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
        assert "Traceback" not in result.output


def test_a_run_records_its_corpus_resolved_and_the_csv_names_its_metric(runner, corpus_dir, monkeypatch):
    """One corpus, one name in the history whichever folder the command ran from (the daemon records absolute
    paths); the CSV carries the metric beside the score, as the table shows it."""
    monkeypatch.chdir(corpus_dir.parent)
    assert invoke(runner, "train", corpus_dir.name, *FAST).exit_code == 0
    [run] = json.loads(invoke(runner, "runs", "list", "--json").stdout)
    assert run["corpus"] == str(corpus_dir.resolve())
    [row] = list(csv.DictReader(io.StringIO(invoke(runner, "runs", "list", "--csv").stdout)))
    assert {"eval_accuracy", "eval_metric", "eval_score"} <= set(row)


@pytest.mark.parametrize("command", [["runs", "list"], ["jobs", "list"]])
@pytest.mark.parametrize("limit", ["0", "-1", str(2**63), "100000000000000000000000"])
def test_a_limit_out_of_range_is_refused_with_the_range_not_as_a_damaged_database(runner, command, limit):
    result = invoke(runner, *command, "--limit", limit)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.output
    assert f"--limit {limit}: pass how many of the newest" in result.stderr and "damaged" not in result.stderr
    assert invoke(runner, *command, "--limit", str(2**63 - 1)).exit_code == 0


@pytest.mark.parametrize(
    "name, value, fragment",
    [
        ("TEXTCLF_DB_TIMEOUT", "abc", "TEXTCLF_DB_TIMEOUT='abc' is not a number of seconds"),
        ("TEXTCLF_DB_TIMEOUT", "-1", "TEXTCLF_DB_TIMEOUT='-1' is not a number of seconds"),
        ("TEXTCLF_DB_TIMEOUT", "nan", "TEXTCLF_DB_TIMEOUT='nan' is not a number of seconds"),
        ("SLURM_NTASKS", "many", "SLURM_NTASKS='many' is not a task count"),
        ("TEXTCLF_COORDINATOR", "host:1", "TEXTCLF_NUM_PROCESSES / TEXTCLF_PROCESS_ID are missing"),
    ],
)
def test_bad_environment_variables_are_one_line_errors(runner, corpus_dir, monkeypatch, name, value, fragment):
    monkeypatch.setenv(name, value)
    monkeypatch.setenv("SLURM_PROCID", "0")
    result = invoke(runner, "train", corpus_dir, *FAST)
    assert result.exit_code == 1 and result.stderr.startswith("Error: ") and fragment in result.stderr
    assert result.stderr.count("\n") == 1


def test_reading_and_vectorizing_tell_their_progress(runner, tmp_path, monkeypatch):
    monkeypatch.setattr("pipelines.corpus.PROGRESS_DOCUMENTS", 10)
    monkeypatch.setattr("textclf.frontends.cli.base.STEPS_LINE_SECONDS", 0.0)  # every report a line
    corpus = tmp_path / "corpus.jsonl"
    words = {"space": "rocket orbit moon launch", "cooking": "onion pan fry garlic"}
    corpus.write_text(
        "".join(
            json.dumps({"text": f"{words[label]} {i}", "label": label}) + "\n" for i in range(30) for label in words
        )
    )
    size_mb = corpus.stat().st_size / 1e6
    result = invoke(runner, "train", corpus, "--out", tmp_path / "m.npz", *FAST)
    assert result.exit_code == 0, result.output
    reading = [line for line in result.stderr.splitlines() if line.startswith("  reading the corpus: ")]
    # every 10 documents, and at the end: the documents, the megabytes of the file and a rate
    assert [line.split(":")[1].split()[0] for line in reading] == ["10", "20", "30", "40", "50", "60", "60"]
    assert all(f"/{size_mb:,.0f} MB, " in line and "MB/s" in line for line in reading)
    vectorizing = [line for line in result.stderr.splitlines() if line.startswith("  vectorizing: ")]
    assert (
        vectorizing
        and vectorizing[-1].split(":")[1].split()[0].split("/")[0]
        == vectorizing[-1].split(":")[1].split()[0].split("/")[1]
    )  # the last says all of them


def test_reading_a_folder_tells_documents_not_bytes(runner, corpus_dir, tmp_path, monkeypatch):
    monkeypatch.setattr("pipelines.corpus.PROGRESS_DOCUMENTS", 10)
    monkeypatch.setattr("textclf.frontends.cli.base.STEPS_LINE_SECONDS", 0.0)
    result = invoke(runner, "train", corpus_dir, "--out", tmp_path / "m.npz", *FAST)
    assert result.exit_code == 0, result.output
    reading = [line for line in result.stderr.splitlines() if line.startswith("  reading the corpus: ")]
    assert reading and all("MB" not in line and "documents/s" in line for line in reading)


def test_runs_show_says_what_the_defaults_were_kept_over(runner):
    database = open_db(run_db_path())
    chosen = {"stop_words": "english", "ngram_max": 2, "nb_weighting": True, "learning_rate": 0.01, "epochs": 5}
    over = {**chosen, "stop_words": None, "learning_rate": 0.003, "epochs": 9}
    search = {
        "rounds": 3,
        "rounds_planned": 10,
        "folds": 1,
        "seconds": 17.1,
        "budget_s": 20.0,
        "chosen": chosen,
        "kept_defaults": {"over": over, "by": 0.883},
        "leaderboard": [
            {"settings": chosen, "accuracy": 0.882, "folds": 1},
            {"settings": over, "accuracy": 0.883, "folds": 1},
        ],
    }
    run_id = runs.start_run(database, corpus="c.jsonl", settings={}, versions={}, search=search)
    shown = invoke(runner, "runs", "show", run_id)
    assert shown.exit_code == 0
    line = next(line for line in shown.output.splitlines() if line.startswith("defaults kept"))
    assert '"stop_words": null' in line and "0.8830: within a standard error" in line


def test_runs_show_says_a_big_corpus_trained_with_a_larger_batch(runner):
    database = open_db(run_db_path())
    chosen = {
        "stop_words": None,
        "ngram_max": 1,
        "nb_weighting": False,
        "learning_rate": 0.001,
        "epochs": 8,
        "batch_size": 64,
    }
    search = {
        "rounds": 10,
        "rounds_planned": 10,
        "folds": 1,
        "seconds": 17.8,
        "budget_s": 60.0,
        "chosen": chosen,
        "batch_for_all": {"sample": 64, "all": 256, "documents": 1_000_000, "epoch_steps": 4096},
        "leaderboard": [{"settings": chosen, "accuracy": 0.99, "folds": 1}],
    }
    run_id = runs.start_run(database, corpus="c.jsonl", settings={}, versions={}, search=search)
    shown = invoke(runner, "runs", "show", run_id)
    assert shown.exit_code == 0
    line = next(line for line in shown.output.splitlines() if line.startswith("batch for all"))
    assert "256 (the sample chose 64; 1,000,000 documents: at most 4,096 steps an epoch)" in line


def test_fasttext_habits_lines_all_labels_threshold_and_its_output_format(runner, trained, tmp_path):
    doc = tmp_path / "test.txt"
    doc.write_text("the rocket reached orbit\n\nfry the onions in butter\nthe striker scored\n")
    whole = invoke(runner, "predict", str(doc), "--model", trained)  # a .txt is one document...
    assert whole.exit_code == 0 and len(whole.output.splitlines()) == 1
    result = invoke(runner, "predict", "--lines", str(doc), "--model", trained, "--format", "fasttext", "-k", "-1")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()  # ...or one a line: a line out an input line, the blank one empty
    assert len(lines) == 4 and lines[1] == "" and "1 input line(s) with no text" in result.stderr
    rows = [line.split() for line in lines if line]
    assert len(rows) == 3 and all(len(row) == 6 for row in rows)  # every label: __label__X p, three of them
    assert all(row[0].startswith("__label__") and float(row[1]) >= float(row[3]) >= float(row[5]) for row in rows)
    assert all(abs(sum(map(float, row[1::2])) - 1) < 1e-3 for row in rows)
    first = invoke(runner, "predict", "--lines", str(doc), "--model", trained, "--format", "fasttext")
    assert first.stdout.split("\n")[0].split() == rows[0][:2]  # fastText's default: one label
    bare = invoke(runner, "predict", "--lines", str(doc), "--model", trained, "--format", "fasttext-labels", "-k", "2")
    assert [line.split() for line in bare.stdout.splitlines()] == [rows[0][0:3:2], [], rows[1][0:3:2], rows[2][0:3:2]]
    strict = invoke(runner, "predict", "--lines", str(doc), "--model", trained, "--json", "-k", "-1", "-t", "0.999")
    assert strict.exit_code == 0 and all(
        json.loads(line) == {"file": json.loads(line)["file"], "label": None, "top": []}
        for line in strict.stdout.splitlines()
    )
    for option, fragment in (
        (["-k", "0"], "--top-k is 0"),
        (["-k", "-2"], "--top-k is -2"),
        (["-t", "1.5"], "--threshold is 1.5"),
        (["--format", "xml"], "--format is 'xml'"),
        (["--json", "--format", "fasttext"], "disagree"),
    ):
        refused = invoke(runner, "predict", str(doc), "--model", trained, *option)
        assert refused.exit_code == 1 and fragment in refused.output, (option, refused.output)


def test_runs_show_says_which_family_won_and_by_how_much():
    from textclf.frontends.cli.records import _family_line as line_of
    from textclf.training.search.summary import FamilySummary

    def _family_line(record):  # a recorded trial, as `runs show` reads it
        return line_of(FamilySummary.from_record(record))

    trial = {
        "chosen": "network+linear",
        "network_score": 0.8586,
        "linear_score": 0.8578,
        "by": -0.0008,
        "standard_error": 0.0058,
        "margin": 0.0058,
        "linear_learning_rate": 0.1,
        "linear_weight_decay": 3e-05,
        "linear_epochs": 7,
        "folds": 2,
        "mixed_score": 0.8614,
        "mixed_by": 0.0028,
        "mixed_standard_error": 0.0027,
    }
    line = _family_line(trial)
    assert line.startswith("network+linear: validation linear 0.8578 against the network's 0.8586 (-0.08 points")
    assert "beside the network 0.8614 (+0.28 points, one standard error 0.27)" in line
    assert "7 epochs, 2 fold(s)" in line  # a run recorded before the loss was: no loss named
    assert "7 epochs, squared hinge loss, 2 fold(s)" in _family_line({**trial, "linear_loss": "squared_hinge"})
    untried = _family_line(
        {
            **{k: v for k, v in trial.items() if not k.startswith("mixed")},
            "chosen": "network",
            "mixed_not_tried": "label sets",
        }
    )
    assert untried.endswith("beside the network not tried: label sets")


def test_the_command_line_imports_no_heavy_library_before_a_command_needs_it():
    """`textclf --help` answers without JAX, scikit-learn, sqlite-utils (which imports pandas) or pyarrow: each
    command imports what it uses when it runs."""
    import subprocess
    import sys

    from tests.conftest import REPO

    probe = (
        "import sys, textclf.frontends.cli; "
        "heavy = sorted({n.split('.')[0] for n in sys.modules} & {'jax', 'sklearn', 'sqlite_utils', 'pandas', "
        "'pyarrow', 'scipy', 'numpy'}); print(','.join(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", done.stdout


NAME = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda name: not name.startswith("__label__")
)


def _fields(line: str, separator: str) -> list[str]:
    """A line split at its unescaped separators, each field's backslash escapes read back."""
    fields, field, chars = [], [], iter(line)
    for c in chars:
        if c == "\\":
            nxt = next(chars)
            field.append({"t": "\t", "n": "\n", "r": "\r", "s": " "}.get(nxt, nxt))
        elif c == separator:
            fields.append("".join(field))
            field = []
        else:
            field.append(c)
    return [*fields, "".join(field)]


@given(source=NAME, labels=st.lists(NAME, min_size=2, max_size=4, unique=True), multi=st.booleans())
def test_a_prediction_line_splits_into_its_fields_whatever_the_names_hold(source, labels, multi):
    """Names and sources holding the output's own separators (tabs, line breaks, spaces, commas, backslashes) are
    escaped: one line a document in every format, and each name read back from its field."""
    from textclf.frontends.cli.classify import _prediction_line
    from textclf.inference.predict import Prediction

    top = [(label, 0.5 / (rank + 1)) for rank, label in enumerate(labels)]
    p = Prediction(source, labels[0], top, labels[:2] if multi else None, [0.5, 0.25] if multi else None)
    line = _prediction_line(p, "text", 3)
    assert "\n" not in line and "\r" not in line
    raw = line.split("\t")  # a tab inside a name is escaped: the line's tabs are its two separators
    assert len(raw) == 3 and _fields(raw[0], "\t") == [source]
    assert _fields(raw[1], ",") == (labels[:2] if multi else [labels[0]])
    for output_format in ("fasttext", "fasttext-labels"):
        words = _fields(_prediction_line(p, output_format, -1), " ")
        names = [word[len("__label__") :] for word in words if word.startswith("__label__")]
        assert names == (labels if not multi else labels[:2])
