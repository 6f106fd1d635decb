"""Minibatches gathered on the device from the resident training set = the host's make_batches."""

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

from pipelines.batches import make_batches, next_power_of_two
from textclf.training.device_data import (
    DeviceCSR,
    batch_nnz_max,
    epoch_order,
    gather_batches,
    host_csr,
    scoring_rows,
    bucket,
)


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
    device = [
        np.asarray(a)
        for a in gather_batches(
            type(host_csr(x, y))(*(None if a is None else jnp.asarray(a) for a in host_csr(x, y))),
            jnp.asarray(order),
            cap,
        )
    ]
    for name, got, want in zip(("indices", "values", "rows", "labels", "mask"), device, host.arrays()):
        if name == "labels":  # padding rows: host repeats row 0's label, the device writes 0; both masked
            got, want = got * host.mask, want * host.mask
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_documents_weights_are_the_masks_of_host_and_device_batches_alike():
    """With weights, a batch's mask holds each document's weight (0 for padding) and its nonzeros are the ones
    without weights, on the host (make_batches) and on the device (gather_batches) alike."""
    x, y = _matrix()
    weights = np.random.default_rng(3).uniform(0.0, 3.0, x.shape[0]).astype(np.float32)
    weights[7] = 0.0  # a document of weight 0 still names its nonzeros
    order = np.asarray(epoch_order(seed=5, epoch=2, n=53, steps=4, batch_size=16))
    plain, host = make_batches(x, y, 16, order[order >= 0]), make_batches(x, y, 16, order[order >= 0], weights)
    for got, want in zip(host.arrays()[:3], plain.arrays()[:3]):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(host.mask.ravel()[:53], weights[order[order >= 0]])
    assert (host.mask.ravel()[53:] == 0).all()
    device = gather_batches(
        DeviceCSR(*(jnp.asarray(a) for a in host_csr(x, y, weights))), jnp.asarray(order), host.indices.shape[1]
    )
    np.testing.assert_array_equal(np.asarray(device[4]), host.mask)
    np.testing.assert_array_equal(np.asarray(device[1]), host.values)


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


def test_an_upload_in_pieces_is_the_host_arrays(monkeypatch):
    """upload_csr puts a large matrix up a piece at a time and joins it on the device: the arrays host_csr makes,
    the extra zero included, duplicates summed as there, each as long as its bucket (pointers repeat the last,
    entries and labels past the end are zeros)."""
    from textclf.training import device_data

    x, y = _matrix()
    x = sp.vstack(
        [x, sp.csr_matrix((np.array([1.0, 2.0], np.float32), np.array([4, 4]), np.array([0, 2])), shape=(1, 40))],
        format="csr",
    )  # one cell twice
    y = np.append(y, 2).astype(np.int32)
    for piece_bytes in (40, 10**9):  # pieces of 10 entries (the last one short); one piece
        monkeypatch.setattr(device_data, "UPLOAD_BYTES", piece_bytes)
        weights = np.linspace(0.5, 1.5, x.shape[0]).astype(np.float32)
        for name, got, want in zip(DeviceCSR._fields, device_data.upload_csr(x, y, weights), host_csr(x, y, weights)):
            got = np.asarray(got)
            assert got.dtype == want.dtype
            assert len(got) == device_data.bucket(len(want) - (name == "indptr")) + (name == "indptr")
            np.testing.assert_array_equal(got[: len(want)], want)
            assert (got[len(want) :] == (want[-1] if name == "indptr" else 0)).all()


def test_write_then_erase_batch_matches_dense_batch_and_restores_zeros():
    from textclf.training.device_data import erase_batch, write_batch
    from textclf.training.steps.pallas import dense_batch

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


def _pieces_to_dense(pieces, n, n_features):
    dense = np.zeros((n, n_features))
    ptr = np.asarray(pieces.piece_ptr)
    for doc in range(n):
        for piece in range(ptr[doc], ptr[doc + 1]):
            used = np.asarray(pieces.values[piece]) != 0
            np.add.at(dense[doc], np.asarray(pieces.indices[piece])[used], np.asarray(pieces.values[piece])[used])
    return dense


