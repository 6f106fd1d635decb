"""`textclf runs ...` and `textclf jobs ...`: the run history and the job queue, as tables, JSON, pictures or
the browser (`runs ui`)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from textclf.frontends.cli.base import (
    RUN_COLUMNS,
    DbOption,
    JsonOption,
    check_limit,
    _print_json,
    err,
    jobs_app,
    out,
    runs_app,
    user_errors,
)
from textclf.frontends.cli.tools import _check_port_free
from textclf.frontends.cli.training import _rate_choice_line
from textclf.paths import run_db_path


def _runs_table(rows: list[dict], width: int) -> Table:
    """One line a run, `width` characters at most. The key columns (id, status, started, accuracy, docs) keep
    their full width; the backend, corpus name and error share what is left, cut with an ellipsis (`runs show ID`
    has them whole)."""
    from rich import box

    cells = []
    for r in rows:
        acc = f"{r['eval_accuracy']:.4f} {r['eval_kind'][:3]}" if r["eval_accuracy"] is not None else ""
        if r.get("eval_metric") not in (None, "accuracy") and r.get("eval_score") is not None:  # label sets
            acc = f"{r['eval_score']:.4f} {r['eval_kind'][:3]} {r['eval_metric']}"
        cells.append(
            (
                str(r["id"]),
                r["status"],
                r["started_at"][5:16].replace("T", " "),
                acc,
                str(r["n_train"] or ""),
                r["backend"] or "",
                Path(r["corpus"]).name,
                r["error"] or "",
            )
        )
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
        table.add_column(
            name, no_wrap=True, overflow="ellipsis", width=fixed, justify="right" if name in ("id", "docs") else "left"
        )
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

    check_limit(limit, "runs")
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


def _search_budget_text(search) -> str:
    """What a recorded search (a SearchSummary) spent of its budget: network-steps, and seconds where a clock
    bounded it."""
    parts = []
    if search.budget_steps:
        parts.append(f"{search.steps or 0:,} of {search.budget_steps:,} network-steps")
    if search.budget_s:
        parts.append(f"a {search.budget_s:.0f} s clock")
    return " and ".join(parts) or "no bound"


@runs_app.command("show")
@user_errors
def runs_show(
    run_id: int,
    db: DbOption = None,
    as_json: JsonOption = False,
    epochs: Annotated[
        Optional[int], typer.Option("--epochs", help="Show only the last N epochs (0: none; default: every epoch).")
    ] = None,
) -> None:
    """Everything recorded about one run: settings, versions, phases, the search's leaderboard, epochs."""
    from db import open_db
    from db.runs import get_run
    from textclf.errors import SettingsError
    from textclf.runs.owner import reap_orphaned_runs

    if epochs is not None and epochs < 0:
        raise SettingsError(f"--epochs {epochs}: pass 0 or more (the last N epochs), or leave it out for every epoch")
    database = open_db(run_db_path(db))
    reap_orphaned_runs(database)
    run = get_run(database, run_id)
    if epochs is not None:
        run["epochs"] = run["epochs"][len(run["epochs"]) - epochs :] if epochs else []
    if as_json:
        _print_json(run)
        return
    for key, value in run.items():
        if key not in ("epochs", "phases", "settings", "versions", "search", "search_trials", "plan"):
            typer.echo(f"{key:20} {value}")
    typer.echo("settings             " + json.dumps(run["settings"]))
    if run.get("plan"):
        from textclf.training import TrainingPlan

        for line in TrainingPlan.from_dict(run["plan"]).lines():
            typer.echo(line)
    if run.get("search"):
        _print_search(run["search"])
    typer.echo("versions             " + json.dumps(run["versions"]))
    typer.echo("phases (s)           " + ", ".join(f"{k} {v:.3f}" for k, v in run["phases"].items()))
    table = Table(title="epochs" if epochs is None else f"epochs (the last {len(run['epochs'])})")
    for column in ("epoch", "loss", "train acc", "eval acc", "seconds", "docs/s"):
        table.add_column(column, justify="right")
    for e in run["epochs"]:
        table.add_row(
            str(e["epoch"]),
            f"{e['loss']:.4f}",
            f"{e['train_accuracy']:.4f}",
            "" if e["eval_accuracy"] is None else f"{e['eval_accuracy']:.4f}",
            f"{e['seconds']:.3f}",
            f"{e['docs_per_s']:,.0f}",
        )
    out.print(table)


