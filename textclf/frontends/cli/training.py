"""`textclf train`, `submit` and `daemon`: training a model now, or queueing it for the daemon; the search's
choice printed in a line each."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from textclf.errors import CorpusError, SettingsError
from textclf.frontends.cli.base import (
    DbOption,
    JsonOption,
    _print_json,
    _TrainProgress,
    app,
    err,
    out,
    user_errors,
    with_training_options,
)
from textclf.paths import run_db_path
from textclf.settings import Settings

if TYPE_CHECKING:
    from textclf.training.search import RateChoice, SearchSummary


@app.command()
@user_errors
@with_training_options
def train(
    corpus: Annotated[
        Path,
        typer.Argument(
            help="Folder of label folders, .csv, .tsv, .jsonl or .parquet file, or fastText's __label__ format."
        ),
    ],
    settings: Settings,
    test: Annotated[
        Optional[Path], typer.Option(help="Separate test corpus (else a stratified validation split).")
    ] = None,
    out_path: Annotated[
        Optional[str], typer.Option("--out", "-o", help="Model file to write (default: data dir).")
    ] = None,
    db: DbOption = None,
    coordinator: Annotated[
        Optional[str], typer.Option(help="HOST:PORT of process 0, to train with several processes/hosts.")
    ] = None,
    num_processes: Annotated[
        Optional[int], typer.Option(help="How many processes train together (with --coordinator).")
    ] = None,
    process_id: Annotated[
        Optional[int], typer.Option(help="This process's number, 0..N-1 (with --coordinator).")
    ] = None,
    plan_only: Annotated[
        bool,
        typer.Option(
            "--plan-only",
            help="Read, search and vectorize, then print the training plan and stop (no model; the run "
            "is recorded as planned and its search reused by the next train).",
        ),
    ] = False,
    as_json: JsonOption = False,
    profile: Annotated[
        bool,
        typer.Option(
            "--profile",
            help="Print where the seconds went, from the process's start (interpreter, imports) through "
            "every phase to the exit, on stderr (with --json, also as \"profile\").",
        ),
    ] = False,
) -> None:
    # One parameter an option: typer reads the command line from this signature.
    """Train a model on CORPUS, record the run, and write the model file."""
    from textclf.frontends.profile import CommandProfile

    timing = CommandProfile() if profile else None
    from textclf.runs.run import train as train_model
    from textclf.training import initialize

    initialize(coordinator, num_processes, process_id)  # before JAX touches a device; no-op for one process
    reporter = _TrainProgress(enabled=not as_json)
    finished = False
    try:
        result = train_model(
            corpus,
            settings,
            test_path=test,
            db_path=db,
            model_path=out_path,
            on_event=reporter.on_event,
            plan_only=plan_only,
        )
        finished = True
    finally:
        reporter.close(finished)
    _print_result(result, plan_only, as_json, timing)


def _print_result(result, plan_only: bool, as_json: bool, timing) -> None:
    """The run's outcome on stdout (progress and the profile on stderr)."""
    profile = {"profile": dict(timing.rows(result.phases))} if timing is not None and as_json else {}
    if plan_only:
        if as_json:
            _print_json(
                {
                    "run_id": result.run_id,
                    "plan": result.plan.to_dict(),
                    "settings": result.settings.to_dict(),
                    "search": _search_record(result.search),
                    **profile,
                }
            )
            return
        for line in result.plan.lines():
            out.print(line, highlight=False, markup=False, soft_wrap=True)
        out.print(f"run {result.run_id} planned (not trained)", highlight=False)
    elif as_json:
        _print_json(
            {
                "run_id": result.run_id,
                "model_path": str(result.model_path) if result.model_path else None,
                "eval_kind": result.eval_kind,
                "eval_accuracy": result.eval_accuracy,
                "train_accuracy": result.train_accuracy,
                **_judged_by(result),
                "n_train": result.n_train,
                "n_eval": result.n_eval,
                "read_documents": result.read_documents,
                "skipped": result.skipped,
                "non_utf8": result.non_utf8,
                "phases": result.phases,
                "search": _search_record(result.search),
                "settings": result.model.settings.to_dict() if result.model is not None else None,
                **profile,
            }
        )
    else:
        _print_text(result)
    if timing is not None and not as_json:
        for line in timing.lines(result.phases):
            err.print("profile  " + line, highlight=False, markup=False, soft_wrap=True)


