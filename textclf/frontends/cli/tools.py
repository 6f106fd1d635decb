"""`textclf dataset`, `bench` and `serve`: building benchmark corpora, peers side by side, the HTTP service."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from textclf.errors import SettingsError
from textclf.frontends.cli.base import DbOption, app, err, user_errors
from textclf.paths import run_db_path


@app.command()
@user_errors
def dataset(
    name: Annotated[str, typer.Argument(help="news4, 20news, agnews7600 or synthetic.")],
    source: Annotated[
        Path, typer.Argument(help="20news-bydate folder, the AG News test.csv, or (synthetic) any corpus.")
    ],
    out_dir: Annotated[Path, typer.Argument(help="Folder to write train.jsonl and test.jsonl into.")],
    docs: Annotated[int, typer.Option(help="synthetic: training documents to sample (test gets a tenth).")] = 1_000_000,
) -> None:
    """Build a train/test corpus pair from a public dataset (see docs/development.md, 'Datasets and benchmarks')."""
    from pipelines.datasets import build_dataset

    paths = build_dataset(name, source, out_dir, docs)
    for split, path in paths.items():
        lines = sum(1 for _ in path.open(encoding="utf-8"))
        typer.echo(f"{split}: {path} ({lines} documents)")


@app.command()
@user_errors
def bench(
    tasks: Annotated[
        Optional[list[str]],
        typer.Argument(
            help="Folders under --data (or paths to folders) holding a training and a test corpus: train.jsonl and "
            "test.jsonl, train/ and test/ folders, train.csv and test.csv, NAME.train and NAME.test, ...; e.g. "
            "news4 agnews7600 news20 trec mr (default: news4 agnews7600)."
        ),
    ] = None,
    tools: Annotated[str, typer.Option(help="Comma-separated tools to run (default: all but sklearn-mlp).")] = "",
    data: Annotated[
        Optional[Path], typer.Option(help="Folder holding the TASK folders (default <data dir>/datasets).")
    ] = None,
    out_path: Annotated[Optional[Path], typer.Option("--out", "-o", help="Also write the markdown table here.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds allowed per tool and task.")] = 1800.0,
    db: DbOption = None,
) -> None:
    """Run textclf and its peers on the same tasks and machine; print a markdown table, record every result."""
    from db import open_db
    from textclf.frontends.bench import markdown_table, run_bench
    from textclf.frontends.bench_tools import TOOLS
    from textclf.paths import data_dir
    from textclf.training import device_description

    chosen = [t.strip() for t in tools.split(",") if t.strip()] or [t for t in TOOLS if t != "sklearn-mlp"]
    database = open_db(run_db_path(db))
    bench_id, results = run_bench(
        tasks or ["news4", "agnews7600"],
        chosen,
        data or data_dir() / "datasets",
        database,
        timeout,
        on_result=lambda r: err.print(
            f"{r.task} {r.tool}: " + (r.error or f"accuracy {r.accuracy:.4f}, {r.wall_s:.1f} s end to end"),
            highlight=False,
        ),
    )
    table = markdown_table(results, device_description())
    typer.echo(table)
    typer.echo(f"bench {bench_id}: {len(results)} results in the run database (table bench_results)")
    if out_path:
        out_path.write_text(table)


@app.command()
@user_errors
def serve(
    models: Annotated[
        Optional[list[Path]],
        typer.Argument(
            help="Model files to serve (from 'textclf train --out'; named by the file: news.npz serves 'news', "
            "reloaded when the file is replaced) or folders of numbered versions (news/1.npz, news/2.npz), "
            "beside the published models.",
            show_default=False,
        ),
    ] = None,
    host: Annotated[
        str, typer.Option(help="Address to bind; anything but loopback requires --token everywhere.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    db: DbOption = None,
    token: Annotated[
        Optional[str], typer.Option(envvar="TEXTCLF_TOKEN", help="Bearer token for job submission.")
    ] = None,
    data_root: Annotated[Optional[Path], typer.Option(help="Job corpora must lie under this folder.")] = None,
    max_instances: Annotated[int, typer.Option(help="Most texts in one predict request.")] = 1000,
    max_body_bytes: Annotated[int, typer.Option(help="Largest request body.")] = 1_000_000,
    batch_window_ms: Annotated[float, typer.Option(help="Extra wait to gather concurrent predictions.")] = 0.0,
    workers: Annotated[int, typer.Option(help="Server processes, each with its own copy of the models.")] = 1,
    score_on: Annotated[
        str, typer.Option(help="Run the network on the host (NumPy), the device (JAX) or auto.")
    ] = "host",
    reload_seconds: Annotated[float, typer.Option(help="How often to look for newly published model versions.")] = 1.0,
) -> None:
    # One parameter an option: typer reads the command line from this signature.
    """Serve predictions of model files and published models, and job submission, over HTTP (OpenAPI docs at
    /docs)."""
    import os

    import uvicorn

    from textclf.frontends.service import OPTIONS_ENV, ServiceOptions, create_app, options_to_env

    # No GPU memory reserved up front in any server process (textclf/__init__.py): scoring needs only the model's
    # weights and one batch.
    options = ServiceOptions.binding(
        host,
        token,
        db_path=db,
        data_root=data_root,
        max_instances=max_instances,
        max_body_bytes=max_body_bytes,
        batch_window_ms=batch_window_ms,
        score_on=score_on,
        reload_seconds=reload_seconds,
        model_paths=[str(path) for path in models or []],
    )
    _check_model_files(options.model_paths)
    _check_port_free(host, port)
    # No access log (its line was formatted for every request, then dropped at this level) and no proxy headers
    # (no route reads the client's address): work a request did for nothing.
    server = dict(host=host, port=port, log_level="warning", access_log=False, proxy_headers=False)
    if workers == 1:
        uvicorn.run(create_app(options), **server)
    else:  # the scoring is single-threaded Python: more processes, more documents per second
        os.environ[OPTIONS_ENV] = options_to_env(options)
        uvicorn.run("textclf.frontends.service:app_from_env", factory=True, workers=workers, **server)


def _check_model_files(paths: list[str]) -> None:
    """Every model file given loads (and every folder's newest version), before the service starts."""
    from textclf.frontends.service.model_files import ModelFiles
    from textclf.inference.artifacts import load_model

    for row in ModelFiles(paths).latest().values():
        load_model(row["path"])


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
