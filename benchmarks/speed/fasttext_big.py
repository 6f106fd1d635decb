"""fastText on a corpus too large for the bench's one-process preparation: the same preparation as `textclf bench`'s
fastText peer (textclf/frontends/bench_tools.py: lowercased word tokens, punctuation split off, lr 0.5, word bigrams,
all threads), its input written by every core (byte shares of the JSONL file, pipelines.corpus), then trained and
scored on the test file.

    python -m benchmarks.speed.fasttext_big TRAIN.jsonl TEST.jsonl [--epochs 5]

--epochs: the tutorial's 25 suit its small corpus; 5 is fastText's own default, which this script takes for ten
million documents, where 25 would take ~40 minutes on 16 threads (a million documents' 25 epochs trained in 229 s,
BENCHMARKS.md "Big corpora with no flags"). Prints one markdown row: documents, epochs, threads, seconds (writing
its input, training, scoring), test accuracy, peak host memory of this process and its workers; each stage's end
goes to stderr as it comes, and fastText's own progress and ETA (a run stopped by a time limit still tells how
far it got).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from pipelines.corpus import _share_count, open_documents
from pipelines.workers import WorkerPool
from textclf.frontends.bench_tools import fasttext_label, fasttext_text, fasttext_train


def _prepared_share(index: int, path: str, count: int) -> tuple[list[str], list[str]]:
    """Share `index` of `count` of a JSONL file -> (its texts as fastText reads them, their labels as it names them)."""
    texts, labels = [], []
    for label, text in open_documents(path, 10.0, (index, count))[2]:
        texts.append(fasttext_text(text))
        labels.append(fasttext_label(label))
    return texts, labels


def _prepared(path: str, pool: WorkerPool):
    count = _share_count(Path(path), pool)
    return pool.imap(_prepared_share, list(range(count)), path, count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("test")
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    threads = os.cpu_count() or 1
    with WorkerPool(threads) as pool, tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        train_file = Path(scratch) / "train.txt"
        documents = 0
        with train_file.open("w", encoding="utf-8") as out:
            for texts, labels in _prepared(args.train, pool):
                out.writelines(f"{label} {text}\n" for label, text in zip(labels, texts))
                documents += len(labels)
        written = time.perf_counter()
        print(f"input written: {documents:,} documents in {written - start:.1f} s", file=sys.stderr, flush=True)
        model = fasttext_train(str(train_file), args.epochs, verbose=2)  # its progress and ETA on stderr
        trained = time.perf_counter()
        print(f"trained in {trained - written:.1f} s", file=sys.stderr, flush=True)
        right = total = 0
        for texts, labels in _prepared(args.test, pool):
            predicted, _ = model.predict(texts)
            right += sum(p[0] == e for p, e in zip(predicted, labels))
            total += len(labels)
        scored = time.perf_counter()
    peak = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print("| documents | epochs | threads | write s | train s | score s | total s | test accuracy | peak host MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {documents:,} | {args.epochs} | {threads} | {written - start:.1f} | {trained - written:.1f} | "
        f"{scored - trained:.1f} | {scored - start:.1f} | {right / total:.4f} | {peak / 1024:,.0f} |",
        flush=True,
    )


if __name__ == "__main__":
    main()
