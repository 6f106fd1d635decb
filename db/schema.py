"""Schema as an ordered list of migrations; PRAGMA user_version records how many have run.

Add a migration by appending a function; never edit one that has shipped.
"""

from __future__ import annotations

import json

from db.sqlite import sqlite_utils

from db.errors import DatabaseError


def _v1_runs(db: sqlite_utils.Database) -> None:
    db["runs"].create(
        {
            "id": int,
            "status": str,  # running / finished / failed / interrupted
            "started_at": str,  # ISO 8601 UTC
            "ended_at": str,
            "corpus": str,
            "corpus_format": str,
            "corpus_fingerprint": str,
            "test_corpus": str,
            "settings": str,  # JSON of textclf.settings.Settings
            "backend": str,
            "device": str,
            "versions": str,  # JSON {textclf, jax, jaxlib, sklearn, numpy, python}
            "skipped": str,  # JSON {reason: count}
            "non_utf8": int,
            "n_train": int,
            "n_eval": int,
            "eval_kind": str,  # "test" or "validation"
            "n_features": int,
            "n_classes": int,
            "labels": str,  # JSON list
            "model_path": str,
            "final_loss": float,
            "train_accuracy": float,
            "eval_accuracy": float,
            "error": str,
        },
        pk="id",
    )
    db["runs"].create_index(["status"])
    db["epochs"].create(
        {
            "run_id": int,
            "epoch": int,
            "loss": float,
            "train_accuracy": float,
            "eval_accuracy": float,
            "seconds": float,
            "docs_per_s": float,
        },
        pk=("run_id", "epoch"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["phases"].create(
        {"run_id": int, "phase": str, "seconds": float}, pk=("run_id", "phase"), foreign_keys=[("run_id", "runs", "id")]
    )


def _v2_kernel_sweeps(db: sqlite_utils.Database) -> None:
    """Block-size sweeps of the Pallas kernels (benchmarks/kernels/mlp.py --sweep): one row per configuration."""
    db["kernel_sweeps"].create(
        {
            "id": int,
            "created_at": str,
            "device": str,
            "kernel": str,
            "batch_size": int,
            "config": str,
            "seconds": float,
            "error": str,
        },
        pk="id",
    )


def _v3_jobs_and_models(db: sqlite_utils.Database) -> None:
    """Queued training jobs (textclf submit / the daemon) and published model versions."""
    db["jobs"].create(
        {
            "id": int,
            "status": str,  # queued / running / succeeded / failed / cancelled
            "name": str,  # model name the result is published under
            "corpus": str,
            "test_corpus": str,
            "settings": str,  # JSON of textclf.settings.Settings
            "attempts": int,  # claims so far (a SIGTERM requeue gives its attempt back)
            "max_attempts": int,
            "worker": str,  # host:pid of the daemon holding it
            "heartbeat": float,  # unix time of the holder's last sign of life
            "cancel_requested": int,
            "run_id": int,  # the attempt that finished
            "model_version": int,
            "error": str,
            "created_at": str,
            "started_at": str,
            "ended_at": str,
        },
        pk="id",
        defaults={"attempts": 0, "max_attempts": 3, "cancel_requested": 0},
    )
    db["jobs"].create_index(["status"])
    db["models"].create(
        {
            "name": str,
            "version": int,
            "path": str,
            "run_id": int,
            "job_id": int,
            "eval_accuracy": float,
            "eval_kind": str,
            "labels": str,
            "created_at": str,
        },
        pk=("name", "version"),
    )


def _v4_parallel_cache_bench(db: sqlite_utils.Database) -> None:
    # runs: how many devices/processes trained it, whether its vectors came from the vector cache.
    db["runs"].add_column("devices", int)
    db["runs"].add_column("processes", int)
    db["runs"].add_column("vectors_cached", int)
    # `textclf bench`: one row per (task, tool) measured side by side in one invocation.
    db["bench_results"].create(
        {
            "id": int,
            "bench_id": str,
            "created_at": str,
            "task": str,
            "tool": str,
            "accuracy": float,
            "wall_s": float,
            "train_s": float,
            "docs_per_s": float,
            "peak_host_mb": float,
            "peak_gpu_mb": float,
            "n_train": int,
            "n_test": int,
            "device": str,
            "settings": str,
            "error": str,
        },
        pk="id",
    )
    db["bench_results"].create_index(["bench_id"])


def _v5_search_trials(db: sqlite_utils.Database) -> None:
    # The model search: one row per (candidate, fold) trained, with its validation accuracy after every epoch.
    db["search_trials"].create(
        {
            "id": int,
            "run_id": int,
            "candidate": int,
            "fold": int,
            "settings": str,
            "epoch_accuracies": str,
            "seconds": float,
        },
        pk="id",
    )
    db["search_trials"].create_index(["run_id"])
    # runs: what the search chose and why (JSON: folds, budget, candidates tried, best validation accuracy).
    db["runs"].add_column("search", str)


def _v6_run_owners(db: sqlite_utils.Database) -> None:
    # runs: the process that owns a running run (host, pid, the process's start time: a pid is reused) and
    # its last sign of life, so a run whose process is gone can be marked interrupted; the daemon job it
    # trains, the run of that job it resumes after a crash, and whether the daemon published its model (why not).
    for column, kind in (
        ("owner_host", str),
        ("owner_pid", int),
        ("owner_started", str),
        ("heartbeat_at", str),
        ("job_id", int),
        ("resumes_run", int),
        ("publish_decision", str),
    ):
        db["runs"].add_column(column, kind)


def _v7_backend_reason(db: sqlite_utils.Database) -> None:
    # runs: why the backend that trained was chosen ("auto" follows measurements; textclf/training/backends.py).
    db["runs"].add_column("backend_reason", str)


def _v8_early_stopping(db: sqlite_utils.Database) -> None:
    # runs: the held-out documents that stopped a big corpus's training, their accuracy after each epoch and the
    # epoch kept (JSON; textclf/runs/run.py).
    db["runs"].add_column("early_stopping", str)


def _v9_search_cache(db: sqlite_utils.Database) -> None:
    # The model search's choices by what decides them (textclf/runs/search.py: the training documents, the
    # settings it starts from, the device, the versions): a run with the same key takes the recorded choice instead
    # of searching again. settings: JSON of the chosen Settings; summary: JSON of the search as its run recorded it.
    db["searches"].create({"key": str, "run_id": int, "created_at": str, "settings": str, "summary": str}, pk="key")


def _v10_vectorize_workers(db: sqlite_utils.Database) -> None:
    # runs: how the vectorizing ran ("16 forked worker processes", "2 fresh worker processes (not forked: ...)",
    # "this process"; pipelines/workers.py): the slow path names itself.
    db["runs"].add_column("vectorize_workers", str)


def _v11_plan(db: sqlite_utils.Database) -> None:
    # runs: the training plan (JSON of textclf.training.plan.TrainingPlan): views, networks and how they train,
    # held-out documents, rate candidates, where the rows live, backend.
    db["runs"].add_column("plan", str)


def _v12_model_labels_as_json(db: sqlite_utils.Database) -> None:
    # models.labels: a JSON list, as runs.labels (it was the labels joined by commas).
    for name, version, labels in db.execute("select name, version, labels from models").fetchall():
        if labels and not labels.startswith("["):
            db.execute(
                "update models set labels = ? where name = ? and version = ?",
                [json.dumps(labels.split(",")), name, version],
            )


def _v13_job_data_root(db: sqlite_utils.Database) -> None:
    # jobs: the folder a job submitted over HTTP may read (the service's --data-root): the daemon reads its corpus
    # confined to it, every link resolved (pipelines/confine.py). Empty for jobs of `textclf submit`.
    db["jobs"].add_column("data_root", str)


def _v14_kernel_sweeps_out(db: sqlite_utils.Database) -> None:
    # kernel_sweeps moved to the kernel benchmark's own file (benchmarks/kernels/sweeps.py): dropped where it holds no
    # rows; a database that holds sweeps keeps them.
    if "kernel_sweeps" in db.table_names() and db["kernel_sweeps"].count == 0:
        db["kernel_sweeps"].drop()


def _v15_multi_label(db: sqlite_utils.Database) -> None:
    # runs: a multi-label run's thresholds (JSON: the one global threshold or one per label, and the held-out
    # micro-F1 each choice scored), and the metric the run is judged by with its value on the held-out documents
    # ("accuracy" for one label a document; "micro-f1" for label sets, where eval_accuracy is the subset accuracy).
    db["runs"].add_column("thresholds", str)
    db["runs"].add_column("eval_metric", str)
    db["runs"].add_column("eval_score", float)
    # bench_results: what its accuracy column holds ("accuracy", or "micro-F1" for a task of label sets)
    db["bench_results"].add_column("metric", str)


def _v16_epoch_views(db: sqlite_utils.Database) -> None:
    # epochs: which model of a run's several trained the epoch (word network, character network, linear model; null
    # where the run trains one), so that a plot marks where each starts.
    db["epochs"].add_column("view", str)


MIGRATIONS = [
    _v1_runs,
    _v2_kernel_sweeps,
    _v3_jobs_and_models,
    _v4_parallel_cache_bench,
    _v5_search_trials,
    _v6_run_owners,
    _v7_backend_reason,
    _v8_early_stopping,
    _v9_search_cache,
    _v10_vectorize_workers,
    _v11_plan,
    _v12_model_labels_as_json,
    _v13_job_data_root,
    _v14_kernel_sweeps_out,
    _v15_multi_label,
    _v16_epoch_views,
]


def migrate(db: sqlite_utils.Database) -> None:
    current = db.execute("PRAGMA user_version").fetchone()[0]
    if current > len(MIGRATIONS):
        raise DatabaseError(
            f"run database schema version {current} is newer than this textclf knows ({len(MIGRATIONS)}): "
            "upgrade textclf or pass another --db"
        )
    for version in range(current, len(MIGRATIONS)):
        with db.conn:
            db.conn.execute("BEGIN IMMEDIATE")
            # Another process may have migrated while we waited for the lock.
            if db.execute("PRAGMA user_version").fetchone()[0] > version:
                continue
            MIGRATIONS[version](db)
            db.conn.execute(f"PRAGMA user_version = {version + 1}")
