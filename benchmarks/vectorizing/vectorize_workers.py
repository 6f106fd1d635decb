"""Vectorizing a corpus with 1, 2, 4, ... worker processes: fit on the training texts + transform the test texts,
each count in a fresh process (as a cold `textclf train` does: workers forked before JAX is imported).

    python -m benchmarks.vectorizing.vectorize_workers TRAIN.jsonl --test TEST.jsonl [--workers 1,2,4,8,16]

Prints a markdown table (seconds: pool start, fit, transform, total) and whether each result matched the one
process result exactly (same terms, same matrix).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ONE_RUN = """
import hashlib, json, sys, time
from pipelines import vectorize
from pipelines.corpus import read_corpus
from textclf.settings import Settings
train, test, workers = read_corpus(sys.argv[1]), read_corpus(sys.argv[2]), int(sys.argv[3])
start = time.perf_counter()
with vectorize.vectorize_pool(len(train.texts) + len(test.texts), workers) as pool:
    started = time.perf_counter()
    vec, matrix = vectorize.fit_vectorizer(train.texts, train.labels, Settings(), pool=pool)
    fitted = time.perf_counter()
    test_matrix = vec.transform(test.texts, pool=pool)
    done = time.perf_counter()
digest = hashlib.sha256("\\n".join(vec.terms).encode() + matrix.data.tobytes() + matrix.indices.tobytes()
                        + test_matrix.data.tobytes()).hexdigest()
print(json.dumps({"processes": pool.processes, "forked": pool.forked, "pool_s": started - start,
                  "fit_s": fitted - started, "transform_s": done - fitted, "total_s": done - start,
                  "digest": digest}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--test", required=True)
    parser.add_argument("--workers", default="1,2,4,8,16")
    args = parser.parse_args()
    print(f"vectorize {args.train} (fit) + {args.test} (transform), {os.cpu_count()} CPU cores\n")
    print("| workers asked | processes | forked | pool s | fit s | transform s | total s | same as 1 process |")
    print("|---:|---:|---|---:|---:|---:|---:|---|")
    reference = None
    for workers in (int(w) for w in args.workers.split(",")):
        done = subprocess.run(
            [sys.executable, "-c", ONE_RUN, args.train, args.test, str(workers)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(done.stdout.strip().splitlines()[-1])
        reference = reference or r["digest"]
        print(
            f"| {workers} | {r['processes']} | {r['forked']} | {r['pool_s']:.2f} | {r['fit_s']:.2f} | "
            f"{r['transform_s']:.2f} | **{r['total_s']:.2f}** | {r['digest'] == reference} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