def _print_text(result) -> None:
    """A trained run's outcome as text: what the corpus left out (files, rows, cells, by reason) and the search's
    choice on stderr, the score on stdout."""
    if result.skipped:
        err.print(
            "left out of the corpus: "
            + ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(result.skipped.items())),
            highlight=False,
        )
    if result.non_utf8:
        err.print(f"{result.non_utf8} documents were not UTF-8 and were decoded as cp1252/Latin-1", highlight=False)
    search = result.search
    if search is not None and search.chosen:
        c = result.model.settings
        err.print(
            f"search: chose stop words {c.stop_words or 'none'}, n-grams 1-{c.ngram_max}, "
            f"NB weights {'on' if c.nb_weighting else 'off'}, {_rate_chosen(search, c.learning_rate)}, "
            f"weight decay {c.weight_decay:g}, "
            f"{_epochs_kept(search, c.epochs)}, {_batch_line(search, c.batch_size)}, "
            f"{'a linear model' if c.family == 'linear' else f'{c.ensemble or 1} network(s)'}"
            f"{' + the same on character n-grams' if c.char_ngrams else ''}"
            f"{' + a linear model' if c.family == 'network+linear' else ''} by validation "
            f"{'micro-F1' if c.multi_label else 'accuracy'} "
            f"{search.best_accuracy:.4f} ({_search_source(search, result.run_id)})",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    elif search is not None and search.skipped and search.skipped != "--search off":
        err.print(f"search skipped: {search.skipped}", highlight=False, markup=False)
    phases = ", ".join(f"{k} {v:.2f}s" for k, v in result.phases.items())
    judged = _judged_by(result)
    if judged["eval_metric"] == "accuracy":
        scored = f"{result.eval_kind} accuracy {result.eval_accuracy:.4f}"
    else:  # label sets: the metric the thresholds were chosen for, and every document's labels all right
        scored = (
            f"{result.eval_kind} {judged['eval_metric']} {judged['eval_score']:.4f}, subset accuracy "
            f"{result.eval_accuracy:.4f}"
        )
    out.print(f"{scored} on {result.n_eval} documents (trained on {result.n_train}; {phases})", highlight=False)
    if result.model_path is None:
        out.print("not process 0: the run record and the model file are written by process 0", highlight=False)
    else:
        out.print(f"run {result.run_id}, model {result.model_path}", highlight=False)


def _search_record(search) -> dict | None:
    """A run's SearchSummary as --json prints it: as the run database records it."""
    return search.to_record() if search is not None else None


def _search_source(search: SearchSummary, run_id: int) -> str:
    """Where a search's choice came from: this run's rounds, or a recorded search it reused."""
    if search.reused_from:
        return (
            f"the search of run {search.reused_from}, reused: same training documents, settings and device; "
            "--search fresh searches again"
        )
    return (
        f"{search.rounds} of {search.rounds_planned} rounds, {search.folds} fold(s), "
        f"{search.seconds:.1f} s; leaderboard: textclf runs show {run_id}"
    )


def _judged_by(result) -> dict:
    """The metric the run is judged by and its value ("accuracy" unless multi-label)."""
    metadata = result.model.metadata if result.model is not None else {}
    return {
        "eval_metric": metadata.get("eval_metric", "accuracy"),
        "eval_score": metadata.get("eval_score", result.eval_accuracy),
    }


def _rate_chosen(search: SearchSummary, rate: float) -> str:
    """The learning rate, and the candidates the held-out documents chose it from where they did (a big corpus)."""
    if search.rate_choice is None:
        return f"lr {rate:g}"
    return (
        f"lr {rate:g} (held-out documents' choice of "
        + ", ".join(f"{r['learning_rate']:g}" for r in search.rate_choice.candidates)
        + ")"
    )


def _rate_choice_line(choice: RateChoice) -> str:
    """Each rate candidate's best held-out accuracy and epoch, and which one was kept."""
    parts = []
    for k, (candidate, curve) in enumerate(zip(choice.candidates, choice.held_out)):
        best = max(curve)
        parts.append(
            f"lr {candidate['learning_rate']:g} wd {candidate['weight_decay']:g}: {best:.4f} at epoch "
            f"{curve.index(best) + 1}" + (" (kept)" if k == choice.chosen else "")
        )
    where = "the early-stopping documents"
    if choice.refit:
        narrowed = f" (networks on {choice.features:,} columns)" if choice.features else ""
        where = f"{choice.held_out_documents:,} held-out training documents{narrowed}, then all of them"
    return f"by {where}: " + "; ".join(parts)


def _epochs_kept(search: SearchSummary, kept: int) -> str:
    """The search's epoch count, and the epoch early stopping kept where that differs (a big corpus)."""
    chosen = (search.chosen or {}).get("epochs", kept)
    return f"{chosen} epochs" if chosen == kept else f"{chosen} epochs (stopped early: kept epoch {kept})"


def _batch_line(search: SearchSummary, batch_size: int) -> str:
    """The batch size, and the sample's where a big corpus trains with a larger one (search.batch_for_all)."""
    scaled = search.batch_for_all
    if scaled is None:
        return f"batch {batch_size}"
    return f"batch {batch_size} ({scaled.documents:,} documents; the sample chose {scaled.sample})"


@app.command()
@user_errors
@with_training_options
def submit(
    corpus: Annotated[
        Path,
        typer.Argument(
            help="Folder of label folders, .csv, .tsv, .jsonl or .parquet file, or fastText's __label__ format (read "
            "by the daemon)."
        ),
    ],
    settings: Settings,
    name: Annotated[Optional[str], typer.Option(help="Model name to publish under (default: the corpus name).")] = None,
    test: Annotated[Optional[Path], typer.Option(help="Separate test corpus.")] = None,
    db: DbOption = None,
    max_attempts: Annotated[int, typer.Option(help="Give up after this many daemon deaths.")] = 3,
) -> None:
    """Queue a training job for 'textclf daemon' (every option of 'train'); prints the job id."""
    from db import jobs, open_db

    if not corpus.exists():
        raise CorpusError(
            f"corpus path '{corpus}' does not exist: pass a folder, .csv, .tsv, .jsonl, .parquet or fastText file"
        )
    job_id = jobs.submit(
        open_db(run_db_path(db)),
        str(corpus.resolve()),
        settings.to_dict(),
        name or corpus.stem,
        str(test.resolve()) if test else None,
        max_attempts,
    )
    typer.echo(job_id)


@app.command()
@user_errors
def daemon(
    db: DbOption = None,
    once: Annotated[bool, typer.Option(help="Exit when the queue is empty.")] = False,
    poll: Annotated[float, typer.Option(help="Seconds between looks at an empty queue.")] = 1.0,
    stale_after: Annotated[float, typer.Option(help="Seconds without heartbeat before a job is taken over.")] = 60.0,
    heartbeat: Annotated[float, typer.Option(help="Seconds between heartbeats.")] = 5.0,
    checkpoint_every: Annotated[
        float, typer.Option(help="Checkpoint a job at most this often, in seconds (0: every epoch).")
    ] = 10.0,
    publish: Annotated[
        str,
        typer.Option(
            help="not-worse: publish a job's model only if its evaluation accuracy is not below the serving "
            "version's (else the job is 'held'); always: publish every one."
        ),
    ] = "not-worse",
) -> None:
    """Train queued jobs one at a time until stopped (SIGTERM/Ctrl-C finish the current epoch, then exit)."""
    from textclf.frontends.daemon import PUBLISH_RULES, DaemonOptions, run_daemon

    if publish not in PUBLISH_RULES:
        raise SettingsError(f"--publish must be {' or '.join(PUBLISH_RULES)}, not '{publish}'")
    options = DaemonOptions(
        db_path=db,
        poll_seconds=poll,
        stale_after=stale_after,
        heartbeat_seconds=heartbeat,
        once=once,
        checkpoint_seconds=checkpoint_every,
        publish=publish,
    )
    ran = run_daemon(options, on_event=lambda message: err.print(message, highlight=False))
    err.print(f"daemon stopped after {ran} job(s)", highlight=False)
