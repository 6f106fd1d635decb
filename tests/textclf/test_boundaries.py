"""Faults at the boundaries, one test a kind: paths that leave the data root, files that never end, writes over what
the user did not name, damaged model files, settings past their bounds, out-of-range ids and ports, closed input.
Each must give one clean line (or a 4xx) and lose nothing."""

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from db import jobs, open_db
from pipelines.confine import confined_to
from pipelines.corpus import read_corpus
from pipelines.errors import CorpusError
from textclf.errors import ArtifactError, SettingsError
from textclf.frontends.cli import app
from textclf.frontends.daemon import DaemonOptions, run_daemon
from textclf.frontends.service import ServiceOptions, create_app
from textclf.inference.artifacts import load_model
from textclf.settings import Settings

REPO = Path(__file__).resolve().parents[2]
FAST = ["--search", "off", "--epochs", "2", "--hidden", "16"]


def invoke(*args, input=None):
    return CliRunner().invoke(app, [str(a) for a in args], input=input)


def test_links_out_of_the_data_root_are_not_read(corpus_dir, tmp_path):
    root = corpus_dir.parent
    secret = tmp_path.parent / f"{tmp_path.name}-outside"
    secret.mkdir()
    (secret / "passwd.txt").write_text("root nologin shadow bin bash " * 20)
    (corpus_dir / "sports" / "passwd.txt").symlink_to(secret / "passwd.txt")
    (corpus_dir / "space" / "etc").symlink_to(secret, target_is_directory=True)
    (corpus_dir / "cooking" / "inside.txt").symlink_to(
        corpus_dir / "cooking" / sorted(p.name for p in (corpus_dir / "cooking").iterdir())[0]
    )  # a link that stays inside is fine
    with confined_to(root):
        corpus = read_corpus(corpus_dir)
        assert corpus.skipped["outside the data root"] == 2
        assert not any("nologin" in text for text in corpus.texts)
        outside_link = root / "escape.jsonl"
        outside_link.symlink_to(secret / "passwd.txt")
        with pytest.raises(CorpusError, match="outside the data root"):
            read_corpus(outside_link)
    assert any("nologin" in text for text in read_corpus(corpus_dir).texts)  # unconfined: the user's own read


def test_a_label_folder_that_links_out_of_the_data_root_is_refused_for_that_reason(corpus_dir, tmp_path):
    secret = tmp_path.parent / f"{tmp_path.name}-label"
    secret.mkdir()
    (secret / "1.txt").write_text("root nologin shadow bin bash")
    (corpus_dir / "secrets").symlink_to(secret, target_is_directory=True)
    with (
        confined_to(corpus_dir.parent),
        pytest.raises(
            CorpusError,
            match=r"label 'secrets' .* has no usable "
            r"document \(the corpus left out: 1 outside the data root\)",
        ),
    ):
        read_corpus(corpus_dir)


def test_a_job_over_http_trains_only_on_files_under_the_data_root(corpus_dir, tmp_path, db_path):
    secret = tmp_path.parent / f"{tmp_path.name}-etc"
    secret.mkdir()
    (secret / "shadow").write_text("nologin daemonuser sbinbash " * 50)
    for label in ("sports", "space"):
        (corpus_dir / label / "leak.txt").symlink_to(secret / "shadow")
    options = ServiceOptions(db_path=db_path, token="t", data_root=corpus_dir.parent)
    with TestClient(create_app(options)) as client:
        created = client.post(
            "/v1/jobs",
            headers={"Authorization": "Bearer t"},
            json={"corpus": str(corpus_dir), "name": "leak", "settings": {"search": "off", "epochs": 2, "hidden": 16}},
        )
        assert created.status_code == 201, created.text
    assert run_daemon(DaemonOptions(db_path=db_path, once=True)) == 1
    model = load_model(open_db(db_path)["models"].get(("leak", 1))["path"])
    assert not {"nologin", "daemonuser", "sbinbash"} & set(model.vectorizer.terms)


