"""The peers on benchmarks.accuracy.nested_rule's splits: `python -m benchmarks.accuracy.nested_peers TRAIN.jsonl [...]
[--seeds 0,1]
[--held-out 0.25] [--tools sklearn-cnb,sklearn-svm,sklearn-sgd,fasttext]`.

For each training file and seed, the same stratified split nested_rule makes (a --held-out share set aside); each
peer (textclf.frontends.bench_tools, configured as in `textclf bench`) trains on the rest and is scored on the
set-aside documents. Prints one markdown row per (file, seed): beside nested_rule's textclf rows, whether a gap on a
test file is there on the training file's own distribution too. The test file is never read.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from benchmarks.accuracy.nested_rule import _split
from textclf.frontends.bench_tools import run_tool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--held-out", type=float, default=0.25)
    parser.add_argument("--tools", default="sklearn-cnb,sklearn-svm,sklearn-sgd,fasttext")
    args = parser.parse_args()
    tools = args.tools.split(",")
    print("| training file | seed | set-aside documents | " + " | ".join(tools) + " |")
    print("|---|---:|---:|" + "---:|" * len(tools))
    for path in args.corpora:
        for seed in (int(s) for s in args.seeds.split(",")):
            with tempfile.TemporaryDirectory() as folder:
                rest, aside, n_aside = _split(path, args.held_out, seed, Path(folder))
                scores = [run_tool(tool, str(rest), str(aside))["accuracy"] for tool in tools]
            print(f"| {path} | {seed} | {n_aside} | " + " | ".join(f"{s:.4f}" for s in scores) + " |", flush=True)


if __name__ == "__main__":
    main()
