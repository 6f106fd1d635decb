"""VGG-16 forward pass built from the Pallas kernels, layer by layer against XLA (cuDNN / cuBLAS).

    python -m benchmarks.cnn.vgg16 [--batches 1,32] [--configs 128x64x64x4x3,128x128x64x8x3] [--dtype bfloat16]
        [--convs-only]

Input 224x224x3; thirteen 3x3 "same" convolutions + bias + ReLU (64 ... 512 channels), five 2x2 max pools,
then FC 25088-4096-4096-1000 (ReLU on the first two). Pallas: conv2d_forward for the convolutions and for
the dense layers (a dense layer is a 1x1 convolution over (B, 1, 1, features)), maxpool_forward for the
pools. XLA: lax.conv_general_dilated, a fused reshape-and-max pool, jnp.dot. Random He-scaled weights (timing only).

Time per layer: profiler kernel time (benchmarks/timing.kernel_time) of the jitted op on that layer's input
shape, padding and layout copies included; for the Pallas convolutions every block configuration in
--configs (block_m x block_n x block_k x num_warps [x num_stages [x channels_fastest 1/0]]) is timed and the
best one is reported with its name. Total: the sum over layers, and one jitted whole-network forward pass for each side.
--dtype: the activations' and weights' type on both sides, and the Pallas dots' operand type: float32 (TF32
products on both sides under the default precision) or bfloat16 (bf16 products, fp32 accumulation: cuDNN's
bf16 convolution against conv2d_forward with operand_dtype bfloat16). --convs-only: the 13 convolutions.
--tma-configs T1,...: in bf16 on a Hopper GPU, also conv2d_tma's kernel (tile_h x tile_w x tile_n x block_n x stages)
on each layer of 64 channels and more, its input in the blocked layout, checked against XLA's output.
--blocked-network: the 13 convolutions and 5 pools as one program a side, the TMA kernel's layers in the blocked
layout (conversions included).
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.timing import kernel_time
from pallas_kernels.conv2d import Conv2dForwardBlocks, conv2d_forward, conv2d_reference
from pallas_kernels.conv2d_tma import Conv2dTmaBlocks, conv2d_blocked_forward, from_blocked, supports_tma, to_blocked
from pallas_kernels.maxpool import maxpool_forward
from textclf.models.cnn import max_pool

VGG16 = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")
DENSE = (4096, 4096, 1000)


def layers(size: int = 224, channels: int = 3):
    """-> [(name, kind, input shape without batch, output units)]: kind conv / pool / dense."""
    out, conv, block = [], 0, 1
    for entry in VGG16:
        if entry == "M":
            out.append((f"pool{block}", "pool", (size, size, channels), channels))
            size, block, conv = size // 2, block + 1, 0
        else:
            conv += 1
            out.append((f"conv{block}_{conv}", "conv", (size, size, channels), entry))
            channels = entry
    features = size * size * channels
    for i, units in enumerate(DENSE, 1):
        out.append((f"fc{i}", "dense", (1, 1, features), units))
        features = units
    return out


def _weights(rng, kind, shape, units, dtype=jnp.float32):
    if kind == "pool":
        return None
    size = 3 if kind == "conv" else 1
    fan_in = size * size * shape[2]
    w = jnp.asarray(rng.normal(size=(size, size, shape[2], units)) * np.sqrt(2.0 / fan_in), dtype)
    return w, jnp.zeros((units,), dtype)


def pallas_layer(kind, params, config=(64, 32, 32, 4), relu=True):
    block_m, block_n, block_k, warps, *rest = config
    if kind == "pool":
        return lambda x: maxpool_forward(x, size=2)[0]
    w, b = params
    pad = 1 if kind == "conv" else 0
    stages, fastest = (rest + [Conv2dForwardBlocks.num_stages, 1][len(rest) :])[:2]
    blocks = Conv2dForwardBlocks(
        block_m=block_m,
        block_n=block_n,
        block_k=block_k,
        num_warps=warps,
        num_stages=stages,
        channels_fastest=bool(fastest),
    )
    return lambda x: conv2d_forward(x, w, b, pad=pad, relu=relu, block_sizes=blocks, operand_dtype=w.dtype.name)


def tma_layer(params, config, relu=True):
    """The TMA kernel on the layer's input in its blocked layout (conv2d_tma: the layout a network of these layers
    keeps from layer to layer)."""
    tile_h, tile_w, tile_n, block_n, stages = config
    w, b = params
    blocks = Conv2dTmaBlocks(tile_h=tile_h, tile_w=tile_w, tile_n=tile_n, block_n=block_n, stages=stages)
    return lambda x_blocked: conv2d_blocked_forward(x_blocked, w, b, pad=1, relu=relu, blocks=blocks)


def xla_layer(kind, params, relu=True):
    if kind == "pool":
        # The product's XLA pool, a reshape and a max that XLA fuses into one pass. (maxpool_reference, the Pallas
        # kernel's oracle, takes each window's first largest tap by argmax and take; on an H200 the feature
        # extractor's five pools took ~6.8 ms more that way at batch 32, against 1.8 ms for the whole extractor
        # with this one, so it would handicap XLA here.)
        return lambda x: max_pool(x, 2)
    w, b = params
    if kind == "conv":
        return lambda x: conv2d_reference(x, w, b, 1)
    return lambda x: (jax.nn.relu if relu else (lambda y: y))(x.reshape(x.shape[0], -1) @ w[0, 0] + b)


def _timed(fn, x) -> float | None:
    """kernel_time, or None for a block configuration the device cannot run (e.g. more shared memory than it
    has: float32 tiles are twice bf16's)."""
    try:
        return kernel_time(fn, (x,))
    except (jax.errors.JaxRuntimeError, ValueError) as error:  # (Mosaic GPU: "exceeds available shared memory")
        print(f"  (skipped: {str(error).splitlines()[0][:100]})", flush=True)
        return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--configs", default="128x64x64x4x3,128x128x64x8x3")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--convs-only", action="store_true")
    parser.add_argument(
        "--tma-configs",
        default="",
        help="also the TMA kernel (conv2d_tma, bf16, Cin a multiple of 64, on Hopper): tile_h x tile_w x "
        "tile_n x block_n x stages, comma-separated",
    )
    parser.add_argument("--only", default="", help="comma-separated layer names (e.g. conv1_2,conv2_1)")
    parser.add_argument(
        "--blocked-network",
        action="store_true",
        help="only the 13 convolutions and 5 pools as one jitted forward pass each side: Pallas with "
        "conv1_1 on the Triton kernel, then the blocked layout through the TMA kernel (default "
        "tilings) and XLA's pools, back to NHWC at the end; XLA: cuDNN and XLA's pools on NHWC",
    )
    args = parser.parse_args()
    configs = [tuple(int(v) for v in c.split("x")) for c in args.configs.split(",")]
    tma_configs = [tuple(int(v) for v in c.split("x")) for c in args.tma_configs.split(",") if c]
    dtype = jnp.dtype(args.dtype)
    rng = np.random.default_rng(0)
    net = layers()
    params = [_weights(rng, kind, shape, units, dtype) for _, kind, shape, units in net]
    print(f"device: {jax.devices()[0].device_kind}")
    if args.blocked_network:
        for batch in (int(b) for b in args.batches.split(",")):
            _blocked_network(net, params, batch, dtype, configs[0], rng)
        return
    for batch in (int(b) for b in args.batches.split(",")):
        print(f"\nVGG-16 forward, batch {batch}, {args.dtype}: ms per layer\n")
        tma_head = " Triton ms | TMA ms | best TMA config |" if tma_configs else ""
        print(f"| layer | input | Pallas ms | best config |{tma_head} XLA ms | Pallas / XLA |")
        print("|---|---|---:|---|" + ("---:|---:|---|" if tma_configs else "") + "---:|---:|")
        totals, best_configs = [0.0, 0.0], []
        for (name, kind, shape, units), p in zip(net, params):
            if (args.convs_only and kind != "conv") or (args.only and name not in args.only.split(",")):
                continue
            x = jnp.asarray(rng.random((batch, *shape)), dtype)
            relu = name != "fc3"
            tried = {
                config: _timed(pallas_layer(kind, p, config, relu), x)
                for config in (configs if kind != "pool" else configs[:1])
            }
            config, pallas = min(tried.items(), key=lambda item: item[1] or float("inf"))
            tma_cells = ""
            if tma_configs:
                triton, tma, tma_config = pallas, None, None
                if kind == "conv" and supports_tma(x, p[0]):
                    x_blocked = to_blocked(x)
                    timed = {c: _timed(tma_layer(p, c, relu), x_blocked) for c in tma_configs}
                    tma_config, tma = min(timed.items(), key=lambda item: item[1] or float("inf"))
                    if tma is not None:
                        got = from_blocked(tma_layer(p, tma_config, relu)(x_blocked)).astype(jnp.float32)
                        want = xla_layer(kind, p, relu)(x).astype(jnp.float32)
                        print(
                            f"  ({name}: TMA {'x'.join(map(str, tma_config))} max |TMA - XLA| "
                            f"{float(jnp.max(jnp.abs(got - want))):.3g}, max |XLA| "
                            f"{float(jnp.max(jnp.abs(want))):.3g})",
                            flush=True,
                        )
                    if tma is not None and (pallas is None or tma < pallas):
                        config, pallas = ("tma", *tma_config), tma
                tma_cells = (
                    f" {triton * 1e3:.3f} | {'' if tma is None else f'{tma * 1e3:.3f}'} | "
                    f"{'' if tma_config is None else 'x'.join(map(str, tma_config))} |"
                )
            best_configs.append(config)
            xla = kernel_time(xla_layer(kind, p, relu), (x,))
            totals[0] += pallas or 0.0
            totals[1] += xla or 0.0
            label = (
                ""
                if kind == "pool"
                else ("tma " if config[0] == "tma" else "") + "x".join(str(v) for v in config if v != "tma")
            )
            print(
                f"| {name} | {'x'.join(map(str, shape))}x{units if kind != 'pool' else ''} | {pallas * 1e3:.3f} | "
                f"{label} |{tma_cells} {xla * 1e3:.3f} | {pallas / xla:.2f}x |",
                flush=True,
            )
        print(
            f"| **sum of layers** | | {totals[0] * 1e3:.3f} | |{' | | |' if tma_configs else ''} "
            f"{totals[1] * 1e3:.3f} | "
            f"{totals[0] / totals[1]:.2f}x |"
        )
        if args.convs_only or args.only:
            continue

        def whole(layer_fns):
            def forward(x):
                for fn, (_, kind, shape, _) in zip(layer_fns, net):
                    x = fn(x.reshape(x.shape[0], *shape) if kind == "dense" else x)
                return x

            return forward

        # (one layout for the whole network: the TMA kernel's blocked layers are not mixed in here; --blocked-network)
        pallas_fns = [
            pallas_layer(kind, p, configs[0] if c[0] == "tma" else c, name != "fc3")
            for (name, kind, _, _), p, c in zip(net, params, best_configs)
        ]
        xla_fns = [xla_layer(kind, p, name != "fc3") for (name, kind, _, _), p in zip(net, params)]
        x = jnp.asarray(rng.random((batch, 224, 224, 3)), dtype)
        pallas_out, xla_out = jax.jit(whole(pallas_fns))(x), jax.jit(whole(xla_fns))(x)
        diff = float(jnp.max(jnp.abs(pallas_out.reshape(batch, -1) - xla_out.reshape(batch, -1))))
        scale = float(jnp.max(jnp.abs(xla_out)))
        whole_pallas, whole_xla = (
            kernel_time(whole(pallas_fns), (x,), reps=5),
            kernel_time(whole(xla_fns), (x,), reps=5),
        )
        print(
            f"| **whole network, one jit** | 224x224x3 | {whole_pallas * 1e3:.3f} | | {whole_xla * 1e3:.3f} | "
            f"{whole_pallas / whole_xla:.2f}x |"
        )
        print(f"\nlogits max |Pallas - XLA| = {diff:.3g} (max |logit| {scale:.3g}; {args.dtype} operands)")


