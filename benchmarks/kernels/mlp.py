"""Kernel and training-step benchmark: Pallas vs XLA (same math, default precision) vs PyTorch (CUDA graphs),
on real news4 minibatches, plus an optional block-size sweep that writes pallas_kernels/tuned.json entries.

    python -m benchmarks.kernels.mlp --corpus data/news4/train.jsonl [--batches 256,1024,4096] [--torch]
                                 [--sweep] [--db runs.db] [--tuned-out tuned.json]

Prints markdown tables: per op and batch size, microseconds per call, the Pallas/XLA ratio, and the Pallas
kernel's achieved GB/s and TFLOP/s against the copy bandwidth and bf16 matmul rate measured in the same run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import asdict

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.timing import device_time, kernel_time
from pallas_kernels.config import KernelConfig, tuned
from pallas_kernels.hidden_backward import hidden_backward, hidden_backward_reference
from pallas_kernels.hidden_forward import HiddenForwardBlocks, hidden_forward
from pallas_kernels.input_grad import InputGradBlocks, input_grad, input_grad_update
from pallas_kernels.sgd_update import sgd_update, sgd_update_reference
from pallas_kernels.softmax_xent import softmax_xent, softmax_xent_reference
from pipelines.batches import make_batches
from pipelines.corpus import read_corpus
from pipelines.vectorize import fit_vectorizer
from textclf.inference.text_model import encode_labels
from textclf.settings import Settings
from textclf.models.mlp import Params, init_params, logits, masked_loss
from textclf.training.steps.optimizers import adam, sgd
from textclf.training.steps.pallas import dense_batch, pad_params, pallas_train_step

BF16 = jnp.bfloat16
MOMENTUM, WEIGHT_DECAY = 0.9, 0.0


def kernel_or_device_time(fn, args) -> float:
    """GPU kernel time from the profiler (no host dispatch in it: what decides between configurations of a
    10 us kernel), else the dispatch-loop time (an upper bound)."""
    measured = kernel_time(fn, args)
    if measured is None:
        print("  (no profiler kernel events: dispatch-loop time, an upper bound)", file=sys.stderr)
        return device_time(fn, args)
    return measured


def ceilings() -> tuple[float, float]:
    """Measured device copy bandwidth (bytes/s, read + write) and bf16 matmul rate (FLOP/s)."""
    big = jnp.ones((256 * 2**20,), jnp.float32)  # 1 GiB
    copy = device_time(lambda a: a * 1.0001, (big,), reps=20)
    a = jnp.ones((8192, 8192), BF16)
    mm = device_time(lambda x, y: jnp.dot(x, y, preferred_element_type=jnp.float32), (a, a), reps=20)
    return 2 * big.nbytes / copy, 2 * 8192**3 / mm


def load_problem(corpus: str, repeat: int = 1, vectorizer: str = "tfidf"):
    """-> (CSR matrix, label ids, class count) of the corpus, its rows stacked `repeat` times (scale stand-in)."""
    data = read_corpus(corpus)
    _, matrix = fit_vectorizer(data.texts, data.labels, Settings(vectorizer=vectorizer))
    classes = sorted(set(data.labels))
    labels = encode_labels(data.labels, classes)
    if repeat > 1:
        import scipy.sparse as sp

        matrix, labels = sp.vstack([matrix] * repeat, format="csr"), np.tile(labels, repeat)
    return matrix, labels, len(classes)


def real_batch(matrix, labels, batch: int):
    """One minibatch of `batch` news4 documents drawn at random (seed 0), as the sparse batch format."""
    chosen = np.random.default_rng(0).permutation(matrix.shape[0])[:batch]
    return make_batches(matrix[chosen], labels[chosen], batch)


def xla_step_dense(params, velocity, x, labels, mask, lr, optimizer: str = "sgd"):
    """The same step in plain JAX on the dense bf16 batch (XLA's best dense formulation)."""

    def loss_fn(p):
        h = jax.nn.sigmoid(jnp.dot(x, p.w1.astype(BF16), preferred_element_type=jnp.float32) + p.b1)
        return masked_loss(h @ p.w2 + p.b2, labels, mask)

    (loss, correct), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
    if optimizer == "adam":
        params, velocity = adam(WEIGHT_DECAY).update(params, velocity, grads, lr)
    else:
        params, velocity = sgd(MOMENTUM, WEIGHT_DECAY).update(params, velocity, grads, lr)
    return params, velocity, loss, correct


def xla_step_sparse(params, velocity, indices, values, rows, labels, mask, lr):
    """The product's XLA path: gather + segment-sum over the sparse batch."""
    batch = labels.shape[0]

    def loss_fn(p):
        return masked_loss(logits(p, indices, values, rows, batch), labels, mask)

    (loss, correct), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
    params, velocity = sgd(MOMENTUM, WEIGHT_DECAY).update(params, velocity, grads, lr)
    return params, velocity, loss, correct


def carried_time(step, carry, consts, reps=20, trials=5) -> float:
    """Seconds per call of step(*carry, *consts) -> (*carry, ...), chained through a fori_loop."""
    import statistics
    import time

    n_carry = len(carry)

    @jax.jit
    def run(carry, consts):
        def body(_, c):
            return tuple(step(*c, *consts)[:n_carry])

        return jax.lax.fori_loop(0, reps, body, tuple(carry))

    jax.block_until_ready(run(carry, consts))
    times = []
    for _ in range(trials):
        start = time.perf_counter()
        jax.block_until_ready(run(carry, consts))
        times.append((time.perf_counter() - start) / reps)
    return statistics.median(times)


def bench_batch(matrix, labels, n_classes, batch, config: KernelConfig, with_torch: bool):
    sparse = real_batch(matrix, labels, batch)
    idx, val, row, y, m = (jnp.asarray(a[0]) for a in sparse.arrays())
    params = pad_params(init_params(jax.random.PRNGKey(0), matrix.shape[1], 128, n_classes), config)
    k, n = params.w1.shape
    cp = params.w2.shape[1]
    velocity = jax.tree.map(jnp.zeros_like, params)
    x = dense_batch(idx, val, row, batch, k, BF16)
    weight = m / m.sum()
    lr = jnp.asarray([0.1], jnp.float32)
    h = hidden_forward(x, params.w1, params.b1)
    _, _, dz = softmax_xent(h, params.w2, params.b2, y, weight, n_classes=n_classes)
    dpre = hidden_backward(dz, params.w2, h)[0]
    cfg = dict(interpret=False)
    fw, gw, dw = (dict(block_sizes=blocks) for blocks in (config.forward, config.grad, config.dw))
    ops = []  # (name, pallas seconds, xla seconds, bytes, flops)
    timed = kernel_or_device_time

    def add(name, pallas_s, xla_s, nbytes, flops):
        ops.append((name, pallas_s, xla_s, nbytes, flops))

    add(
        "hidden_forward (XW1+b, sigmoid)",
        timed(lambda x, w, b: hidden_forward(x, w, b, **fw, **cfg), (x, params.w1, params.b1)),
        timed(
            lambda x, w, b: jax.nn.sigmoid(jnp.dot(x, w.astype(BF16), preferred_element_type=jnp.float32) + b),
            (x, params.w1, params.b1),
        ),
        x.nbytes + params.w1.nbytes + batch * n * 4,
        2 * batch * k * n,
    )
    add(
        "softmax_xent (HW2+b, softmax, loss, dZ)",
        timed(lambda h, w, b: softmax_xent(h, w, b, y, weight, n_classes=n_classes, **cfg), (h, params.w2, params.b2)),
        timed(
            lambda h, w, b: softmax_xent_reference(h, w, b, y, weight, n_classes=n_classes), (h, params.w2, params.b2)
        ),
        h.nbytes + batch * cp * 4 * 2,
        2 * batch * n * cp,
    )
    add(
        "hidden_backward (dPre, dW2, db2, db1)",
        timed(lambda d, w, hh: hidden_backward(d, w, hh, **cfg), (dz, params.w2, h)),
        timed(lambda d, w, hh: hidden_backward_reference(d, w, hh), (dz, params.w2, h)),
        dz.nbytes + 2 * h.nbytes,
        4 * batch * n * cp,
    )
    add(
        "input_grad (dW1 = X^T dPre)",
        timed(lambda xx, d: input_grad(xx, d, **dw, **cfg), (x, dpre)),
        timed(lambda xx, d: jnp.dot(xx.T, d.astype(BF16), preferred_element_type=jnp.float32), (x, dpre)),
        x.nbytes + dpre.nbytes + params.w1.nbytes,
        2 * batch * k * n,
    )
    g = jnp.full_like(params.w1, 1e-3)
    update = dict(momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)
    add(
        "sgd_update (W1, in place)",
        carried_time(lambda w, v, gg, l: sgd_update(w, v, gg, l, **update, **cfg), (params.w1, velocity.w1), (g, lr)),
        carried_time(
            lambda w, v, gg, l: sgd_update_reference(w, v, gg, l, **update), (params.w1, velocity.w1), (g, lr)
        ),
        5 * params.w1.nbytes,
        4 * params.w1.size,
    )
    add(
        "input_grad_update (dW1 + update fused)",
        carried_time(
            lambda w, v, xx, d, l: input_grad_update(xx, d, w, v, l, **update, **gw, **cfg),
            (params.w1, velocity.w1),
            (x, dpre, lr),
        ),
        carried_time(
            lambda w, v, xx, d, l: sgd_update_reference(
                w, v, jnp.dot(xx.T, d.astype(BF16), preferred_element_type=jnp.float32), l, **update
            ),
            (params.w1, velocity.w1),
            (x, dpre, lr),
        ),
        x.nbytes + dpre.nbytes + 4 * params.w1.nbytes,
        2 * batch * k * n,
    )
    step_kw = dict(n_classes=n_classes, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY, config=config)
    pallas_step = carried_time(
        lambda p, v, xx, yy, mm, l: pallas_train_step(p, v, xx, yy, mm, l[0], **step_kw),
        (params, velocity),
        (x, y, m, lr),
    )
    plain = Params(params.w1[: matrix.shape[1]], params.b1, params.w2[:, :n_classes], params.b2[:n_classes])
    plain_v = jax.tree.map(jnp.zeros_like, plain)
    dense_step = carried_time(
        lambda p, v, xx, yy, mm, l: xla_step_dense(p, v, xx, yy, mm, l[0]),
        (plain, plain_v),
        (x[:, : matrix.shape[1]], y, m, lr),
    )
    sparse_step = carried_time(
        lambda p, v, i, va, r, yy, mm, l: xla_step_sparse(p, v, i, va, r, yy, mm, l[0]),
        (plain, plain_v),
        (idx, val, row, y, m, lr),
    )
    step_bytes = 2 * x.nbytes + 4 * params.w1.nbytes
    add("training step (dense bf16 X) vs XLA dense", pallas_step, dense_step, step_bytes, 4 * batch * k * n)
    # Adam, the product's default optimizer (same rows; the state carries two moment buffers).
    adam_kw = dict(step_kw, optimizer="adam")
    pallas_adam = carried_time(
        lambda p, s, xx, yy, mm, l: pallas_train_step(p, s, xx, yy, mm, l[0], **adam_kw),
        (params, adam().init(params)),
        (x, y, m, lr),
    )
    xla_adam = carried_time(
        lambda p, s, xx, yy, mm, l: xla_step_dense(p, s, xx, yy, mm, l[0], "adam"),
        (plain, adam().init(plain)),
        (x[:, : matrix.shape[1]], y, m, lr),
    )
    add(
        "training step, adam (the product default) vs XLA dense",
        pallas_adam,
        xla_adam,
        2 * x.nbytes + 6 * params.w1.nbytes,
        4 * batch * k * n,
    )
    torch_times = torch_bench(matrix, labels, n_classes, batch, sparse) if with_torch else {}
    return ops, sparse_step, torch_times


def torch_bench(matrix, labels, n_classes, batch, sparse) -> dict[str, float]:
    """The same forward and training step in PyTorch, replayed from CUDA graphs (times in seconds)."""
    try:
        import torch
    except ImportError:
        return {}
    dev = torch.device("cuda")
    k = 32768
    dense = np.zeros((batch, k), np.float32)
    flat = sparse.rows[0], sparse.indices[0], sparse.values[0]
    np.add.at(dense, (flat[0], flat[1]), flat[2])
    x = torch.tensor(dense, device=dev).to(torch.bfloat16)
    y = torch.tensor(sparse.labels[0].astype(np.int64), device=dev)
    g = torch.Generator(device="cpu").manual_seed(0)
    w1 = (torch.rand(k, 128, generator=g) * 0.05).to(dev).requires_grad_()
    b1 = torch.zeros(128, device=dev, requires_grad=True)
    w2 = (torch.rand(128, n_classes, generator=g) * 0.5).to(dev).requires_grad_()
    b2 = torch.zeros(n_classes, device=dev, requires_grad=True)
    params = [w1, b1, w2, b2]
    bufs = [torch.zeros_like(p) for p in params]

    def forward():
        return torch.sigmoid(torch.addmm(b1.to(torch.bfloat16), x, w1.to(torch.bfloat16))).float()

    def step():
        h = torch.sigmoid((x @ w1.to(torch.bfloat16)).float() + b1)
        loss = torch.nn.functional.cross_entropy(h @ w2 + b2, y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, b, gr in zip(params, bufs, grads):
                b.mul_(MOMENTUM).add_(gr)
                p.sub_(0.1 * b)

    def graphed(fn, reps=20):
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples = []
        for _ in range(5):
            start.record()
            for _ in range(reps):
                graph.replay()
            end.record()
            torch.cuda.synchronize()
            samples.append(start.elapsed_time(end) / 1000 / reps)
        return sorted(samples)[len(samples) // 2]

    return {"forward": graphed(forward), "step": graphed(step)}


def _forward_space(batch: int):
    """(block_m, block_k, split_k, warps, stages) worth trying at this batch: row blocks no taller than the
    batch, 32 to 2048 programs (an H100 has 132 SMs), 8 warps for the 128+ row tiles (register pressure)."""
    for bm, bk, split in itertools.product([16, 32, 64, 128, 256], [64, 128], [1, 2, 4, 8, 16, 32, 64]):
        programs = -(-batch // bm) * split
        if bm > max(16, batch) or (bm == 16 and batch >= 256) or not 32 <= programs <= 2048:
            continue
        for warps in {16: [4], 32: [4], 64: [4, 8]}.get(bm, [8]):
            yield bm, bk, split, warps, 3


GRAD_SPACE = list(itertools.product([32, 64, 128], [64, 128, 256], [4, 8], [2, 3]))  # block_m, block_k, warps, stages


def sweep(matrix, labels, n_classes, batch, device: str, db=None, finalists: int = 2) -> KernelConfig:
    """Time each kernel's block sizes alone at this batch size, then the whole training step for each pair of
    the `finalists` fastest forward and dW1 + update configurations (the fused update's best blocks alone need
    not be best in the step: BENCHMARKS.md); return the fastest step's configuration."""
    sparse = real_batch(matrix, labels, batch)
    idx, val, row, y, m = (jnp.asarray(a[0]) for a in sparse.arrays())
    k = 32768
    x = dense_batch(idx, val, row, batch, k, BF16)
    w1 = jnp.asarray(np.random.default_rng(1).normal(size=(k, 128)) * 0.01, jnp.float32)
    b1 = jnp.zeros(128, jnp.float32)
    dpre = jnp.asarray(np.random.default_rng(2).normal(size=(batch, 128)) * 1e-3, jnp.float32)
    lr = jnp.asarray([0.1], jnp.float32)
    timings: dict[str, list] = {}  # kernel -> [(seconds, config)] of the configurations that ran

    def record(kernel, config, measure):
        try:
            seconds, error = measure(), None
        except Exception as exc:  # a configuration the compiler refuses (e.g. shared memory): record and skip
            seconds, error = None, f"{type(exc).__name__}: {str(exc)[:200]}"
        if db is not None:
            from benchmarks.kernels.sweeps import record_kernel_sweep

            record_kernel_sweep(db, device, kernel, batch, {k: asdict(v) for k, v in config.items()}, seconds, error)
        if seconds is not None:
            timings.setdefault(kernel, []).append((seconds, config))
        print(
            f"  sweep B={batch} {kernel} {config} -> {'%.1f us' % (seconds * 1e6) if seconds else error}",
            file=sys.stderr,
            flush=True,
        )

    for bm, bk, split, warps, stages in _forward_space(batch):
        blocks = HiddenForwardBlocks(block_m=bm, block_k=bk, split_k=split, num_warps=warps, num_stages=stages)
        record(
            "hidden_forward",
            {"forward": blocks},
            lambda: kernel_or_device_time(lambda xx, w, b: hidden_forward(xx, w, b, block_sizes=blocks), (x, w1, b1)),
        )
    grad_space = [(bm, bk, warps, stages) for bm, bk, warps, stages in GRAD_SPACE if bm <= max(32, batch)]
    for bm, bk, warps, stages in grad_space:
        blocks = InputGradBlocks(block_m=bm, block_k=bk, num_warps=warps, num_stages=stages)
        record(
            "input_grad_update",
            {"grad": blocks},
            lambda: carried_time(
                lambda w, v, xx, d, l: input_grad_update(
                    xx, d, w, v, l, momentum=0.9, weight_decay=0.0, block_sizes=blocks
                ),
                (w1, jnp.zeros_like(w1)),
                (x, dpre, lr),
                reps=10,
                trials=3,
            ),
        )
    for bm, bk, warps, stages in grad_space:  # dW1 alone (the `dw` blocks), by its own kernel time
        blocks = InputGradBlocks(block_m=bm, block_k=bk, num_warps=warps, num_stages=stages)
        record(
            "input_grad",
            {"dw": blocks},
            lambda: kernel_or_device_time(lambda xx, d: input_grad(xx, d, block_sizes=blocks), (x, dpre)),
        )

    def fastest(kernel, count=1):
        return [config for _, config in sorted(timings.get(kernel, []), key=lambda t: t[0])[:count]]

    base = tuned(batch, device).replace(**next(iter(fastest("input_grad")), {}))
    params = pad_params(init_params(jax.random.PRNGKey(0), matrix.shape[1], 128, n_classes), base)
    velocity = jax.tree.map(jnp.zeros_like, params)
    pairs = itertools.product(fastest("hidden_forward", finalists), fastest("input_grad_update", finalists))
    for forward, grad in pairs:
        config = base.replace(**forward, **grad)
        step_kw = dict(n_classes=n_classes, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY, config=config)
        record(
            "training_step",
            {**forward, **grad},
            lambda: carried_time(
                lambda p, v, xx, yy, mm, l: pallas_train_step(p, v, xx, yy, mm, l[0], **step_kw),
                (params, velocity),
                (x, y, m, lr),
            ),
        )
    return base.replace(**next(iter(fastest("training_step")), {}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--batches", default="256,1024,4096")
    parser.add_argument("--torch", action="store_true", help="also time PyTorch (CUDA graphs)")
    parser.add_argument("--sweep", action="store_true", help="sweep block sizes first and use the best")
    parser.add_argument("--db", help="SQLite file to record the sweep in (the benchmark's own, not the run database)")
    parser.add_argument("--tuned-out", help="write the chosen configurations here (pallas_kernels/tuned.json format)")
    args = parser.parse_args()
    from textclf.training.backends import device_description

    device = device_description()
    matrix, labels, n_classes = load_problem(args.corpus)
    bandwidth, matmul_rate = ceilings()
    print(
        f"device {device}; measured copy bandwidth {bandwidth / 1e12:.2f} TB/s, bf16 matmul {matmul_rate / 1e12:.0f} "
        f"TFLOP/s"
    )
    database = None
    if args.db:
        from benchmarks.kernels.sweeps import open_sweep_db

        database = open_sweep_db(args.db)
    chosen = []
    for batch in (int(b) for b in args.batches.split(",")):
        config = sweep(matrix, labels, n_classes, batch, device, database) if args.sweep else tuned(batch, device)
        chosen.append({"device": device, "batch_size": batch, "config": asdict(config)})
        ops, sparse_step, torch_times = bench_batch(matrix, labels, n_classes, batch, config, args.torch)
        print(
            f"\n### B = {batch} (news4 rows, {matrix.shape[1]} features -> 128 -> {n_classes}); config "
            f"{asdict(config)}\n"
        )
        print("| op | Pallas us | XLA us | Pallas/XLA | Pallas GB/s | % copy BW | Pallas TFLOP/s | % bf16 peak |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, p, x, nbytes, flops in ops:
            print(
                f"| {name} | {p * 1e6:.1f} | {x * 1e6:.1f} | {p / x:.2f} | {nbytes / p / 1e9:.0f} | "
                f"{100 * nbytes / p / bandwidth:.0f}% | {flops / p / 1e12:.1f} | {100 * flops / p / matmul_rate:.1f}% |"
            )
        pallas_step = ops[-2][1]
        print(
            f"| training step: XLA sparse gather/segment-sum (the xla backend) | | {sparse_step * 1e6:.1f} | "
            f"{pallas_step / sparse_step:.2f} | | | | |"
        )
        if torch_times:
            print(
                f"| PyTorch CUDA graph: forward {torch_times['forward'] * 1e6:.1f} us "
                f"(Pallas/torch {ops[0][1] / torch_times['forward']:.2f}); step {torch_times['step'] * 1e6:.1f} us "
                f"(Pallas/torch {pallas_step / torch_times['step']:.2f}) | | | | | | | |"
            )
        sys.stdout.flush()
        if args.tuned_out:  # after every batch size, so a run cut short keeps what it measured
            with open(args.tuned_out, "w") as handle:
                json.dump({"configs": chosen}, handle, indent=1)


if __name__ == "__main__":
    main()
