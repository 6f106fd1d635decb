"""Data parallelism over a mesh of devices: all local GPUs by default, and the GPUs of several hosts once
`textclf.training.parallel.processes` has joined the processes.

Every device takes an equal slice of each global batch (the order's batch axis, see shard_epoch), computes the gradient
of its rows with the loss divided by the global row count, and the gradients are summed across devices
(`lax.psum`: NCCL on GPUs, gloo between CPU processes) before the same optimizer step runs on every device, so
parameters stay replicated and N devices follow the one-device trajectory up to float rounding.

Pallas kernels cannot run under plain jit on sharded inputs ("pallas_call requires all mesh axes to be
Manual"), so the whole epoch (a lax.scan over steps) runs inside `jax.shard_map`; check_vma=False because
jax 0.11.2's Pallas lowering does not track which values vary across the manual axis.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from textclf.errors import SettingsError
from textclf.training.plan import data_device_count

AXIS = "data"
BATCH = P(None, AXIS)  # (steps, B): split the batch axis across devices
REPLICATED = P()
STACKED = P(AXIS)  # a leading (devices,) axis: each device its own copy of its process's arrays


def auto_device_count(local_devices: int, batch_size: int) -> int:
    """How many of this process's devices --devices all uses for data parallelism (the plan's rule,
    plan.data_device_count)."""
    return data_device_count(local_devices, batch_size)


def data_mesh(devices_per_process: int = 0, batch_size: int | None = None) -> Mesh:
    """A 1-D mesh over `devices_per_process` devices of every process (0 = all its local devices, or with
    batch_size given as many as auto_device_count allows), ordered by process then device id, so that process p
    feeds the p-th contiguous part of each global batch."""
    local = jax.local_devices()
    wanted = devices_per_process or (len(local) if batch_size is None else auto_device_count(len(local), batch_size))
    if wanted > len(local):
        raise SettingsError(
            f"--devices {devices_per_process}: this process sees only {len(local)} {local[0].platform} "
            f"device(s); pass --devices {len(local)} or --devices all"
        )
    by_process: dict[int, list] = {}
    for device in jax.devices():
        by_process.setdefault(device.process_index, []).append(device)
    chosen = [d for p in sorted(by_process) for d in sorted(by_process[p], key=lambda d: d.id)[:wanted]]
    return Mesh(np.array(chosen), (AXIS,))


def check_batch(batch_size: int, mesh: Mesh) -> int:
    """The per-device batch; the global batch must split evenly."""
    if batch_size % mesh.size:
        raise SettingsError(
            f"batch size {batch_size} does not split evenly over {mesh.size} devices: pass --batch-size "
            f"{mesh.size * max(1, round(batch_size / mesh.size))} or a --devices count that divides {batch_size}"
        )
    return batch_size // mesh.size


def shard_epoch(epoch_fn: Callable, mesh: Mesh) -> Callable:
    """(params, opt_state, resident csr, order (steps, B), lrs) -> (params, opt_state, losses, corrects) with
    the order's batch axis split over the mesh (device d gathers documents order[:, d*B/N:(d+1)*B/N] of its
    process's resident documents, put_stacked) and everything else replicated. epoch_fn receives the device's
    own resident arrays (the stacked axis dropped)."""

    def local(params, opt_state, data, order, lrs):
        return epoch_fn(params, opt_state, jax.tree.map(lambda a: a[0], data), order, lrs)

    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(REPLICATED, REPLICATED, STACKED, BATCH, REPLICATED),
        out_specs=REPLICATED,
        check_vma=False,
    )


def put_stacked(tree, mesh: Mesh):
    """This process's host arrays -> global arrays with a leading (mesh.size,) axis laid out STACKED: each of
    its devices holds its own copy (no host copies are made). Every process must pass arrays of the same shapes
    (textclf/training/network.same_shapes), its own values: several hosts each hold their own documents."""
    sharding = NamedSharding(mesh, STACKED)

    def one(x):
        x = np.asarray(x)
        return jax.make_array_from_callback((mesh.size, *x.shape), sharding, lambda index: x[None])

    return jax.tree.map(one, tree)


class RowShare(NamedTuple):
    """The training documents each process holds: process p has global documents [offsets[p], offsets[p] +
    counts[p]) (its share of the corpus in reading order), numbered from 0 in its own matrix."""

    offsets: tuple[int, ...]
    counts: tuple[int, ...]
    index: int  # this process

    @property
    def total(self) -> int:
        return sum(self.counts)


def local_orders(
    orders: dict[int, np.ndarray], share: RowShare, local_devices: int
) -> tuple[dict[int, np.ndarray], int]:
    """The global batches' documents that this process holds. orders: epoch -> (steps, B) global document
    numbers (-1: none). -> (epoch -> (steps, R) this process's own document numbers, in batch order, -1
    padding; R), R the most documents any process holds of any batch of these epochs, rounded up to a multiple
    of local_devices (every process computes the same R: it needs only the offsets)."""
    ends = np.cumsum(share.counts)
    processes = len(share.counts)
    owners = {
        e: np.where(order >= 0, np.searchsorted(ends, order, side="right"), processes) for e, order in orders.items()
    }  # (steps, B) the process holding each document (processes: none)

    def most_held(owner: np.ndarray) -> int:
        steps = np.repeat(np.arange(owner.shape[0]), owner.shape[1])
        per_step = np.bincount(steps * (processes + 1) + owner.reshape(-1), minlength=owner.shape[0] * (processes + 1))
        return int(per_step.reshape(owner.shape[0], processes + 1)[:, :processes].max())

    rows = -(-max([1, *map(most_held, owners.values())]) // local_devices) * local_devices
    mine = {}
    for epoch, order in orders.items():
        # R columns of "none" appended, so that every row has at least R entries to take
        order = np.pad(order, ((0, 0), (0, rows)), constant_values=-1)
        held = np.pad(owners[epoch] == share.index, ((0, 0), (0, rows)))
        first = np.argsort(~held, axis=1, kind="stable")[:, :rows]  # this process's positions first, in order
        own = np.take_along_axis(order, first, 1) - share.offsets[share.index]
        mine[epoch] = np.where(np.take_along_axis(held, first, 1), own, -1).astype(np.int32)
    return mine, rows


def put_local_order(order: np.ndarray, mesh: Mesh) -> jax.Array:
    """This process's (steps, R) order -> the global (steps, processes x R) order laid out BATCH: process p's
    devices take columns [p R, (p + 1) R)."""
    shape = (order.shape[0], order.shape[1] * jax.process_count())  # the mesh spans every process
    return jax.make_array_from_process_local_data(NamedSharding(mesh, BATCH), order, shape)


def put(tree, mesh: Mesh, spec: P):
    """Host (or single-device) arrays -> global arrays laid out as `spec` on `mesh`. Every process holds the
    same full values (same seed, same corpus), and each keeps only the slices its own devices need, which also
    works when the mesh spans several processes."""
    sharding = NamedSharding(mesh, spec)

    def one(x):
        x = np.asarray(x)
        return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])

    return jax.tree.map(one, tree)


def to_host(tree):
    """Global (replicated) arrays -> numpy; a replicated array spanning several processes is read from this
    process's own copy."""

    def one(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            return np.asarray(x.addressable_data(0))
        return np.asarray(x)

    return jax.tree.map(one, tree)
