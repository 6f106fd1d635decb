"""Minibatches gathered on the device from the resident training set = the host's make_batches."""

import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from pipelines.batches import make_batches, next_power_of_two
from textclf.device_data import batch_nnz_max, epoch_order, gather_batches, host_csr


def _matrix():
    x = sp.random(53, 40, density=0.15, format="lil", random_state=3, dtype=np.float32)
    x[7, :] = 0  # an empty document
    x = x.tocsr()
    x.eliminate_zeros()
    return x, np.random.default_rng(1).integers(0, 4, 53).astype(np.int32)


def test_device_batches_equal_host_batches_for_the_same_order():
    x, y = _matrix()
    order = np.asarray(epoch_order(seed=5, epoch=2, n=53, steps=4, batch_size=16))
    assert sorted(order[order >= 0].tolist()) == list(range(53)) and (order[-1, 5:] == -1).all()
    host = make_batches(x, y, 16, order[order >= 0])
    widest = int(batch_nnz_max(jnp.asarray(x.indptr), jnp.asarray(order)))
    cap = next_power_of_two(widest)
    assert cap == host.indices.shape[1]
    device = [np.asarray(a) for a in gather_batches(
        type(host_csr(x, y))(*(jnp.asarray(a) for a in host_csr(x, y))), jnp.asarray(order), cap)]
    for name, got, want in zip(("indices", "values", "rows", "labels", "mask"), device, host.arrays()):
        if name == "labels":  # padding rows: host repeats row 0's label, the device writes 0; both masked
            got, want = got * host.mask, want * host.mask
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_orders_differ_by_epoch_and_repeat_for_the_same_epoch():
    a, b, again = (np.asarray(epoch_order(0, e, 100, 2, 64)) for e in (0, 1, 0))
    assert (a == again).all() and (a != b).any()


def test_widest_batch_per_device_slice():
    x, _ = _matrix()
    order = jnp.asarray(np.arange(64).reshape(4, 16) % 53)
    lengths = np.diff(x.indptr)[np.arange(64) % 53].reshape(4, 2, 8).sum(axis=2)
    assert int(batch_nnz_max(jnp.asarray(x.indptr), order, parts=2)) == lengths.max()


def test_duplicate_entries_are_summed_before_upload():
    """A non-canonical CSR (the same cell twice) becomes one entry holding the sum: the Pallas dense path
    stores each slot with a plain scatter, which needs every cell named once."""
    x = sp.csr_matrix((np.array([1.0, 2.0, 3.0], np.float32), np.array([4, 4, 1]), np.array([0, 2, 3])), shape=(2, 8))
    csr = host_csr(x, np.array([0, 1], np.int32))
    np.testing.assert_array_equal(csr.indptr, [0, 1, 2])
    np.testing.assert_array_equal(csr.values[:2], [3.0, 3.0])
    assert x.nnz == 3  # the caller's matrix is left as it was


def test_write_then_erase_batch_matches_dense_batch_and_restores_zeros():
    from textclf.pallas_step import dense_batch, erase_batch, write_batch

    x, y = _matrix()
    x = x.tolil()
    x[0, 0] = 5.0  # the cell every padding slot names (row 0, column 0): padding must not overwrite it
    x = x.tocsr()
    batches = make_batches(x, y, 16)
    assert (batches.values[0] == 0).any()  # the first batch has padding slots
    for step in range(batches.steps):
        idx, val, row = (jnp.asarray(a[step]) for a in (batches.indices, batches.values, batches.rows))
        buffer = jnp.zeros((16, 64), jnp.float32)
        written = write_batch(buffer, idx, val, row)
        np.testing.assert_array_equal(written, dense_batch(idx, val, row, 16, 64, jnp.float32))
        assert not np.asarray(erase_batch(written, idx, val, row)).any()
