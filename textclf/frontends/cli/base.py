"""The command line's shared parts: the typer apps, the consoles, the one-line error rule, the training options."""

from __future__ import annotations

import errno
import functools
import inspect
import json
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.text import Text

from textclf.errors import USER_ERRORS, SettingsError
from textclf.paths import run_db_path
from textclf.settings import SEARCHED_FIELDS, Settings, command_line_options, spelled_out
from textclf.training import Terminated

app = typer.Typer(
    help="Train, run and track bag-of-words text classifiers.", no_args_is_help=True, pretty_exceptions_enable=False
)


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
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Train, run and track bag-of-words text classifiers."""


DbOption = Annotated[Optional[Path], typer.Option("--db", help="Run database (default: $TEXTCLF_DB or the data dir).")]


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _terminate(signum, frame) -> None:
    raise Terminated()


def one_line(message: str) -> str:
    """The message with every line break and control character a user's value may have brought into it (a path,
    a label, an environment variable) written as an escape, so that an error stays one line."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in message)


WRITE_ERRORS = {
    errno.ENOSPC: "free some space",
    errno.EDQUOT: "free some space or raise the quota",
    errno.EROFS: "the file system is read-only: pass a writable --out, --db or TEXTCLF_HOME",
    errno.EACCES: "you may not write there: pass a writable --out, --db or TEXTCLF_HOME",
}


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
                _error(
                    f"the run database '{run_db_path(kwargs.get('db'))}' could not be written: the disk is full; "
                    "free some space (what was recorded before is kept)"
                )
            else:
                _error(
                    f"the run database failed ({exc}): it is damaged or not a textclf database; restore it from "
                    "a copy or pass another --db"
                )
            raise typer.Exit(1)
        except OSError as exc:
            if exc.errno not in WRITE_ERRORS:
                raise
            where = f" '{exc.filename}'" if exc.filename else ""
            _error(f"cannot write{where}: {exc.strerror}; {WRITE_ERRORS[exc.errno]} (what was recorded before is kept)")
            raise typer.Exit(1)
        except KeyboardInterrupt:
            err.print("Interrupted.", highlight=False)
            raise typer.Exit(130)
        except Terminated:
            err.print("Terminated.", highlight=False)
            raise typer.Exit(143)

    return wrapper


SQLITE_MAX_INT = 2**63 - 1  # the largest integer the run database can compare with


def check_limit(limit: int, what: str) -> int:
    """A --limit the user typed: 1 or more, within what SQLite holds (a larger one failed as a damaged database)."""
    if not 1 <= limit <= SQLITE_MAX_INT:
        raise SettingsError(f"--limit {limit}: pass how many of the newest {what} to show, 1 to {SQLITE_MAX_INT:,}")
    return limit


def _print_json(data) -> None:
    typer.echo(json.dumps(data, indent=2, default=str))


D = Settings()  # text defaults shown in --help; options left unset keep the defaults of the chosen model


# The training options, built from the Settings fields that the command line offers (settings.option: each one's
# flag, type and help text live beside its default): (flag, field, kind, help) each.
TRAINING_OPTIONS = command_line_options()


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
        raise SettingsError(
            f"--{images[0].replace('_', '-')} applies to image models only: add --model cnn or leave it out"
        )
    if "devices" in given:
        given["devices"] = _device_count(given["devices"])
    given = spelled_out(given)
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
    added = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[kind, _option(name, kind, help_text)],
        )
        for name, _, kind, help_text in TRAINING_OPTIONS
    ]

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        given = {name: kwargs.pop(name, None) for name, _, _, _ in TRAINING_OPTIONS}
        return fn(*args, settings=settings_from_options(**given), **kwargs)

    wrapper.__signature__ = signature.replace(
        parameters=[
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if p.default is not inspect.Parameter.empty else p
            for p in own
        ]
        + added
    )
    return wrapper


STEPS_LINE_SECONDS = 10.0  # a log file gets a line of steps within an epoch at most this often


PHASE_NAMES = {
    "read": "reading the corpus",
    "vectorize": "vectorizing",
    "read_vectorize": "reading and vectorizing",
    "warmup": "starting the device",
    "search": "model search",
    "search_ahead": "the model search's tokenising and folds, while the device starts",
    "rates": "choosing the learning rate on held-out documents",
    "evaluate": "evaluating",
    "save": "saving",
}


class _TrainProgress:
    """Progress of `train` on stderr: on a terminal, rich bars (a spinner for each phase before training, then the
    search's rounds and the epochs); elsewhere (a log file, a pipe), one plain line per finished phase, search
    round and epoch, never cut to a width. A phase is written when it has finished, so that a run stopped by bad
    input prints nothing but the error."""

    def __init__(self, enabled: bool):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.enabled, self.live = enabled, enabled and err.is_terminal
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            console=err,
            disable=not self.live,
        )
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
                    self.search_task = self.progress.add_task("search", total=event.total, stats="rounds of candidates")
                self.progress.update(self.search_task, completed=event.done, total=event.total)
        elif event.kind == "phase":  # training starts: the epochs' bar
            if event.views:  # e.g. the word network's epochs, then the character network's
                self._line(
                    f"training {event.total_epochs} epochs: the {', then the '.join(event.views)} (the "
                    "first epoch of each compiles)"
                )
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


RUN_COLUMNS = (
    "id",
    "status",
    "started_at",
    "corpus",
    "backend",
    "device",
    "n_train",
    "n_eval",
    "eval_kind",
    "eval_accuracy",
    "eval_metric",
    "eval_score",
    "final_loss",
    "model_path",
)


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
