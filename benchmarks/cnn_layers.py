"""The default CNN's two convolutions in training, Pallas kernels vs XLA (cuDNN): per kernel, with a block sweep.

    python -m benchmarks.cnn_layers [--batch 64] [--sweep]

Layers of textclf's default image network (textclf/models/cnn.py): 28x28x1 -> 32 and 14x14x32 -> 64, 5x5 kernels,
"same" padding, bias + ReLU, fp32 (TF32 products). For each layer: XLA's forward + backward as training runs it
(jax.grad of conv2d_reference: dW and db, and dX for the second layer; the first layer's input is the image,
whose gradient nothing needs) against the Pallas conv2d's, and each Pallas kernel alone (forward, dX, dW) under
the product's blocks and, with --sweep, others. Profiler kernel time (benchmarks.timing.kernel_time), microseconds
per call.
"""

from __future__ import annotations

import argparse
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.timing import kernel_time
from pallas_kernels.conv2d import (Conv2dForwardBlocks, Conv2dWeightGradBlocks, conv2d, conv2d_forward,
                                   conv2d_reference, conv2d_weight_grad)
from textclf.models.cnn import conv_blocks

LAYERS = (("conv1 1->32 5x5", 28, 1, 32, False), ("conv2 32->64 5x5", 14, 32, 64, True))


def us(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1e6:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--sweep", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"device: {jax.devices()[0].device_kind}, batch {args.batch}")
    print("| layer | XLA train us | Pallas train us | Pallas / XLA | forward | dX | dW |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    sweeps = []
    for name, size, cin, cout, needs_dx in LAYERS:
        x = jnp.asarray(rng.random((args.batch, size, size, cin)), jnp.float32)
        w = jnp.asarray(rng.normal(size=(5, 5, cin, cout)) * 0.1, jnp.float32)
        b = jnp.asarray(rng.normal(size=(cout,)) * 0.1, jnp.float32)
        probe = jnp.asarray(rng.normal(size=(args.batch, size, size, cout)), jnp.float32)
        argnums = (0, 1, 2) if needs_dx else (1, 2)
        kernel = conv_blocks(cin)
        xla = kernel_time(jax.grad(lambda x, w, b: jnp.sum(conv2d_reference(x, w, b, 2) * probe), argnums), (x, w, b))
        pallas = kernel_time(jax.grad(lambda x, w, b: jnp.sum(conv2d(x, w, b, 2, kernel) * probe), argnums), (x, w, b))
        forward = lambda blocks: kernel_time(lambda x, w, b: conv2d_forward(x, w, b, pad=2, block_sizes=blocks), (x, w, b))
        flipped = jnp.transpose(w[::-1, ::-1], (0, 1, 3, 2))
        dz = jnp.maximum(probe, 0)
        input_grad = lambda blocks: kernel_time(lambda dz, wf: conv2d_forward(
            dz, wf, jnp.zeros((cin,), jnp.float32), pad=2, relu=False, block_sizes=blocks), (dz, flipped))
        weight_grad = lambda blocks: kernel_time(
            lambda x, dz: conv2d_weight_grad(x, dz, size=5, pad=2, block_sizes=blocks), (x, dz))
        dx_blocks = kernel[4] if len(kernel) > 4 else kernel[0]
        print(f"| {name} | {us(xla)} | {us(pallas)} | {pallas / xla:.2f}x | {us(forward(kernel[0]))} | "
              f"{us(input_grad(dx_blocks)) if needs_dx else ''} | {us(weight_grad(kernel[1]))} |", flush=True)
        if not args.sweep:
            continue
        for block_m, block_n, block_k, stages in itertools.product((32, 64, 128), (32, 64), (32, 64), (2, 3)):
            blocks = Conv2dForwardBlocks(block_m=block_m, block_n=block_n, block_k=block_k, num_stages=stages)
            if block_k == 32:  # the forward's input has Cin channels: block_k is at most 32 here
                sweeps.append((name, "forward", blocks, forward(blocks)))
            if needs_dx:
                sweeps.append((name, "dX", blocks, input_grad(blocks)))
        weight_grad_blocks = [Conv2dWeightGradBlocks(block_m=block_m, programs=programs, num_warps=warps)
                              for block_m, programs, warps in itertools.product((32, 64, 128), (128, 256, 512), (4, 8))]
        if cin % 16 == 0:  # the im2col gather, which these channels took before the rows kernel
            weight_grad_blocks += [Conv2dWeightGradBlocks(block_m=block_m, programs=programs, rows=False)
                                   for block_m, programs in itertools.product((64, 128), (256, 512))]
        for blocks in weight_grad_blocks:
            sweeps.append((name, "dW", blocks, weight_grad(blocks)))
    if sweeps:
        print("\n| layer | kernel | blocks | us |\n|---|---|---|---:|")
        for name, which in sorted({(n, k) for n, k, _, _ in sweeps}):
            runs = sorted((t, blocks) for n, k, blocks, t in sweeps if (n, k) == (name, which) and t)
            for t, blocks in runs[:5]:
                print(f"| {name} | {which} | {blocks} | {t * 1e6:.1f} |")


if __name__ == "__main__":
    main()
