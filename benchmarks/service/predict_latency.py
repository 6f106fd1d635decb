"""A one-document `textclf predict` in a fresh process, end to end (interpreter start, imports, loading the model,
vectorizing, the network), from one or more source trees alternating.

    python -m benchmarks.service.predict_latency [--trees before=.baseline,after=.] [--repeat 3] [--stop-words english]
        [--train-flags="--char-ngrams"]

A model is trained first, once, from the last tree (`textclf train textclf/sample_corpus --search off`, with these
stop words and any further training flags) in a throwaway data dir; every tree then predicts examples/recipe.txt
with it. Prints a markdown row a tree: the wall seconds of each repeat and their median, and whether the process
imported scikit-learn.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# `python -m textclf ARGS`, then whether scikit-learn was imported, on stderr's last line.
# (An exit handler: the command's process leaves through them, textclf.frontends.cli.main.)
IMPORTS_SKLEARN = """
import atexit, runpy, sys
atexit.register(lambda: print("sklearn" in sys.modules, file=sys.stderr))
sys.argv = ["textclf", *sys.argv[1:]]
runpy.run_module("textclf", run_name="__main__")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", default="this=.")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stop-words", default="english")
    parser.add_argument("--train-flags", default="", help="more `textclf train` options, space-separated")
    args = parser.parse_args()
    trees = [(name, (REPO / path).resolve()) for name, path in (item.split("=") for item in args.trees.split(","))]
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "TEXTCLF_HOME": home}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "textclf",
                "train",
                str(REPO / "textclf" / "sample_corpus"),
                "--search",
                "off",
                "--stop-words",
                args.stop_words,
                *args.train_flags.split(),
            ],
            cwd=trees[-1][1],
            env={**env, "PYTHONPATH": str(trees[-1][1])},
            check=True,
            capture_output=True,
        )
        seconds: dict[str, list[float]] = {name: [] for name, _ in trees}
        imported: dict[str, str] = {}
        for _ in range(args.repeat):
            for name, tree in trees:
                start = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-c", IMPORTS_SKLEARN, "predict", str(REPO / "examples" / "recipe.txt")],
                    cwd=tree,
                    env={**env, "PYTHONPATH": str(tree)},
                    capture_output=True,
                    text=True,
                    check=True,
                )
                seconds[name].append(time.perf_counter() - start)
                imported[name] = done.stderr.strip().splitlines()[-1]
    print("| tree | seconds | median | imported scikit-learn |")
    print("|---|---|---:|---|")
    for name, _ in trees:
        runs = " / ".join(f"{s:.2f}" for s in seconds[name])
        print(f"| {name} | {runs} | **{statistics.median(seconds[name]):.2f}** | {imported[name]} |")


if __name__ == "__main__":
    main()
