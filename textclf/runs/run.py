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

import hashlib
import sys
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp
# Imported before the vectorizing workers fork, so that they inherit it: the character view and n-grams of 3 are
# counted with it there, and the fit's selection uses it here (pipelines/vectorize.py imports it where it is used,
# for the predictions that need none of it).
import sklearn.feature_extraction.text  # noqa: F401

from db import open_db
from db import runs as run_queries
from pipelines.corpus import Corpus, FetchedTexts, FileTexts, parallel_read, read_corpus
from pipelines import vector_cache
from pipelines.vectorize import fit_rows, fit_vectorizer, vectorize_pool
from pipelines.word_counts import stack_rows
from pipelines.workers import WorkerPool, return_freed_memory
from textclf.inference.artifacts import save_model
from textclf.training.backends import BackendWarmup
from textclf.inference.text_model import Model, encode_labels
from textclf.settings import Settings
from textclf.errors import ArtifactError, CorpusError, SettingsError
from textclf.paths import compile_cache_dir, run_db_path, vector_cache_dir
from textclf.runs.owner import RunHeartbeat, this_owner
from textclf.runs.record import EpochRecorder, end_run, finish_run
from textclf.runs.search_cache import search_key
from textclf.runs.results import PhaseTimer, PlannedRun, TrainEvent, TrainResult
from textclf.training.events import EpochStats, Terminated, TrainingStopped
from textclf.training.plan import REFIT_HELD_OUT_FRACTION, TrainingPlan, held_out_count, plan_training
from textclf.training.search_rules import SearchRules
from textclf.versions import versions


