"""Whole `textclf` commands timed as a user runs them, one source tree beside another: each command in a fresh
process, the trees taking turns (A B A B ...) so that a drift of the machine's speed falls on both.

    python -m benchmarks.speed.commands --variants now=.,before=build/old [--runs 7]

Every command runs in a folder of its own per tree that holds the repository's sample corpus and examples, and, for
`train`, a fresh data dir each run (a user's first run of a corpus; the compilation cache is the machine's, warmed by
one run before the counted ones). Prints a markdown table: each command's median wall seconds per tree and the
median of the paired ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.test_docs import docs_workspace  # the folder the docs' examples assume

# (name, arguments, a fresh data dir each run)
COMMANDS = [
    ("textclf --help", ["--help"], False),
    ("textclf predict examples/recipe.txt (the newest model)", ["predict", "examples/recipe.txt"], False),
    ("textclf runs list", ["runs", "list"], False),
    ("textclf train textclf/sample_corpus", ["train", "textclf/sample_corpus"], True),
    ("textclf train train.jsonl --test test.jsonl", ["train", "train.jsonl", "--test", "test.jsonl"], True),
]


def timed(source: Path, folder: Path, home: Path, arguments: list[str], cache: Path) -> float:
    env = {
        **os.environ,
        "TEXTCLF_HOME": str(home),
        "JAX_COMPILATION_CACHE_DIR": str(cache),
        "PYTHONPATH": str(source.resolve()),
    }
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "textclf", *arguments], cwd=folder, env=env, capture_output=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{source}: {' '.join(arguments)}: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default="now=.", help="name=source_tree,... (the first is the numerator)")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    variants = [(name, Path(tree)) for name, tree in (v.split("=", 1) for v in args.variants.split(","))]
    trees = dict(variants)
    scratch = Path(tempfile.mkdtemp(prefix="textclf-commands-"))
    folders = {}
    for name, _ in variants:
        folders[name] = scratch / name
        docs_workspace(folders[name])
        home, cache = folders[name] / "home", folders[name] / "cache"
        timed(trees[name], folders[name], home, ["train", "textclf/sample_corpus"], cache)  # a model to predict with
    rows = []
    for label, arguments, fresh in COMMANDS:
        seconds = {name: [] for name, _ in variants}
        for run in range(args.runs + 1):  # the first run of each: not counted (the cache, the page cache)
            for name, tree in variants:
                folder = folders[name]
                home = folder / f"fresh-{run}" if fresh else folder / "home"
                took = timed(tree, folder, home, arguments, folder / "cache")
                if run:
                    seconds[name].append(took)
        medians = [statistics.median(seconds[name]) for name, _ in variants]
        ratio = ""
        if len(variants) > 1:
            first, second = (seconds[name] for name, _ in variants[:2])
            ratio = f"{statistics.median(a / b for a, b in zip(first, second)):.2f}"
        rows.append(f"| `{label}` | " + " | ".join(f"{m:.3f}" for m in medians) + f" | {ratio} |")
    names = [name for name, _ in variants]
    ratio = f"{names[0]} / {names[1]} (paired median)" if len(names) > 1 else ""
    print(f"| command | {' | '.join(f'{n} s' for n in names)} | {ratio} |")
    print("|---|" + "---:|" * (len(names) + 1))
    print("\n".join(rows))
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
