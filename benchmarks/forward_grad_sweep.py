"""Standalone block sweep of the two large MLP kernels, hidden_forward and input_grad, against XLA's same math.

    python -m benchmarks.forward_grad_sweep [--batches 256,1024,4096] [--out best.json]

Random bf16 X (1% dense, B x 32768), fp32 W1 (32768 x 128) and dPre (B x 128); profiler kernel time of each
configuration (benchmarks/timing.kernel_time); prints the tuned configuration's time (pallas_kernels/tuned.json)
and the best one found. Unlike `benchmarks.kernels --sweep`, which picks the dW1 blocks for the fused dW1 +
update kernel the training step runs, this times input_grad alone.
"""

from __future__ import annotations

import argparse
import itertools
import json

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.timing import kernel_time
from pallas_kernels.config import tuned
from pallas_kernels.hidden_forward import hidden_forward
from pallas_kernels.input_grad import input_grad
from textclf.backends import device_description

BF16 = jnp.bfloat16
FORWARD_SPACE = list(itertools.product([64, 128, 256], [64, 128], [1, 4, 16], [4, 8], [3]))  # m, k, split, warps, stages
GRAD_SPACE = list(itertools.product([32, 64], [64, 128, 256], [4, 8], [2, 3]))  # m, k, warps, stages


def _best(timings: dict):
    found = {config: seconds for config, seconds in timings.items() if seconds}
    return min(found.items(), key=lambda item: item[1]) if found else (None, None)


def _time(fn, args):
    try:
        return kernel_time(fn, args)
    except Exception:  # a configuration Triton cannot compile (too many registers, ...) is skipped
        return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", default="256,1024,4096")
    parser.add_argument("--out", help="write the best configurations as JSON")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    device, results = device_description(), {}
    if not device.startswith("gpu"):
        raise SystemExit(f"{device}: the sweep compiles the kernels through Triton and needs a GPU")
    print(device)
    for batch in (int(b) for b in args.batches.split(",")):
        c = tuned(batch, device)
        x = jnp.asarray((rng.random((batch, 32768)) < 0.01) * rng.random((batch, 32768)), BF16)
        w = jnp.asarray(rng.normal(size=(32768, 128)) * 0.01, jnp.float32)
        b = jnp.zeros((128,), jnp.float32)
        d = jnp.asarray(rng.normal(size=(batch, 128)), jnp.float32)
        xla_forward = kernel_time(lambda x, w, b: jax.nn.sigmoid(
            jnp.dot(x, w.astype(BF16), preferred_element_type=jnp.float32) + b), (x, w, b))
        xla_grad = kernel_time(lambda x, d: jnp.dot(x.T, d.astype(BF16), preferred_element_type=jnp.float32), (x, d))
        tuned_forward = (c.forward_block_m, c.forward_block_k, c.forward_split_k, c.forward_warps, c.forward_stages)
        tuned_grad = (c.grad_block_m, c.grad_block_k, c.grad_warps, c.grad_stages)
        forward = {cfg: _time(lambda x, w, b, cfg=cfg: hidden_forward(
            x, w, b, block_m=cfg[0], block_k=cfg[1], split_k=cfg[2], num_warps=cfg[3], num_stages=cfg[4]), (x, w, b))
            for cfg in [tuned_forward] + [f for f in FORWARD_SPACE if f[0] <= batch]}
        grad = {cfg: _time(lambda x, d, cfg=cfg: input_grad(
            x, d, block_m=cfg[0], block_k=cfg[1], num_warps=cfg[2], num_stages=cfg[3]), (x, d))
            for cfg in [tuned_grad] + [g for g in GRAD_SPACE if g[0] <= batch]}
        best_forward, best_grad = _best(forward), _best(grad)
        us = lambda s: f"{s * 1e6:.1f} us"
        print(f"B={batch}: hidden_forward XLA {us(xla_forward)}, tuned {tuned_forward} {us(forward[tuned_forward])}, "
              f"best {best_forward[0]} {us(best_forward[1])} ({best_forward[1] / xla_forward:.2f}x XLA)")
        print(f"B={batch}: input_grad XLA {us(xla_grad)}, tuned {tuned_grad} {us(grad[tuned_grad])}, "
              f"best {best_grad[0]} {us(best_grad[1])} ({best_grad[1] / xla_grad:.2f}x XLA)", flush=True)
        results[batch] = {"forward": best_forward[0], "grad": best_grad[0]}
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(results, handle)


if __name__ == "__main__":
    main()