def test_files_that_never_end_are_refused_before_they_are_opened(tmp_path):
    fifo = tmp_path / "corpus.jsonl"
    os.mkfifo(fifo)
    # In a subprocess with a deadline: a regression would block in open(), not fail.
    for args, fragment in (
        (["train", fifo], "not a regular file or a folder"),
        (["predict", fifo, "--model", fifo], "not a regular file"),
        (["predict", "/dev/zero", "--model", fifo], "not a regular file"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "textclf", *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 1 and fragment in done.stderr and "Traceback" not in done.stderr, done.stderr
    with pytest.raises(ArtifactError, match="not a regular file"):
        load_model(fifo)


def test_out_never_writes_over_what_the_user_did_not_name(corpus_dir, tmp_path):
    jsonl = tmp_path / "corpus.jsonl"
    jsonl.write_text("".join(f'{{"text": "{w} {w} words", "label": "{w}"}}\n' for w in ["a", "b"] * 30))
    before = jsonl.read_bytes()
    for out, fragment in (
        (jsonl, "would write over the corpus"),
        (corpus_dir / "sports" / "m.npz", "over the corpus"),
        (f"{tmp_path / 'newdir'}/", "is a folder"),
        ("/dev/null", "not a regular file"),
    ):
        source = jsonl if out == jsonl else corpus_dir
        result = invoke("train", source, "--out", out, *FAST)
        assert result.exit_code == 1 and fragment in result.output, (out, result.output)
    assert jsonl.read_bytes() == before and not (tmp_path / "newdir").exists()
    assert not (corpus_dir / "sports" / "m.npz").exists()


def test_an_out_another_running_training_claims_is_refused(corpus_dir, tmp_path, db_path):
    from db import runs

    out = (tmp_path / "m.npz").resolve()
    db = open_db(db_path)
    holder = runs.start_run(
        db,
        corpus="elsewhere",
        model_path=str(out),
        owner_host=os.uname().nodename,
        owner_pid=os.getpid(),
        owner_started=None,
    )
    result = invoke("train", corpus_dir, "--out", out, "--db", db_path, *FAST)
    assert result.exit_code == 1 and f"being written by run {holder}" in result.output
    assert [run["id"] for run in runs.running_runs(db)] == [holder]  # the refused training left no run behind
    runs.end_run(db, holder, "failed", model_path=None)
    assert invoke("train", corpus_dir, "--out", out, "--db", db_path, *FAST).exit_code == 0
    latest = runs.get_run(db, holder + 1)
    assert latest["status"] == "finished" and latest["model_path"] == str(out)


@pytest.fixture
def model_file(corpus_dir, tmp_path):
    out = tmp_path / "good.npz"
    assert invoke("train", corpus_dir, "--out", out, *FAST).exit_code == 0
    return out


def _rewritten(source: Path, target: Path, **changes) -> Path:
    with np.load(source, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    np.savez(target, **{**arrays, **changes})
    return target


def test_damaged_model_files_are_refused_in_the_cli_and_the_service(model_file, tmp_path):
    with np.load(model_file, allow_pickle=False) as archive:
        w1, w2 = archive["w1"], archive["w2"]
    damaged = {
        "nan": (_rewritten(model_file, tmp_path / "nan.npz", w2=np.full_like(w2, np.nan)), "not finite"),
        "inf": (_rewritten(model_file, tmp_path / "inf.npz", w1=np.full_like(w1, np.inf)), "not finite"),
        "int": (_rewritten(model_file, tmp_path / "int.npz", w1=w1.astype(np.int64)), "stored as int64"),
    }
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(model_file) as good, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as out:
        for info in good.infolist():
            out.writestr(info.filename, good.read(info.filename))
        with out.open("padding.npy", "w", force_zip64=True) as member:
            for _ in range(64):
                member.write(bytes(1 << 24))  # 1 GiB of zeros, a megabyte or so on disk
    damaged["bomb"] = (bomb, "would inflate")
    for name, (path, fragment) in damaged.items():
        began = time.perf_counter()
        with pytest.raises(ArtifactError, match=fragment):
            load_model(path)
        assert time.perf_counter() - began < 1, name
        result = invoke("predict", REPO / "examples" / "recipe.txt", "--model", path, "--json")
        assert result.exit_code == 1 and "is damaged" in result.output and "NaN" not in result.stdout, name


def test_settings_past_their_bounds_are_refused_by_name_everywhere(corpus_dir, db_path):
    for field, value, fragment in (
        ("epochs", 10**30, "epochs must be 1 to 10,000"),
        ("hidden", 10**9, "hidden must be 1 to 16,384"),
        ("batch_size", 2**40, "batch_size must be 1 to"),
        ("learning_rate", float("inf"), "learning_rate must be > 0"),
    ):
        with pytest.raises(SettingsError, match=fragment):
            Settings(**{field: value})
        if value != float("inf"):
            result = invoke("train", corpus_dir, f"--{field.replace('_', '-')}", value, "--search", "off")
            assert result.exit_code == 1 and fragment in result.output, result.output
    from textclf.estimator import TextClassifier

    with pytest.raises(SettingsError, match="hidden must be 1 to 16,384"):
        TextClassifier(hidden=10**9, search="off").fit(["a b", "c d", "a a", "c c"], ["x", "y", "x", "y"])
    with TestClient(create_app(ServiceOptions(db_path=db_path, token="t", data_root=corpus_dir.parent))) as client:
        refused = client.post(
            "/v1/jobs",
            headers={"Authorization": "Bearer t"},
            json={"corpus": str(corpus_dir), "settings": {"epochs": 10**30}},
        )
        assert refused.status_code in (400, 422) and "epochs" in refused.json()["error"]
        assert jobs.list_jobs(open_db(db_path)) == []


def test_the_service_refuses_an_empty_document_as_predict_does(model_file, db_path, tmp_path):
    jobs.publish_model(open_db(db_path), "m", path=str(model_file), eval_accuracy=1.0)
    with TestClient(create_app(ServiceOptions(db_path=db_path))) as client:
        for body in ({"instances": [""]}, {"instances": ["ok", "   "]}):
            refused = client.post("/v1/models/m:predict", json=body)
            assert refused.status_code == 400 and "is empty" in refused.json()["error"]
        infer = client.post(
            "/v2/models/m/infer", json={"inputs": [{"name": "text", "shape": [1], "datatype": "BYTES", "data": [""]}]}
        )
        assert infer.status_code == 400 and "is empty" in infer.json()["error"]
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    result = invoke("predict", empty, "--model", model_file)
    assert result.exit_code == 1 and "is empty" in result.output


def test_out_of_range_ids_ports_and_closed_input_get_one_line():
    for args, fragment in (
        (["runs", "show", 10**20], "does not exist"),
        (["jobs", "show", 10**20], "does not exist"),
        (["serve", "--port", 99999], "not a TCP port"),
    ):
        result = invoke(*args)
        assert result.exit_code == 1 and fragment in result.output, (args, result.output)
    closed = subprocess.run(
        [sys.executable, "-m", "textclf", "predict", "-"],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert closed.returncode == 1 and "Traceback" not in closed.stderr
    shut = subprocess.run(
        f"{sys.executable} -m textclf predict - <&-", shell=True, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert shut.returncode == 1 and "standard input is closed" in shut.stderr, shut.stderr


def test_a_home_or_cache_that_is_a_file_is_named(tmp_path, monkeypatch):
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    monkeypatch.setenv("TEXTCLF_HOME", str(a_file))
    monkeypatch.delenv("TEXTCLF_DB", raising=False)
    result = invoke("runs", "list")
    assert result.exit_code == 1 and "TEXTCLF_HOME is" in result.output and "--db" not in result.output


def test_a_full_disk_is_one_line_and_loses_nothing_recorded(corpus_dir, tmp_path, db_path, monkeypatch):
    import errno

    import pipelines.files

    out = tmp_path / "m.npz"
    assert invoke("train", corpus_dir, "--out", out, "--db", db_path, *FAST).exit_code == 0
    before = out.read_bytes()

    def full(handle, **arrays):
        handle.write(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device", str(out))

    monkeypatch.setattr(pipelines.files.np, "savez", full)
    result = invoke("train", corpus_dir, "--out", out, "--db", db_path, *FAST)
    assert result.exit_code == 1 and "No space left on device; free some space" in result.output
    assert "Traceback" not in result.output and out.read_bytes() == before  # the old model, whole
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".m.npz")] == []  # no temporary file left
    listed = invoke("runs", "list", "--db", db_path, "--json")
    assert listed.exit_code == 0 and [r["status"] for r in json.loads(listed.stdout)][:2] == ["failed", "finished"]


def test_the_run_records_the_epochs_that_ran(corpus_dir, tmp_path, db_path):
    # 36 documents: the small-corpus rule (min_steps) runs more epochs than the default 10; the record says so
    assert (
        invoke(
            "train", corpus_dir, "--out", tmp_path / "m.npz", "--db", db_path, "--search", "off", "--hidden", "16"
        ).exit_code
        == 0
    )
    run = json.loads(invoke("runs", "show", 1, "--db", db_path, "--json").stdout)
    assert run["settings"]["epochs"] == len(run["epochs"]) > 10