def test_pieces_hold_each_document_and_pad_past_the_last_feature():
    from textclf.training.device_data import host_pieces

    x, y = _matrix()
    x[0, :] = 0
    x[0, :33] = np.arange(1, 34)  # a document of 33 nonzeros: 5 pieces of 8, the last with one
    x.eliminate_zeros()
    pieces = host_pieces(x, y, 8)
    lengths = np.diff(x.indptr)
    np.testing.assert_array_equal(np.diff(pieces.piece_ptr), -(-lengths // 8))  # the empty document: none
    assert pieces.piece_ptr[1] == 5
    np.testing.assert_allclose(_pieces_to_dense(pieces, 53, 40), x.toarray())
    padding = pieces.values == 0
    assert (pieces.values[-1] == 0).all() and (pieces.indices[padding] == 40).all()
    np.testing.assert_array_equal(pieces.labels, y)


def test_piece_batches_give_the_flat_batches_hidden_layer():
    """The same order through both layouts: same labels and mask, same hidden activations (float64)."""
    import jax

    from textclf.training.device_data import batch_nnz_max, gather_piece_batches, host_pieces
    from textclf.models.mlp import Params, hidden_layer, hidden_layer_pieces

    x, y = _matrix()
    order = jnp.asarray(epoch_order(seed=1, epoch=0, n=53, steps=4, batch_size=16))
    flat = gather_batches(
        jax.device_put(host_csr(x, y)), order, next_power_of_two(int(batch_nnz_max(x.indptr, np.asarray(order))))
    )
    pieces = host_pieces(x, y, 4)
    cap = next_power_of_two(batch_nnz_max(pieces.piece_ptr, np.asarray(order)))
    indices, values, rows, labels, mask = gather_piece_batches(jax.device_put(pieces), order, cap)
    np.testing.assert_array_equal(labels, flat[3])
    np.testing.assert_array_equal(mask, flat[4])
    assert (np.diff(np.asarray(rows), axis=1) >= 0).all()  # ascending: the segment sum may assume it
    rng = np.random.default_rng(0)
    with jax.enable_x64(True):
        params = Params(jnp.asarray(rng.normal(size=(40, 128))), jnp.asarray(rng.normal(size=128)), None, None)
        for step in range(4):
            got = hidden_layer_pieces(params, indices[step], values[step].astype(jnp.float64), rows[step], 16)
            want = hidden_layer(params, flat[0][step], flat[1][step].astype(jnp.float64), flat[2][step], 16)
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_piece_width_is_the_widest_with_little_padding():
    from textclf.training.device_data import piece_width

    def of_lengths(lengths):
        rows = np.repeat(np.arange(len(lengths)), lengths)
        columns = np.concatenate([np.arange(k) for k in lengths])
        return sp.csr_matrix((np.ones(len(rows)), (rows, columns)), shape=(len(lengths), max(lengths)))

    assert piece_width(of_lengths([16] * 10)) == 16  # no padding at 16; 32 would pad 100%
    assert piece_width(of_lengths([32] * 10)) == 32
    assert piece_width(of_lengths([9] * 10)) == 4  # 8 pads 78%, 4 pads 33%: nothing fits, the narrowest
    assert piece_width(of_lengths([60, 64, 64, 64])) == 32  # 8% padding at 32


@pytest.mark.parametrize("segment_steps", [None, 3])
def test_an_ensemble_trains_on_the_batches_the_host_would_cut(monkeypatch, segment_steps):
    """fit_ensemble gathers each epoch's batches on the device from the resident training set: the same
    networks as cutting them on the host (make_batches, padded) and running the same epochs; gathered a segment
    of steps at a time (3 of the 4 steps, then 1: SEGMENT_BYTES shrunk), the same networks and epoch records."""
    import jax

    from textclf.models.stacked import merged
    from textclf.settings import Settings
    from textclf.training import ensembles, device_data
    from textclf.training.steps import stacked as stacked_step
    from textclf.training.inputs import TrainingRows

    x, y = _matrix()
    epochs, batch, seed, members = 2, 16, 4, 3
    rng = np.random.default_rng(seed)
    orders = [rng.permutation(x.shape[0]) for _ in range(epochs)]
    shape = ensembles.batch_shape([x] * epochs, batch, orders)
    settings = Settings(
        ensemble=members,
        learning_rate=0.01,
        weight_decay=0.0,
        epochs=epochs,
        min_steps=0,
        batch_size=batch,
        hidden=8,
        seed=seed,
    )
    whole = ensembles.fit_ensemble(TrainingRows(x, y, 4, x, y), settings)
    if segment_steps:
        monkeypatch.setattr(device_data, "SEGMENT_BYTES", 12 * shape[1] * segment_steps)
    got, history, *_ = ensembles.fit_ensemble(TrainingRows(x, y, 4, x, y), settings)
    assert [(h.loss, h.train_accuracy, h.eval_accuracy) for h in history] == [
        (h.loss, h.train_accuracy, h.eval_accuracy) for h in whole[1]
    ]
    params, state = stacked_step.start_stack(seed, x.shape[1], 8, 4, members)
    rates, decays = jnp.full((members,), 0.01), jnp.zeros((members,))
    for order in orders:
        cut = ensembles.device_batches(x, y, batch, order, shape)
        params, state, _ = stacked_step.stacked_epoch(
            params, state, rates, decays, *cut, dense=stacked_step.dense_default()
        )
    want = merged(jax.tree.map(np.asarray, params))
    for name, a, b in zip(("w1", "b1", "w2", "b2"), got, want):
        np.testing.assert_allclose(a, b, atol=1e-6, err_msg=name)
    assert np.abs(got.w1 - merged(stacked_step.start_stack(seed, x.shape[1], 8, 4, members)[0]).w1).max() > 1e-3


def test_a_process_with_no_documents_feeds_padding_only():
    """Several processes, one of whose shares is empty: its widest batch is 0 and its rows of every batch are
    padding, while the others' rows together are every batch's documents."""
    from textclf.training.parallel.data import RowShare, local_orders

    assert batch_nnz_max(np.zeros(1, np.int64), np.full((2, 4), -1)) == 0
    order = np.asarray(epoch_order(seed=1, epoch=0, n=5, steps=2, batch_size=4))
    counts = (1, 0, 1, 3)
    offsets = tuple(int(x) for x in np.cumsum([0, *counts[:-1]]))
    held = [local_orders({0: order}, RowShare(offsets, counts, p), 1) for p in range(4)]
    assert len({rows for _, rows in held}) == 1  # every process computes the same width
    assert (held[1][0][0] == -1).all()
    fed = sorted(int(doc) + offsets[p] for p, (orders, _) in enumerate(held) for doc in orders[0].ravel() if doc >= 0)
    assert fed == list(range(5))
    for step in range(2):  # each process's rows of a step are the documents of that batch it holds, in order
        for p, (orders, _) in enumerate(held):
            own = [d for d in order[step] if d >= 0 and offsets[p] <= d < offsets[p] + counts[p]]
            assert [int(d) + offsets[p] for d in orders[0][step] if d >= 0] == own


def test_a_matrix_put_on_the_device_part_by_part_is_the_whole_matrix_put_at_once(monkeypatch):
    """resident_from_parts (each share of the corpus uploaded as it arrives) gives the arrays resident_rows gives
    the stacked matrix, pieces and all; host_rows reads rows back as the host's matrix has them."""
    from pipelines.word_counts import stack_rows
    from textclf.training import device_data

    monkeypatch.setattr(device_data, "UPLOAD_BYTES", 64)  # 16 entries a piece: parts of several pieces
    rng = np.random.default_rng(7)
    parts = [sp.random(n, 40, density=0.3, format="csr", random_state=n, dtype=np.float32) for n in (9, 0, 17, 4)]
    labels = rng.integers(0, 3, 30)
    whole = stack_rows(list(parts))
    at_once = device_data.resident_rows(whole, labels)
    by_parts = device_data.resident_from_parts(iter(parts), labels)
    assert by_parts.shape == at_once.shape == (30, 40)
    np.testing.assert_array_equal(by_parts.indptr, whole.indptr)
    for a, b in zip(by_parts.device, at_once.device):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    rows = np.array([29, 3, 9, 12, 3])
    back = device_data.host_rows(by_parts, rows)
    assert (back != whole[rows]).nnz == 0 and back.shape == (5, 40)
    assert device_data.host_rows(by_parts, np.array([], np.int64)).shape == (0, 40)


def test_a_few_documents_are_scored_in_a_batch_of_their_bucket_many_in_batches_of_the_most():
    assert scoring_rows(3, 1024) == bucket(3) < 1024
    assert scoring_rows(0, 1024) == bucket(1)
    assert scoring_rows(5000, 1024) == scoring_rows(1024, 1024) == 1024
