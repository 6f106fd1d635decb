"""`textclf` command line: thin typer commands over the library. Results go to stdout, progress and errors to
stderr; any of textclf.errors.USER_ERRORS becomes "Error: <message>" and exit code 1, never a traceback.
(Over 600 lines: every command of one typer app and the printing of their results; resolving a model and
reading a run for display belong in library calls, which would leave the commands thin.)"""

from __future__ import annotations

import csv
import errno
import functools
import inspect
import json
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from textclf.settings import SEARCHED_FIELDS, Settings
from textclf.errors import USER_ERRORS, ArtifactError, CorpusError, InputError, SettingsError
from textclf.paths import run_db_path
from textclf.training.events import Terminated

app = typer.Typer(help="Train, run and track bag-of-words text classifiers.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
runs_app = typer.Typer(help="Query the run history.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")
jobs_app = typer.Typer(help="The training job queue (see 'textclf daemon').", no_args_is_help=True)
app.add_typer(jobs_app, name="jobs")

out = Console(soft_wrap=True)
err = Console(stderr=True)

def _print_version(value: bool) -> None:
    if value:
        from textclf.versions import versions

        typer.echo(f"textclf {versions()['textclf']}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """Train, run and track bag-of-words text classifiers."""


DbOption = Annotated[Optional[Path], typer.Option("--db", help="Run database (default: $TEXTCLF_DB or the data dir).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _terminate(signum, frame) -> None:
    raise Terminated()


def one_line(message: str) -> str:
    """The message with every line break and control character a user's value may have brought into it (a path,
    a label, an environment variable) written as an escape, so that an error stays one line."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in message)


# Why a write failed -> what to do; any other OSError is a bug and keeps its traceback.
WRITE_ERRORS = {errno.ENOSPC: "free some space", errno.EDQUOT: "free some space or raise the quota",
                errno.EROFS: "the file system is read-only: pass a writable --out, --db or TEXTCLF_HOME",
                errno.EACCES: "you may not write there: pass a writable --out, --db or TEXTCLF_HOME"}


def _error(message: str) -> None:
    err.print(Text.assemble(("Error:", "red"), f" {one_line(message)}"), highlight=False, soft_wrap=True)


def user_errors(fn):
    """Turn library errors into one line on stderr and exit code 1; SIGTERM into Terminated (the run it stops is
    recorded as interrupted, exit code 143)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _terminate)
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as exc:
            # A Text, not a markup string: "[gpu]" in a message or a path is printed as it is.
            err.print(Text.assemble(("Error:", "red"), f" {one_line(str(exc))}"), highlight=False, soft_wrap=True)
            raise typer.Exit(1)
        except sqlite3.DatabaseError as exc:  # a query on a run database that opened but is damaged inside
            if "full" in str(exc).lower():
                _error(f"the run database '{run_db_path(kwargs.get('db'))}' could not be written: the disk is full; "
                       "free some space (what was recorded before is kept)")
            else:
                _error(f"the run database failed ({exc}): it is damaged or not a textclf database; restore it from "
                       "a copy or pass another --db")
            raise typer.Exit(1)
        except OSError as exc:
            if exc.errno not in WRITE_ERRORS:
                raise
            where = f" '{exc.filename}'" if exc.filename else ""
            _error(f"cannot write{where}: {exc.strerror}; {WRITE_ERRORS[exc.errno]} (what was recorded before is "
                   "kept)")
            raise typer.Exit(1)
        except KeyboardInterrupt:
            err.print("Interrupted.", highlight=False)
            raise typer.Exit(130)
        except Terminated:
            err.print("Terminated.", highlight=False)
            raise typer.Exit(143)

    return wrapper


def _print_json(data) -> None:
    typer.echo(json.dumps(data, indent=2, default=str))


D = Settings()  # text defaults shown in --help; options left unset keep the defaults of the chosen model

# The training options, defined once: `train` and `submit` take all of them (with_training_options), each one
# maps to the Settings field of the same meaning (field), and a value left out keeps the model's default.
# (option name, Settings field, type, help)
TRAINING_OPTIONS = (
    ("features", "features", Optional[int], f"Bag-of-words width (default {D.features})."),
    ("vectorizer", "vectorizer", Optional[str], f"tfidf (fitted vocabulary) or hashing (default {D.vectorizer})."),
    ("ngrams", "ngram_max", Optional[int], f"Longest word n-gram (default {D.ngram_max}; searched)."),
    ("stop_words", "stop_words", Optional[str], f"'english' or 'none' (default {D.stop_words}; searched)."),
    ("nb_weighting", "nb_weighting", Optional[bool],
     "Scale each column by its naive Bayes log-count ratio (default on; searched)."),
    ("char_ngrams", "char_ngrams", Optional[bool],
     "A second network on character 2-5-grams, averaged with the words' (default: the search decides)."),
    ("sublinear_tf", "sublinear_tf", Optional[bool], "Weigh term counts as 1 + log(tf) (default on; searched)."),
    ("start_token", "start_token", Optional[bool],
     "Open every document with a marker word, so bigrams see its first word (default on)."),
    ("unspaced_as_characters", "unspaced_as_characters", Optional[bool],
     "Each character of Chinese, Japanese, Thai, Lao, Khmer or Myanmar text a word of its own; off for text "
     "already split into words (default on)."),
    ("hidden", "hidden", Optional[int], f"Hidden units (sigmoid) (default {D.hidden})."),
    ("batch_size", "batch_size", Optional[int], f"Minibatch size (default {D.batch_size}; searched)."),
    ("epochs", "epochs", Optional[int],
     f"Passes over the training set (default {D.epochs}, searched; cnn {Settings(model='cnn').epochs})."),
    ("optimizer", "optimizer", Optional[str], f"adam or sgd (default {D.optimizer})."),
    ("lr", "learning_rate", Optional[float], f"Learning rate (default {D.learning_rate}; searched)."),
    ("lr_schedule", "lr_schedule", Optional[str],
     f"constant, or linear or cosine decay to 0 (default {D.lr_schedule}; cnn {Settings(model='cnn').lr_schedule})."),
    ("momentum", "momentum", Optional[float], f"SGD momentum (default {D.momentum})."),
    ("init_gain", "init_gain", Optional[float], f"Glorot init range multiplier (default {D.init_gain})."),
    ("weight_decay", "weight_decay", Optional[float], f"L2 weight decay (default {D.weight_decay}; searched)."),
    ("ensemble", "ensemble", Optional[int],
     "Networks trained side by side and averaged into one model (default: the search tries 1 and 5 on a GPU)."),
    ("seed", "seed", Optional[int], f"Seed for the split, initialisation and shuffling (default {D.seed})."),
    ("backend", "backend", Optional[str], f"auto, xla or pallas (GPU) (default {D.backend})."),
    ("max_file_mb", "max_file_mb", Optional[float], f"Skip corpus files larger than this (default {D.max_file_mb})."),
    ("devices", "devices", Optional[str], "Devices of this process that split each batch: N or all (default all)."),
    ("parallel", "parallel", Optional[str],
     f"How several devices share the network: data, features (W1 split by rows) or auto (default {D.parallel})."),
    ("pallas_input", "pallas_input", Optional[str],
     f"Pallas input format: auto, dense, pieces or sparse (default {D.pallas_input})."),
    ("model", "model", Optional[str], "mlp (text) or cnn (images: folder of label folders or an IDX folder)."),
    ("conv_channels", "conv_channels", Optional[str], f"cnn: channels of each conv layer (default {D.conv_channels})."),
    ("conv_kernel", "conv_kernel", Optional[int], f"cnn: conv kernel size, odd (default {D.conv_kernel})."),
    ("dropout", "dropout", Optional[float], f"cnn: dropout on the dense layer (default {D.dropout})."),
    ("augment", "augment", Optional[str], f"cnn: shift, flip, shift,flip or none (default {D.augment})."),
    ("search", "search", Optional[str],
     "auto: choose stop words, n-grams, NB weights, sublinear tf, learning rate, weight decay, epochs, batch size, "
     "an ensemble and a character network by "
     "validation on the training corpus (options you set are kept), or reuse the choice a run of the same documents, "
     "settings and device recorded; fresh: search even then; off: use the settings as given (default auto)."),
    ("search_steps", "search_steps", Optional[int],
     "Work the search may spend, in network-steps (default: 20,000 on a CPU, 2,000,000 on a GPU): the same corpus "
     "and seed choose the same model on a busy or an idle machine."),
    ("search_budget", "search_budget", Optional[float],
     "Seconds the search may take, where you want a clock to bound it (default: none; alone, it replaces the "
     "default --search-steps)."),
)
IMAGE_ONLY = ("conv_channels", "conv_kernel", "dropout", "augment")


def _option(name: str, kind, help_text: str):
    flag = "--" + name.replace("_", "-")
    if kind is Optional[bool]:
        return typer.Option(f"{flag}/--no-{name.replace('_', '-')}", help=help_text)
    return typer.Option(flag, help=help_text)


def settings_from_options(**given) -> Settings:
    """Settings from the training options a user gave (None = not given). Typed searched fields are pinned."""
    given = {name: value for name, value in given.items() if value is not None}
    images = [name for name in IMAGE_ONLY if name in given]
    if images and given.get("model", D.model) != "cnn":
        raise SettingsError(f"--{images[0].replace('_', '-')} applies to image models only: add --model cnn or "
                            "leave it out")
    if "devices" in given:
        given["devices"] = _device_count(given["devices"])
    if given.get("augment") == "none":
        given["augment"] = ""
    if isinstance(given.get("stop_words"), str) and given["stop_words"].lower() == "none":
        given["stop_words"] = None
    fields = {name: field for name, field, _, _ in TRAINING_OPTIONS}
    # A fresh Settings, not D.replace: fields left out take the defaults of the model chosen (MODEL_DEFAULTS).
    chosen = {fields[name]: value for name, value in given.items()}
    pinned = tuple(name for name in SEARCHED_FIELDS if name in chosen)  # typed by the user: the search keeps them
    return Settings(**chosen, pinned=pinned)


def with_training_options(fn):
    """Give a command every training option (TRAINING_OPTIONS) after its own; it receives them as one
    `settings` argument."""
    signature = inspect.signature(fn, eval_str=True)  # typer reads a given __signature__ as it stands
    own = [p for p in signature.parameters.values() if p.name != "settings"]
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                               annotation=Annotated[kind, _option(name, kind, help_text)])
             for name, _, kind, help_text in TRAINING_OPTIONS]

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        given = {name: kwargs.pop(name, None) for name, _, _, _ in TRAINING_OPTIONS}
        return fn(*args, settings=settings_from_options(**given), **kwargs)

    wrapper.__signature__ = signature.replace(parameters=[p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
                                                          if p.default is not inspect.Parameter.empty else p
                                                          for p in own] + added)
    return wrapper


@app.command()
@user_errors
@with_training_options
def train(
    corpus: Annotated[Path, typer.Argument(help="Folder of label folders, .csv, .tsv, .jsonl or .parquet file, or fastText's __label__ format.")],
    settings: Settings,
    test: Annotated[Optional[Path], typer.Option(help="Separate test corpus (else a stratified validation split).")] = None,
    out_path: Annotated[Optional[str], typer.Option("--out", "-o", help="Model file to write (default: data dir).")] = None,
    db: DbOption = None,
    coordinator: Annotated[Optional[str], typer.Option(help="HOST:PORT of process 0, to train with several processes/hosts.")] = None,
    num_processes: Annotated[Optional[int], typer.Option(help="How many processes train together (with --coordinator).")] = None,
    process_id: Annotated[Optional[int], typer.Option(help="This process's number, 0..N-1 (with --coordinator).")] = None,
    plan_only: Annotated[bool, typer.Option(
        "--plan-only", help="Read, search and vectorize, then print the training plan and stop (no model; the run "
                            "is recorded as planned and its search reused by the next train).")] = False,
    as_json: JsonOption = False,
) -> None:
    # One parameter an option: typer reads the command line from this signature.
    """Train a model on CORPUS, record the run, and write the model file."""

    from textclf.training.distributed import initialize
    from textclf.runs.run import train as train_model

    initialize(coordinator, num_processes, process_id)  # before JAX touches a device; no-op for one process
    reporter = _TrainProgress(enabled=not as_json)
    finished = False
    try:
        result = train_model(corpus, settings, test_path=test, db_path=db, model_path=out_path,
                             on_event=reporter.on_event, plan_only=plan_only)
        finished = True
    finally:
        reporter.close(finished)
    if plan_only:
        if as_json:
            _print_json({"run_id": result.run_id, "plan": result.plan.to_dict(), "settings": result.settings.to_dict(),
                         "search": result.search})
            return
        for line in result.plan.lines():
            out.print(line, highlight=False, markup=False, soft_wrap=True)
        out.print(f"run {result.run_id} planned (not trained)", highlight=False)
        return
    if as_json:
        _print_json({"run_id": result.run_id, "model_path": str(result.model_path) if result.model_path else None, "eval_kind": result.eval_kind,
                     "eval_accuracy": result.eval_accuracy, "train_accuracy": result.train_accuracy,
                     "n_train": result.n_train, "n_eval": result.n_eval, "read_documents": result.read_documents,
                     "skipped": result.skipped,
                     "non_utf8": result.non_utf8, "phases": result.phases, "search": result.search,
                     "settings": result.model.settings.to_dict() if result.model is not None else None})
        return
    if result.skipped:
        err.print("skipped files: " + ", ".join(f"{n} {reason}" for reason, n in sorted(result.skipped.items())),
                  highlight=False)
    if result.non_utf8:
        err.print(f"{result.non_utf8} documents were not UTF-8 and were decoded as cp1252/Latin-1", highlight=False)
    search = result.search or {}
    if search.get("chosen"):
        c = result.model.settings
        err.print(f"search: chose stop words {c.stop_words or 'none'}, n-grams 1-{c.ngram_max}, "
                  f"NB weights {'on' if c.nb_weighting else 'off'}, {_rate_chosen(search, c.learning_rate)}, "
                  f"weight decay {c.weight_decay:g}, "
                  f"{_epochs_kept(search, c.epochs)}, {_batch_line(search, c.batch_size)}, {c.ensemble or 1} network(s)"
                  f"{' + the same on character n-grams' if c.char_ngrams else ''} by validation accuracy "
                  f"{search['best_accuracy']:.4f} ({_search_source(search, result.run_id)})",
                  highlight=False, markup=False, soft_wrap=True)
    elif search.get("skipped") and search["skipped"] != "--search off":
        err.print(f"search skipped: {search['skipped']}", highlight=False, markup=False)
    phases = ", ".join(f"{k} {v:.2f}s" for k, v in result.phases.items())
    out.print(f"{result.eval_kind} accuracy {result.eval_accuracy:.4f} on {result.n_eval} documents "
              f"(trained on {result.n_train}; {phases})", highlight=False)
    if result.model_path is None:
        out.print("not process 0: the run record and the model file are written by process 0", highlight=False)
    else:
        out.print(f"run {result.run_id}, model {result.model_path}", highlight=False)


STEPS_LINE_SECONDS = 10.0  # a log file gets a line of steps within an epoch at most this often

PHASE_NAMES = {"read": "reading the corpus", "vectorize": "vectorizing", "read_vectorize": "reading and vectorizing",
               "warmup": "starting the device", "search": "model search",
               "rates": "choosing the learning rate on held-out documents", "evaluate": "evaluating", "save": "saving"}


class _TrainProgress:
    """Progress of `train` on stderr: on a terminal, rich bars (a spinner for each phase before training, then the
    search's rounds and the epochs); elsewhere (a log file, a pipe), one plain line per finished phase, search
    round and epoch, never cut to a width. A phase is written when it has finished, so that a run stopped by bad
    input prints nothing but the error."""

    def __init__(self, enabled: bool):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.enabled, self.live = enabled, enabled and err.is_terminal
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[stats]}"), TimeElapsedColumn(), console=err,
                                 disable=not self.live)
        self.started = False
        self.phase_task = self.search_task = self.epoch_task = None
        self.pending: tuple[str, float] | None = None  # (phase, start) not yet written as a plain line
        self.last_steps_line = time.perf_counter()
        self.pass_key: tuple[str, int] | None = None  # (phase, total) of the current reading or vectorizing pass
        self.pass_start = 0.0  # when that pass began
        self.last_progress = 0.0  # when the last progress event came

    def _start(self) -> None:
        if not self.started:
            self.progress.start()
            self.started = True

    def _line(self, text: str) -> None:
        if self.enabled and not self.live:
            err.print(text, highlight=False, markup=False, soft_wrap=True)

    def _finish_phase(self) -> None:
        if self.pending is not None:
            description, start = self.pending
            self._line(f"{description}: {time.perf_counter() - start:.1f} s")
            self.pending = None

    def _phase_progress(self, event) -> None:
        """Within reading or vectorizing: how far, how fast, how long left (a plain line every
        STEPS_LINE_SECONDS at most)."""
        if self.pending is None:
            return
        description, phase_start = self.pending
        # A pass (reading one file, transforming one set of documents) has its own rate and time left: vectorizing
        # fits on the training documents, then transforms the test documents. It began with its phase or, within
        # the phase, where the pass before it last reported.
        now = time.perf_counter()
        if self.pass_key != (description, event.total):
            self.pass_start = phase_start if self.pass_key is None else self.last_progress
            self.pass_key = (description, event.total)
        self.last_progress = now
        seconds = max(now - self.pass_start, 1e-9)
        if event.name == "read" and event.total:  # a file: its bytes
            unit, done, total = "MB", event.done / 1e6, event.total / 1e6
            text = f"{event.documents:,} documents, {done:,.0f}/{total:,.0f} MB"
        elif event.name == "read":  # a folder: its size is not known before the walk
            unit, done, total = "documents", event.documents, 0
            text = f"{done:,} documents"
        else:
            unit, done, total = "documents", event.done, event.total
            text = f"{done:,}/{total:,} documents"
        rate = done / seconds
        text += f", {rate:,.0f} {unit}/s" if unit == "documents" else f", {rate:,.1f} {unit}/s"
        if total and 0 < done < total and rate > 0:
            text += f", about {(total - done) / rate:.0f} s left"
        if self.live and self.phase_task is not None:
            self.progress.update(self.phase_task, completed=done, total=total or None, stats=text)
        if time.perf_counter() - self.last_steps_line >= STEPS_LINE_SECONDS:
            self._line(f"  {description}: {text}")
            self.last_steps_line = time.perf_counter()

    def on_event(self, event) -> None:
        if event.kind == "progress":
            return self._phase_progress(event)
        if event.kind != "search":
            self._finish_phase()
        if event.kind == "phase" and event.name != "train":
            description = event.description or PHASE_NAMES.get(event.name, event.name)
            self.pending = (description, time.perf_counter())
            self.pass_key = None  # a new phase: its first pass starts with it
            if self.live:
                self._start()
                if self.phase_task is not None:
                    self.progress.remove_task(self.phase_task)
                self.phase_task = self.progress.add_task(description, total=None, stats="")
        elif event.kind == "search":
            self._line(f"search: {event.done}/{event.total} rounds of candidates")
            if self.live:
                if self.search_task is None:
                    self.search_task = self.progress.add_task("search", total=event.total,
                                                              stats="rounds of candidates")
                self.progress.update(self.search_task, completed=event.done, total=event.total)
        elif event.kind == "phase":  # training starts: the epochs' bar
            if event.views:  # e.g. the word network's epochs, then the character network's
                self._line(f"training {event.total_epochs} epochs: the {', then the '.join(event.views)} (the "
                           "first epoch of each compiles)")
            else:
                self._line(f"training {event.total_epochs} epochs (the first one compiles)")
            if self.live:
                self._start()
                if self.phase_task is not None:
                    self.progress.remove_task(self.phase_task)
                    self.phase_task = None
                self.epoch_task = self.progress.add_task("epochs", total=event.total_epochs, stats="compiling...")
        elif event.kind == "steps":  # within a long epoch (the CNN on a CPU): a plain line every 10 s at most
            if time.perf_counter() - self.last_steps_line >= STEPS_LINE_SECONDS or event.done == event.total:
                self._line(f"  {event.done}/{event.total} steps of this epoch")
                self.last_steps_line = time.perf_counter()
            if self.live and self.epoch_task is not None:
                self.progress.update(self.epoch_task, stats=f"step {event.done}/{event.total}")
        elif event.kind == "epoch":
            e = event.epoch
            acc = f" eval acc {e.eval_accuracy:.4f}" if e.eval_accuracy is not None else ""
            stats = f"loss {e.loss:.4f} train acc {e.train_accuracy:.4f}{acc} {e.docs_per_s:,.0f} docs/s"
            view = f" ({event.view}, its epoch {event.view_epoch})" if event.view else ""
            self._line(f"epoch {e.epoch}/{event.total_epochs}{view}: {stats}")
            if self.live and self.epoch_task is not None:
                self.progress.update(self.epoch_task, advance=1, stats=stats)

    def close(self, finished: bool) -> None:
        if finished:
            self._finish_phase()
        if self.started:
            if self.phase_task is not None:
                self.progress.remove_task(self.phase_task)
            self.progress.stop()


def _search_source(search: dict, run_id: int) -> str:
    """Where a search's choice came from: this run's rounds, or a recorded search it reused."""
    if search.get("reused_from"):
        return (f"the search of run {search['reused_from']}, reused: same training documents, settings and device; "
                "--search fresh searches again")
    return (f"{search['rounds']} of {search['rounds_planned']} rounds, {search['folds']} fold(s), "
            f"{search['seconds']:.1f} s; leaderboard: textclf runs show {run_id}")


def _rate_chosen(search: dict, rate: float) -> str:
    """The learning rate, and the candidates the held-out documents chose it from where they did (a big corpus)."""
    choice = search.get("rate_choice")
    if not choice:
        return f"lr {rate:g}"
    return f"lr {rate:g} (held-out documents' choice of " + \
        ", ".join(f"{r['learning_rate']:g}" for r in choice["candidates"]) + ")"


def _rate_choice_line(choice: dict) -> str:
    """Each rate candidate's best held-out accuracy and epoch, and which one was kept."""
    parts = []
    for k, (candidate, curve) in enumerate(zip(choice["candidates"], choice["held_out"])):
        best = max(curve)
        parts.append(f"lr {candidate['learning_rate']:g} wd {candidate['weight_decay']:g}: {best:.4f} at epoch "
                     f"{curve.index(best) + 1}" + (" (kept)" if k == choice["chosen"] else ""))
    where = "the early-stopping documents"
    if choice.get("refit"):
        narrowed = f" (networks on {choice['features']:,} columns)" if choice.get("features") else ""
        where = f"{choice['held_out_documents']:,} held-out training documents{narrowed}, then all of them"
    return f"by {where}: " + "; ".join(parts)


def _epochs_kept(search: dict, kept: int) -> str:
    """The search's epoch count, and the epoch early stopping kept where that differs (a big corpus)."""
    chosen = (search.get("chosen") or {}).get("epochs", kept)
    return f"{chosen} epochs" if chosen == kept else f"{chosen} epochs (stopped early: kept epoch {kept})"


def _batch_line(search: dict, batch_size: int) -> str:
    """The batch size, and the sample's where a big corpus trains with a larger one (search.batch_for_all)."""
    scaled = search.get("batch_for_all")
    if not scaled:
        return f"batch {batch_size}"
    return f"batch {batch_size} ({scaled['documents']:,} documents; the sample chose {scaled['sample']})"


def _device_count(devices: Optional[str]) -> Optional[int]:
    """--devices N|all -> Settings.devices (0 = all)."""
    if devices is None:
        return None
    if devices.strip().lower() == "all":
        return 0
    try:
        count = int(devices)
    except ValueError:
        count = 0
    if count < 1:
        raise SettingsError(f"--devices '{devices}' is not a device count: pass a whole number >= 1 or 'all'")
    return count


def _resolve_model(model: Optional[str], db: Optional[Path]) -> Path:
    """--model as given: a model file; else a published name, `name` (its newest version) or `name@3`; none:
    the model of the newest finished run."""
    from db import open_db
    from db.jobs import NAME_PATTERN
    from db.models import get_version
    from db.runs import latest_model_path

    if model is None:
        latest = latest_model_path(open_db(run_db_path(db)))
        if not latest:
            raise ArtifactError("no model given and no finished run in the run database: "
                                "train one with 'textclf train CORPUS' or pass --model")
        return Path(latest)
    if Path(model).exists():
        return Path(model)
    name, _, version = model.partition("@")
    if NAME_PATTERN.fullmatch(name) and (not version or version.isdigit()) and not model.endswith(".npz"):
        row = get_version(open_db(run_db_path(db)), name, int(version) if version else None)
        if row is not None:
            return Path(row["path"])
        raise ArtifactError(f"--model '{model}' is neither a model file nor a published model: pass a file, or a "
                            "name from 'textclf jobs list' (NAME for its newest version, NAME@N for version N)")
    return Path(model)  # a path that does not exist: load_model says so


@app.command()
@user_errors
def predict(
    files: Annotated[list[str], typer.Argument(help="Text files to classify (one document each), or folders of them; .jsonl, .csv, .tsv, fastText files and - (standard input): one document a line; .parquet: one a row.")],
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Model file, or a published model: NAME (newest version) or NAME@N (default: the newest finished run's).")] = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="How many labels to show per document; -1: all of them.")] = 3,
    threshold: Annotated[float, typer.Option("--threshold", "-t", help="Show only labels with at least this probability (fastText's -t).")] = 0.0,
    lines: Annotated[bool, typer.Option("--lines", help="Every file holds one document a line (as fastText's predict reads a file).")] = False,
    output_format: Annotated[str, typer.Option("--format", help="text (a tab-separated line each), json (one object each) or fasttext (__label__X 0.99 __label__Y 0.01, as fastText's predict-prob).")] = "text",
    db: DbOption = None,
    max_file_mb: Annotated[float, typer.Option(help="Refuse inputs larger than this.")] = 10.0,
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
) -> None:
    """Print the labels and probabilities of each document, one line each."""
    # One parameter an option: typer reads the command line from this signature.
    from textclf.inference.artifacts import load_model
    from textclf.inference.predict import check_threshold, check_top_k, rank, read_inputs

    from pipelines.images import IMAGE_SUFFIXES

    output_format = _output_format(output_format, as_json)
    check_top_k(top_k)
    check_threshold(threshold)
    if files and all(Path(f).suffix.lower() in IMAGE_SUFFIXES for f in files):
        results = _rank_images(load_model(_resolve_model(model, db)), files, top_k, threshold)
    else:
        stdin_bytes = None
        if "-" in files:  # read no more than the limit allows, however much the pipe holds
            stdin_bytes = _read_stdin(max_file_mb)
        documents, skipped = read_inputs(files, max_file_mb, stdin_bytes, lines)  # all checked before any output
        if skipped:
            err.print("skipped files: " + ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items())),
                      highlight=False)
        loaded = load_model(_resolve_model(model, db))
        if not hasattr(loaded, "vectorizer"):
            raise ArtifactError("this is an image model (--model cnn): pass image files (.png, .jpg) to classify")
        results = rank(loaded, [text for _, text in documents], [source for source, _ in documents], top_k,
                       threshold)
    for p in results:
        typer.echo(_prediction_line(p, output_format))


OUTPUT_FORMATS = ("text", "json", "fasttext")


def _output_format(output_format: str, as_json: bool) -> str:
    if output_format not in OUTPUT_FORMATS:
        raise InputError(f"--format is '{output_format}': give one of {', '.join(OUTPUT_FORMATS)}")
    if as_json and output_format not in ("text", "json"):
        raise InputError(f"--json and --format {output_format} disagree: give one of them")
    return "json" if as_json else output_format


def _read_stdin(max_file_mb: float) -> bytes:
    limit = int(max_file_mb * 1024 * 1024)
    try:
        stdin_bytes = sys.stdin.buffer.read(limit + 1)
    except (AttributeError, OSError, ValueError):  # no stdin (`<&-`), or a closed one
        raise InputError("standard input is closed: pipe the documents in, or pass files instead of -") from None
    if len(stdin_bytes) > limit:
        raise CorpusError(f"standard input is over --max-file-mb ({max_file_mb:g} MB): split it, or "
                          "raise --max-file-mb")
    return stdin_bytes


def _prediction_line(p, output_format: str) -> str:
    """One document's line: JSON Lines for json (a pipe reads results as they come), fastText's predict-prob line
    for fasttext (its labels with their __label__ prefix), else source, label and the probabilities by tabs."""
    if output_format == "json":
        return json.dumps({"file": p.source, "label": p.label,
                           "top": [{"label": l, "probability": q} for l, q in p.top]})
    if output_format == "fasttext":
        return " ".join(f"{label if label.startswith('__label__') else '__label__' + label} {prob:.6g}"
                        for label, prob in p.top)
    others = "  ".join(f"{label} {prob:.3f}" for label, prob in p.top)
    return f"{p.source}\t{p.label or ''}\t{others}"


def _rank_images(loaded, files: list[str], top_k: int, threshold: float):
    import numpy as np

    from textclf.inference.image_model import read_image_file
    from textclf.inference.predict import Prediction, top_labels

    if not hasattr(loaded, "image_shape"):
        raise ArtifactError("this is a text model: pass text files, or an image model (trained with --model cnn)")
    images = np.stack([read_image_file(f, loaded.image_shape) for f in files])  # all checked before any output
    ranked = top_labels(loaded.labels, loaded.predict_proba(images), top_k, threshold)
    return [Prediction(f, top[0][0] if top else None, top) for f, top in zip(files, ranked)]


@app.command("eval")
@user_errors
def evaluate_command(
    corpus: Annotated[Path, typer.Argument(help="Labelled corpus to score the model on.")],
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Model file, or a published model: NAME (newest version) or NAME@N (default: the newest finished run's).")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Accuracy, per-class precision/recall/F1 and the confusion matrix of a model on CORPUS."""
    from pipelines.corpus import read_corpus
    from textclf.inference.artifacts import load_model
    from textclf.inference.evaluate import evaluate

    loaded = load_model(_resolve_model(model, db))
    if hasattr(loaded, "image_shape"):
        from pipelines.images import is_idx_folder, read_image_corpus

        # An IDX folder is scored on its t10k (test) split when it has one.
        data = read_image_corpus(corpus, "t10k" if is_idx_folder(corpus, "t10k") else "train")
    else:
        data = read_corpus(corpus, loaded.settings.max_file_mb)
    result = evaluate(loaded, data)
    if as_json:
        _print_json(result.to_dict())
        return
    table = Table(title=f"accuracy {result.accuracy:.4f} on {result.n} documents")
    for column in ("label", "precision", "recall", "f1", "support"):
        table.add_column(column, justify="left" if column == "label" else "right")
    for i, label in enumerate(result.labels):
        table.add_row(label, f"{result.precision[i]:.4f}", f"{result.recall[i]:.4f}", f"{result.f1[i]:.4f}",
                      str(result.support[i]))
    for average, values in result.averages.items():
        table.add_row(f"{average} avg", f"{values['precision']:.4f}", f"{values['recall']:.4f}",
                      f"{values['f1']:.4f}", str(result.n), style="bold")
    out.print(table)
    confusion = Table(title="confusion matrix (rows: true, columns: predicted)")
    confusion.add_column("")
    for label in result.labels:
        confusion.add_column(label, justify="right")
    for label, row in zip(result.labels, result.confusion):
        confusion.add_row(label, *map(str, row))
    out.print(confusion)


@app.command()
@user_errors
def dataset(
    name: Annotated[str, typer.Argument(help="news4, 20news, agnews7600 or synthetic.")],
    source: Annotated[Path, typer.Argument(help="20news-bydate folder, the AG News test.csv, or (synthetic) any corpus.")],
    out_dir: Annotated[Path, typer.Argument(help="Folder to write train.jsonl and test.jsonl into.")],
    docs: Annotated[int, typer.Option(help="synthetic: training documents to sample (test gets a tenth).")] = 1_000_000,
) -> None:
    """Build a train/test corpus pair from a public dataset (see docs/development.md, 'Datasets and benchmarks')."""
    from pipelines.datasets import build_dataset

    paths = build_dataset(name, source, out_dir, docs)
    for split, path in paths.items():
        lines = sum(1 for _ in path.open(encoding="utf-8"))
        typer.echo(f"{split}: {path} ({lines} documents)")


RUN_COLUMNS = ("id", "status", "started_at", "corpus", "backend", "device", "n_train", "n_eval", "eval_kind",
               "eval_accuracy", "final_loss", "model_path")


@app.command()
@user_errors
def bench(
    tasks: Annotated[Optional[list[str]], typer.Argument(help="Folders under --data (or paths to folders) holding a training and a test corpus: train.jsonl and test.jsonl, train/ and test/ folders, train.csv and test.csv, NAME.train and NAME.test, ...; e.g. news4 agnews7600 news20 trec mr (default: news4 agnews7600).")] = None,
    tools: Annotated[str, typer.Option(help="Comma-separated tools to run (default: all but sklearn-mlp).")] = "",
    data: Annotated[Optional[Path], typer.Option(help="Folder holding the TASK folders (default <data dir>/datasets).")] = None,
    out_path: Annotated[Optional[Path], typer.Option("--out", "-o", help="Also write the markdown table here.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds allowed per tool and task.")] = 1800.0,
    db: DbOption = None,
) -> None:
    """Run textclf and its peers on the same tasks and machine; print a markdown table, record every result."""
    from db import open_db
    from textclf.training.backends import device_description
    from textclf.frontends.bench import markdown_table, run_bench
    from textclf.frontends.bench_tools import TOOLS
    from textclf.paths import data_dir

    chosen = [t.strip() for t in tools.split(",") if t.strip()] or [t for t in TOOLS if t != "sklearn-mlp"]
    database = open_db(run_db_path(db))
    bench_id, results = run_bench(
        tasks or ["news4", "agnews7600"], chosen, data or data_dir() / "datasets", database, timeout,
        on_result=lambda r: err.print(f"{r.task} {r.tool}: " + (r.error or f"accuracy {r.accuracy:.4f}, "
                                                                 f"{r.wall_s:.1f} s end to end"), highlight=False))
    table = markdown_table(results, device_description())
    typer.echo(table)
    typer.echo(f"bench {bench_id}: {len(results)} results in the run database (table bench_results)")
    if out_path:
        out_path.write_text(table)


def _runs_table(rows: list[dict], width: int) -> Table:
    """One line a run, `width` characters at most. The key columns (id, status, started, accuracy, docs) keep
    their full width; the backend, corpus name and error share what is left, cut with an ellipsis (`runs show ID`
    has them whole)."""
    from rich import box

    cells = []
    for r in rows:
        acc = f"{r['eval_accuracy']:.4f} {r['eval_kind'][:3]}" if r["eval_accuracy"] is not None else ""
        cells.append((str(r["id"]), r["status"], r["started_at"][5:16].replace("T", " "), acc,
                      str(r["n_train"] or ""), r["backend"] or "", Path(r["corpus"]).name, r["error"] or ""))
    names = ("id", "status", "started", "accuracy", "docs", "backend", "corpus", "error")
    widths = [max([len(name)] + [len(row[i]) for row in cells]) for i, name in enumerate(names)]
    left = max(3 * 3, width - sum(widths[:5]) - 2 * len(names))  # 2: the space between columns, and a margin
    # The flexible columns: the backend first (short), then the corpus up to half of the rest, the error last.
    backend = min(widths[5], 7)
    corpus = min(widths[6], max(3, (left - backend) // 2))
    error = max(3, left - backend - corpus)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True)
    for i, name in enumerate(names):
        fixed = widths[i] if i < 5 else (backend, corpus, error)[i - 5]
        table.add_column(name, no_wrap=True, overflow="ellipsis", width=fixed,
                         justify="right" if name in ("id", "docs") else "left")
    for row in cells:
        table.add_row(*row)
    return table


@runs_app.command("path")
@user_errors
def runs_path(db: DbOption = None) -> None:
    """Print the run database's path (--db, else $TEXTCLF_DB, else runs.db in the data dir), for sqlite-utils
    or Datasette."""
    typer.echo(str(run_db_path(db)))


@runs_app.command("list")
@user_errors
def runs_list(
    db: DbOption = None,
    limit: Annotated[int, typer.Option(help="Newest N runs.")] = 20,
    status: Annotated[Optional[str], typer.Option(help="Only runs with this status.")] = None,
    as_json: JsonOption = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV.")] = False,
) -> None:
    """The newest runs, one line each."""
    from db import open_db
    from db.runs import list_runs
    from textclf.runs.owner import reap_orphaned_runs

    database = open_db(run_db_path(db))
    reap_orphaned_runs(database)  # a run whose process is gone is shown as interrupted, not running
    rows = list_runs(database, limit=limit, status=status)
    if as_json:
        _print_json(rows)
    elif as_csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=RUN_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    else:
        out.print(_runs_table(rows, out.width))


def _search_budget_text(search: dict) -> str:
    """What a recorded search spent of its budget: network-steps, and seconds where a clock bounded it."""
    parts = []
    if search.get("budget_steps"):
        parts.append(f"{search.get('steps', 0):,} of {search['budget_steps']:,} network-steps")
    if search.get("budget_s"):
        parts.append(f"a {search['budget_s']:.0f} s clock")
    return " and ".join(parts) or "no bound"


@runs_app.command("show")
@user_errors
def runs_show(run_id: int, db: DbOption = None, as_json: JsonOption = False) -> None:
    """Everything recorded about one run: settings, versions, phases, the search's leaderboard, epochs."""
    from db import open_db
    from db.runs import get_run
    from textclf.runs.owner import reap_orphaned_runs

    database = open_db(run_db_path(db))
    reap_orphaned_runs(database)
    run = get_run(database, run_id)
    if as_json:
        _print_json(run)
        return
    for key, value in run.items():
        if key not in ("epochs", "phases", "settings", "versions", "search", "search_trials", "plan"):
            typer.echo(f"{key:20} {value}")
    typer.echo("settings             " + json.dumps(run["settings"]))
    if run.get("plan"):
        from textclf.training.plan import TrainingPlan

        for line in TrainingPlan.from_dict(run["plan"]).lines():
            typer.echo(line)
    search = run.get("search") or {}
    if search.get("skipped"):
        typer.echo(f"search               skipped: {search['skipped']}")
    elif search:
        if search.get("reused_from"):
            typer.echo(f"search               reused from run {search['reused_from']} (same training documents, "
                       "settings and device); what it recorded:")
        typer.echo(f"search               {search['rounds']} of {search['rounds_planned']} rounds, {search['folds']} "
                   f"fold(s), {search['seconds']:.1f} s, {_search_budget_text(search)}; chose "
                   + json.dumps(search["chosen"]))
        if search.get("kept_defaults"):
            kept = search["kept_defaults"]
            typer.echo(f"defaults kept        over {json.dumps(kept['over'])} ({kept['by']:.4f}: within a standard "
                       "error)")
        if search.get("batch_for_all"):
            scaled = search["batch_for_all"]
            typer.echo(f"batch for all        {scaled['all']} (the sample chose {scaled['sample']}; {scaled['documents']:,} "
                       f"documents: at most {scaled['epoch_steps']:,} steps an epoch)")
        if search.get("ensemble"):
            typer.echo("networks             " + json.dumps(search["ensemble"]))
        if search.get("rate_choice"):
            typer.echo("rate choice          " + _rate_choice_line(search["rate_choice"]))
        board = Table(title="search leaderboard (mean validation accuracy over the folds)")
        for column in ("rank", "stop words", "n-grams", "NB weights", "lr", "decay", "epochs", "folds", "accuracy"):
            board.add_column(column, justify="right")
        for rank, row in enumerate(search.get("leaderboard", []), 1):
            c = row["settings"]
            board.add_row(str(rank), str(c["stop_words"]), str(c["ngram_max"]), str(c.get("nb_weighting", False)),
                          f"{c['learning_rate']:g}", f"{c.get('weight_decay', 0.0):g}", str(c["epochs"]),
                          str(row.get("folds", search["folds"])), f"{row['accuracy']:.4f}")
        out.print(board)
    typer.echo("versions             " + json.dumps(run["versions"]))
    typer.echo("phases (s)           " + ", ".join(f"{k} {v:.3f}" for k, v in run["phases"].items()))
    table = Table(title="epochs")
    for column in ("epoch", "loss", "train acc", "eval acc", "seconds", "docs/s"):
        table.add_column(column, justify="right")
    for e in run["epochs"]:
        table.add_row(str(e["epoch"]), f"{e['loss']:.4f}", f"{e['train_accuracy']:.4f}",
                      "" if e["eval_accuracy"] is None else f"{e['eval_accuracy']:.4f}",
                      f"{e['seconds']:.3f}", f"{e['docs_per_s']:,.0f}")
    out.print(table)


@runs_app.command("compare")
@user_errors
def runs_compare(run_a: int, run_b: int, db: DbOption = None, as_json: JsonOption = False) -> None:
    """Side by side: metrics, phase times and the settings that differ."""
    from db import open_db
    from db.runs import get_run

    database = open_db(run_db_path(db))
    a, b = get_run(database, run_a), get_run(database, run_b)
    rows = [(k, a.get(k), b.get(k)) for k in ("status", "corpus", "backend", "device", "n_train", "n_eval",
                                               "eval_accuracy", "train_accuracy", "final_loss")]
    rows += [(f"phase.{k}", a["phases"].get(k), b["phases"].get(k)) for k in sorted(set(a["phases"]) | set(b["phases"]))]
    rows += [(f"settings.{k}", a["settings"].get(k), b["settings"].get(k))
             for k in sorted(set(a["settings"]) | set(b["settings"])) if a["settings"].get(k) != b["settings"].get(k)]
    if as_json:
        _print_json({name: {"a": x, "b": y} for name, x, y in rows})
        return
    table = Table()
    table.add_column("")
    table.add_column(f"run {run_a}")
    table.add_column(f"run {run_b}")
    for name, x, y in rows:
        table.add_row(name, *(f"{v:.4f}" if isinstance(v, float) else str(v) for v in (x, y)))
    out.print(table)


@runs_app.command("plot")
@user_errors
def runs_plot(
    run_id: int,
    db: DbOption = None,
    out_path: Annotated[Optional[Path], typer.Option("--out", "-o", help="PNG, SVG or PDF to write (default run-ID.png).")] = None,
) -> None:
    """Write a picture of the run's loss and accuracy per epoch."""
    from db import open_db
    from db.runs import get_run
    from textclf.frontends.plot import plot_run

    path = plot_run(get_run(open_db(run_db_path(db)), run_id), out_path or Path(f"run-{run_id}.png"))
    typer.echo(str(path))


@runs_app.command("ui")
@user_errors
def runs_ui(
    db: DbOption = None,
    host: Annotated[str, typer.Option(help="Address to bind (beyond 127.0.0.1 needs --token).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8001,
    token: Annotated[Optional[str], typer.Option(envvar="TEXTCLF_TOKEN", help="Token every request must carry.")] = None,
) -> None:
    """Browse the run database in a web browser (Datasette, read-only): runs, epochs, searches, jobs, models."""
    import uvicorn

    from textclf.frontends.runs_ui import build_app
    from textclf.frontends.service.options import ServiceOptions

    options = ServiceOptions.binding(host, token)  # the same rule as `serve`: beyond loopback, a token
    app_ = build_app(run_db_path(db), options.token)
    _check_port_free(host, port)
    err.print(f"run database {run_db_path(db)} at http://{host}:{port}/ (Ctrl-C stops)", highlight=False)
    uvicorn.run(app_, host=host, port=port, log_level="warning")


@app.command()
@user_errors
@with_training_options
def submit(
    corpus: Annotated[Path, typer.Argument(help="Folder of label folders, .csv, .tsv, .jsonl or .parquet file, or fastText's __label__ format (read by the daemon).")],
    settings: Settings,
    name: Annotated[Optional[str], typer.Option(help="Model name to publish under (default: the corpus name).")] = None,
    test: Annotated[Optional[Path], typer.Option(help="Separate test corpus.")] = None,
    db: DbOption = None,
    max_attempts: Annotated[int, typer.Option(help="Give up after this many daemon deaths.")] = 3,
) -> None:
    """Queue a training job for 'textclf daemon' (every option of 'train'); prints the job id."""
    from db import jobs, open_db

    if not corpus.exists():
        raise CorpusError(f"corpus path '{corpus}' does not exist: pass a folder, .csv, .tsv, .jsonl, .parquet or "
                          "fastText file")
    job_id = jobs.submit(open_db(run_db_path(db)), str(corpus.resolve()), settings.to_dict(), name or corpus.stem,
                         str(test.resolve()) if test else None, max_attempts)
    typer.echo(job_id)


@jobs_app.command("list")
@user_errors
def jobs_list(db: DbOption = None, limit: Annotated[int, typer.Option(help="Newest N jobs.")] = 20,
              status: Annotated[Optional[str], typer.Option(help="Only jobs with this status.")] = None,
              as_json: JsonOption = False) -> None:
    """The newest jobs, one line each."""
    from db import jobs, open_db

    rows = jobs.list_jobs(open_db(run_db_path(db)), limit, status)
    if as_json:
        _print_json(rows)
        return
    table = Table()
    for column in ("id", "status", "name", "corpus", "attempts", "run", "version", "error"):
        table.add_column(column)
    for r in rows:
        table.add_row(str(r["id"]), r["status"], r["name"], Path(r["corpus"]).name, f"{r['attempts']}/{r['max_attempts']}",
                      str(r["run_id"] or ""), str(r["model_version"] or ""), (r["error"] or "")[:50])
    out.print(table)


@jobs_app.command("show")
@user_errors
def jobs_show(job_id: int, db: DbOption = None) -> None:
    """Everything recorded about one job (JSON)."""
    from db import jobs, open_db

    _print_json(jobs.get(open_db(run_db_path(db)), job_id))


@jobs_app.command("cancel")
@user_errors
def jobs_cancel(job_id: int, db: DbOption = None) -> None:
    """Cancel a queued job now, or a running one after its current epoch."""
    from db import jobs, open_db

    typer.echo(f"job {job_id}: {jobs.cancel(open_db(run_db_path(db)), job_id)}")


@app.command()
@user_errors
def daemon(
    db: DbOption = None,
    once: Annotated[bool, typer.Option(help="Exit when the queue is empty.")] = False,
    poll: Annotated[float, typer.Option(help="Seconds between looks at an empty queue.")] = 1.0,
    stale_after: Annotated[float, typer.Option(help="Seconds without heartbeat before a job is taken over.")] = 60.0,
    heartbeat: Annotated[float, typer.Option(help="Seconds between heartbeats.")] = 5.0,
    checkpoint_every: Annotated[float, typer.Option(help="Checkpoint a job at most this often, in seconds (0: every epoch).")] = 10.0,
    publish: Annotated[str, typer.Option(help="not-worse: publish a job's model only if its evaluation accuracy is not below the serving version's (else the job is 'held'); always: publish every one.")] = "not-worse",
) -> None:
    """Train queued jobs one at a time until stopped (SIGTERM/Ctrl-C finish the current epoch, then exit)."""
    from textclf.frontends.daemon import PUBLISH_RULES, DaemonOptions, run_daemon

    if publish not in PUBLISH_RULES:
        raise SettingsError(f"--publish must be {' or '.join(PUBLISH_RULES)}, not '{publish}'")
    options = DaemonOptions(db_path=db, poll_seconds=poll, stale_after=stale_after, heartbeat_seconds=heartbeat,
                            once=once, checkpoint_seconds=checkpoint_every, publish=publish)
    ran = run_daemon(options, on_event=lambda message: err.print(message, highlight=False))
    err.print(f"daemon stopped after {ran} job(s)", highlight=False)


@app.command()
@user_errors
def serve(
    host: Annotated[str, typer.Option(help="Address to bind; anything but loopback requires --token everywhere.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    db: DbOption = None,
    token: Annotated[Optional[str], typer.Option(envvar="TEXTCLF_TOKEN", help="Bearer token for job submission.")] = None,
    data_root: Annotated[Optional[Path], typer.Option(help="Job corpora must lie under this folder.")] = None,
    max_instances: Annotated[int, typer.Option(help="Most texts in one predict request.")] = 1000,
    max_body_bytes: Annotated[int, typer.Option(help="Largest request body.")] = 1_000_000,
    batch_window_ms: Annotated[float, typer.Option(help="Extra wait to gather concurrent predictions.")] = 0.0,
    workers: Annotated[int, typer.Option(help="Server processes, each with its own copy of the models.")] = 1,
    score_on: Annotated[str, typer.Option(help="Run the network on the host (NumPy), the device (JAX) or auto.")] = "host",
    reload_seconds: Annotated[float, typer.Option(help="How often to look for newly published model versions.")] = 1.0,
) -> None:
    # One parameter an option: typer reads the command line from this signature.
    """Serve predictions and job submission over HTTP (OpenAPI docs at /docs)."""
    import os

    import uvicorn

    from textclf.frontends.service import OPTIONS_ENV, ServiceOptions, create_app, options_to_env

    # No GPU memory reserved up front in any server process (textclf/__init__.py): scoring needs only the model's
    # weights and one batch.
    options = ServiceOptions.binding(host, token, db_path=db, data_root=data_root, max_instances=max_instances,
                                     max_body_bytes=max_body_bytes, batch_window_ms=batch_window_ms,
                                     score_on=score_on, reload_seconds=reload_seconds)
    _check_port_free(host, port)
    if workers == 1:
        uvicorn.run(create_app(options), host=host, port=port, log_level="warning")
    else:  # the scoring is single-threaded Python: more processes, more documents per second
        os.environ[OPTIONS_ENV] = options_to_env(options)
        uvicorn.run("textclf.frontends.service:app_from_env", factory=True, workers=workers, host=host, port=port,
                    log_level="warning")


def _check_port_free(host: str, port: int) -> None:
    """A port a server can bind, said in one line before the server starts (uvicorn's own message is several)."""
    import socket

    if not 1 <= port <= 65535:
        raise SettingsError(f"--port {port} is not a TCP port: give 1 to 65535")
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise SettingsError(f"cannot listen on {host}:{port} ({exc.strerror}): pass another --port or --host") from None


def main() -> None:
    """The `textclf` command. Once a command has finished, the process leaves without Python's teardown of its
    modules, which after a run that imported JAX and scikit-learn takes about a second and frees nothing the
    operating system would not (BENCHMARKS.md, "Cold start with the search on": a cold `textclf train` 0.8-1.2 s
    less on an H100 machine, a prediction in a fresh process 1.52 -> 1.04 s on the 2-core CPU). What a normal exit
    does that matters still happens: the exit handlers run (logging's flush, temporary directories, JAX's own),
    then stdout and stderr are flushed. Where a thread the interpreter would wait for still runs, the exit is
    Python's own."""
    try:
        app()
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    if isinstance(code, str):  # sys.exit("message"): printed, status 1, as the interpreter does
        print(code, file=sys.stderr)
        code = 1
    code = 0 if code is None else code
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    import atexit
    import os

    atexit._run_exitfuncs()  # noqa: SLF001 - the handlers a normal exit runs; public API has no other way
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be written to it anyway
            pass
    os._exit(code)
