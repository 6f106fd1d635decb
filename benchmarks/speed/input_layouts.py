"""Epoch throughput of the input layouts side by side: flat sparse batches, the pieces layout, dense X.

    python -m benchmarks.speed.input_layouts .devdata/news4/train.jsonl [--repeat 100] [--batches 1024,4096]
        [--optimizer adam] [--widths 8,16,32] [--kernels]

The corpus is vectorized (TF-IDF, default settings) and stacked --repeat times, uploaded once in each layout,
and whole epochs (batch gathering + the training scan, one dispatch, as fit_network runs them) are timed:
median of 3 epochs after a first one that compiles. Variants: xla-flat (gather + segment sum per nonzero),
xla-pieces-W (fixed-width pieces, textclf/training/device_data.py), pallas-dense (dense bf16 X, the tuned kernels),
pallas-pieces-W (pallas_kernels/pieces_hidden.py forward). --kernels adds profiler kernel times of the
forward and dW1 of one batch per formulation.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from pipelines.corpus import read_corpus
from pipelines.vectorize import fit_vectorizer
from textclf.inference.text_model import encode_labels
from textclf.settings import Settings
from textclf.training.device_data import (
    batch_nnz_max,
    epoch_order,
    gather_batches,
    gather_piece_batches,
    host_csr,
    host_pieces,
    pieces_cap,
)
from textclf.models.mlp import init_params
from textclf.training.steps.optimizers import make_optimizer
from pipelines.batches import next_power_of_two
from textclf.training.steps.step import kernel_config_for, xla_epoch


def _epoch_fn(variant: str, settings: Settings, n_classes: int, n_features: int, cap: int, config):
    optimizer = dict(momentum=settings.momentum, weight_decay=settings.weight_decay, optimizer=settings.optimizer)
    pieces = "pieces" in variant
    if variant.startswith("pallas"):
        from textclf.training.steps.pallas import pallas_epoch

        train = functools.partial(pallas_epoch, n_classes=n_classes, config=config, **optimizer)
    else:
        train = functools.partial(xla_epoch, **optimizer)

    def epoch(params, opt_state, data, order, lrs):
        batches = gather_piece_batches(data, order, cap) if pieces else gather_batches(data, order, cap)
        params, opt_state, losses, _ = train(params, opt_state, *batches, lrs)
        return params, opt_state, losses

    return jax.jit(epoch, donate_argnums=(0, 1))


def _time_epochs(fn, params, opt_state, data, orders, lrs) -> tuple[float, float]:
    times, loss = [], float("nan")
    for order in orders:
        start = time.perf_counter()
        params, opt_state, losses = fn(params, opt_state, data, order, lrs)
        loss = float(losses[-1])
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:]), loss


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("train")
    parser.add_argument("--repeat", type=int, default=100)
    parser.add_argument("--batches", default="1024,4096")
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--widths", default="8,16,32")
    parser.add_argument("--variants", default="xla-flat,xla-pieces,pallas-dense,pallas-pieces")
    parser.add_argument("--kernels", action="store_true")
    args = parser.parse_args()
    import scipy.sparse as sp
    from textclf.training.steps.pallas import pad_params

    corpus = read_corpus(args.train)
    settings = Settings(optimizer=args.optimizer)
    _, x = fit_vectorizer(corpus.texts, corpus.labels, settings)
    classes = sorted(set(corpus.labels))
    y = encode_labels(corpus.labels, classes)
    x, y = sp.vstack([x] * args.repeat, format="csr"), np.tile(y, args.repeat)
    n, n_features = x.shape
    print(
        f"{n:,} documents, {x.nnz / n:.1f} nonzeros each, {len(classes)} classes, optimizer {args.optimizer}; "
        f"{jax.devices()[0].device_kind}"
    )
    flat = jax.device_put(host_csr(x, y))
    widths = [int(w) for w in args.widths.split(",")]
    pieces = {w: host_pieces(x, y, w) for w in widths}
    uploaded = {w: jax.device_put(p) for w, p in pieces.items()}
    print("| variant | batch | batch width (slots or pieces) | epoch s | docs/s | last loss |")
    print("|---|---:|---:|---:|---:|---:|")
    for batch in (int(b) for b in args.batches.split(",")):
        run = settings.replace(batch_size=batch)
        steps = -(-n // batch)
        orders = [epoch_order(0, e, n, steps, batch) for e in range(4)]
        lrs = jnp.full((steps,), run.learning_rate, jnp.float32)
        tuned = kernel_config_for(run, batch)
        for name in args.variants.split(","):
            for width in widths if "pieces" in name else [None]:
                if width:
                    data, cap = uploaded[width], max(batch_nnz_max(pieces[width].piece_ptr, o) for o in orders)
                else:
                    data, cap = flat, max(batch_nnz_max(flat.indptr, o) for o in orders)
                cap = pieces_cap(cap) if width else next_power_of_two(cap)
                config = None
                if name.startswith("pallas"):
                    config = tuned.replace(input_format="pieces" if width else "dense")
                params = init_params(jax.random.PRNGKey(0), n_features, run.hidden, len(classes), run.init_gain)
                if config is not None:
                    params = pad_params(params, config)
                opt_state = make_optimizer(run.optimizer).init(params)
                fn = _epoch_fn(name, run, len(classes), n_features, cap, config)
                seconds, loss = _time_epochs(fn, params, opt_state, data, [jax.device_put(o) for o in orders], lrs)
                label = f"{name}-{width}" if width else name
                print(
                    f"| {label} | {batch:,} | {cap:,} | {seconds:.4f} | {n / seconds:,.0f} | {loss:.4f} |", flush=True
                )
    if args.kernels:
        _kernel_table(x, y, widths, n_features)


def _kernel_table(x, y, widths, n_features, batch: int = 4096) -> None:
    """Profiler kernel times (ms) of the hidden layer's forward and dW1 for one batch, per formulation."""
    from benchmarks.timing import kernel_time
    from pallas_kernels.pieces_hidden import (
        PiecesBlocks,
        finish_hidden,
        pieces_gather_sum,
        pieces_hidden_reference,
        pieces_input_grad,
    )
    from textclf.models.mlp import Params, hidden_layer

    rng = np.random.default_rng(0)
    order = jax.device_put(epoch_order(0, 0, x.shape[0], -(-x.shape[0] // batch), batch)[:1])
    w1 = jnp.asarray(rng.normal(size=(n_features, 128)) * 0.01, jnp.float32)
    b1 = jnp.zeros((128,), jnp.float32)
    dpre = jnp.asarray(rng.normal(size=(batch, 128)) * 1e-3, jnp.float32)
    ms = lambda fn, *a: (kernel_time(fn, a) or float("nan")) * 1e3
    flat = jax.device_put(host_csr(x, y))
    cap = next_power_of_two(batch_nnz_max(flat.indptr, np.asarray(order)))
    i, v, r, *_ = (a[0] for a in gather_batches(flat, order, cap))
    print(f"\nOne batch of {batch:,}: profiler kernel ms")
    print("| formulation | forward | dW1 (grad of the forward) |")
    print("|---|---:|---:|")
    fwd = lambda w, i, v, r: hidden_layer(Params(w, b1, None, None), i, v, r, batch)
    grad = jax.grad(lambda w, i, v, r, d: jnp.sum(fwd(w, i, v, r) * d))
    print(f"| xla flat | {ms(fwd, w1, i, v, r):.3f} | {ms(grad, w1, i, v, r, dpre):.3f} |", flush=True)
    for width in widths:
        data = jax.device_put(host_pieces(x, y, width))
        cap = pieces_cap(batch_nnz_max(np.asarray(data.piece_ptr), np.asarray(order)))
        pi, pv, pr, *_ = (a[0] for a in gather_piece_batches(data, order, cap))
        ref = lambda w, i, v, r: pieces_hidden_reference(w, b1, i, v, r, batch)
        rgrad = jax.grad(lambda w, i, v, r, d: jnp.sum(ref(w, i, v, r) * d))
        print(f"| xla pieces {width} | {ms(ref, w1, pi, pv, pr):.3f} | {ms(rgrad, w1, pi, pv, pr, dpre):.3f} |")
        print(
            f"| scatter dW1 alone, pieces {width} | | "
            f"{ms(lambda i, v, r, d: pieces_input_grad(i, v, r, d, n_features), pi, pv, pr, dpre):.3f} |"
        )
        for block_p in (32, 64, 128):
            for warps in (4, 8):
                for gather_dtype in (jnp.float32, jnp.bfloat16):

                    def pallas_fwd(w, i, v, r, block_p=block_p, warps=warps, dt=gather_dtype):
                        per_piece = pieces_gather_sum(
                            i, v, w.astype(dt), block_sizes=PiecesBlocks(block_p=block_p, num_warps=warps)
                        )
                        return finish_hidden(per_piece, b1, r, batch)

                    print(
                        f"| pallas pieces {width}, block {block_p}, {warps} warps, {jnp.dtype(gather_dtype).name} "
                        f"| {ms(pallas_fwd, w1, pi, pv, pr):.3f} | |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
