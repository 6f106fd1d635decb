"""The default CNN's two convolutions in training, Pallas kernels vs XLA (cuDNN): per kernel, with a block sweep.

    python -m benchmarks.cnn.cnn_layers [--batch 64] [--sweep] [--epoch-variants]

Layers of textclf's default image network (textclf/models/cnn.py): 28x28x1 -> 32 and 14x14x32 -> 64, 5x5 kernels,
"same" padding, bias + ReLU, then a 2x2 max pool; fp32 (TF32 products). For each layer, forward + backward as
training runs it (jax.grad: dW and db, and dX for the second layer; the first layer's input is the image, whose
gradient nothing needs): XLA's conv and fused pool, the Pallas convolution then its pool kernels, and the Pallas
convolution with the pool fused in (conv2d_pool; textclf.models.cnn.PALLAS_CONV says which the product runs); then each
Pallas kernel alone (forward, dX, dW,
the fused forward) under the product's blocks and, with --sweep, others. Profiler kernel time
(benchmarks.timing.kernel_time), microseconds per call. --epoch-variants: then the product's training epoch
(60,000 synthetic images, as benchmarks.cnn.cnn_epoch) with each of EPOCH_VARIANTS, beside XLA's epoch, 3 epochs each,
alternating: a kernel's time alone leaves out what its shape costs the rest of the step (partial sums).
"""

from __future__ import annotations

import argparse
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.timing import kernel_time
from pallas_kernels.conv2d import (
    Conv2dForwardBlocks,
    Conv2dWeightGradBlocks,
    conv2d,
    conv2d_forward,
    conv2d_pool,
    conv2d_pool_forward,
    conv2d_reference,
    conv2d_weight_grad,
)
from pallas_kernels.maxpool import maxpool2d
from textclf.models.cnn import ConvKernels, conv_blocks, max_pool

# name -> (the pool fused into the convolution, dW's blocks for layers of 16+ input channels; None: the product's)
EPOCH_VARIANTS = {
    "conv then pool kernels": ConvKernels(fused_pool=False),
    "pool fused": ConvKernels(fused_pool=True),
    "conv then pool kernels, dW 64 pixels a step": ConvKernels(False, Conv2dWeightGradBlocks(block_m=64, programs=512)),
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
    print(
        "| layer | XLA train us | Pallas, conv then pool | Pallas, pool fused | fused / XLA | forward | "
        "fused forward | dX | dW |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    sweeps = []
    for name, size, cin, cout, needs_dx in LAYERS:
        x = jnp.asarray(rng.random((args.batch, size, size, cin)), jnp.float32)
        w = jnp.asarray(rng.normal(size=(5, 5, cin, cout)) * 0.1, jnp.float32)
        b = jnp.asarray(rng.normal(size=(cout,)) * 0.1, jnp.float32)
        probe = jnp.asarray(rng.normal(size=(args.batch, size // 2, size // 2, cout)), jnp.float32)
        argnums = (0, 1, 2) if needs_dx else (1, 2)
        kernel, pooled_kernel = conv_blocks(cin), conv_blocks(cin, pooled=True)
        train = lambda layer: kernel_time(jax.grad(lambda x, w, b: jnp.sum(layer(x, w, b) * probe), argnums), (x, w, b))
        xla = train(lambda x, w, b: max_pool(conv2d_reference(x, w, b, 2)))
        unfused = train(lambda x, w, b: maxpool2d(conv2d(x, w, b, 2, kernel)))
        fused = train(lambda x, w, b: conv2d_pool(x, w, b, 2, pooled_kernel))
        forward = lambda blocks: kernel_time(
            lambda x, w, b: conv2d_forward(x, w, b, pad=2, block_sizes=blocks), (x, w, b)
        )
        pool_forward = lambda blocks: kernel_time(
            lambda x, w, b: conv2d_pool_forward(x, w, b, pad=2, block_sizes=blocks), (x, w, b)
        )
        flipped = jnp.transpose(w[::-1, ::-1], (0, 1, 3, 2))
        dz = jnp.maximum(jnp.asarray(rng.normal(size=(args.batch, size, size, cout)), jnp.float32), 0)
        input_grad = lambda blocks: kernel_time(
            lambda dz, wf: conv2d_forward(
                dz, wf, jnp.zeros((cin,), jnp.float32), pad=2, relu=False, block_sizes=blocks
            ),
            (dz, flipped),
        )
        weight_grad = lambda blocks: kernel_time(
            lambda x, dz: conv2d_weight_grad(x, dz, size=5, pad=2, block_sizes=blocks), (x, dz)
        )
        print(
            f"| {name} | {us(xla)} | {us(unfused)} | {us(fused)} | {fused / xla:.2f}x | {us(forward(kernel[0]))} | "
            f"{us(pool_forward(pooled_kernel[0]))} | {us(input_grad(kernel[4])) if needs_dx else ''} | "
            f"{us(weight_grad(kernel[1]))} |",
            flush=True,
        )
        if not args.sweep:
            continue
        for block_m, block_n, block_k, stages in itertools.product((32, 64, 128), (32, 64), (32, 64), (2, 3)):
            blocks = Conv2dForwardBlocks(block_m=block_m, block_n=block_n, block_k=block_k, num_stages=stages)
            if block_k == 32:  # the forward's input has Cin channels: block_k is at most 32 here
                sweeps.append((name, "forward", blocks, forward(blocks)))
            if needs_dx:
                sweeps.append((name, "dX", blocks, input_grad(blocks)))
            if block_k == 32 and block_m <= 64:  # block_m: windows of 4 pixels
                for half in (block_m // 2,) if block_m > 16 else ():
                    half_blocks = Conv2dForwardBlocks(block_m=half, block_n=block_n, num_stages=stages)
                    sweeps.append((name, "fused forward", half_blocks, pool_forward(half_blocks)))
                sweeps.append((name, "fused forward", blocks, pool_forward(blocks)))
        weight_grad_blocks = [
            Conv2dWeightGradBlocks(block_m=block_m, programs=programs, num_warps=warps)
            for block_m, programs, warps in itertools.product((32, 64, 128), (128, 256, 512), (4, 8))
        ]
        if cin % 16 == 0:  # the im2col gather, which these channels took before the rows kernel
            weight_grad_blocks += [
                Conv2dWeightGradBlocks(block_m=block_m, programs=programs, rows=False)
                for block_m, programs in itertools.product((64, 128), (256, 512))
            ]
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

    import textclf.models.cnn as cnn
    import textclf.training.cnn as training
    from benchmarks.cnn.cnn_epoch import synthetic_epoch_inputs, timed_epoch
    from textclf.settings import Settings

    settings = Settings(model="cnn")
    inputs = synthetic_epoch_inputs(images_count, settings)
    epochs = {}
    for name, variant in [*EPOCH_VARIANTS.items(), ("XLA (cuDNN)", None)]:
        epochs[name] = training._epoch_fn(
            "pallas" if variant else "xla",
            False,
            settings.dropout,
            settings.augmentations,
            settings.weight_decay,
            stepwise=False,
            kernels=variant or cnn.PALLAS_CONV,
        )
        timed_epoch(epochs[name], settings, inputs)  # compiles
    seconds = {name: [] for name in epochs}
    for _ in range(repeat):
        for name, epoch in epochs.items():
            seconds[name].append(timed_epoch(epoch, settings, inputs))
    print(f"\n| epoch | images/s (median of {repeat}) |\n|---|---:|")
    for name, values in seconds.items():
        print(f"| {name} | {images_count / statistics.median(values):,.0f} |")


if __name__ == "__main__":
    main()
