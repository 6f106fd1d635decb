"""What every table and column of the run database holds: shown by `textclf runs ui` (Datasette's metadata) and
written out in docs/runs-database.md; tests/db/test_columns.py checks both against the schema."""

TABLES = {
    "runs": {
        "description": "One row a training run (`textclf train`, a daemon job, the estimator's fit).",
        "columns": {
            "id": "Run id, as `textclf runs show ID` takes it.",
            "status": "running, finished, failed, interrupted or planned (`train --plan-only`).",
            "started_at": "When the run started (ISO 8601, UTC).",
            "ended_at": "When it ended (ISO 8601, UTC); empty while running.",
            "corpus": "The training corpus as named (a path, or `memory` for the estimator).",
            "corpus_format": "How the corpus was read: folder, jsonl, csv, tsv, parquet, fasttext, idx, ...",
            "corpus_fingerprint": "A digest of the corpus files' names, sizes and times.",
            "test_corpus": "The test corpus, when one was given.",
            "settings": "JSON of the settings the model trained with (after the search).",
            "backend": "What trained it: pallas or xla.",
            "device": "The device it trained on (cpu, or the GPU's name).",
            "versions": "JSON of the versions of textclf, jax, jaxlib, scikit-learn, numpy and Python.",
            "skipped": "JSON {reason: count} of the corpus files left out (binary, empty, too large, ...).",
            "non_utf8": "Documents decoded from another encoding than UTF-8.",
            "n_train": "Training documents.",
            "n_eval": "Documents scored for eval_accuracy.",
            "eval_kind": "test (a test corpus) or validation (documents held out of the training corpus).",
            "n_features": "Width of the bag of words.",
            "n_classes": "Number of labels.",
            "labels": "JSON list of the labels, in the model's order.",
            "model_path": "The model file: claimed while the run trains (no other run may write it), set when written.",
            "final_loss": "Training loss after the last epoch.",
            "train_accuracy": "Accuracy on the training documents after the last epoch.",
            "eval_accuracy": "Accuracy on the test corpus or the held-out documents (see eval_kind).",
            "error": "Why the run failed or was interrupted.",
            "devices": "How many devices trained it.",
            "processes": "How many processes trained it (several: one share of the corpus each).",
            "vectors_cached": "1 when the document vectors came from the vector cache.",
            "search": "JSON of the model search: folds, budget, candidates, what it chose and why.",
            "owner_host": "Host of the process that runs it (to tell a dead run from a live one).",
            "owner_pid": "Process id of that process.",
            "owner_started": "When that process started (a process id is reused).",
            "heartbeat_at": "The owner's last sign of life (ISO 8601, UTC).",
            "job_id": "The daemon job it trains, if any.",
            "resumes_run": "The run of the same job it resumes after a crash.",
            "publish_decision": "Whether the daemon published its model, and why not.",
            "backend_reason": "Why that backend was chosen.",
            "early_stopping": "JSON: held-out documents, their accuracy after each epoch, the epoch kept.",
            "vectorize_workers": "How the vectorizing ran (forked workers, fresh workers, this process).",
            "plan": "JSON of the training plan: views, networks, held-out documents, rates, where rows live.",
            "thresholds": "JSON of a multi-label model's thresholds: global or one per label, held-out micro-F1.",
            "eval_metric": "What the run is judged by: accuracy, or micro-f1 for a multi-label corpus.",
            "eval_score": "That metric on the held-out documents.",
        },
    },
    "epochs": {
        "description": "One row an epoch of a run's final training: its learning curve.",
        "columns": {
            "run_id": "The run (runs.id).",
            "epoch": "Epoch number, from 1.",
            "loss": "Mean training loss over the epoch.",
            "train_accuracy": "Accuracy on the training documents.",
            "eval_accuracy": "Accuracy on the test or held-out documents, when scored that epoch.",
            "seconds": "Wall time of the epoch.",
            "docs_per_s": "Training documents a second.",
            "view": "Which of the run's models trained the epoch (word network, character network, linear model; "
            "empty where it trains one): the run's models train one after another.",
        },
    },
    "phases": {
        "description": "Where a run's time went: one row a phase (read, search, vectorize, compile, train, ...).",
        "columns": {"run_id": "The run (runs.id).", "phase": "The phase's name.", "seconds": "Wall time of the phase."},
    },
    "search_trials": {
        "description": "The model search: one row a candidate trained on one fold.",
        "columns": {
            "id": "Trial id.",
            "run_id": "The run whose search it was (runs.id).",
            "candidate": "Candidate number within the search.",
            "fold": "Fold number.",
            "settings": "JSON of the candidate's settings.",
            "epoch_accuracies": "JSON list: the fold's validation accuracy after each epoch.",
            "seconds": "Wall time of the trial.",
        },
    },
    "searches": {
        "description": "Search results kept for reuse: a run with the same key takes the choice without searching.",
        "columns": {
            "key": "Digest of the training documents, the starting settings, the device and the versions.",
            "run_id": "The run that searched (runs.id).",
            "created_at": "When (ISO 8601, UTC).",
            "settings": "JSON of the chosen settings.",
            "summary": "JSON of the search as its run recorded it.",
        },
    },
    "jobs": {
        "description": "The daemon's queue: one row a training job (`textclf submit`, POST /v1/jobs).",
        "columns": {
            "id": "Job id.",
            "status": "queued, running, succeeded, failed or cancelled.",
            "name": "Model name its result is published under.",
            "corpus": "Training corpus path.",
            "test_corpus": "Test corpus path, if any.",
            "settings": "JSON of the job's settings.",
            "attempts": "Claims so far (a SIGTERM requeue gives its attempt back).",
            "max_attempts": "Claims allowed before the job fails.",
            "worker": "host:pid of the daemon holding it.",
            "heartbeat": "Unix time of the holder's last sign of life.",
            "cancel_requested": "1 once `textclf jobs cancel` asked.",
            "run_id": "The run of the attempt that finished (runs.id).",
            "model_version": "The version it published (models.version).",
            "error": "Why it failed.",
            "created_at": "Submitted (ISO 8601, UTC).",
            "started_at": "First claimed.",
            "ended_at": "Finished.",
            "data_root": "For a job submitted over HTTP: the folder its corpora are read from, every link resolved.",
        },
    },
    "models": {
        "description": "Published model versions, as `predict --model NAME[@N]` and the service find them.",
        "columns": {
            "name": "Model name.",
            "version": "Version number, from 1.",
            "path": "The model file.",
            "run_id": "The run that trained it (runs.id).",
            "job_id": "The job that published it (jobs.id).",
            "eval_accuracy": "Its accuracy when published.",
            "eval_kind": "test or validation.",
            "labels": "JSON list of its labels.",
            "created_at": "Published (ISO 8601, UTC).",
        },
    },
    "bench_results": {
        "description": "`textclf bench`: one row a (task, tool) measured side by side.",
        "columns": {
            "id": "Row id.",
            "bench_id": "One `textclf bench` invocation.",
            "created_at": "When (ISO 8601, UTC).",
            "task": "The corpus measured.",
            "tool": "textclf or a peer (fastText, LinearSVC, ...).",
            "accuracy": "Test accuracy, or the metric named in metric.",
            "wall_s": "Whole wall time.",
            "train_s": "Training time.",
            "docs_per_s": "Training documents a second.",
            "peak_host_mb": "Peak host memory.",
            "peak_gpu_mb": "Peak GPU memory.",
            "n_train": "Training documents.",
            "n_test": "Test documents.",
            "device": "Device.",
            "settings": "JSON of the tool's settings.",
            "error": "Why the tool failed, if it did.",
            "metric": "What accuracy holds: empty or accuracy, or micro-F1 for a task of label sets.",
        },
    },
}


def markdown() -> str:
    """The tables and columns as the Markdown of docs/runs-database.md."""
    lines = [
        "# The run database",
        "",
        "Every table and column of the SQLite run database (`textclf runs path`",
        "prints where it is; `textclf runs ui` browses it). Written by `python -m db.columns` from",
        "db/columns.py.",
        "",
    ]
    for name, table in TABLES.items():
        lines += [f"## {name}", "", table["description"], "", "| column | holds |", "| --- | --- |"]
        lines += [f"| {column} | {text} |" for column, text in table["columns"].items()]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(), end="")
