"""Per-layer forward time of the original design's two convolution layers, Pallas vs XLA (cuDNN) vs PyTorch.

    python -m benchmarks.conv_layers [--batches 100,1000,10000] [--block-m 64] [--sweep]

Layer 1: 28x28x1 -> 4 channels, layer 2: 14x14x4 -> 16 channels (after a 2x2 pool), 7x7 kernels, "same"
padding, bias + ReLU. Pallas and XLA: profiler kernel time of the jitted op (padding and layout copies
included); PyTorch: CUDA-event time of F.conv2d + ReLU in NCHW (cuDNN), mean of 20 after 3 warm-ups.
Milliseconds per call, and Pallas / XLA.
"""

from __future__ import annotations

import argparse
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.timing import kernel_time
from pallas_kernels.conv2d import Conv2dForwardBlocks, conv2d_forward, conv2d_reference

LAYERS = (("conv1 1->4 7x7", 28, 1, 4), ("conv2 4->16 7x7", 14, 4, 16))


def torch_ms(batch: int, size: int, cin: int, cout: int) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    x = torch.randn(batch, cin, size, size, device="cuda")
    w = torch.randn(cout, cin, 7, 7, device="cuda")
    b = torch.randn(cout, device="cuda")
    run = lambda: torch.relu(torch.nn.functional.conv2d(x, w, b, padding=3))
    for _ in range(3):
        run()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        run()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", default="100,1000,10000")
    parser.add_argument("--sweep", action="store_true", help="also try block sizes; report the best")
    parser.add_argument("--block-m", type=int, default=64, help="output pixels per program")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"device: {jax.devices()[0].device_kind}")
    print("| layer | batch | Pallas ms | XLA ms | PyTorch ms | Pallas / XLA |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, size, cin, cout in LAYERS:
        for batch in (int(b) for b in args.batches.split(",")):
            x = jnp.asarray(rng.normal(size=(batch, size, size, cin)), jnp.float32)
            w = jnp.asarray(rng.normal(size=(7, 7, cin, cout)) * 0.1, jnp.float32)
            b = jnp.asarray(rng.normal(size=(cout,)), jnp.float32)
            blocks = Conv2dForwardBlocks(block_m=args.block_m)
            pallas = kernel_time(lambda x, w, b: conv2d_forward(x, w, b, pad=3, block_sizes=blocks), (x, w, b))
            if args.sweep:
                for block_m, block_k, warps in itertools.product((64, 128, 256), (32, 64, 128), (4, 8)):
                    blocks = Conv2dForwardBlocks(block_m=block_m, block_k=block_k, num_warps=warps)
                    t = kernel_time(lambda x, w, b: conv2d_forward(x, w, b, pad=3, block_sizes=blocks), (x, w, b))
                    print(f"  sweep {name} batch {batch}: block_m {block_m} block_k {block_k} warps {warps}: "
                          f"{t * 1e3:.4f} ms", flush=True)
            xla = kernel_time(lambda x, w, b: conv2d_reference(x, w, b, 3), (x, w, b))
            torch = torch_ms(batch, size, cin, cout)
            fmt = lambda s: "" if s is None else f"{s * 1e3:.4f}"
            ratio = f"{pallas / xla:.2f}x" if pallas and xla else ""
            print(f"| {name} | {batch:,} | {fmt(pallas)} | {fmt(xla)} | {'' if torch is None else f'{torch:.4f}'} | "
                  f"{ratio} |", flush=True)


if __name__ == "__main__":
    main()
