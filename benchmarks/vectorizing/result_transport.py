"""How fast a worker pool's large results reach this process: through shared memory (pipelines/workers.py,
SharedResults: what a pool uses where /dev/shm is there) or through the executor's pipe (a pool made with
shared_results=False). Each of `--results` tasks returns a CSR-sized pair of arrays (float32 values, int32
columns) of `--mb` MB in all, as a transformed share of a file does.

    python -m benchmarks.vectorizing.result_transport [--workers N] [--results 16] [--mb 70] [--repeat 2]

Each result is read whole where it arrives (a mapped page costs when it is first read). Prints a markdown row a
mode and repeat: MB received, seconds, MB/s.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from pipelines.workers import WorkerPool


def _result(index: int, entries: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full(entries, index, np.float32), np.full(entries, index, np.int32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--results", type=int, default=16)
    parser.add_argument("--mb", type=float, default=70.0, help="MB of arrays a result")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    entries = int(args.mb * 1e6 / 8)
    print(f"{args.workers} workers, {args.results} results of {args.mb:g} MB")
    print("| mode | MB | s | MB/s |")
    print("|---|---:|---:|---:|")
    with WorkerPool(args.workers) as shared, WorkerPool(args.workers, shared_results=False) as piped:
        modes = (("shared memory", shared), ("pipe", piped)) if shared.shares_memory else (("pipe", piped),)
        for _ in range(args.repeat):
            for name, pool in modes:
                start = time.perf_counter()
                received = 0
                for index, (values, columns) in enumerate(pool.imap(_result, list(range(args.results)), entries)):
                    # every page read, as a consumer (the device upload) reads them
                    assert values.sum(dtype=np.float64) == index * entries and columns.max() == index
                    received += values.nbytes + columns.nbytes
                seconds = time.perf_counter() - start
                print(
                    f"| {name} | {received / 1e6:,.0f} | {seconds:.2f} | {received / 1e6 / seconds:,.0f} |", flush=True
                )


if __name__ == "__main__":
    main()
