"""The default CNN's two convolutions in training, Pallas kernels vs XLA (cuDNN): per kernel, with a block sweep.

    python -m benchmarks.cnn_layers [--batch 64] [--sweep] [--epoch-variants]

Layers of textclf's default image network (textclf/models/cnn.py): 28x28x1 -> 32 and 14x14x32 -> 64, 5x5 kernels,
"same" padding, bias + ReLU, fp32 (TF32 products). For each layer: XLA's forward + backward as training runs it
(jax.grad of conv2d_reference: dW and db, and dX for the second layer; the first layer's input is the image,
whose gradient nothing needs) against the Pallas conv2d's, and each Pallas kernel alone (forward, dX, dW) under
the product's blocks and, with --sweep, others. Profiler kernel time (benchmarks.timing.kernel_time), microseconds
per call. --epoch-variants: then the product's training epoch (60,000 synthetic images, as benchmarks.cnn_epoch)
with each of EPOCH_VARIANTS as dW's blocks for the layers of 16 or more input channels, beside XLA's epoch, 3 epochs
each, alternating: a kernel's time alone leaves out what its shape costs the rest of the step (partial sums).
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

EPOCH_VARIANTS = {
    "128 pixels a step, 512 programs": Conv2dWeightGradBlocks(block_m=128, programs=512),
    "64 pixels, 512 programs": Conv2dWeightGradBlocks(block_m=64, programs=512),
    "64 pixels, 256 programs": Conv2dWeightGradBlocks(block_m=64, programs=256),
    "im2col gather (rows=False)": Conv2dWeightGradBlocks(rows=False),
}
LAYERS = (("conv1 1->32 5x5", 28, 1, 32, False), ("conv2 32->64 5x5", 14, 32, 64, True))


def us(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1e6:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--epoch-variants", action="store_true")
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
    if args.epoch_variants:
        epoch_variants()


def epoch_variants(images_count: int = 60000, repeat: int = 3) -> None:
    import statistics
    import time

    import textclf.models.cnn as cnn
    import textclf.training.cnn as training
    from textclf.models.cnn import init_cnn
    from textclf.settings import Settings
    from textclf.training.device_data import epoch_order
    from textclf.training.optimizers import adam

    settings = Settings(model="cnn")
    rng = np.random.default_rng(0)
    images = jnp.asarray(rng.integers(0, 256, (images_count, 28, 28, 1), dtype=np.uint8))
    labels = jnp.asarray(rng.integers(0, 10, images_count).astype(np.int32))
    steps = -(-images_count // settings.batch_size)
    order = epoch_order(settings.seed, 1, images_count, steps, settings.batch_size)
    rates = jnp.asarray(training.learning_rates(settings, 0, steps))
    product_blocks = cnn.conv_blocks

    def with_weight_grad(blocks):
        def conv_blocks(cin, interpret=False):
            kernel = product_blocks(cin, interpret)
            return kernel if cin % 16 else (kernel[0], blocks, *kernel[2:])
        return conv_blocks

    def run(epoch) -> float:
        params = init_cnn(jax.random.PRNGKey(0), (28, 28, 1), 10, settings.channels, settings.conv_kernel,
                          settings.hidden)
        start = time.perf_counter()
        jax.block_until_ready(epoch(params, adam().init(params), images, labels, order, rates, jax.random.PRNGKey(1)))
        return time.perf_counter() - start

    epochs = {}
    try:
        for name, blocks in [*EPOCH_VARIANTS.items(), ("XLA (cuDNN)", None)]:
            cnn.conv_blocks = with_weight_grad(blocks) if blocks else product_blocks
            epochs[name] = training._epoch_fn("pallas" if blocks else "xla", False, settings.dropout,
                                              settings.augmentations, settings.weight_decay, stepwise=False)
            run(epochs[name])  # compiles with the blocks patched in
    finally:
        cnn.conv_blocks = product_blocks
    seconds = {name: [] for name in epochs}
    for _ in range(repeat):
        for name, epoch in epochs.items():
            seconds[name].append(run(epoch))
    print(f"\n| dW blocks (16+ input channels) | images/s (median of {repeat}) |\n|---|---:|")
    for name, values in seconds.items():
        print(f"| {name} | {images_count / statistics.median(values):,.0f} |")


if __name__ == "__main__":
    main()
