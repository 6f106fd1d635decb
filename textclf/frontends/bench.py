"""`textclf bench`: textclf and the tools a user would pick instead, side by side on the same machine, the same
splits, in one command. Each (task, tool) runs in its own process (textclf/frontends/bench_tools.py) so that end-to-end
time includes start-up and peak host memory is that tool's alone; results go to the run database
(`bench_results`, one bench_id per invocation) and to a markdown table.

Tasks are folders under the data folder (default <data dir>/datasets), or paths to folders, holding a training
and a test corpus in any format textclf reads (task_files): train.jsonl and test.jsonl as `textclf dataset
news4|agnews7600|synthetic ...` builds them, train/ and test/ folders of label folders (aclImdb), train.csv and
test.csv, train-00000-of-00001.parquet and test-... (a Hugging Face dataset), or fastText's NAME.train and
NAME.test (NAME.valid where there is no test file, as fastText's tutorial names it).
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
    metric: str = "accuracy"  # what `accuracy` holds: micro-F1 for a task of label sets


# The names a task folder's two corpora go by, in order of preference: a split's name as a file's stem (train.csv),
# a stem's first part (Hugging Face's train-00000-of-00001.parquet), a folder's name (aclImdb's train/), or a
# file's suffix (fastText's cooking.train). A test corpus may be named as a validation set where no test set is.
TRAIN_NAMES = ("train", "training")
TEST_NAMES = ("test", "testing", "valid", "validation", "dev")
CORPUS_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".tsv", ".tab", ".parquet", ".txt")


def _split_path(folder: Path, names: tuple[str, ...]) -> Path | None:
    """The corpus in a task folder named for one of these splits (TRAIN_NAMES says how), or None."""
    entries = sorted(entry for entry in folder.iterdir() if not entry.name.startswith("."))
    for name in names:
        found = (
            [entry for entry in entries if entry.is_dir() and entry.name.lower() == name]
            + [
                entry
                for entry in entries
                if entry.is_file()
                and entry.suffix.lower() in CORPUS_SUFFIXES
                and entry.stem.lower().split("-")[0] == name
            ]
            + [entry for entry in entries if entry.is_file() and entry.suffix.lower() == f".{name}"]
        )
        if len(found) > 1:
            raise CorpusError(
                f"task folder '{folder}' holds {len(found)} '{name}' corpora "
                f"({', '.join(entry.name for entry in found)}): keep one"
            )
        if found:
            return found[0]
    return None


def task_files(data: Path, task: str) -> tuple[Path, Path]:
    """A task's (training corpus, test corpus): the folder data/TASK, or TASK itself where that is a folder and
    data/TASK is not; train.jsonl and test.jsonl, else the corpora its entries' names say (TRAIN_NAMES)."""
    folder = data / task
    if not folder.is_dir() and Path(task).is_dir():
        folder = Path(task)
    train, test = folder / "train.jsonl", folder / "test.jsonl"
    if train.exists() and test.exists():
        return train, test
    source = {
        "news4": "../shared/data/20news-bydate",
        "agnews7600": "../shared/data/ag_news/test.csv",
        "synthetic": "../shared/data/20news-bydate",
    }.get(task)
    if source is None and folder.is_dir():
        found = _split_path(folder, TRAIN_NAMES), _split_path(folder, TEST_NAMES)
        if found[0] is not None and found[1] is not None:
            return found
    if source is not None:
        raise CorpusError(
            f"task '{task}' has no {train} and {test}: build them with 'textclf dataset {task} {source} {folder}'"
        )
    where = f"task folder '{folder}'" if folder.is_dir() else f"task '{task}' (no folder {folder})"
    raise CorpusError(
        f"{where} has no training and test corpus: put train.jsonl and test.jsonl in it (or train/ "
        "and test/ folders, train.csv and test.csv, NAME.train and NAME.test: any format textclf "
        "trains on)"
    )


def run_one(task: str, tool: str, train: Path, test: Path, timeout_s: float) -> BenchResult:
    command = [sys.executable, "-m", "textclf.frontends.bench_tools", tool, str(train), str(test)]
    path = [str(Path(__file__).resolve().parents[2])] + [
        p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p
    ]
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
    notes, metric = data.get("notes", ""), data.get("metric", "accuracy")
    if metric != "accuracy":  # a multi-label task's score (bench_tools: micro-F1 in the accuracy column)
        notes = metric + (f"; {notes}" if notes else "")
    return BenchResult(
        task,
        tool,
        data["accuracy"],
        wall,
        data["train_s"],
        docs / data["train_s"] if data["train_s"] else None,
        data["peak_host_mb"],
        data["peak_gpu_mb"],
        data["n_train"],
        data["n_test"],
        notes,
        metric=metric,
    )


def run_bench(
    tasks: list[str],
    tools: list[str],
    data: Path,
    db=None,
    timeout_s: float = 1800.0,
    on_result: Callable[[BenchResult], None] | None = None,
) -> tuple[str, list[BenchResult]]:
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
    lines = [
        f"Device: {device}",
        "",
        "| task | tool | accuracy (label sets: micro-F1) | end-to-end s | training s | docs/s (training) | peak host "
        "MB | "
        "peak GPU MB | notes |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        notes = r.error or r.notes
        lines.append(
            f"| {r.task} | {r.tool} | {_fmt(r.accuracy, 4)} | {_fmt(r.wall_s, 1)} | {_fmt(r.train_s, 2)} | "
            f"{_fmt(r.docs_per_s, 0)} | {_fmt(r.peak_host_mb, 0)} | {_fmt(r.peak_gpu_mb, 0)} | {notes} |"
        )
    return "\n".join(lines) + "\n"
