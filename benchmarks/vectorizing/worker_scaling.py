"""How much of a machine's cores the vectorizing's worker processes get: the same work in 1 process and in N at once,
for a loop of Python arithmetic (no memory traffic), a copy of 200 MB arrays (memory bandwidth), fresh 200 MB
arrays written once (page faults), and then a large JSONL file's transform (the path `textclf train` takes for it:
each worker parses its byte shares and counts them) with 1, 4, 8 ... workers.

    python -m benchmarks.vectorizing.worker_scaling TRAIN.jsonl [--workers 1,4,8,16] [--ngrams 1]

Prints two markdown tables. The first: each probe's median seconds a process alone and with N at once, and their
ratio (1.0: N processes ran as fast as one; N: they shared one core). The second: the transform's seconds, MB/s
and MB/s a worker for each worker count. The vocabulary is fitted first (on FIT_DOCUMENTS of the documents, as
`textclf train` fits it), with the settings of benchmarks.vectorizing.vectorize_file (--ngrams 1: unigrams, no stop
words, no
weights, what the search chooses for the synthetic corpus; 2: the defaults).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time

import numpy as np

from pipelines import vectorize
from pipelines.corpus import read_corpus
from textclf.settings import Settings


def python_loop(_: int) -> float:
    start = time.perf_counter()
    total = 0
    for i in range(3_000_000):
        total += i * i
    return time.perf_counter() - start


def array_copy(_: int) -> float:
    source = np.ones(25_000_000)  # 200 MB
    start = time.perf_counter()
    for _ in range(5):
        copy = source.copy()
        copy += 1.0
    return time.perf_counter() - start


def fresh_arrays(_: int) -> float:
    start = time.perf_counter()
    for _ in range(10):
        fresh = np.empty(25_000_000)
        fresh[:] = 1.0
        del fresh
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--workers", default=f"1,4,8,{os.cpu_count()}")
    parser.add_argument("--ngrams", type=int, default=1, choices=(1, 2))
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    print(f"{os.cpu_count()} cores\n\n| probe | 1 process s | {counts[-1]} at once s | ratio |\n|---|---:|---:|---:|")
    for probe in (python_loop, array_copy, fresh_arrays):
        with multiprocessing.get_context("fork").Pool(1) as pool:
            alone = float(np.median(pool.map(probe, range(1))))
        with multiprocessing.get_context("fork").Pool(counts[-1]) as pool:
            together = float(np.median(pool.map(probe, range(counts[-1]))))
        print(f"| {probe.__name__} | {alone:.3f} | {together:.3f} | {together / alone:.2f} |", flush=True)

    settings = (
        Settings(ngram_max=1, stop_words=None).replace(nb_weighting=False, sublinear_tf=False)
        if args.ngrams == 1
        else Settings()
    )
    size = os.path.getsize(args.train)
    with vectorize.vectorize_pool(size // 100, counts[-1]) as pool:
        corpus = read_corpus(args.train, pool=pool, keep_texts=False)
        sample = vectorize.fit_rows(len(corpus.labels), settings)
        sample = np.arange(len(corpus.labels)) if sample is None else sample
        vec, _ = vectorize.fit_vectorizer(
            corpus.texts.lines(sample), [corpus.labels[i] for i in sample], settings, pool=pool, matrix=False
        )
    print("\n| workers | transform s | MB/s | MB/s a worker | nonzeros |\n|---:|---:|---:|---:|---:|")
    for workers in counts:
        with vectorize.vectorize_pool(size // 100, workers) as pool:
            start = time.perf_counter()
            nonzeros = sum(part.nnz for part in vec.transform_file_parts(corpus.texts, pool))
            seconds = time.perf_counter() - start
        print(
            f"| {workers} | {seconds:.2f} | {size / 1e6 / seconds:.0f} | {size / 1e6 / seconds / workers:.1f} | "
            f"{nonzeros} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
