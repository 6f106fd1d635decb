"""A big corpus's transform in the conditions of `textclf train`, by the number of chunks: the pool forked first,
the JSONL file parsed by its workers, a vocabulary fitted on 200,000 of the documents (the settings a million
synthetic documents' search chooses: unigrams, no stop words, raw tf, no NB weights), then all the documents
transformed, before and after JAX starts.

    python -m benchmarks.vectorizing.transform_chunks TRAIN.jsonl [--chunks 20,32]

Prints a markdown table: wall seconds of the transform, the workers' own seconds summed, the slowest chunk.
"""

from __future__ import annotations

import argparse
import os
import time

from pipelines import vectorize
from pipelines.corpus import read_corpus
from textclf.settings import Settings


def _timed(chunk, fn, *args):
    start = time.perf_counter()
    result = fn(chunk, *args)
    return result, time.perf_counter() - start


def _transform(vec, texts, pool, condition: str, chunks: int) -> None:
    start = time.perf_counter()
    parts = pool.map(
        _timed,
        vectorize.chunks._chunks(texts, chunks),
        vectorize.vectorizer._transform_weighted,
        vec._counter(),
        vec.idf,
        vec.sublinear_tf,
    )
    wall = time.perf_counter() - start
    seconds = [s for _, s in parts]
    print(f"| {condition} | {chunks} | {wall:.2f} | {sum(seconds):.1f} | {max(seconds):.2f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--chunks", default="20,32")
    args = parser.parse_args()
    chunk_counts = [int(c) for c in args.chunks.split(",")]
    with vectorize.vectorize_pool(10**7, None) as pool:  # every core, forked before anything else
        start = time.perf_counter()
        train = read_corpus(args.train, pool=pool)
        print(
            f"{os.cpu_count()} cores, workers forked: {pool.forked}; {len(train.texts):,} documents read by the "
            f"workers in {time.perf_counter() - start:.2f} s"
        )
        settings = Settings(ngram_max=1, stop_words=None, nb_weighting=False, sublinear_tf=False)
        vec, _ = vectorize.fit_vectorizer(train.texts[:200_000], train.labels[:200_000], settings, pool=pool)
        print("| condition | chunks | wall s | workers' s | slowest chunk s |")
        print("|---|---:|---:|---:|---:|")
        for chunks in chunk_counts:
            _transform(vec, train.texts, pool, "after the workers read", chunks)
        import jax.numpy as jnp

        jnp.ones(8).block_until_ready()
        for chunks in chunk_counts + chunk_counts[:1]:
            _transform(vec, train.texts, pool, "after JAX started", chunks)


if __name__ == "__main__":
    main()
