"""Where a large JSONL file's read goes on many cores: each share's time inside its worker (the read as `textclf
train` runs it, the texts left in the file), against the wall time of the whole read, in a pool started first.

    python -m benchmarks.vectorizing.read_shares TRAIN.jsonl [--repeat 3]

Prints one line a repeat: the wall seconds, the shares and workers, the workers' seconds summed, each share's
median and largest, and how long after the last share the read ended (the parent joining the shares).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pipelines import corpus, vectorize

_read_share = corpus._read_share


def _timed_share(*args, **kwargs):
    """corpus._read_share, its result followed by (start, end) in the worker."""
    start = time.time()
    result = _read_share(*args, **kwargs)
    return result + ((start, time.time()),)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    corpus._read_share = _timed_share  # (the workers fork with it)
    for repeat in range(args.repeat):
        spans = []
        with vectorize.vectorize_pool(10**6) as pool:
            pool.map(len, [[1]] * pool.processes)  # the workers started before the clock
            imap = pool.imap

            def spans_apart(fn, items, *rest, **kwargs):
                for result in imap(fn, items, *rest, **kwargs):
                    spans.append(result[-1])
                    yield result[:-1]

            pool.imap = spans_apart
            start = time.time()
            read = corpus.read_corpus(args.train, pool=pool, keep_texts=False)
            wall = time.time() - start
        inside = [end - begin for begin, end in spans]
        last = max(end for _, end in spans) - start
        print(
            f"repeat {repeat}: wall {wall:.2f} s, {read.texts.shares} shares on {pool.processes} workers, "
            f"{sum(inside):.2f} s in the workers (a share: median {np.median(inside) * 1000:.0f} ms, largest "
            f"{max(inside) * 1000:.0f}), {wall - last:.2f} s after the last share",
            flush=True,
        )


if __name__ == "__main__":
    main()
