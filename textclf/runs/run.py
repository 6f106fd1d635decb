"""`train`: corpus -> pipelines -> arrays -> network -> run record -> model file. The one entry point that the
CLI, the daemon and the tests share.

Start-up order (cold `textclf train`, BENCHMARKS.md "Cold start"): JAX is not imported until the corpus's
vectorizing workers are forked (pipelines/workers.py: forking is only safe before JAX starts threads); then
a thread imports JAX and starts the GPU while the workers count. The run row records the requested backend
and no device until that warm-up is done.

Run-record guarantees: the run row is created 'running' before any work; it becomes 'finished' only after the
model file is safely on disk; any exception marks it 'failed' with the error, Ctrl-C marks it 'interrupted'.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from db import open_db
from db import runs as run_queries
from pipelines.corpus import Corpus
from pipelines.workers import WorkerPool, return_freed_memory
from textclf.inference.artifacts import save_model
from textclf.training import BackendWarmup
from textclf.inference.text_model import Model, encode_labels
from textclf.settings import Settings
from textclf.errors import ArtifactError, SettingsError
from textclf.paths import compile_cache_dir, run_db_path
from textclf.runs.owner import RunHeartbeat, reap_orphaned_runs, this_owner
from textclf.runs.record import EpochRecorder, end_run, finish_run
from textclf.runs.results import PhaseTimer, PlannedRun, TrainEvent, TrainResult
from textclf.training import Terminated, TrainingStopped
from textclf.training import Machine, TrainingPlan, draft_plan
from textclf.training.search import SearchRules
from textclf.versions import versions
from textclf.runs.context import RunContext
from textclf.runs.images import image_data, saved_image_model
from textclf.runs.fitting import eval_scores, fit_plan, record_backend
from textclf.runs.text_data import TextData, hashed_data, shared_data, vectorized_data


def train(
    corpus_path: str | Path | Corpus,
    settings: Settings = Settings(),
    *,
    test_path: str | Path | Corpus | None = None,
    db_path: str | Path | None = None,
    model_path: str | Path | None = None,
    on_event: Callable[[TrainEvent], None] | None = None,
    checkpointer=None,
    stop_requested: Callable[[], bool] | None = None,
    pool: WorkerPool | None = None,
    job_id: int | None = None,
    resumes_run: int | None = None,
    rules: SearchRules = SearchRules(),
    plan_only: bool = False,
    keep_files: bool = True,
) -> TrainResult | PlannedRun:
    # Keyword inputs of the one entry point every face calls, each a separate thing the caller owns.
    """Train a model on a corpus, record the run, write the model file; see the module docstring.
    checkpointer / stop_requested: see training.network.fit_network (used by the daemon). pool: vectorizing workers to
    use (the daemon keeps one for its life), else the run starts its own. job_id / resumes_run: the daemon job
    this run trains, and the interrupted run of that job it resumes (recorded in the run). rules: the model search's
    (a benchmark passes its variant). plan_only: read, search and vectorize, record the plan, and stop before
    training (the run ends "planned"; its search is recorded for the next run to reuse) -> PlannedRun.
    corpus_path / test_path may be documents already in memory (pipelines.corpus.Corpus: the estimator's), and
    keep_files False writes no model file and no vector cache (the estimator keeps the model in memory)."""
    from textclf.training import is_primary

    report = on_event or (lambda event: None)
    out = _checked_out_path(
        model_path, [p for p in (corpus_path, test_path) if p is not None and not isinstance(p, Corpus)]
    )
    # With several processes (textclf/training/parallel/processes.py) only process 0 records the run and writes the
    # model; the others keep their run record in a throwaway in-memory database so the code path stays the same.
    primary = is_primary()
    db_file = run_db_path(db_path if primary else ":memory:")
    db = open_db(db_file)
    if out is not None and primary:
        reap_orphaned_runs(db)  # a dead run's claim on the same --out is no claim
    source = source_name(corpus_path)
    run_id = run_queries.start_run(
        db,
        corpus=source,
        test_corpus=source_name(test_path) if test_path is not None else None,
        settings=settings.to_dict(),
        backend=settings.backend,
        versions=versions(),
        **this_owner(),
        heartbeat_at=run_queries.now(),
        job_id=job_id,
        resumes_run=resumes_run,
        model_path=str(out) if out is not None and primary else None,  # claimed while the run trains
    )
    # (An in-memory run database, the estimator's, is seen by no other process: no heartbeat for it.)
    heartbeat = RunHeartbeat(db_file, run_id) if primary and str(db_path) != ":memory:" else None
    # The heartbeat thread starts with the JAX warm-up, once the vectorizing workers are forked (a process with a
    # second thread starts fresh workers instead: pipelines/workers.py); the run row's heartbeat_at is set meanwhile.
    warmup = BackendWarmup(settings.backend, compile_cache_dir(), along=heartbeat.start if heartbeat else None)
    run = RunContext(
        db,
        run_id,
        warmup,
        report,
        PhaseTimer(report),
        primary,
        pool,
        checkpointer,
        stop_requested,
        rules,
        plan_only,
        keep_files,
        source,
    )
    try:
        result = _train_run(
            run, corpus_path if isinstance(corpus_path, Corpus) else Path(corpus_path), test_path, settings, model_path
        )
    # A run that ends without its model file gives up its claim on --out (model_path None).
    except TrainingStopped as exc:
        end_run(db, run_id, "interrupted", error=f"{exc}; resumes from its checkpoint", model_path=None)
        raise
    except KeyboardInterrupt:
        end_run(db, run_id, "interrupted", error="interrupted by the user (Ctrl-C)", model_path=None)
        raise
    except Terminated:
        end_run(db, run_id, "interrupted", error="terminated (SIGTERM)", model_path=None)
        raise
    except BaseException as exc:
        end_run(db, run_id, "failed", error=f"{type(exc).__name__}: {exc}", model_path=None)
        raise
    finally:
        if heartbeat:
            heartbeat.stop()
    return result


def source_name(path) -> str:
    """What the run records as a corpus's name: its resolved path (one corpus, one name, whichever folder a face ran
    from: the daemon's jobs record absolute paths), or an in-memory corpus's source."""
    return path.source if isinstance(path, Corpus) else str(Path(path).resolve())


def _checked_out_path(model_path: str | Path | None, reading: list) -> Path | None:
    """Refuse, before any work, a model path that could not be written after the training or that names something
    the user did not mean to replace: a folder, a device or FIFO, a corpus being read or a file inside a folder
    corpus. -> the path resolved (None: the run's default file under the data dir)."""
    if model_path is None:
        return None
    path = Path(model_path)
    if str(model_path).endswith(("/", "\\")) or path.is_dir():
        raise ArtifactError(
            f"--out '{model_path}' is a folder: name the model file to write, e.g. '{path / 'model.textclf.npz'}'"
        )
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        raise ArtifactError(f"--out '{path}' is not a regular file (a device, FIFO or socket): name a model file")
    resolved = path.resolve()
    for corpus in map(Path, reading):
        if resolved == corpus.resolve() or resolved.is_relative_to(corpus.resolve()):
            raise ArtifactError(f"--out '{path}' would write over the corpus '{corpus}' being read: name another file")
    return resolved


def _train_run(run: RunContext, corpus_path: Path, test_path, settings: Settings, model_path) -> TrainResult:
    """One run's steps, images' and text's alike: the data, the plan, the training it carries out, the model saved."""
    images = settings.model == "cnn"
    in_memory = isinstance(corpus_path, Corpus) or isinstance(test_path, Corpus)
    if in_memory and images:
        raise SettingsError("documents in memory are text: train images from a folder with `textclf train`")
    if images:
        run.warmup.start()  # JAX starts while the images are read (no workers to fork first)
        data = image_data(run, corpus_path, test_path, settings)
    else:
        data, settings = _text_data(run, corpus_path, test_path, settings, in_memory)
    with run.phase("warmup"):  # what is left of the JAX start-up once the data is ready
        backend = run.backend_ready()
    return_freed_memory()
    backend = record_backend(run, backend, "cnn" if images else "mlp", settings)
    plan = _plan(run, data, settings, backend)
    run.record(plan=plan.to_dict())
    if run.plan_only:
        return _planned(run, data, plan, settings)
    record_epoch = EpochRecorder(run.db, run.run_id)
    try:
        fitted = fit_plan(run, data, plan, settings, backend, record_epoch)
    except BaseException:
        record_epoch.flush_if_free()  # a stopped or failed run keeps the epochs it trained
        raise
    ran = plan.views[0].epochs
    if "epochs" not in settings.pinned and fitted.settings.epochs == settings.epochs < ran:
        # The small-corpus rule (Settings.min_steps) ran more epochs than the setting, and no held-out choice
        # chose another count: the record says what ran.
        fitted.record["settings"] = fitted.settings.replace(epochs=ran).to_dict()
    run.record(**fitted.record)  # what the training decided, written once (as the start and the search were)
    if fitted.rate_chosen is not None and data.search_key:  # a run reusing the search trains the choice at once
        rate_choice = data.search.rate_choice.to_record()
        run_queries.record_rate_choice(run.db, data.search_key, fitted.rate_chosen.to_dict(), rate_choice)
    if images:
        return saved_image_model(run, data, fitted, model_path, record_epoch)
    return _evaluated_and_saved(run, data, fitted, model_path, record_epoch)


def _plan(run: RunContext, data, settings: Settings, backend: str) -> TrainingPlan:
    """The run's plan, made once: an image run's, or the draft vectorizing made (else one made now), completed with
    the views' widths and the backend."""
    if settings.model == "cnn":
        return draft_plan(settings, None, len(data.train_y), 1, Machine(1), run.rules).completed(
            (data.pixels,), backend
        )
    views = data.vectorizer.view_widths if settings.char_ngrams else (data.train_x.shape[1],)
    draft = data.plan or draft_plan(
        settings, data.search, len(data.train_labels), len(views), _machine(data), run.rules
    )
    return draft.completed(tuple(views), backend, _stacked_backend(draft, settings, views[0]))


def _stacked_backend(draft, settings: Settings, columns: int) -> str:
    """The K-network step's backend where the draft trains networks side by side (the search's rule)."""
    from textclf.training import side_by_side_backend

    models = len(draft.rate_candidates) if draft.rate_choice == "held_out" else draft.networks
    return side_by_side_backend(draft.batch_size, columns, settings.units, models, draft.views[0].loss)


def _machine(data: TextData) -> Machine:
    """The devices this run trains on, as the plan needs them (JAX is started by now)."""
    import jax

    from textclf.training import stacked_is_faster

    processes = 1 if data.rows is None else len(data.rows.counts)
    return Machine(jax.local_device_count(), processes, stacked_is_faster())


def _text_data(
    run: RunContext, corpus_path, test_path, settings: Settings, in_memory: bool
) -> tuple[TextData, Settings]:
    """The run's data by the path its corpus needs (runs/text_data.py) -> (data, the settings it chose)."""
    joined = sys.modules.get("jax")  # imported by now only where distributed.initialize joined processes
    if joined is not None and joined.process_count() > 1:  # several processes: each reads and counts its share
        if settings.ensemble > 1 or settings.char_ngrams:
            raise SettingsError(
                f"--ensemble {settings.ensemble} and --char-ngrams train on one process: pass "
                "--ensemble 1 --no-char-ngrams with several processes"
            )
        return shared_data(run, corpus_path, test_path, settings), settings
    if settings.vectorizer == "hashing" and not in_memory:  # (in memory: hashed as the tfidf path vectorizes)
        run.warmup.start()  # the streaming hash uses loky's spawned workers: nothing to fork first
        return hashed_data(run, corpus_path, test_path, settings)
    return vectorized_data(run, corpus_path, test_path, settings)


def _evaluated_and_saved(run: RunContext, data: TextData, fitted, model_path, record_epoch) -> TrainResult:
    """The trained network as a model, scored on the held-out documents, written (the run's keep_files) and
    recorded finished."""
    run_id, phase = run.run_id, run.phase
    classes, eval_kind, eval_x = data.classes, data.eval_kind, data.eval_x
    multi_label = fitted.thresholds is not None
    eval_y = encode_labels(data.eval_labels, classes, multi_label)
    model = Model(
        data.vectorizer,
        fitted.params,
        labels=classes,
        settings=fitted.settings,
        thresholds=fitted.thresholds.values if multi_label else None,
    )
    history = fitted.history
    with phase("evaluate"):
        scores = eval_scores(model, eval_x) if eval_x.shape[0] else np.zeros((0, len(classes)), np.float32)
        if multi_label:
            predicted = model.predicted_sets(model.probabilities(scores))
            hits = int((predicted == eval_y.astype(bool)).all(axis=1).sum())
        else:
            hits = int((scores.argmax(axis=1) == eval_y).sum())
        n_eval = len(eval_y)
        if data.rows is not None:  # each process scored its own share of the held-out documents
            from textclf.training import summed

            hits, n_eval = summed(hits, n_eval)
        eval_accuracy = hits / max(1, n_eval)
        metric = {"eval_metric": "accuracy", "eval_score": eval_accuracy}
        if multi_label:
            from textclf.models.thresholds import f1

            metric = {
                "eval_metric": fitted.thresholds.metric,
                "eval_score": f1(eval_y, predicted, fitted.thresholds.metric) if n_eval else 0.0,
            }
    last = history[-1]
    model.metadata = {
        "run_id": run_id,
        "corpus": run.source,
        "corpus_fingerprint": data.fingerprint,
        "eval_kind": eval_kind,
        "eval_accuracy": eval_accuracy,
        "train_accuracy": last.train_accuracy,
        "created": run_queries.now(),
        "backend": fitted.backend,
        "search": data.search.to_record() if data.search else None,
        **metric,
    }
    run.record(**metric)
    save = (lambda path: save_model(model, path)) if run.keep_files else None
    path = finish_run(run, save, model_path, record_epoch, last, eval_accuracy)
    n_train = data.rows.total if data.rows is not None else fitted.n_training
    return TrainResult(
        run_id,
        path.resolve() if run.primary and path else None,
        eval_accuracy,
        eval_kind,
        last.train_accuracy,
        n_train,
        n_eval,
        history,
        dict(phase.seconds),
        data.skipped,
        data.non_utf8,
        model,
        data.search,
        read_documents=data.read_documents,
    )


def _planned(run: RunContext, data: TextData, plan: TrainingPlan, settings: Settings) -> PlannedRun:
    """The end of a --plan-only run: its phases recorded, the run marked "planned" with the settings it would train."""
    run_queries.add_phases(run.db, run.run_id, run.phase.seconds)
    end_run(run.db, run.run_id, "planned", settings=settings.to_dict())
    return PlannedRun(run.run_id, plan, settings, data.search)
