"""hidden_forward at B=4096, input_grad (dW1) at B=1024 and input_grad_update (dW1 + SGD-momentum update of W1)
at B=4096, the kernels still above XLA's time, with deeper
software pipelines (num_stages 4-5, which `benchmarks.kernels --sweep` does not try) and their neighbours, each
against XLA's same math, timed again every 20 configurations (its spread is the noise).

    python -m benchmarks.pipeline_depth .devdata/news4/train.jsonl [forward,grad,update]

Prints the XLA times and the 8 fastest configurations of each kernel (profiler kernel time; the in-place
update: wall time per call of a chained loop, as `benchmarks.kernels` times it).
"""

from __future__ import annotations

import itertools
import sys

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.kernels import BF16, carried_time, kernel_or_device_time, load_problem, real_batch
from pallas_kernels.config import tuned
from pallas_kernels.hidden_forward import HiddenForwardBlocks, hidden_forward
from pallas_kernels.input_grad import InputGradBlocks, input_grad, input_grad_update
from pallas_kernels.sgd_update import sgd_update_reference
from textclf.training.backends import device_description
from textclf.training.pallas import dense_batch

K = 32768  # padded features


def problem(matrix, labels, batch):
    """A real news4 batch as dense bf16 X (batch, K), a W1, b1 and a dPre of the right scale."""
    sparse = real_batch(matrix, labels, batch)
    idx, val, row, y, m = (jnp.asarray(a[0]) for a in sparse.arrays())
    x = dense_batch(idx, val, row, batch, K, BF16)
    w1 = jnp.asarray(np.random.default_rng(1).normal(size=(K, 128)) * 0.01, jnp.float32)
    dpre = jnp.asarray(np.random.default_rng(2).normal(size=(batch, 128)) * 1e-3, jnp.float32)
    return x, w1, jnp.zeros(128, jnp.float32), dpre


def report(name, xla_fn, args, candidates, measure):
    """Time XLA, then each (config, fn) candidate (XLA again every 20); print the 8 fastest against XLA's median."""
    rows, xla = [], []
    xla.append(measure(xla_fn, args))
    for cfg, fn in candidates:
        try:
            rows.append((measure(fn, args), cfg))
        except Exception as exc:
            print(f"  {name} {cfg}: {type(exc).__name__}", flush=True)
        if len(rows) % 20 == 0:
            xla.append(measure(xla_fn, args))
    xla.append(measure(xla_fn, args))
    rows.sort(key=lambda r: r[0])
    xm = float(np.median(xla))
    print(f"\n{name}: XLA {', '.join(f'{t*1e6:.1f}' for t in xla)} us (median {xm*1e6:.1f})")
    for t, cfg in rows[:8]:
        print(f"  {t*1e6:7.1f} us  {t/xm:.3f}x  {cfg}")
    sys.stdout.flush()


def main() -> None:
    matrix, labels, _ = load_problem(sys.argv[1])
    parts = sys.argv[2].split(",") if len(sys.argv) > 2 else ["forward", "grad", "update"]
    device = device_description()
    if "forward" in parts:
        forward(matrix, labels, device)
    if "grad" in parts:
        grad(matrix, labels, device)
    if "update" in parts:
        update(matrix, labels, device)


def forward(matrix, labels, device) -> None:
    x, w1, b1, dpre = problem(matrix, labels, 4096)
    cur = tuned(4096, device)
    print("tuned B=4096 forward:", cur.forward)
    candidates = []
    for bm, bk, split, warps, stages in itertools.product([64, 128], [64, 128], [2, 4, 8, 16], [4, 8], [3, 4, 5]):
        if bm * bk * 2 * 2 * stages > 225_000:  # X and W1 bf16 tiles per stage: past the shared memory
            continue
        blocks = HiddenForwardBlocks(block_m=bm, block_k=bk, split_k=split, num_warps=warps, num_stages=stages)
        candidates.append(((bm, bk, split, warps, stages),
                           lambda xx, w, b, blocks=blocks: hidden_forward(xx, w, b, block_sizes=blocks)))
    report("hidden_forward B=4096", lambda xx, w, b: jax.nn.sigmoid(
        jnp.dot(xx, w.astype(BF16), preferred_element_type=jnp.float32) + b), (x, w1, b1), candidates,
        kernel_or_device_time)


def grad(matrix, labels, device) -> None:
    x, w1, b1, dpre = problem(matrix, labels, 1024)
    cur = tuned(1024, device)
    print("tuned B=1024 dW1:", cur.dw)
    candidates = [((bm, bk, warps, stages),
                   lambda xx, d, blocks=InputGradBlocks(bm, bk, warps, stages): input_grad(xx, d, block_sizes=blocks))
                  for bm, bk, warps, stages in itertools.product([32, 64, 128], [64, 128, 256], [4, 8], [2, 3, 4, 5])]
    report("input_grad B=1024", lambda xx, d: jnp.dot(xx.T, d.astype(BF16), preferred_element_type=jnp.float32),
           (x, dpre), candidates, kernel_or_device_time)


def update(matrix, labels, device) -> None:
    x, w1, b1, dpre = problem(matrix, labels, 4096)
    cur = tuned(4096, device)
    print("tuned B=4096 dW1 + update:", cur.grad)
    lr, sgd = jnp.asarray([0.1], jnp.float32), dict(momentum=0.9, weight_decay=0.0)

    def chained(fn, args):  # carry (W1, velocity), consts (X, dPre, lr) -> seconds per call
        return carried_time(fn, (w1, jnp.zeros_like(w1)), args, reps=10, trials=3)

    candidates = [((bm, bk, warps, stages), lambda w, v, xx, d, l, blocks=InputGradBlocks(bm, bk, warps, stages):
                   input_grad_update(xx, d, w, v, l, **sgd, block_sizes=blocks))
                  for bm, bk, warps, stages in itertools.product([64, 128], [64, 128, 256], [4, 8], [2, 3, 4, 5])]
    report("input_grad_update B=4096", lambda w, v, xx, d, l: sgd_update_reference(
        w, v, jnp.dot(xx.T, d.astype(BF16), preferred_element_type=jnp.float32), l, **sgd),
        (x, dpre, lr), candidates, chained)


if __name__ == "__main__":
    main()
