"""The model search's K-network step (textclf/training/steps/stacked.py), its formulations side by side on the rows
of a real corpus: sparse XLA (gather the batch's W1 rows, sum per document; scatter-add gradient), dense XLA
(the batch scattered into a (B, F) matrix, then (B, F) x (F, K*H) products and Adam over W1), and dense with
W1's gradient and Adam update fused in one Pallas kernel (pallas_kernels/stacked_input_adam.py; GPU only).
Microseconds per step and documents per second of one `_epoch` (median of 5 after a compiling one), for K
networks, batch B and input width F (the F columns of the corpus's matrix that the most documents use; the
search trains its rounds at 8,192).

    python -m benchmarks.kernels.kmodel_step [TRAIN.jsonl] [--models 6,8] [--batches 64,1024] [--widths 8192,32768]
        [--blocks product,16x128x4x3x8xe,...] [--all] [--profile TOP]

--blocks: fused-kernel tilings to try ("product", the default: the product's own for each batch size; or
block_f x block_n x warps x stages [x sub-tiles a program [x batch rows a chunk]] [x e: W1's traffic
evict-first] [x c: the batch as columns]); the table shows the fastest, named.
--all: every tiling's time, printed before its row (a tiling that fails to compile is named and skipped).
--profile TOP: after each row, where a step's GPU time goes in the dense and the fused formulation (its fastest
tiling): the TOP kernels by time, microseconds a step, from a profiler trace of one compiled epoch (GPU only).
Prints a markdown table; the ratio columns are time / dense XLA's time.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.kernels.mlp import load_problem
from benchmarks.timing import gpu_kernel_events, kernel_totals
from textclf.training import ensembles
from textclf.training.steps import stacked as stacked_step


def _epoch_inputs(x, y, classes: int, models: int, batch: int):
    shape = ensembles.batch_shape([x], batch)
    batches = ensembles.device_batches(x, y, batch, np.arange(x.shape[0]), shape)
    rates = jnp.full((models,), 1e-3, jnp.float32)
    decays = jnp.zeros((models,), jnp.float32)
    params, state = stacked_step.start_stack(0, x.shape[1], 128, classes, models)
    return params, state, rates, decays, batches


def time_epoch(x, y, classes: int, models: int, batch: int, dense: bool, fused: bool = False) -> float:
    """-> seconds of one epoch over x (median of 5 after one that compiles)."""
    params, state, rates, decays, batches = _epoch_inputs(x, y, classes, models, batch)
    seconds = []
    for _ in range(6):
        start = time.perf_counter()
        params, state, losses = stacked_step.stacked_epoch(
            params, state, rates, decays, *batches, dense=dense, fused=fused
        )
        losses.block_until_ready()
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds[1:]))


def profile_epoch(x, y, classes: int, models: int, batch: int, fused: bool, top: int) -> None:
    """Print the `top` GPU kernels of one compiled dense epoch by time, in microseconds a step."""
    params, state, rates, decays, batches = _epoch_inputs(x, y, classes, models, batch)
    params, state, losses = stacked_step.stacked_epoch(params, state, rates, decays, *batches, dense=True, fused=fused)
    losses.block_until_ready()  # compiled outside the trace
    with tempfile.TemporaryDirectory() as trace_dir:
        with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
            params, state, losses = stacked_step.stacked_epoch(
                params, state, rates, decays, *batches, dense=True, fused=fused
            )
            losses.block_until_ready()
        events = gpu_kernel_events(trace_dir)
    steps = batches[0].shape[0]
    totals, calls = kernel_totals(events, 60)
    print(
        f"  {'fused' if fused else 'dense'}: kernels {sum(totals.values()) / steps:,.1f} us a step; "
        + "; ".join(f"{name} {us / steps:.1f} ({calls[name] / steps:.0f}x)" for name, us in totals.most_common(top)),
        flush=True,
    )


def widest_columns(x, width: int):
    """The `width` columns that the most rows use, in their original order."""
    used = np.bincount(x.indices, minlength=x.shape[1])
    kept = np.sort(np.argsort(-used, kind="stable")[:width])
    sub = x[:, kept].tocsr()
    if sub.shape[1] < width:
        sub.resize((sub.shape[0], width))
    return sub


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("train", nargs="?", default=".devdata/news4/train.jsonl")
    parser.add_argument("--models", default="6,8")
    parser.add_argument("--batches", default="64,1024")
    parser.add_argument("--widths", default="8192,32768")
    parser.add_argument("--blocks", default="product")
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--all", action="store_true", help="print every tiling's time, not only the fastest's")
    args = parser.parse_args()
    full, y, classes = load_problem(args.train)
    on_gpu = jax.default_backend() == "gpu"
    blocks = [_tiling(b) for b in args.blocks.split(",")]
    print(
        f"device: {jax.devices()[0].device_kind}; {args.train}: {full.shape[0]} documents, {full.shape[1]} "
        f"columns, {full.nnz / full.shape[0]:.0f} nonzeros a document"
    )
    print(
        "| F | K | B | nonzeros/doc | sparse us/step | dense us/step | fused us/step | sparse / dense | "
        "fused / dense | fused tiling |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for width in map(int, args.widths.split(",")):
        x = widest_columns(full, width)
        for models in map(int, args.models.split(",")):
            for batch in map(int, args.batches.split(",")):
                steps = -(-x.shape[0] // batch)
                sparse = time_epoch(x, y, classes, models, batch, dense=False)
                dense = time_epoch(x, y, classes, models, batch, dense=True)
                fused, tiling = float("nan"), "-"
                if on_gpu:
                    tried = {}
                    for number, candidate in enumerate(blocks):
                        _configure(candidate)
                        try:
                            tried[number] = time_epoch(x, y, classes, models, batch, dense=True, fused=True)
                        except Exception as error:  # a tiling Triton cannot fit (shared memory, registers)
                            print(f"  {_named(candidate)}: failed ({type(error).__name__}: {str(error)[:120]})")
                            continue
                        if args.all:
                            print(
                                f"  {_named(candidate)}: {tried[number] / steps * 1e6:,.0f} us/step "
                                f"({tried[number] / dense:.2f}x dense)",
                                flush=True,
                            )
                    if tried:
                        fastest = min(tried, key=tried.get)
                        tiling, fused = _named(blocks[fastest]), tried[fastest]
                        _configure(blocks[fastest])  # (what --profile then traces)
                print(
                    f"| {width} | {models} | {batch} | {x.nnz / x.shape[0]:.0f} | {sparse / steps * 1e6:,.0f} | "
                    f"{dense / steps * 1e6:,.0f} | {fused / steps * 1e6:,.0f} | {sparse / dense:.2f}x | "
                    f"{fused / dense:.2f}x | {tiling} |",
                    flush=True,
                )
                if on_gpu and args.profile:
                    for fused_step in (False, True):
                        profile_epoch(x, y, classes, models, batch, fused_step, args.profile)
                if on_gpu:
                    _configure(blocks[0])


def _tiling(text: str) -> dict:
    """ "32x128x4x2[x4[x64]][xe][xc]" -> the fused kernel's block_f, block_n, warps, stages, sub-tiles a program,
    batch rows a chunk (default 64), with "e" W1's loads and stores marked evict-first, with "c" the batch handed
    over as columns (x (F, B), dpre (N, B))."""
    if text == "product":
        return {}
    parts = text.split("x")
    numbers = [int(p) for p in parts if p not in ("e", "c")]
    return dict(
        block_f=numbers[0],
        block_n=numbers[1],
        num_warps=numbers[2],
        num_stages=numbers[3],
        sub_tiles=numbers[4] if len(numbers) > 4 else 1,
        block_m=numbers[5] if len(numbers) > 5 else 64,
        stream="evict_first" if "e" in parts else None,
        columns="c" in parts,
    )


def _named(tiling: dict) -> str:
    if not tiling:
        return "the product's"
    return (
        f"{tiling['block_f']}x{tiling['block_n']}, {tiling['num_warps']} warps, {tiling['num_stages']} stages"
        + (f", {tiling['sub_tiles']} sub-tiles" if tiling["sub_tiles"] > 1 else "")
        + (f", {tiling['block_m']} rows a chunk" if tiling["block_m"] != 64 else "")
        + (", evict-first" if tiling["stream"] else "")
        + (", the batch as columns" if tiling["columns"] else "")
    )


def _configure(tiling: dict) -> None:
    """Set the fused kernel's tiling for the next compilation (stacked_step reads it at trace time)."""
    stacked_step.FUSED_BLOCKS = dict(tiling)
    stacked_step.stacked_epoch.clear_cache()


if __name__ == "__main__":
    main()
