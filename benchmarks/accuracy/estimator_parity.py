"""`TextClassifier().fit(train).score(test)` beside `textclf train train --test test`, corpus by corpus:
`python -m benchmarks.accuracy.estimator_parity DATA [--corpora trec,mr,news4] [--seed 0]`.

Both with no flags and the same seed, each in its own empty data dir (nothing reused between them). Prints one
markdown row per corpus: the test accuracy of each, whether the search chose the same settings, and the largest
difference between their weights (0 where the two faces trained the same model).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def _documents(path: Path) -> tuple[list[str], list[str]]:
    from pipelines.corpus import read_corpus

    corpus = read_corpus(path)
    return list(corpus.texts), list(corpus.labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--corpora", default="trec,mr,news4")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import numpy as np
    from typer.testing import CliRunner

    from textclf.estimator import TextClassifier
    from textclf.frontends.cli import app
    from textclf.inference.artifacts import load_model

    print("| corpus | `textclf train` | TextClassifier | same choice | max weight difference | CLI s | estimator s |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for name in args.corpora.split(","):
        train, test = args.data / name / "train.jsonl", args.data / name / "test.jsonl"
        with tempfile.TemporaryDirectory() as home:
            os.environ["TEXTCLF_HOME"] = home
            start = time.perf_counter()
            done = CliRunner().invoke(
                app,
                [
                    "train",
                    str(train),
                    "--test",
                    str(test),
                    "--seed",
                    str(args.seed),
                    "--out",
                    str(Path(home) / "m.npz"),
                    "--json",
                ],
            )
            cli_s = time.perf_counter() - start
            if done.exit_code:
                raise SystemExit(f"{name}: exit {done.exit_code}: {done.output}")
            cli = json.loads(done.stdout)
            model = load_model(Path(home) / "m.npz")
        with tempfile.TemporaryDirectory() as home:
            os.environ["TEXTCLF_HOME"] = home
            texts, labels = _documents(train)
            test_texts, test_labels = _documents(test)
            start = time.perf_counter()
            fitted = TextClassifier(random_state=args.seed).fit(texts, labels)
            accuracy = fitted.score(test_texts, test_labels)
            estimator_s = time.perf_counter() - start
        same = fitted.model_.settings == model.settings
        diff = max(
            float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) if np.shape(a) == np.shape(b) else float("inf")
            for a, b in zip(fitted.model_.params, model.params)
        )
        print(
            f"| {name} | {cli['eval_accuracy']:.4f} | {accuracy:.4f} | {'yes' if same else 'no'} | {diff:.1e} | "
            f"{cli_s:.1f} | {estimator_s:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
