"""The training daemon: in-process, and as a real subprocess stopped by SIGTERM and killed by SIGKILL."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from db import jobs, open_db
from db import runs
from textclf.inference.artifacts import load_model
from textclf.training.checkpoint import Checkpointer
from textclf.frontends.daemon import DaemonOptions, checkpoint_path, run_daemon

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def slow_corpus(tmp_path) -> Path:
    """3 labels x 1000 documents of 40 words: a few tenths of a second per epoch at batch 8 on a CPU."""
    rng = random.Random(0)
    vocab = {label: [f"{label}{i}" for i in range(300)] for label in ("red", "green", "blue")}
    shared = [f"common{i}" for i in range(300)]
    path = tmp_path / "slow.jsonl"
    with path.open("w") as out:
        for label, words in vocab.items():
            for _ in range(1000):
                text = " ".join(rng.choice(words if rng.random() < 0.3 else shared) for _ in range(40))
                out.write(json.dumps({"text": text, "label": label}) + "\n")
    return path


def test_daemon_runs_queued_jobs_and_publishes_versions(corpus_dir, db_path, fast_settings, isolated_home):
    db = open_db(db_path)
    first = jobs.submit(db, str(corpus_dir), fast_settings.to_dict(), "sample")
    second = jobs.submit(db, str(corpus_dir), fast_settings.replace(seed=1).to_dict(), "sample")
    bad = jobs.submit(db, str(corpus_dir / "missing"), fast_settings.to_dict(), "sample")
    assert run_daemon(DaemonOptions(db_path=db_path, once=True, publish="always")) == 3
    done = [jobs.get(db, i) for i in (first, second, bad)]
    assert [j["status"] for j in done] == ["succeeded", "succeeded", "failed"]
    assert [j["model_version"] for j in done[:2]] == [1, 2] and "does not exist" in done[2]["error"]
    model = db["models"].get(("sample", 2))
    assert Path(model["path"]).name == "v2.textclf.npz" and load_model(model["path"]).labels == [
        "cooking",
        "space",
        "sports",
    ]
    assert runs.get_run(db, done[1]["run_id"])["status"] == "finished"
    assert runs.get_run(db, done[1]["run_id"])["model_path"] == model["path"]  # the published file, not the temporary
    assert Path(runs.latest_model_path(db)).exists()  # what predict and eval use without --model
    assert not checkpoint_path(first).exists()


def _start_daemon(db_path, home, *extra):
    env = {**os.environ, "TEXTCLF_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "textclf",
            "daemon",
            "--db",
            str(db_path),
            "--once",
            "--heartbeat",
            "0.2",
            "--checkpoint-every",
            "0",
            *extra,
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_for_epochs(db_path, job_id, count, timeout=120):
    deadline = time.time() + timeout
    db = open_db(db_path)
    while time.time() < deadline:
        rows = db.execute(
            "select count(*) from epochs e join runs r on r.id = e.run_id where r.status = 'running'"
        ).fetchone()[0]
        if rows >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not reach {count} epochs in {timeout} s")


def _submit_slow(db_path, corpus):
    # 40 epochs, so the daemon is still mid-run when the signal lands however slow the machine is to react.
    settings = {"epochs": 40, "batch_size": 8, "min_steps": 0, "hidden": 32, "features": 1000, "search": "off"}
    return jobs.submit(open_db(db_path), str(corpus), settings, "slow")


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_stopped_daemon_job_resumes_from_checkpoint(slow_corpus, db_path, isolated_home, how):
    job_id = _submit_slow(db_path, slow_corpus)
    daemon = _start_daemon(db_path, isolated_home)
    _wait_for_epochs(db_path, job_id, 2)
    # The epoch row is written just before its checkpoint: wait for the checkpoint too, or a SIGKILL landing
    # between the two (seen on a loaded machine) leaves one checkpointed epoch.
    deadline = time.time() + 60
    while _checkpoint_epochs(job_id) < 2 and time.time() < deadline:
        time.sleep(0.02)
    daemon.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
    output, _ = daemon.communicate(timeout=60)
    db = open_db(db_path)
    job = jobs.get(db, job_id)
    done = _checkpoint_epochs(job_id)
    assert done >= 2
    if how == "sigterm":
        assert daemon.returncode == 0, output
        assert job["status"] == "queued" and job["attempts"] == 0  # given back, attempt not used
        assert runs.list_runs(db)[0]["status"] == "interrupted"
    else:
        assert daemon.returncode == -signal.SIGKILL
        assert job["status"] == "running"  # until its heartbeat goes stale
        time.sleep(1.0)
    restarted = _start_daemon(db_path, isolated_home, "--stale-after", "0.5")
    output, _ = restarted.communicate(timeout=180)
    assert restarted.returncode == 0, output
    job = jobs.get(db, job_id)
    assert job["status"] == "succeeded", output
    assert job["attempts"] == (1 if how == "sigterm" else 2)
    resumed = runs.get_run(db, job["run_id"])
    assert resumed["epochs"][0]["epoch"] == done + 1 and resumed["epochs"][-1]["epoch"] == 40
    # no run is left `running`: the killed daemon's run is interrupted, and the run that resumed it says so
    first = runs.list_runs(db)[-1]
    assert first["status"] == "interrupted" and first["id"] != resumed["id"]
    assert all(r["status"] != "running" for r in runs.list_runs(db))
    assert resumed["resumes_run"] == first["id"]
    if how == "sigkill":
        assert "ended without recording an end" in first["error"] or "taken over" in first["error"]
    assert load_model(db["models"].get(("slow", 1))["path"]).labels == ["blue", "green", "red"]


def _checkpoint_epochs(job_id) -> int:
    state = Checkpointer(checkpoint_path(job_id)).load()
    return state.epochs_done if state else 0


def test_a_worse_model_is_held_not_published(corpus_dir, db_path, fast_settings, isolated_home):
    db = open_db(db_path)
    good = jobs.submit(db, str(corpus_dir), fast_settings.to_dict(), "sample")
    # one epoch of a tiny rate: the same corpus, a model no better than chance
    worse = jobs.submit(
        db,
        str(corpus_dir),
        fast_settings.replace(epochs=1, learning_rate=1e-6, min_steps=0, pinned=("epochs",)).to_dict(),
        "sample",
    )
    assert run_daemon(DaemonOptions(db_path=db_path, once=True)) == 2
    held = jobs.get(db, worse)
    assert jobs.get(db, good)["model_version"] == 1
    assert held["status"] == "held" and held["model_version"] is None and "not published" in held["error"]
    assert [row["version"] for row in db["models"].rows] == [1]  # the service keeps serving v1
    run = runs.get_run(db, held["run_id"])
    assert run["publish_decision"] == held["error"] and Path(run["model_path"]).exists()
    assert runs.get_run(db, jobs.get(db, good)["run_id"])["publish_decision"] == "published as v1"


def test_a_full_disk_during_the_model_write_publishes_nothing_half_written(
    corpus_dir, db_path, fast_settings, isolated_home, monkeypatch
):
    """The disk fills while the job's model file is written: the job fails with the reason, its run is failed
    (not left running), no version is published, no temporary file is left, and the serving version stays."""
    import errno

    import numpy as np

    db = open_db(db_path)
    first = jobs.submit(db, str(corpus_dir), fast_settings.to_dict(), "sample")
    assert run_daemon(DaemonOptions(db_path=db_path, once=True)) == 1
    served = db["models"].get(("sample", 1))["path"]
    before = Path(served).read_bytes()

    def full_disk(handle, **arrays):
        handle.write(b"PK\x03\x04 half a zip")  # some bytes reach the temporary file before the disk fills
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez", full_disk)
    second = jobs.submit(db, str(corpus_dir), fast_settings.replace(seed=1).to_dict(), "sample")
    assert run_daemon(DaemonOptions(db_path=db_path, once=True)) == 1
    job = jobs.get(db, second)
    assert job["status"] == "failed" and "No space left on device" in job["error"]
    assert runs.get_run(db, job["run_id"])["status"] == "failed"
    assert [row["version"] for row in db["models"].rows] == [1] and Path(served).read_bytes() == before
    leftovers = [p.name for p in Path(served).parent.iterdir() if p.name != Path(served).name]
    assert leftovers == [], leftovers  # no temporary or half-written model file beside the published one
    assert jobs.get(db, first)["status"] == "succeeded"


class _Killed(BaseException):
    """The daemon's process dying at this point (not an Exception: nothing in the daemon catches it)."""