def split_validation(labels: list[str], source: str, settings: Settings):
    """Stratified split of document numbers with the run's seed: same corpus + same seed -> same split.
    -> (training row numbers, validation row numbers)."""
    counts = Counter(labels)
    small = [label for label, n in sorted(counts.items()) if n < 2]
    if small:
        raise CorpusError(
            f"label '{small[0]}' has only 1 document, too few for a validation split: "
            "add documents or pass a separate --test corpus"
        )
    n_eval = max(len(counts), int(round(len(labels) * settings.validation_fraction)))
    if len(labels) - n_eval < len(counts):
        raise CorpusError(
            f"corpus '{source}' has {len(labels)} documents, too few to hold out a validation set: "
            "add documents or pass a separate --test corpus"
        )
    from sklearn.model_selection import train_test_split  # 1.4 s to import: only runs without --test need it

    return train_test_split(np.arange(len(labels)), test_size=n_eval, random_state=settings.seed, stratify=labels)


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
    """Train a model on a corpus, record the run, write the model file; see the module docstring.
    checkpointer / stop_requested: see trainloop.fit_network (used by the daemon). pool: vectorizing workers to
    use (the daemon keeps one for its life), else the run starts its own. job_id / resumes_run: the daemon job
    this run trains, and the interrupted run of that job it resumes (recorded in the run). rules: the model search's
    (a benchmark passes its variant). plan_only: read, search and vectorize, record the plan, and stop before
    training (the run ends "planned"; its search is recorded for the next run to reuse) -> PlannedRun.
    corpus_path / test_path may be documents already in memory (pipelines.corpus.Corpus: the estimator's), and
    keep_files False writes no model file and no vector cache (the estimator keeps the model in memory)."""
    from textclf.training.distributed import is_primary

    report = on_event or (lambda event: None)
    _check_model_path(model_path)
    # With several processes (textclf/training/distributed.py) only process 0 records the run and writes the model; the
    # others keep their run record in a throwaway in-memory database so the code path stays the same.
    primary = is_primary()
    db = open_db(run_db_path(db_path if primary else ":memory:"))
    run_id = run_queries.start_run(
        db, corpus=_source(corpus_path), test_corpus=_source(test_path) if test_path is not None else None,
        settings=settings.to_dict(), backend=settings.backend, versions=versions(), **this_owner(),
        heartbeat_at=run_queries.now(), job_id=job_id, resumes_run=resumes_run,
    )
    # (An in-memory run database, the estimator's, is seen by no other process: no heartbeat for it.)
    heartbeat = RunHeartbeat(run_db_path(db_path), run_id) if primary and str(db_path) != ":memory:" else None
    # The heartbeat thread starts with the JAX warm-up, once the vectorizing workers are forked (a process with a
    # second thread starts fresh workers instead: pipelines/workers.py); the run row's heartbeat_at is set meanwhile.
    warmup = BackendWarmup(settings.backend, compile_cache_dir(), along=heartbeat.start if heartbeat else None)
    run = _Run(db, run_id, warmup, report, PhaseTimer(report), primary, pool, checkpointer, stop_requested, rules,
               plan_only, keep_files)
    try:
        result = _train_run(run, corpus_path if isinstance(corpus_path, Corpus) else Path(corpus_path), test_path,
                            settings, model_path)
    except TrainingStopped as exc:
        end_run(db, run_id, "interrupted", error=f"{exc}; resumes from its checkpoint")
        raise
    except KeyboardInterrupt:
        end_run(db, run_id, "interrupted", error="interrupted by the user (Ctrl-C)")
        raise
    except Terminated:
        end_run(db, run_id, "interrupted", error="terminated (SIGTERM)")
        raise
    except BaseException as exc:
        end_run(db, run_id, "failed", error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        if heartbeat:
            heartbeat.stop()
    return result


def _source(path) -> str:
    """What the run records as a corpus's name: its path, or an in-memory corpus's source."""
    return path.source if isinstance(path, Corpus) else str(path)


def _backend_ready(db, run_id: int, warmup: BackendWarmup) -> str:
    """Wait for the JAX warm-up; record the device in the run row. -> the backend as asked (checked)."""
    backend, device = warmup.result()
    run_queries.update_run(db, run_id, device=device)
    return backend


def _choose_backend(db, run_id: int, requested: str, network: str, settings: Settings) -> str:
    """The backend that trains ("auto" decided from measurements, textclf/training/backends.py) and why, in the
    run row."""
    import jax

    from textclf.training.backends import choose_backend
    from textclf.training.data_parallel import data_mesh

    devices = data_mesh(settings.devices, settings.batch_size).size if network == "mlp" else 1
    backend, why = choose_backend(requested, network, settings.batch_size // devices, jax.default_backend() == "gpu")
    run_queries.update_run(db, run_id, backend=backend, backend_reason=why)
    return backend


def _check_model_path(model_path: str | Path | None) -> None:
    """Refuse, before any work, a model path that could not be written after the training."""
    if model_path is None:
        return
    path = Path(model_path)
    if path.is_dir():
        raise ArtifactError(f"--out '{path}' is a folder: name the model file to write, e.g. "
                            f"'{path / 'model.textclf.npz'}'")


# A held-out set is scored on the device where the run trained on a GPU once its documents x hidden units reach
# this (_eval_scores): below it the host's NumPy is faster than batching, uploading and compiling ("Big corpora
# with no flags").
DEVICE_EVAL_WORK = 40_000_000


def _side_by_side_with_held_out(settings: Settings, search: dict | None, n_train: int, one_view: bool,
                                rules: SearchRules) -> bool:
    """Whether the training matrix may go to the device as it is built (device_data.resident_from_parts): the
    plan (training/plan.py) will train networks side by side on it in place, some of its rows held out."""
    from textclf.training.candidates import stacked_is_faster

    widths = (1,) if one_view else (1, 1)
    return plan_training(settings, search, n_train, widths, "xla", stacked_is_faster(), 1, rules).rows == "device"


def _held_out_stopping(train_x, train_y: np.ndarray, seed: int):
    """-> (the rows of train_x that train, sorted, an EarlyStopping judging the held-out rest). The training rows
    are not copied out of the matrix here: networks side by side train on them in place (candidates.
    _stacked_epochs), and a copy beside the matrix doubled a ten-million-document run's host memory. train_x on
    the device already (ResidentRows): the held-out rows are read back from it."""
    from textclf.training.device_data import ResidentRows, host_rows
    from textclf.training.fit import EarlyStopping

    n = len(train_y)
    held = np.zeros(n, bool)
    held[np.random.default_rng(seed).choice(n, held_out_count(n), replace=False)] = True
    held_x = host_rows(train_x, np.flatnonzero(held)) if isinstance(train_x, ResidentRows) else train_x[held]
    return np.flatnonzero(~held), EarlyStopping(held_x, train_y[held], patience=1)


@dataclass
class _Run:
    """What every step of one run shares: its record, its JAX warm-up, its reporting and its rules."""

    db: object
    run_id: int
    warmup: BackendWarmup
    report: Callable[[TrainEvent], None]
    phase: PhaseTimer
    primary: bool  # process 0 (the one that records and writes the model)
    pool: WorkerPool | None  # vectorizing workers handed in (the daemon's), else the run starts its own
    checkpointer: object
    stop_requested: Callable[[], bool] | None
    rules: SearchRules
    plan_only: bool = False
    keep_files: bool = True  # a model file and the vector cache (False: the estimator's run, in memory)


def _train_run(run: _Run, corpus_path: Path, test_path, settings: Settings, model_path) -> TrainResult:
    db, run_id, warmup, report, phase = run.db, run.run_id, run.warmup, run.report, run.phase
    primary, checkpointer, stop_requested = run.primary, run.checkpointer, run.stop_requested
    in_memory = isinstance(corpus_path, Corpus) or isinstance(test_path, Corpus)
    if in_memory and settings.model == "cnn":
        raise SettingsError("documents in memory are text: train images from a folder with `textclf train`")
    if settings.model == "cnn":
        from textclf.runs.images import train_images

        with phase("warmup"):
            backend = _choose_backend(db, run_id, _backend_ready(db, run_id, warmup), "cnn", settings)
        return train_images(db, run_id, corpus_path, settings, backend, test_path, model_path, report, phase,
                            primary, checkpointer, stop_requested)
    joined = sys.modules.get("jax")  # imported by now only where distributed.initialize joined processes
    if joined is not None and joined.process_count() > 1:  # several processes: each reads and counts its share
        if settings.ensemble > 1 or settings.char_ngrams:
            raise SettingsError(f"--ensemble {settings.ensemble} and --char-ngrams train on one process: pass "
                                "--ensemble 1 --no-char-ngrams with several processes")
        data = _shared_data(run, corpus_path, test_path, settings)
    elif settings.vectorizer == "hashing" and not in_memory:  # (in memory: hashed as the tfidf path vectorizes)
        warmup.start()  # the streaming hash uses loky's spawned workers: nothing to fork first
        data = _hashed_data(run, corpus_path, test_path, settings)
    else:
        data, settings = _vectorized_data(run, corpus_path, test_path, settings)
    with phase("warmup"):  # what is left of the JAX start-up once vectorizing is done
        backend = _backend_ready(db, run_id, warmup)
    return_freed_memory()

    backend = _choose_backend(db, run_id, backend, "mlp", settings)

    classes, eval_kind, train_x, eval_x = data.classes, data.eval_kind, data.train_x, data.eval_x
    train_y, eval_y = encode_labels(data.train_labels, classes), encode_labels(data.eval_labels, classes)

    from textclf.training.candidates import stacked_is_faster
    from textclf.training.device_data import ResidentRows, resident_rows

    views = data.vectorizer.view_widths if settings.char_ngrams else (train_x.shape[1],)
    processes = 1 if data.rows is None else len(data.rows.counts)
    plan = plan_training(settings, data.search, len(train_y), tuple(views), backend, stacked_is_faster(), processes,
                         run.rules)
    run_queries.update_run(db, run_id, plan=plan.to_dict())
    if run.plan_only:
        return _planned(run, data, plan, settings)
    record_epoch = EpochRecorder(db, run_id)
    one_by_one = plan.arrangement == "one_after_another" and plan.rate_choice == "none"  # an ensemble's members
    early_stopping = None
    rates: list[dict] = []  # the (rate, decay, epochs) candidates the held-out documents choose among
    candidates = (data.search or {}).get("rate_candidates", [])
    training_rows = None  # the rows of train_x that train, where some are held out and train_x is not copied
    if plan.held_out_documents:
        training_rows, early_stopping = _held_out_stopping(train_x, train_y, settings.seed)
        if plan.rate_choice == "held_out":
            rates = candidates
        if plan.rows != "device":
            # One network (training/loop.py), or networks one after another, train on a matrix of their rows.
            train_x, train_y, training_rows = train_x[training_rows], train_y[training_rows], None
            data.train_x = None  # the matrix before the split: its two parts are all that is needed (a GB at 1M)
        elif not isinstance(train_x, ResidentRows):  # (there already where vectorizing put it there)
            # Networks side by side: the matrix goes to the device now, and the host's copy of it (~1.6 GB at a
            # million documents) goes before the training starts; they need nothing else of it.
            train_x = data.train_x = resident_rows(train_x, train_y)
            return_freed_memory()
    elif plan.rate_choice == "refit":
        with phase("rates"):
            settings = _choose_rate_then_refit(run, train_x, train_y, len(classes), settings, backend, candidates,
                                               data.search)
        _record_rate_choice(db, data.search_key, settings, data.search)
    # Each view's settings: the words' as chosen, the character network's own rate and epochs (Settings.char_view).
    view_settings = [settings, settings.char_view()][:len(views)]
    n_training = len(train_y) if training_rows is None else len(training_rows)
    total_epochs = sum(s.epochs_for(n_training) for s in view_settings) * (settings.ensemble if one_by_one else 1)
    if rates:  # every candidate's epochs where they train one after another, the most where side by side
        side_by_side = plan.arrangement == "side_by_side"
        total_epochs = max(r["epochs"] for r in rates) if side_by_side else sum(r["epochs"] for r in rates)
    view_names = ("word network", "character network")[:len(views)] if len(views) > 1 else ()
    report(TrainEvent("phase", "train", total_epochs=total_epochs, views=view_names))
    history: list[EpochStats] = []
    current_view = ""  # the view training now (set by the loop over the views below), named in its epochs' events

    def on_epoch(stats: EpochStats) -> None:
        view_epoch = stats.epoch
        stats = replace(stats, epoch=len(history) + stats.epoch)  # numbered on from one view to the next
        record_epoch(stats)
        report(TrainEvent("epoch", epoch=stats, total_epochs=total_epochs, view=current_view, view_epoch=view_epoch))

    # One network (or ensemble) per view, each on its own columns, joined into one network whose scores are
    # their mean (candidates.joined_views): the words' and, with char_ngrams, the character n-grams'. (Only a
    # one-view run keeps checkpoints: the daemon resumes a stopped job's one network.)
    view_params, compile_s, train_s, first = [], 0.0, 0.0, 0
    for width, view, current_view in zip(views, view_settings, view_names or ("",) * len(views)):
        columns = slice(first, first + width)
        view_train, view_eval = (train_x, eval_x) if len(views) == 1 else (train_x[:, columns], eval_x[:, columns])
        first += width
        if rates:
            params, view_history, backend, view_compile, view_train_s, settings = _fit_rates(
                db, run_id, view_train, train_y, view_eval, eval_y, len(classes), settings, backend, rates,
                early_stopping, on_epoch, data.search, stop_requested, training_rows)
            early_stopping = None  # its documents judged every candidate (recorded by _fit_rates)
            _record_rate_choice(db, data.search_key, settings, data.search)
        else:
            params, view_history, backend, view_compile, view_train_s = _fit_view(
                db, run_id, view_train, train_y, view_eval, eval_y, len(classes), view, backend,
                view.epochs_for(n_training), one_by_one, on_epoch, early_stopping,
                checkpointer if len(views) == 1 else None, stop_requested, data.rows, training_rows)
        offset = len(history)  # the epochs of the views before this one
        history += [replace(stats, epoch=offset + stats.epoch) for stats in view_history]
        view_params.append(params)
        compile_s, train_s = compile_s + view_compile, train_s + view_train_s
    if len(views) > 1:
        from textclf.training.candidates import joined_views

        params = joined_views(view_params)
    phase.seconds["compile"] = compile_s
    phase.seconds["train"] = train_s
    if early_stopping is not None:  # the model keeps the best epoch: its settings say so
        settings = settings.replace(epochs=early_stopping.best_epoch)
        run_queries.update_run(db, run_id, early_stopping=early_stopping.summary(), settings=settings.to_dict())
    # The training matrices are done with: their memory goes back before the held-out documents are scored.
    train_x = view_train = data.train_x = early_stopping = None
    return_freed_memory()
    model = Model(data.vectorizer, params, labels=classes, settings=settings)
    with phase("evaluate"):
        hits = int((_eval_scores(model, eval_x).argmax(axis=1) == eval_y).sum()) if eval_x.shape[0] else 0
        n_eval = len(eval_y)
        if data.rows is not None:  # each process scored its own share of the held-out documents
            from textclf.training.distributed import summed

            hits, n_eval = summed(hits, n_eval)
        eval_accuracy = hits / max(1, n_eval)
    last = history[-1]
    model.metadata = {
        "run_id": run_id, "corpus": _source(corpus_path), "corpus_fingerprint": data.fingerprint,
        "eval_kind": eval_kind, "eval_accuracy": eval_accuracy, "train_accuracy": last.train_accuracy,
        "created": run_queries.now(), "backend": backend, "search": data.search,
    }
    save = (lambda path: save_model(model, path)) if run.keep_files else None
    path = finish_run(db, run_id, phase, save, model_path, primary, record_epoch, last, eval_accuracy)
    n_train = data.rows.total if data.rows is not None else n_training
    return TrainResult(run_id, path.resolve() if primary and path else None, eval_accuracy, eval_kind,
                       last.train_accuracy, n_train, n_eval, history, dict(phase.seconds), data.skipped,
                       data.non_utf8, model, data.search, read_documents=data.read_documents)


def _planned(run: _Run, data: _TextData, plan: TrainingPlan, settings: Settings) -> PlannedRun:
    """The end of a --plan-only run: its phases recorded, the run marked "planned" with the settings it would train."""
    run_queries.add_phases(run.db, run.run_id, run.phase.seconds)
    end_run(run.db, run.run_id, "planned", settings=settings.to_dict())
    return PlannedRun(run.run_id, plan, settings, data.search)


def _eval_scores(model: Model, eval_x) -> np.ndarray:
    """The held-out documents' (n, C) scores: on a GPU from DEVICE_EVAL_WORK documents x hidden units up (where
    the network trained, JAX started), else with NumPy on the host."""
    import jax

    if jax.default_backend() == "cpu" or eval_x.shape[0] * model.params.w1.shape[1] < DEVICE_EVAL_WORK:
        return model.scores(eval_x)
    from textclf.models.mlp import Params
    from textclf.training.loop import held_out_scores_device

    return held_out_scores_device(Params(*jax.device_put(tuple(model.params))), eval_x)


def _choose_rate_then_refit(run: _Run, train_x, train_y, n_classes, settings, backend, rates, search: dict
                            ) -> Settings:
    """The rate candidates trained on all but a stratified REFIT_HELD_OUT_FRACTION of the training documents,
    which choose one and its epoch (candidates.fit_rates); -> the settings with the chosen rate, decay and epoch
    count, for the final training on every document. Recorded in the run (search: rate_choice)."""
    from textclf.training.candidates import fit_rates
    from textclf.training.search import stratified_sample

    held, rest = stratified_sample(train_y, np.arange(len(train_y)), int(len(train_y) * REFIT_HELD_OUT_FRACTION),
                                   settings.seed)
    rest_x, held_x = _rate_choice_columns(train_x[rest], train_y[rest], train_x[held],
                                          run.rules.rate_choice_features)
    choice = fit_rates(rest_x, train_y[rest], n_classes, settings, backend,
                       [(r["learning_rate"], r["weight_decay"], r["epochs"]) for r in rates], held_x,
                       train_y[held], stop_requested=run.stop_requested)
    search["rate_choice"] = {"candidates": rates, "chosen": choice.chosen, "held_out": choice.held_out,
                             "held_out_documents": len(held), "refit": True, "features": rest_x.shape[1]}
    settings = _with_choice(settings, rates, choice)
    run_queries.update_run(run.db, run.run_id, search=search, settings=settings.to_dict())
    return settings


def _rate_choice_columns(train_x: sp.csr_matrix, train_y: np.ndarray, held_x: sp.csr_matrix, features: int):
    """The training and held-out rows on the `features` columns (0: all) that a chi-squared test on the training
    rows ties most to the labels (pipelines.vectorize.most_tied_columns, as the search's rounds select theirs),
    each row scaled back to unit length as the search's fold matrices are -> (train_x, held_x) narrowed."""
    if not features or train_x.shape[1] <= features:
        return train_x, held_x
    from sklearn.preprocessing import normalize

    from pipelines.vectorize import most_tied_columns

    columns = most_tied_columns(train_x, train_y, features)
    return normalize(train_x[:, columns]), normalize(held_x[:, columns])


def _record_rate_choice(db, key: str | None, settings: Settings, search: dict) -> None:
    """Add the held-out documents' rate choice to the recorded search (key; None: not recorded), so that a run
    reusing it trains the chosen rate, decay and epoch count without choosing again."""
    if key:
        run_queries.record_rate_choice(db, key, settings.to_dict(), search["rate_choice"])


def _with_choice(settings: Settings, rates: list[dict], choice) -> Settings:
    """The settings with the rate, decay and epoch count the held-out documents chose (a candidates.RateChoice)."""
    chosen = rates[choice.chosen]
    return settings.replace(learning_rate=chosen["learning_rate"], weight_decay=chosen["weight_decay"],
                            epochs=choice.best_epoch)


def _fit_rates(db, run_id, train_x, train_y, eval_x, eval_y, n_classes, settings, backend, rates, judge, on_epoch,
               search: dict, stop_requested, training_rows):
    """One network per candidate (rate, decay) of the search (rates), the held-out documents of `judge` (an
    EarlyStopping's) choosing one and its epoch (candidates.fit_rates). The choice is recorded in the run
    (early_stopping: every candidate's held-out curve; search: rate_choice) and in the settings returned.
    -> (parameters, EpochStats, backend, compile seconds, train seconds, settings)."""
    import jax

    from textclf.training.candidates import fit_rates, stacked_is_faster

    choice = fit_rates(train_x, train_y, n_classes, settings, backend,
                       [(r["learning_rate"], r["weight_decay"], r["epochs"]) for r in rates], judge.x, judge.y,
                       eval_x, eval_y, on_epoch, judge.patience, stop_requested, training_rows)
    settings = _with_choice(settings, rates, choice)
    search["rate_choice"] = {"candidates": rates, "chosen": choice.chosen, "held_out": choice.held_out}
    run_queries.update_run(db, run_id, search=search, settings=settings.to_dict(), early_stopping={
        "held_out": int(judge.x.shape[0]), "patience": judge.patience, "accuracies": choice.held_out[choice.chosen],
        "best_epoch": choice.best_epoch, "rates": [[r["learning_rate"], r["weight_decay"]] for r in rates],
        "rate_accuracies": choice.held_out, "chosen_rate": choice.chosen})
    if stacked_is_faster():
        backend = "xla"
        run_queries.update_run(db, run_id, backend=backend, devices=1, processes=jax.process_count(),
                               backend_reason="networks at several rates train side by side in XLA")
    else:
        run_queries.update_run(db, run_id, devices=1, processes=jax.process_count())
    return choice.params, choice.history, backend, choice.compile_seconds, choice.train_seconds, settings


def _fit_view(db, run_id, train_x, train_y, eval_x, eval_y, n_classes, settings, backend, epochs, one_by_one,
              on_epoch, early_stopping, checkpointer, stop_requested, rows, training_rows):
    """The network(s) of one input view: settings.ensemble networks (one after another on a CPU, side by side
    elsewhere) or one. JAX is imported here, after the warm-up thread's import (see the module docstring).
    training_rows: the rows of train_x that train (None: all); only networks side by side are given them
    (_train_run hands the others a matrix of their rows).
    -> (parameters, EpochStats of each epoch, backend that trained them, compile seconds, train
    seconds)."""
    import jax

    from textclf.training.candidates import fit_ensemble, fit_members
    from textclf.training.loop import fit_network

    if one_by_one:
        # Several networks one after another (each as one network trains, without checkpoints), averaged into
        # one model file; their epochs are recorded one member after another.
        params, history, compile_s, train_s = fit_members(train_x, train_y, n_classes, settings, backend, eval_x,
                                                          eval_y, on_epoch)
        run_queries.update_run(db, run_id, devices=1, processes=jax.process_count())
        return params, history, backend, compile_s, train_s
    if settings.ensemble > 1:
        # Several networks side by side, averaged into one model file (XLA, one device, no checkpoints).
        params, history, compile_s, train_s = fit_ensemble(
            train_x, train_y, n_classes, settings.ensemble, settings.learning_rate, settings.weight_decay, epochs,
            settings.batch_size, settings.hidden, settings.seed, eval_x, eval_y, on_epoch, early_stopping,
            training_rows)
        run_queries.update_run(db, run_id, backend="xla", devices=1, processes=jax.process_count(),
                               backend_reason="an ensemble trains side by side in XLA")
        return params, history, "xla", compile_s, train_s
    network = fit_network(train_x, train_y, n_classes, settings, backend, eval_x, eval_y, on_epoch,
                          checkpointer=checkpointer, stop_requested=stop_requested, early_stopping=early_stopping,
                          rows=rows)
    run_queries.update_run(db, run_id, devices=network.devices, processes=jax.process_count())
    return network.params, network.history, backend, network.compile_seconds, network.train_seconds


@dataclass
class _TextData:
    """The text half of a run after vectorization: what the network and the run record need."""

    vectorizer: object
    train_x: object  # CSR (training documents, features)
    eval_x: object
    train_labels: list[str]
    eval_labels: list[str]
    classes: list[str]
    eval_kind: str
    skipped: dict[str, int]
    non_utf8: int
    fingerprint: str
    search: dict | None = None  # the model search's summary (textclf/training/search.py), or why it did not run
    search_key: str | None = None  # what its choice is recorded under (textclf/runs/search_cache.py)
    rows: object = None  # several processes: data_parallel.RowShare, the training documents each one holds
    read_documents: int | None = None  # training documents this process read (several processes: its share)


def _check_test_labels(test_labels, train_labels, test_source: str) -> None:
    unknown = sorted(set(test_labels) - set(train_labels))
    if unknown:
        raise CorpusError(
            f"test corpus '{test_source}' has label '{unknown[0]}' that the training corpus lacks: "
            "use the same label names in both"
        )


def _record_corpus(db, run_id, fmt, fingerprint, train_skipped, test_skipped, non_utf8, train_labels, eval_labels,
                   has_test: bool, counts: tuple[int, int] | None = None, classes: list[str] | None = None
                   ) -> tuple[dict[str, int], list[str], str]:
    """Record what was read in the run row -> (skips by reason, the test's prefixed "test_"; classes; eval kind).
    counts (training, held-out documents) and classes: every process's, where there are several."""
    skipped = {k: v for k, v in train_skipped.items() if v}
    skipped.update({f"test_{k}": v for k, v in (test_skipped or {}).items() if v})
    classes, eval_kind = classes or sorted(set(train_labels)), "test" if has_test else "validation"
    n_train, n_eval = counts or (len(train_labels), len(eval_labels))
    run_queries.update_run(db, run_id, corpus_format=fmt, corpus_fingerprint=fingerprint, skipped=skipped,
                           non_utf8=non_utf8, n_train=n_train, n_eval=n_eval,
                           eval_kind=eval_kind, n_classes=len(classes), labels=classes)
    return skipped, classes, eval_kind


def _shared_data(run: _Run, corpus_path, test_path, settings) -> _TextData:
    """Several processes (textclf/training/distributed.py): each reads only its share of the corpus (and of the
    test corpus) and counts its own documents; the vocabulary is agreed through the runtime
    (pipelines/vectorize.fit_vectorizer_shared). Without --test each process holds out validation_fraction of
    its own share (a seeded draw, not stratified: a share may hold one document of a label). The model search
    does not run (each process would search its own share); the vector cache is not used (its key is the
    whole corpus's fingerprint)."""
    import jax

    from pipelines.corpus import check_usable
    from pipelines.vectorize import fit_vectorizer_shared
    from textclf.training.data_parallel import RowShare
    from textclf.training.distributed import exchange_arrays

    db, run_id, phase, warmup, pool, report = run.db, run.run_id, run.phase, run.warmup, run.pool, run.report

    def read_progress(documents: int, stats) -> None:  # of this process's share
        report(TrainEvent("progress", "read", done=stats.bytes_read, total=stats.bytes_total, documents=documents))

    share = (jax.process_index(), jax.process_count())
    with phase("read"):
        corpus = read_corpus(corpus_path, settings.max_file_mb, read_progress, share=share)
        test = read_corpus(test_path, settings.max_file_mb, read_progress, share=share) if test_path else None
    has_test = test is not None  # (a Corpus of an empty share is falsy)
    if has_test:
        train_texts, train_labels, eval_texts, eval_labels = corpus.texts, corpus.labels, test.texts, test.labels
    else:
        held = np.zeros(len(corpus.labels), bool)
        rng = np.random.default_rng([settings.seed, share[0]])
        held[rng.permutation(len(held))[:int(round(len(held) * settings.validation_fraction))]] = True
        train_rows, eval_rows = np.flatnonzero(~held), np.flatnonzero(held)
        train_texts, eval_texts = [corpus.texts[i] for i in train_rows], [corpus.texts[i] for i in eval_rows]
        train_labels, eval_labels = [corpus.labels[i] for i in train_rows], [corpus.labels[i] for i in eval_rows]
    mine = {"labels": np.unique(corpus.labels).astype(str), "empty": np.array(corpus.empty_labels, dtype=str),
            "non_utf8": np.array([corpus.non_utf8 + (test.non_utf8 if has_test else 0)]),
            "sizes": np.array([len(train_labels), len(eval_labels)]),
            "fingerprint": np.array([corpus.fingerprint], dtype=str),
            "skipped": np.array([f"{k}\t{v}" for k, v in corpus.skipped.items()], dtype=str),
            "test_skipped": np.array([f"{k}\t{v}" for k, v in (test.skipped if has_test else {}).items()], dtype=str)}
    if has_test:
        mine["test_labels"] = np.unique(test.labels).astype(str)
    shared = exchange_arrays(mine)
    labels = sorted(set().union(*(map(str, part["labels"]) for part in shared)))
    empty = sorted(set.intersection(*(set(map(str, part["empty"])) for part in shared)))
    skipped, test_skipped = (_skips_added(shared, key) for key in ("skipped", "test_skipped"))
    check_usable(corpus.source, labels, skipped, empty)
    if has_test:
        _check_test_labels(set().union(*(map(str, part["test_labels"]) for part in shared)), labels, test.source)
    search = {"skipped": "several processes train together: pass the settings a one-process search chose"}
    run_queries.update_run(db, run_id, search=search)
    with ExitStack() as stack:
        workers = pool or stack.enter_context(vectorize_pool(len(train_texts)))
        warmup.start()
        with phase("vectorize"):
            vectorizer, train_x, classes = fit_vectorizer_shared(train_texts, train_labels, settings, exchange_arrays,
                                                                 workers)
            report(TrainEvent("progress", "vectorize", done=len(train_texts), total=len(train_texts),
                              documents=len(train_texts)))
            eval_x = vectorizer.transform(eval_texts, pool=workers, on_progress=lambda done, total: report(
                TrainEvent("progress", "vectorize", done=done, total=total, documents=done)))
    train_counts = [int(part["sizes"][0]) for part in shared]
    rows = RowShare(tuple(int(x) for x in np.cumsum([0, *train_counts[:-1]])), tuple(train_counts), share[0])
    fingerprint = hashlib.sha256("".join(str(part["fingerprint"][0]) for part in shared).encode()).hexdigest()
    non_utf8 = sum(int(part["non_utf8"][0]) for part in shared)
    skipped, classes, eval_kind = _record_corpus(
        db, run_id, corpus.format, fingerprint, skipped, test_skipped, non_utf8, train_labels, eval_labels, has_test,
        counts=(rows.total, sum(int(part["sizes"][1]) for part in shared)), classes=classes)
    run_queries.update_run(db, run_id, n_features=vectorizer.n_features, vectors_cached=False)
    return _TextData(vectorizer, train_x, eval_x, list(train_labels), list(eval_labels), classes, eval_kind, skipped,
                     non_utf8, fingerprint, search, rows=rows, read_documents=len(corpus.labels))


def _skips_added(shared: list[dict], key: str) -> dict[str, int]:
    """Every process's skip counts ("reason\tcount" strings), added up by reason."""
    total: Counter = Counter()
    for part in shared:
        for entry in map(str, part[key]):
            reason, count = entry.rsplit("\t", 1)
            total[reason] += int(count)
    return dict(total)


def _vectorized_data(run: _Run, corpus_path, test_path, settings) -> tuple[_TextData, Settings]:
    """"tfidf": the texts in memory (the vocabulary fit needs them all), vectors cached by corpus fingerprint.
    Starts the JAX warm-up once the workers are forked (or at once when the vectors come from the cache).
    With Settings.search "auto" the model search chooses the settings first, on the training documents only:
    the test corpus is opened after it. -> (the data, the settings it was vectorized with)."""
    db, run_id, phase, warmup, pool, report = run.db, run.run_id, run.phase, run.warmup, run.pool, run.report

    def read_progress(documents: int, stats) -> None:
        report(TrainEvent("progress", "read", done=stats.bytes_read, total=stats.bytes_total, documents=documents))

    def vectorize_progress(done: int, total: int) -> None:
        report(TrainEvent("progress", "vectorize", done=done, total=total, documents=done))

    with ExitStack() as stack:
        workers = pool

        def forked(documents: int) -> WorkerPool:
            """The vectorizing workers for this many documents, forked on first use (before JAX starts threads),
            then the warm-up."""
            nonlocal workers
            if workers is None:
                workers = stack.enter_context(vectorize_pool(documents))
            if not warmup.started:  # the first use: the run records how its vectorizing runs
                run_queries.update_run(db, run_id, vectorize_workers=workers.description)
            warmup.start()
            return workers

        with phase("read"):
            # A large file of one document a line (JSONL, fastText's, CSV, TSV; Parquet in row groups) is parsed
            # by the workers (pipelines.corpus.parallel_read), so they are forked first (for at least as many
            # documents as the file can hold lines of 100 bytes: all cores), and JAX starts while they read. Its
            # texts stay in the file (FileTexts): the workers parse it again for the texts the search and the
            # vocabulary's fit sample need, and to transform it share by share.
            if isinstance(corpus_path, Corpus):
                corpus = corpus_path
            else:
                readers = forked(Path(corpus_path).stat().st_size // 100) if parallel_read(corpus_path) else None
                corpus = read_corpus(corpus_path, settings.max_file_mb, read_progress, pool=readers,
                                     keep_texts=False)
        train_rows = eval_rows = None  # with --test: every document of the corpus trains
        has_test = test_path is not None
        if has_test:
            train_labels = corpus.labels
        else:
            train_rows, eval_rows = split_validation(corpus.labels, corpus.source, settings)
            train_labels, eval_labels = [corpus.labels[i] for i in train_rows], [corpus.labels[i] for i in eval_rows]
        fit_sample = fit_rows(len(train_labels), settings)  # the vocabulary's fit sample (None: every text)
        in_file = isinstance(corpus.texts, FileTexts)
        if in_file and fit_sample is None:
            in_file = False  # a file of few long documents: the fit reads every text anyway
            corpus.texts = list(corpus.texts.fetch(np.arange(len(corpus.texts)), forked(len(corpus.texts))))
        in_memory = None if in_file else corpus.texts if train_rows is None else [corpus.texts[i] for i in train_rows]

        def train_texts(rows: np.ndarray | None) -> Sequence[str]:
            """The texts of these training documents (None: all, as a list: the search slices them), indexed by
            their number among them."""
            if in_memory is not None:
                return in_memory
            every = rows is None
            rows = np.arange(len(train_labels)) if every else rows
            in_corpus = rows if train_rows is None else train_rows[rows]
            fetched = corpus.texts.fetch(in_corpus, forked(len(corpus.texts)))
            if every:
                return [fetched[c] for c in in_corpus]
            return FetchedTexts(len(train_labels), {int(r): fetched[c] for r, c in zip(rows, in_corpus)})

        if settings.search != "off" and settings.vectorizer == "tfidf":
            settings, search, search_key = _search(run, train_texts, train_labels, settings,
                                                   forked(len(corpus.texts)), corpus.fingerprint, not has_test)
            return_freed_memory()  # the search's sample texts and matrices: ~0.8 GB at a million documents
        else:
            skipped = "--search off" if settings.search == "off" else "the search chooses tfidf settings only"
            search, search_key = {"skipped": skipped}, None
        if has_test:
            with phase("read", "reading the test corpus"):
                test = test_path if isinstance(test_path, Corpus) else read_corpus(
                    test_path, settings.max_file_mb, read_progress, pool=workers, keep_texts=False)
            _check_test_labels(test.labels, corpus.labels, test.source)
            eval_labels = test.labels
        else:
            test = None
        non_utf8 = corpus.non_utf8 + (test.non_utf8 if test else 0)
        skipped, classes, eval_kind = _record_corpus(db, run_id, corpus.format, corpus.fingerprint, corpus.skipped,
                                                     test.skipped if test else None, non_utf8, train_labels,
                                                     eval_labels, has_test)
        with phase("vectorize"):
            key = vector_cache.cache_key(corpus.fingerprint, test.fingerprint if test else None, settings,
                                         list(train_labels), list(eval_labels))
            cached = vector_cache.load(vector_cache_dir(), key) if run.keep_files else None
            if cached:
                warmup.start()  # no workers needed: nothing to fork first
                vectorizer, train_x, eval_x = cached
            else:
                workers = forked(len(corpus.texts))
                on_device = False  # the training matrix built on the device (resident_from_parts)
                if in_file:  # fitted on a sample of the training texts, then the whole file transformed
                    # The sample's texts are read by the workers that count them (LineTexts), not sent to them;
                    # the fit gives their rows, which the transform then skips (transform_file_parts' `known`).
                    sample_rows = fit_sample if train_rows is None else train_rows[fit_sample]
                    vectorizer, sample_x = fit_vectorizer(corpus.texts.lines(sample_rows),
                                                          [train_labels[i] for i in fit_sample], settings,
                                                          pool=workers, on_progress=vectorize_progress)
                    return_freed_memory()  # the sample's counts (~1 GB) before the matrix is built
                    parts = vectorizer.transform_file_parts(corpus.texts, workers, vectorize_progress,
                                                            known=(sample_rows, sample_x))
                    if test is not None and _side_by_side_with_held_out(settings, search, len(train_labels),
                                                                        not settings.char_ngrams, run.rules):
                        # Straight to the device a share at a time: the host never holds the whole matrix
                        # (~1.3 GB a million documents); nor does the vector cache, so it is not written.
                        from textclf.training.device_data import resident_from_parts

                        train_x = resident_from_parts(parts, encode_labels(train_labels, classes))
                        on_device = True
                    else:
                        train_x = stack_rows(list(parts))
                    if train_rows is not None:
                        train_x, eval_x = train_x[train_rows], train_x[eval_rows]
                else:
                    vectorizer, train_x = fit_vectorizer(train_texts(None), train_labels, settings, pool=workers,
                                                         on_progress=vectorize_progress)
                    # the fit's pass ends (a corpus of one chunk tells only this)
                    vectorize_progress(len(train_labels), len(train_labels))
                    if train_rows is not None:
                        eval_x = vectorizer.transform([corpus.texts[i] for i in eval_rows], pool=workers,
                                                      on_progress=vectorize_progress)
                if test is not None:
                    eval_x = (vectorizer.transform_file(test.texts, workers, vectorize_progress)
                              if isinstance(test.texts, FileTexts)
                              else vectorizer.transform(test.texts, pool=workers, on_progress=vectorize_progress))
                if run.primary and not on_device and run.keep_files:
                    vector_cache.save(vector_cache_dir(), key, vectorizer, train_x, eval_x)
    run_queries.update_run(db, run_id, n_features=vectorizer.n_features, vectors_cached=bool(cached))
    data = _TextData(vectorizer, train_x, eval_x, list(train_labels), list(eval_labels), classes, eval_kind,
                     skipped, non_utf8, corpus.fingerprint, search, search_key=search_key,
                     read_documents=len(corpus.texts))
    return data, settings


def _search(run: _Run, texts, labels, settings, pool, fingerprint: str, validation_split: bool
            ) -> tuple[Settings, dict, str | None]:
    """Run the model search on the training documents, or take the choice recorded for the same documents,
    settings and device (textclf/runs/search_cache.py; not with --search fresh); record its trials and choice;
    texts(rows): the training texts of these rows (None: all), indexed by row (called only if the search runs).
    -> (the chosen settings, the search's summary with its leaderboard (what the run records: a later update of
    it, the rate choice's, keeps the leaderboard), the key its choice is recorded under)."""
    db, run_id, phase, warmup, report = run.db, run.run_id, run.phase, run.warmup, run.report
    with phase("warmup"):
        _backend_ready(db, run_id, warmup)
    import jax  # after the warm-up thread's import

    from textclf.training.search import SEARCH_FORMAT, search_settings, searched_rows

    def on_round(done: int, total: int) -> None:
        report(TrainEvent("search", done=done, total=total))

    if jax.process_count() > 1:
        # Every process would search on its own, and a float that rounds differently on one host would make the
        # processes choose different settings and then deadlock in their collectives.
        summary = {"skipped": "several processes train together: pass the settings a one-process search chose"}
        run_queries.update_run(db, run_id, search=summary)
        return settings, summary, None
    key = search_key(fingerprint, validation_split, settings, warmup.result()[1], SEARCH_FORMAT, run.rules)
    recorded = run_queries.find_search(db, key) if settings.search == "auto" else None
    if recorded:
        summary = {"leaderboard": [], **recorded["summary"], "reused_from": recorded["run_id"]}
        chosen = Settings.from_dict({**recorded["settings"], "search": settings.search})
        run_queries.update_run(db, run_id, search=summary, settings=chosen.to_dict())
        return chosen, summary, key
    with phase("search"):
        rows = searched_rows(labels, settings, jax.default_backend(), run.rules)
        result = search_settings(texts(rows), list(labels), settings, pool, jax.default_backend(), on_round,
                                 run.rules)
    if result.trials:
        run_queries.add_search_trials(db, run_id, result.trials)
    recorded_summary = {**result.summary, "leaderboard": result.leaderboard[:10]}
    run_queries.update_run(db, run_id, search=recorded_summary, settings=result.settings.to_dict())
    if result.summary.get("skipped"):
        return result.settings, recorded_summary, None
    run_queries.save_search(db, key, run_id, result.settings.to_dict(), recorded_summary)
    return result.settings, recorded_summary, key


def _hashed_data(run: _Run, corpus_path, test_path, settings) -> _TextData:
    """"hashing": read and hashed in one streaming pass (pipelines/stream.py), texts never all in memory;
    the phase is "read_vectorize" since reading and hashing overlap."""
    from pipelines.stream import hash_corpus, weigh
    from pipelines.vectorize import fit_hashing_idf

    db, run_id = run.db, run.run_id
    with run.phase("read_vectorize"):
        corpus = hash_corpus(corpus_path, settings)
        test = hash_corpus(test_path, settings) if test_path else None
        if test:
            _check_test_labels(test.labels, corpus.labels, test.source)
            train_counts, eval_counts = corpus.counts, test.counts
            train_labels, eval_labels = corpus.labels, test.labels
        else:
            # Rows in corpus order (sorted row numbers): slicing a CSR matrix by sorted rows is one pass.
            train_rows, eval_rows = (np.sort(rows) for rows in split_validation(corpus.labels, corpus.source,
                                                                                settings))
            train_counts, eval_counts = corpus.counts[train_rows], corpus.counts[eval_rows]
            train_labels = [corpus.labels[i] for i in train_rows]
            eval_labels = [corpus.labels[i] for i in eval_rows]
        corpus.counts = None  # without --test: the whole matrix is freed once its two slices exist
        vectorizer = fit_hashing_idf(train_counts, settings)
        train_x, eval_x = weigh(train_counts, vectorizer), weigh(eval_counts, vectorizer)
    non_utf8 = corpus.stats.non_utf8 + (test.stats.non_utf8 if test else 0)
    skipped, classes, eval_kind = _record_corpus(db, run_id, corpus.format, corpus.fingerprint, corpus.stats.skipped,
                                                 test.stats.skipped if test else None, non_utf8, train_labels,
                                                 eval_labels, bool(test))
    run_queries.update_run(db, run_id, n_features=vectorizer.n_features, vectors_cached=False)
    return _TextData(vectorizer, train_x, eval_x, list(train_labels), list(eval_labels), classes, eval_kind,
                     skipped, non_utf8, corpus.fingerprint, read_documents=len(corpus.labels))