def _blocked_pool(x):
    """2x2 max pool of (H, W, C / 64, N, 64) by XLA."""
    h, w, *rest = x.shape
    return jnp.max(x.reshape(h // 2, 2, w // 2, 2, *rest), axis=(1, 3))


def _blocked_network(net, params, batch, dtype, first_config, rng) -> None:
    """The feature extractor (13 convolutions, 5 pools) as one jitted forward pass on each side."""
    features = [(layer, p) for layer, p in zip(net, params) if layer[1] != "dense"]

    def pallas(x):
        (_, kind, _, _), p = features[0]
        x = to_blocked(pallas_layer(kind, p, first_config)(x))  # conv1_1: 3 channels, the Triton kernel on NHWC
        for (_, kind, _, _), p in features[1:]:
            x = _blocked_pool(x) if kind == "pool" else conv2d_blocked_forward(x, p[0], p[1], pad=1)
        return from_blocked(x)

    def xla(x):
        for (_, kind, _, _), p in features:
            x = xla_layer(kind, p)(x)
        return x

    x = jnp.asarray(rng.random((batch, 224, 224, 3)), dtype)
    got, want = jax.jit(pallas)(x).astype(jnp.float32), jax.jit(xla)(x).astype(jnp.float32)
    scale = float(jnp.max(jnp.abs(want)))
    relative = float(jnp.max(jnp.abs(got - want))) / scale
    pallas_s, xla_s = kernel_time(pallas, (x,), reps=5), kernel_time(xla, (x,), reps=5)
    print(
        f"\nVGG-16 features (13 convolutions, 5 pools), batch {batch}, {dtype.name}, one jit a side: Pallas "
        f"{pallas_s * 1e3:.3f} ms, XLA {xla_s * 1e3:.3f} ms, Pallas / XLA {pallas_s / xla_s:.2f}x; max |Pallas - XLA| "
        f"/ max |XLA| = {relative:.3g}"
    )


if __name__ == "__main__":
    main()
