"""What the model search spends and chooses, corpus by corpus: `python -m benchmarks.speed.search_budget DATA
[--corpora news4,trec] [--option=--search-budget=30] [--repeat 2]`.

For each corpus DATA/NAME/{train,test}.jsonl, a no-flags `textclf train NAME/train.jsonl --test NAME/test.jsonl`
(in-process, an empty run database each time, so no recorded search is reused) with the extra options given.
Prints one markdown row per run: rounds done of those planned, the network-steps spent, the search's seconds,
the choice, and the test accuracy. Used to set the search's default work budget (SearchRules.cpu_budget_steps) from
what a clock budget allowed, and to show that a work budget chooses the same on a busy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def _run(train: Path, test: Path, options: list[str]) -> dict:
    from typer.testing import CliRunner

    from db import open_db
    from db.runs import get_run
    from textclf.frontends.cli import app

    with tempfile.TemporaryDirectory() as home:
        os.environ["TEXTCLF_HOME"] = home
        start = time.perf_counter()
        done = CliRunner().invoke(
            app, ["train", str(train), "--test", str(test), *options, "--out", str(Path(home) / "model.npz")]
        )
        wall = time.perf_counter() - start
        if done.exit_code:
            raise SystemExit(f"{train}: exit {done.exit_code}: {done.output}")
        run = get_run(open_db(Path(home) / "runs.db"), 1)
    search = run.get("search") or {}
    return {"search": search, "accuracy": run["eval_accuracy"], "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--corpora", default="news4,agnews7600,news20,trec,mr")
    parser.add_argument("--option", action="append", default=[], help="a train option, e.g. --option=--seed=1")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    print("| corpus | rounds | network-steps | search s | wall s | chosen | test accuracy |")
    print("|---|---:|---:|---:|---:|---|---:|")
    for name in args.corpora.split(","):
        for _ in range(args.repeat):
            result = _run(args.data / name / "train.jsonl", args.data / name / "test.jsonl", args.option)
            search = result["search"]
            family = search.get("family", {})
            chosen = {
                **search.get("chosen", {}),
                "ensemble": search.get("ensemble", {}).get("members"),
                "char_ngrams": search.get("ensemble", {}).get("char_ngrams"),
                **(
                    {"family": family["chosen"], "family_by": family.get("by"), "family_seconds": family.get("seconds")}
                    if family
                    else {}
                ),
            }
            print(
                f"| {name} | {search.get('rounds')}/{search.get('rounds_planned')} | {search.get('steps', 0):,} | "
                f"{search.get('seconds', 0):.1f} | {result['wall']:.1f} | {json.dumps(chosen)} | "
                f"{result['accuracy']:.4f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
