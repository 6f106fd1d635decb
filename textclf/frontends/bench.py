"""`textclf bench`: textclf and the tools a user would pick instead, side by side on the same machine, the same
splits, in one command. Each (task, tool) runs in its own process (textclf/frontends/bench_tools.py) so that end-to-end
time includes start-up and peak host memory is that tool's alone; results go to the run database
(`bench_results`, one bench_id per invocation) and to a markdown table.

Tasks are folders with train.jsonl and test.jsonl under the data folder (default <data dir>/datasets), built by
`textclf dataset news4|agnews7600|synthetic ...`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from textclf.frontends.bench_tools import TOOLS
from textclf.errors import CorpusError, SettingsError

TASKS = ("news4", "agnews7600", "synthetic")


@dataclass
class BenchResult:
    task: str
    tool: str
    accuracy: float | None = None
    wall_s: float | None = None
    train_s: float | None = None
    docs_per_s: float | None = None  # training documents per second of training (documents x epochs / train_s)
    peak_host_mb: float | None = None
    peak_gpu_mb: float | None = None
    n_train: int | None = None
    n_test: int | None = None
    notes: str = ""
    error: str | None = None


def task_files(data: Path, task: str) -> tuple[Path, Path]:
    folder = data / task
    train, test = folder / "train.jsonl", folder / "test.jsonl"
    if not train.exists() or not test.exists():
        source = {"news4": "../shared/data/20news-bydate", "agnews7600": "../shared/data/ag_news/test.csv",
                  "synthetic": "../shared/data/20news-bydate"}.get(task, "SOURCE")
        raise CorpusError(f"task '{task}' has no {train} and {test}: build them with "
                          f"'textclf dataset {task} {source} {folder}'")
    return train, test


def run_one(task: str, tool: str, train: Path, test: Path, timeout_s: float) -> BenchResult:
    command = [sys.executable, "-m", "textclf.frontends.bench_tools", tool, str(train), str(test)]
    path = [str(Path(__file__).resolve().parents[2])] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return BenchResult(task, tool, error=f"timed out after {timeout_s:.0f} s")
    wall = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return BenchResult(task, tool, wall_s=wall, error=f"exit {done.returncode}: {tail}"[:300])
    data = json.loads(lines[-1])
    if "missing" in data:
        return BenchResult(task, tool, error=f"skipped: {data['missing']}")
    docs = data["n_train"] * max(1, data["epochs"])
    return BenchResult(task, tool, data["accuracy"], wall, data["train_s"],
                       docs / data["train_s"] if data["train_s"] else None, data["peak_host_mb"],
                       data["peak_gpu_mb"], data["n_train"], data["n_test"], data.get("notes", ""))


def run_bench(tasks: list[str], tools: list[str], data: Path, db=None, timeout_s: float = 1800.0,
              on_result: Callable[[BenchResult], None] | None = None) -> tuple[str, list[BenchResult]]:
    """Run every tool on every task; record each result (if db) as it finishes. -> (bench_id, results)."""
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        raise SettingsError(f"unknown tool '{unknown[0]}': choose from {', '.join(TOOLS)}")
    files = {task: task_files(data, task) for task in tasks}  # every task checked before anything runs
    bench_id = time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]
    results = []
    for task in tasks:
        for tool in tools:
            result = run_one(task, tool, *files[task], timeout_s)
            results.append(result)
            if db is not None:
                from db.runs import add_bench_result

                add_bench_result(db, bench_id, asdict(result))
            if on_result:
                on_result(result)
    return bench_id, results


def _fmt(value, digits: int) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def markdown_table(results: list[BenchResult], device: str) -> str:
    lines = [f"Device: {device}", "",
             "| task | tool | accuracy | end-to-end s | training s | docs/s (training) | peak host MB | "
             "peak GPU MB | notes |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        notes = r.error or r.notes
        lines.append(f"| {r.task} | {r.tool} | {_fmt(r.accuracy, 4)} | {_fmt(r.wall_s, 1)} | {_fmt(r.train_s, 2)} | "
                     f"{_fmt(r.docs_per_s, 0)} | {_fmt(r.peak_host_mb, 0)} | {_fmt(r.peak_gpu_mb, 0)} | {notes} |")
    return "\n".join(lines) + "\n"
