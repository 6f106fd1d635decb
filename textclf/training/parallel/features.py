"""Feature parallelism: W1 split by feature rows across the devices of one process, every device on the whole batch.

Why: in data parallelism (textclf/training/parallel/data.py) every device keeps all of W1 and the step's
gradient of W1, a dense (F, H) matrix (16 MB at 32,768 x 128), is summed across devices every step, however
few rows the batch touched; it cost about as much as the step itself, so a second GPU bought little
(BENCHMARKS.md, "Several GPUs"). Here device d holds rows [d F/N, (d+1) F/N) of W1 (and their optimizer state)
and the training set's columns in that range, so that:
- forward: each device gathers its columns' nonzeros of the batch, x_d @ W1_d -> (B, H); the N partial
  pre-activations are summed across devices (`lax.psum`, B x H floats: 4 MB at batch 8,192) and every device
  computes the same hidden layer, head and loss for the whole batch;
- backward: the gradient of the pre-activations is the same on every device, so each device forms its own
  rows' gradient x_d^T dPre and updates them without any exchange; b1, W2, b2 (small) are updated alike on
  every device from identical gradients.
Communication per step grows with the batch (B x H), not with W1, and the W1-sized work (gather, scatter, the
optimizer's pass over W1) is split N ways. A wider W1 (a larger --features) also fits N times over.

The trajectory is the one-device trajectory up to the order of float sums: the same initial weights (drawn for F
rows, then padded with zero rows to a multiple of N that no column ever touches), the same batches
(tests/textclf/training/parallel/test_processes.py compares the parameters).

Decisions: the XLA step only (the fused Pallas hidden-layer kernels apply the sigmoid inside the matmul, before
a sum across devices could happen); one process (a feature shard needs every document's columns in its range,
while several hosts each read their own documents). shard_map runs with check_vma=True: JAX then knows that the
summed pre-activations are the same on every device and transposes the psum correctly (with check_vma=False its
transpose would be another psum, counting W1's gradient N times).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from textclf.errors import SettingsError
from textclf.settings import FEATURES_NEED_XLA
from textclf.models.mlp import Params, masked_loss, pre_activation, pre_activation_pieces
from textclf.training import device_data
from textclf.training.device_data import (
    DeviceCSR,
    DevicePieces,
    gather_batches,
    gather_piece_batches,
    host_csr,
    host_pieces,
)
from textclf.training.steps.optimizers import make_optimizer

AXIS = "features"
SHARDED = P(AXIS)  # a leading axis split across the devices
REPLICATED = P()
PARAMS_SPEC = Params(P(AXIS, None), REPLICATED, REPLICATED, REPLICATED)  # W1's rows split, the rest whole


def choose_layout(requested: str, backend: str) -> str:
    """ "data" or "features" for a run with this (resolved) backend. A run's plan resolves "auto" before training
    (textclf/training/plan.py, device_layout); a caller without a plan gets "data"."""
    if requested == "features" and backend != "xla":
        raise SettingsError(FEATURES_NEED_XLA)
    if requested != "auto":
        return requested
    return "data"


def feature_mesh(devices: int) -> Mesh:
    """A 1-D mesh over the first `devices` local devices of this (single) process (0: all of them)."""
    if jax.process_count() > 1:
        raise SettingsError(
            "--parallel features splits W1 over one host's devices; with several processes pass --parallel data"
        )
    local = sorted(jax.local_devices(), key=lambda d: d.id)
    devices = devices or len(local)
    if devices > len(local):
        raise SettingsError(
            f"--devices {devices}: this process sees only {len(local)} {local[0].platform} "
            f"device(s); pass --devices {len(local)} or --devices all"
        )
    return Mesh(np.array(local[:devices]), (AXIS,))


def shard_width(n_features: int, parts: int) -> int:
    """Rows of W1 (columns of the data) each device holds: F / N rounded up."""
    return -(-n_features // parts)


def host_shards(matrix: sp.csr_matrix, labels: np.ndarray, parts: int, layout: str, piece_width: int = 16):
    """The training set cut into `parts` column ranges of shard_width columns, each re-numbered from 0, in the
    resident layout ("flat": DeviceCSR, "pieces": DevicePieces), stacked on a leading (parts,) axis; the shards'
    nonzero (piece) arrays padded to the longest with entries that add nothing. Every shard keeps all documents,
    so the same document order gathers the same batch on every device. The labels are not in the shards (their
    `labels` are empty): they go to every device whole (the epoch's `labels` argument), so that JAX knows the
    loss is the same on every device."""
    matrix = matrix.tocsr()
    width = shard_width(matrix.shape[1], parts)
    shards = []
    for part in range(parts):
        columns = matrix[:, part * width : (part + 1) * width]
        columns = sp.csr_matrix((columns.data, columns.indices, columns.indptr), shape=(matrix.shape[0], width))
        shards.append(host_pieces(columns, labels, piece_width) if layout == "pieces" else host_csr(columns, labels))
    longest = max(len(shard.values) for shard in shards)

    def padded(shard):
        extra = longest - len(shard.values)
        if layout == "pieces":  # all-padding pieces: index `width` (out of range, reads 0), value 0
            return DevicePieces(
                shard.piece_ptr,
                np.concatenate([shard.indices, np.full((extra, piece_width), width, np.int32)]),
                np.concatenate([shard.values, np.zeros((extra, piece_width), np.float32)]),
                shard.labels,
            )
        return DeviceCSR(
            shard.indptr,
            np.concatenate([shard.indices, np.zeros(extra, np.int32)]),
            np.concatenate([shard.values, np.zeros(extra, np.float32)]),
            shard.labels,
        )

    shards = [padded(shard)._replace(labels=np.zeros(0, np.int32)) for shard in shards]
    # (the fields but weights, which a training of weighted documents never splits by features)
    return type(shards[0])(*(np.stack(arrays) for arrays in zip(*(shard[:4] for shard in shards))))


def batch_nnz_max(host_data, order: np.ndarray) -> int:
    """The widest batch (nonzeros or pieces) of any shard for this (steps, B) order."""
    starts = host_data.piece_ptr if isinstance(host_data, DevicePieces) else host_data.indptr
    return max(device_data.batch_nnz_max(pointers, order) for pointers in starts)


def pad_params(tree, parts: int):
    """Every Params in `tree` (the parameters, an optimizer state's moments) with zero rows appended to W1 up to
    parts x shard_width: no column points at them, so they stay zero. Padded ones are left as they are."""

    def pad(node):
        if not isinstance(node, Params):
            return node
        extra = shard_width(node.w1.shape[0], parts) * parts - node.w1.shape[0]
        return node._replace(w1=jnp.pad(node.w1, ((0, extra), (0, 0))))

    return jax.tree.map(pad, tree, is_leaf=lambda node: isinstance(node, Params))


def param_specs(tree) -> object:
    """The partition of a tree holding Params (the parameters, an optimizer state's moment trees): W1's rows
    split, the rest replicated; anything else (Adam's step count) replicated."""

    def spec(node):
        return PARAMS_SPEC if isinstance(node, Params) else REPLICATED

    return jax.tree.map(spec, tree, is_leaf=lambda node: isinstance(node, Params))


def place(tree, mesh: Mesh, specs) -> object:
    """Host arrays -> arrays on the mesh laid out as `specs` (a tree of PartitionSpecs like `tree`, or one)."""
    if isinstance(specs, P):
        return jax.device_put(tree, NamedSharding(mesh, specs))
    return jax.tree.map(lambda x, s: jax.device_put(x, NamedSharding(mesh, s)), tree, specs)


def state_specs(optimizer: str) -> object:
    """param_specs of this optimizer's state (its tree shape: Adam's moments and step, SGD's velocities)."""
    example = Params(*(jnp.zeros(1),) * 4)
    return param_specs(make_optimizer(optimizer).init(example))


def epoch_function(optimizer: str, momentum: float, weight_decay: float, mesh: Mesh, cap: int) -> Callable:
    """One epoch over the feature-sharded mesh (un-jitted): (params, opt_state, (data, labels (n,)), order
    (steps, B), lrs) -> (params, opt_state, losses (steps,), corrects (steps,)). data: host_shards' arrays placed
    SHARDED; params and opt_state as param_specs lays them out; labels, order and lrs replicated."""
    update = make_optimizer(optimizer, momentum, weight_decay).update

    def local(params, opt_state, data_and_labels, order, lrs):
        data, labels = data_and_labels
        data = jax.tree.map(lambda a: a[0], data)._replace(labels=labels)  # (1, ...) -> this device's shard
        pieces = isinstance(data, DevicePieces)
        batches = gather_piece_batches(data, order, cap) if pieces else gather_batches(data, order, cap)
        partial_pre = pre_activation_pieces if pieces else pre_activation
        batch_size = order.shape[1]

        def step(carry, batch):
            params, opt_state = carry
            idx, val, row, y, m, lr = batch

            def loss_fn(p):
                pre = jax.lax.psum(partial_pre(p.w1, idx, val, row, batch_size), AXIS)  # (B, H), whole batch
                scores = jax.nn.sigmoid(pre + p.b1) @ p.w2 + p.b2
                return masked_loss(scores, y, m)

            (loss, correct), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
            params, opt_state = update(params, opt_state, grads, lr)
            return (params, opt_state), (loss, correct)

        (params, opt_state), (losses, corrects) = jax.lax.scan(step, (params, opt_state), (*batches, lrs))
        return params, opt_state, losses, corrects

    state_spec = state_specs(optimizer)
    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(PARAMS_SPEC, state_spec, (SHARDED, REPLICATED), REPLICATED, REPLICATED),
        out_specs=(PARAMS_SPEC, state_spec, REPLICATED, REPLICATED),
        check_vma=True,
    )
