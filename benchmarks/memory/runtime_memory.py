"""Host memory of the JAX runtime alone, before any data: resident memory (and its anonymous part) after
importing jax, after the backend starts, and after a first compiled program, in a fresh interpreter per variant of
the environment.

    python -m benchmarks.memory.runtime_memory [--env "NAME=VALUE NAME=VALUE" ...]

Why: a `train` run's peak host memory starts from what JAX and the accelerator's libraries hold
(benchmarks.memory.memory_phases's warmup phase); this says how much of that is the runtime's own and whether an
environment setting changes it. Each --env is one variant (the empty string: the environment as it is).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys

PROBE = r"""
import json, time
def status():
    values = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                values[key] = int(rest.split()[0]) / 1024
    return values
rows = [("python", status())]
import jax, jax.numpy as jnp
rows.append(("import jax", status()))
jax.devices()
rows.append(("backend", status()))
x = jnp.ones((1024, 1024), jnp.float32)
jax.jit(lambda a: jax.nn.sigmoid(a @ a).sum())(x).block_until_ready()
rows.append(("first program (matmul)", status()))
print(json.dumps(rows))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env", action="append", default=None, help="NAME=VALUE pairs, one variant (repeatable)")
    args = parser.parse_args()
    variants = args.env or [""]
    print("| variant | stage | resident MB | anonymous MB | file-backed MB |")
    print("|---|---|---:|---:|---:|")
    for variant in variants:
        env = dict(os.environ)
        env.update(dict(pair.split("=", 1) for pair in shlex.split(variant)))
        done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"| {variant or 'as is'} | failed: {done.stderr.strip().splitlines()[-1:]} | | | |")
            continue
        for stage, values in json.loads(done.stdout.strip().splitlines()[-1]):
            print(
                f"| {variant or 'as is'} | {stage} | {values['VmRSS']:,.0f} | {values['RssAnon']:,.0f} | "
                f"{values['RssFile']:,.0f} |"
            )


if __name__ == "__main__":
    main()