def _print_search(record: dict) -> None:
    """`runs show`'s lines for a run's recorded search (a SearchSummary's record) and its leaderboard."""
    from textclf.training.search import SearchSummary

    search = SearchSummary.from_record(record)
    if search.skipped:
        typer.echo(f"search               skipped: {search.skipped}")
        return
    if search.reused_from:
        typer.echo(
            f"search               reused from run {search.reused_from} (same training documents, "
            "settings and device); what it recorded:"
        )
    typer.echo(
        f"search               {search.rounds} of {search.rounds_planned} rounds, {search.folds} "
        f"fold(s), {search.seconds:.1f} s, {_search_budget_text(search)}; chose " + json.dumps(search.chosen)
    )
    if search.kept_defaults:
        kept = search.kept_defaults
        typer.echo(f"defaults kept        over {json.dumps(kept.over)} ({kept.by:.4f}: within a standard error)")
    if search.batch_for_all:
        scaled = search.batch_for_all
        typer.echo(
            f"batch for all        {scaled.all} (the sample chose {scaled.sample}; {scaled.documents:,} "
            f"documents: at most {scaled.epoch_steps:,} steps an epoch)"
        )
    if search.ensemble:
        typer.echo("networks             " + json.dumps(search.ensemble.to_record()))
    if search.family:
        typer.echo("family               " + _family_line(search.family))
    if search.rate_choice:
        typer.echo("rate choice          " + _rate_choice_line(search.rate_choice))
    board = Table(title="search leaderboard (mean validation accuracy over the folds)")
    for column in ("rank", "", "stop words", "n-grams", "NB weights", "lr", "decay", "epochs", "folds", "accuracy"):
        board.add_column(column, justify="right")
    for rank, row in enumerate(search.leaderboard or [], 1):
        c = row["settings"]
        board.add_row(
            str(rank),
            "chosen" if rank == 1 else "",
            str(c["stop_words"]),
            str(c["ngram_max"]),
            str(c.get("nb_weighting", False)),
            f"{c['learning_rate']:g}",
            f"{c.get('weight_decay', 0.0):g}",
            str(c["epochs"]),
            str(row.get("folds", search.folds)),
            f"{row['accuracy']:.4f}",
        )
    out.print(board)


def _family_line(family) -> str:
    """Which model family won the search's family trial (a FamilySummary), and by how much on validation."""
    if family.linear_score is None:
        return f"{family.chosen} (linear not tried: {family.linear_not_tried or ''})"
    return (
        f"{family.chosen}: validation linear {family.linear_score:.4f} against the network's "
        f"{family.network_score:.4f} ({family.by * 100:+.2f} points; the linear family wins above "
        f"{family.margin * 100:+.2f}); linear lr {family.linear_learning_rate:g}, decay "
        f"{family.linear_weight_decay:g}, {family.linear_epochs} epochs"
        + (f", {family.linear_loss.replace('_', ' ')} loss" if family.linear_loss else "")
        + f", {family.folds} fold(s)"
        + (
            f"; beside the network {family.mixed_score:.4f} ({family.mixed_by * 100:+.2f} points, one "
            f"standard error {family.mixed_standard_error * 100:.2f})"
            if family.mixed_score is not None
            else f"; beside the network not tried: {family.mixed_not_tried or ''}"
        )
    )


@runs_app.command("compare")
@user_errors
def runs_compare(run_a: int, run_b: int, db: DbOption = None, as_json: JsonOption = False) -> None:
    """Side by side: metrics, phase times and the settings that differ."""
    from db import open_db
    from db.runs import get_run

    database = open_db(run_db_path(db))
    a, b = get_run(database, run_a), get_run(database, run_b)
    rows = [
        (k, a.get(k), b.get(k))
        for k in (
            "status",
            "corpus",
            "backend",
            "device",
            "n_train",
            "n_eval",
            "eval_accuracy",
            "eval_metric",
            "eval_score",
            "train_accuracy",
            "final_loss",
        )
    ]
    rows += [
        (f"phase.{k}", a["phases"].get(k), b["phases"].get(k)) for k in sorted(set(a["phases"]) | set(b["phases"]))
    ]
    rows += [
        (f"settings.{k}", a["settings"].get(k), b["settings"].get(k))
        for k in sorted(set(a["settings"]) | set(b["settings"]))
        if a["settings"].get(k) != b["settings"].get(k)
    ]
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
    out_path: Annotated[
        Optional[Path], typer.Option("--out", "-o", help="PNG, SVG or PDF to write (default run-ID.png).")
    ] = None,
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
    token: Annotated[
        Optional[str], typer.Option(envvar="TEXTCLF_TOKEN", help="Token every request must carry.")
    ] = None,
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


@jobs_app.command("list")
@user_errors
def jobs_list(
    db: DbOption = None,
    limit: Annotated[int, typer.Option(help="Newest N jobs.")] = 20,
    status: Annotated[Optional[str], typer.Option(help="Only jobs with this status.")] = None,
    as_json: JsonOption = False,
) -> None:
    """The newest jobs, one line each."""
    from db import jobs, open_db

    rows = jobs.list_jobs(open_db(run_db_path(db)), check_limit(limit, "jobs"), status)
    if as_json:
        _print_json(rows)
        return
    table = Table()
    for column in ("id", "status", "name", "corpus", "attempts", "run", "version", "error"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            str(r["id"]),
            r["status"],
            r["name"],
            Path(r["corpus"]).name,
            f"{r['attempts']}/{r['max_attempts']}",
            str(r["run_id"] or ""),
            str(r["model_version"] or ""),
            (r["error"] or "")[:50],
        )
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
