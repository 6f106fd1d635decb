"""Host memory of putting a training matrix on the device: its pieces put all at once (each transfer left in
flight) or one at a time (each waited for), resident memory before, after, and once the host's matrix is freed.

    python -m benchmarks.memory.upload_memory [--documents 1000000] [--nonzeros 200]

Each way runs in a fresh interpreter (the driver's pinned staging buffers, once grown, stay with the process).
A random CSR matrix (documents x 32,768, `nonzeros` a row) in UPLOAD_BYTES pieces, as device_data.upload_csr cuts
it. Prints one row a way.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

PROBE = r"""
import gc, json, sys, time
import numpy as np
import textclf  # the product's allocator setting (no reservation up front)
import jax, jax.numpy as jnp
from benchmarks.memory.memory_phases import anonymous_bytes, resident_bytes
from pipelines.workers import return_freed_memory
from textclf.training.device_data import UPLOAD_BYTES

way, n, per_row = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
indices = rng.integers(0, 32768, n * per_row).astype(np.int32)
values = rng.random(n * per_row, dtype=np.float32)
jax.jit(lambda x: x + 1)(jnp.zeros(8)).block_until_ready()
before = resident_bytes()
start = time.perf_counter()
uploaded = []
for array in (indices, values):
    step = UPLOAD_BYTES // array.itemsize
    parts = []
    for at in range(0, len(array), step):
        part = jax.device_put(array[at:at + step])
        parts.append(part.block_until_ready() if way == "one at a time" else part)
    uploaded.append(jnp.concatenate(parts))
jax.block_until_ready(uploaded)
seconds = time.perf_counter() - start
after = resident_bytes()
del indices, values
gc.collect()
return_freed_memory()
print(json.dumps({"before": before, "after": after, "freed": resident_bytes(), "anonymous": anonymous_bytes(),
                  "seconds": seconds}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--nonzeros", type=int, default=200, help="nonzeros a document")
    args = parser.parse_args()
    print("| pieces put | upload s | resident before MB | after MB | host matrix freed MB (anonymous) |")
    print("|---|---:|---:|---:|---:|")
    for way in ("all at once", "one at a time"):
        done = subprocess.run(
            [sys.executable, "-c", PROBE, way, str(args.documents), str(args.nonzeros)],
            capture_output=True,
            text=True,
            check=True,
        )
        row = json.loads(done.stdout.strip().splitlines()[-1])
        mb = {key: row[key] / 2**20 for key in ("before", "after", "freed", "anonymous")}
        print(
            f"| {way} | {row['seconds']:.2f} | {mb['before']:,.0f} | {mb['after']:,.0f} | {mb['freed']:,.0f} "
            f"({mb['anonymous']:,.0f}) |"
        )


if __name__ == "__main__":
    main()