def _kill_at(monkeypatch, point: int | None, kills: list):
    """Count the ending's writes (run record, version row, file moves, path, job state, checkpoint) and die just
    before write number `point` (None: never)."""
    import db.jobs
    import db.models
    import db.runs
    import textclf.frontends.daemon as daemon
    from textclf.training.checkpoint import Checkpointer

    count = [0]

    def counted(original):
        def write(*args, **kwargs):
            count[0] += 1
            if count[0] == point:
                kills.append(point)
                raise _Killed()
            return original(*args, **kwargs)

        return write

    for module, name in (
        (db.runs, "update_run"),
        (db.jobs, "publish_model"),
        (db.models, "set_path"),
        (db.jobs, "finish"),
        (daemon, "_move"),
        (Checkpointer, "remove"),
    ):
        monkeypatch.setattr(module, name, counted(getattr(module, name)))
    return count


@pytest.mark.parametrize("outcome", ["succeeded", "held"])
def test_a_job_ends_exactly_once_whatever_write_its_daemon_dies_before(
    outcome, corpus_dir, db_path, fast_settings, isolated_home, monkeypatch, tmp_path
):
    import shutil

    import textclf.frontends.daemon as daemon
    from textclf.frontends.daemon import run_job

    db = open_db(db_path)
    if outcome == "held":  # a serving version no new model can beat
        jobs.publish_model(db, "m", path=str(tmp_path / "serving.npz"), eval_accuracy=1.0, eval_kind="test")
    jobs.submit(db, str(corpus_dir), fast_settings.to_dict(), "m")
    with monkeypatch.context() as patch:  # train once; the daemon dies as its ending starts
        patch.setattr(daemon, "_end_job", lambda *args: (_ for _ in ()).throw(_Killed()))
        with pytest.raises(_Killed):
            run_daemon(DaemonOptions(db_path=db_path, once=True))
    snapshot = tmp_path / "snapshot"
    shutil.copytree(isolated_home, snapshot)
    open_db(db_path).execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copy(db_path, tmp_path / "snapshot.db")
    writes = 7 if outcome == "succeeded" else 5
    kills: list = []
    for first in range(1, writes + 1):
        for second in [None, *range(1, writes + 1)]:
            db.conn.close()
            shutil.rmtree(isolated_home)
            shutil.copytree(snapshot, isolated_home)
            for stale in (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")):
                stale.unlink(missing_ok=True)
            shutil.copy(tmp_path / "snapshot.db", db_path)
            db = open_db(db_path)
            options = DaemonOptions(db_path=db_path, stale_after=0)
            for point in (first, second, None):  # die at `first`, then at `second` in the resumed ending, then end
                with monkeypatch.context() as patch:
                    _kill_at(patch, point, kills)
                    job = jobs.claim(db, "next-daemon", stale_after=-1)
                    if job is None:
                        break
                    try:
                        status = run_job(db, job, options, lambda: False)
                    except _Killed:
                        continue
                    assert status == outcome
            job = jobs.get(db, 1)
            job_runs = runs.runs_of_job(db, 1)
            versions = [row for row in db["models"].rows_where("job_id = ?", [1])]
            files = sorted(p.name for p in (isolated_home / "models" / "m").iterdir())
            where = (first, second)
            assert job["status"] == outcome and len(job_runs) == 1 and job_runs[0]["status"] == "finished", where
            assert Path(job_runs[0]["model_path"]).exists(), (where, job, job_runs[0]["model_path"], files, kills[-3:])
            if outcome == "succeeded":
                assert len(versions) == 1 and versions[0]["path"] == job_runs[0]["model_path"], where
                assert files == ["v1.textclf.npz"] and job["model_version"] == 1, (where, files)
                assert job_runs[0]["publish_decision"] == "published as v1", where
            else:
                assert versions == [] and files == ["held-job-1.textclf.npz"], (where, files)
                assert job_runs[0]["publish_decision"].startswith("not published"), where
            assert not checkpoint_path(1).exists(), where
    assert len(kills) >= writes * (writes + 1), len(kills)


def test_publish_file_adds_the_next_version_and_moves_the_file_beside_it(db_path, isolated_home, tmp_path):
    """What a job's ending does, for a file made elsewhere (benchmarks/service/service_load.py publishes mid-load)."""
    from db import models as published
    from textclf.frontends.daemon import publish_file

    db = open_db(db_path)
    folder = isolated_home / "models" / "news"
    folder.mkdir(parents=True)
    for expected in (1, 2):
        ready = folder / f".ready-{expected}.textclf.npz"
        ready.write_bytes(b"model %d" % expected)
        assert publish_file(db, "news", ready, eval_accuracy=0.5) == expected
        row = published.get_version(db, "news")
        assert row["version"] == expected and row["path"] == str(folder / f"v{expected}.textclf.npz")
        assert not ready.exists() and Path(row["path"]).read_bytes() == b"model %d" % expected
