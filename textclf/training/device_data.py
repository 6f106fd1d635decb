"""The training set resident on the device, shuffled and cut into minibatches there.

The CSR matrix goes to the device once per run (indptr, indices, values, labels: ~12 bytes per nonzero, 10 MB
for news4, 1.8 GB for a million documents). Each epoch, a permutation is drawn on the device from the run's
seed and the epoch number (on the host, see epoch_order; so a resumed run draws the same one), and the
epoch's minibatches are gathered from the resident CSR inside the same dispatch as the training scan: the host
sends nothing but the order and the learning rates. The largest minibatch's nonzero count over all the run's
epochs fixes the (power-of-two) width of the flat batch arrays, so the epoch is compiled once.

Batch format (pipelines/batches.py): indices/values/rows (steps, cap), labels/mask (steps, B).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterable, Iterator, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from pipelines.batches import ShapeBuckets, buckets_for, next_power_of_two, padded_batches
from pipelines.workers import return_freed_memory


def shape_buckets() -> ShapeBuckets:
    """The buckets of this process's default device (pipelines.batches.ShapeBuckets says why each)."""
    return buckets_for(jax.default_backend())


def bucket(n: int) -> int:
    """n rounded up to its bucket on this process's device."""
    return shape_buckets().length(n)


def scoring_rows(n: int, most: int) -> int:
    """Rows a batch takes where n documents are scored (no gradient) in batches of at most `most`: `most`, or n's
    bucket where that is fewer. A few held-out documents scored after every epoch are not padded to `most` rows,
    which on a CPU cost a small corpus's epoch more than its training."""
    return min(most, bucket(max(1, n)))


class DeviceCSR(NamedTuple):
    indptr: jax.Array  # (n + 1,) int32
    indices: jax.Array  # (nnz,) int32
    values: jax.Array  # (nnz,) float32
    labels: jax.Array  # (n,) int32 class numbers, or (n, C) uint8 label sets (label_array)
    weights: jax.Array | None = None  # (n,) float32 each document's weight in the loss (batch_mask); None: 1 each


def batch_mask(valid: jax.Array, weights: jax.Array | None, docs: jax.Array) -> jax.Array:
    """A gathered batch's mask (steps, B): 0 for a padding slot, else 1, or the document's weight where the training
    set has weights (each batch's loss is then its weighted mean: textclf.models.mlp.masked_loss)."""
    if weights is None:
        return valid.astype(jnp.float32)
    return jnp.where(valid, weights[docs], 0.0)


def bucketed_weights(weights: np.ndarray | None) -> np.ndarray | None:
    """(n,) document weights as float32 with zeros up to bucket(n) (as bucketed_labels), or None."""
    if weights is None:
        return None
    out = np.zeros(bucket(len(weights)), np.float32)
    out[: len(weights)] = weights
    return out


def label_array(labels: np.ndarray) -> np.ndarray:
    """A training set's labels as they go to the device: (n,) class numbers as int32, (n, C) label sets as uint8."""
    labels = np.asarray(labels)
    return labels.astype(np.uint8) if labels.ndim == 2 else labels.astype(np.int32)


def _where_valid(valid: jax.Array, labels: jax.Array) -> jax.Array:
    """The gathered labels of the valid slots, 0 elsewhere ((steps, B) valid; labels (steps, B) or (steps, B, C))."""
    return jnp.where(valid.reshape(valid.shape + (1,) * (labels.ndim - valid.ndim)), labels, 0)


def host_csr(matrix: sp.csr_matrix, labels: np.ndarray, weights: np.ndarray | None = None) -> DeviceCSR:
    """The numpy arrays to upload (one extra zero entry so an empty matrix still has a gatherable element).
    Duplicate (row, column) entries are summed first: the Pallas dense path stores each nonzero with a plain
    scatter that needs every cell named once (write_batch)."""
    matrix = canonical(matrix)
    return DeviceCSR(
        matrix.indptr.astype(np.int32),
        _with_zero(matrix.indices, np.int32),
        _with_zero(matrix.data, np.float32),
        label_array(labels),
        None if weights is None else np.asarray(weights, np.float32),
    )


# An epoch's batches are gathered on the device a segment of steps at a time, a segment's batch arrays at most
# about this many bytes (segment_steps): gathered whole, ten million documents' epoch (~200 nonzeros a document,
# batch 4,096) needed ~30 GB beside the resident matrix and exhausted an 80 GB H100 (BENCHMARKS.md, "Big
# corpora"; that run then trained in segments of 1 GB). 4 GB keeps a million documents' epoch (~3 GB) in one
# segment, as measured there: each segment of another length is a program of its own to compile (seconds).
SEGMENT_BYTES = 4 << 30


def segment_steps(steps: int, bytes_per_step: int) -> int:
    """Steps of an epoch to gather at once: as many as fit SEGMENT_BYTES, at least one, at most the epoch's."""
    return max(1, min(steps, SEGMENT_BYTES // max(1, bytes_per_step)))


# upload_csr puts arrays on the device in pieces of at most this many bytes.
UPLOAD_BYTES = 64 * 1024 * 1024


def upload_csr(matrix: sp.csr_matrix, labels: np.ndarray, weights: np.ndarray | None = None) -> DeviceCSR:
    """host_csr's arrays on this process's default device, without host_csr's copies: the indices and values go
    up in pieces of UPLOAD_BYTES straight from the matrix's own arrays and are joined, with the extra zero, on
    the device. (host_csr copied both to append the zero, and the upload staged each whole array: a
    million-document run's host memory grew by 3.7 GB in its train phase, BENCHMARKS.md "Big corpora".)"""
    matrix = canonical(matrix)
    length = bucket(matrix.nnz + 1)
    return DeviceCSR(
        jax.device_put(bucketed_pointers(matrix.indptr)),
        _uploaded_with_zero(matrix.indices, np.int32, length),
        _uploaded_with_zero(matrix.data, np.float32, length),
        jax.device_put(bucketed_labels(labels)),
        None if weights is None else jax.device_put(bucketed_weights(weights)),
    )


# The arrays of a training set on the device are as long as their length's bucket (pipelines.batches.shape_bucket),
# not the corpus's: the programs that gather batches from them compile once for every corpus of the bucket. The
# documents past the end hold nothing (their pointers repeat the last) and the entries past the end are zeros; no
# epoch's order names them.


def bucketed_pointers(pointers: np.ndarray) -> np.ndarray:
    """(n + 1,) row pointers as int32, the last repeated up to bucket(n) + 1."""
    n = len(pointers) - 1
    out = np.full(bucket(n) + 1, pointers[-1], np.int32)
    out[: n + 1] = pointers
    return out


def bucketed_labels(labels: np.ndarray) -> np.ndarray:
    """label_array(labels) with zero rows up to bucket(n)."""
    labels = label_array(labels)
    out = np.zeros((bucket(len(labels)), *labels.shape[1:]), labels.dtype)
    out[: len(labels)] = labels
    return out


class ResidentRows(NamedTuple):
    """A training matrix put on the device ahead of its training (resident_rows), and what the host still needs
    of it: its row pointers, from which the batches' widths are sized, and its shape. Networks side by side
    (textclf/training/ensembles.py) take it where they take a CSR matrix; the host's copy of its nonzeros can go
    before the training starts (a million documents' matrix: ~1.6 GB of a run's host memory)."""

    device: DeviceCSR
    indptr: np.ndarray  # (n + 1,) host
    shape: tuple[int, int]


def resident_rows(matrix: sp.csr_matrix, labels: np.ndarray, weights: np.ndarray | None = None) -> ResidentRows:
    """matrix, its labels and its documents' weights (if any) uploaded (upload_csr), its row pointers kept on the
    host."""
    device = upload_csr(matrix, labels, weights)
    return ResidentRows(device, np.asarray(matrix.indptr), matrix.shape)


def on_device(matrix, labels: np.ndarray, weights: np.ndarray | None = None) -> DeviceCSR:
    """The device arrays of a training matrix: a ResidentRows' own, or a CSR matrix's uploaded now."""
    return matrix.device if isinstance(matrix, ResidentRows) else upload_csr(matrix, labels, weights)


def _uploaded_with_zero(array: np.ndarray, dtype, length: int | None = None) -> jax.Array:
    """array (cast) with zeros appended up to `length` (default: one 0), on the device."""
    length = length or len(array) + 1
    if len(array) < UPLOAD_BYTES // np.dtype(dtype).itemsize:
        # one piece: joined on the host (a join on the device compiles a program, ~50 ms)
        return jax.device_put(_with_zero(array, dtype, length))
    return _joined_with_zero(_uploaded_pieces(array, dtype), dtype, length - len(array))


def _joined_with_zero(pieces: list[jax.Array], dtype, zeros: int = 1) -> jax.Array:
    """Device pieces joined into one array, `zeros` 0s appended (at least one: the gatherable element of an empty
    matrix)."""
    return jnp.concatenate(pieces + [jax.device_put(np.zeros(max(1, zeros), dtype))])


def _uploaded_pieces(array: np.ndarray, dtype) -> list[jax.Array]:
    """array (cast) on the device in pieces of UPLOAD_BYTES. Each piece is waited for before the next goes: put
    all at once, the transfers' pinned staging memory grew with the pieces in flight and stayed (a million
    documents' 1.6 GB matrix: +1.0 GB of resident host memory for the rest of the run; one at a time +0.2 GB,
    and 0.47-0.49 against 0.65-0.68 s, H100, BENCHMARKS.md "Big corpora with no flags")."""
    step = max(1, UPLOAD_BYTES // np.dtype(dtype).itemsize)
    return [
        jax.device_put(np.ascontiguousarray(array[at : at + step], dtype)).block_until_ready()
        for at in range(0, len(array), step)
    ]


def resident_from_parts(parts: Iterable[sp.csr_matrix], labels: np.ndarray) -> ResidentRows:
    """resident_rows of the parts' rows stacked, each part put on the device as it arrives and let go before the
    next (Vectorizer.transform_file_parts: a share of the corpus as a worker finishes it), so that the host never
    holds the whole matrix (ten million documents: ~13 GB). The same arrays as resident_rows(stack_rows(parts))."""
    indices: list[jax.Array] = []
    values: list[jax.Array] = []
    pointers, rows, nonzeros, width = [np.zeros(1, np.int64)], 0, 0, None
    for part in parts:
        part = canonical(part)
        if width is not None and part.shape[1] != width:
            raise ValueError(f"parts of {width} and {part.shape[1]} columns")
        width = part.shape[1]
        indices += _uploaded_pieces(part.indices, np.int32)
        values += _uploaded_pieces(part.data, np.float32)
        pointers.append(part.indptr[1:].astype(np.int64) + nonzeros)
        rows, nonzeros = rows + part.shape[0], nonzeros + part.nnz
        del part
        return_freed_memory()
    if width is None:
        raise ValueError("no parts")
    indptr = np.concatenate(pointers)
    zeros = bucket(nonzeros + 1) - nonzeros
    device = DeviceCSR(
        jax.device_put(bucketed_pointers(indptr)),
        _joined_with_zero(indices, np.int32, zeros),
        _joined_with_zero(values, np.float32, zeros),
        jax.device_put(bucketed_labels(labels)),
    )
    return ResidentRows(device, indptr, (rows, width))


def host_rows(matrix: ResidentRows, rows: np.ndarray) -> sp.csr_matrix:
    """These rows of a matrix on the device, read back as a host CSR matrix: the few that a run needs on the host
    (early stopping's held-out documents)."""
    rows = np.asarray(rows, np.int64)
    starts = matrix.indptr[rows]
    lengths = matrix.indptr[rows + 1] - starts
    pointers = np.concatenate([[0], np.cumsum(lengths)])
    positions = np.repeat(starts - pointers[:-1], lengths) + np.arange(pointers[-1])  # each entry's place
    if not len(positions):
        return sp.csr_matrix((len(rows), matrix.shape[1]), dtype=np.float32)
    places = jax.device_put(positions.astype(np.int32 if matrix.indptr[-1] < 2**31 else np.int64))
    return sp.csr_matrix(
        (np.asarray(matrix.device.values[places]), np.asarray(matrix.device.indices[places]), pointers),
        shape=(len(rows), matrix.shape[1]),
    )


def canonical(matrix: sp.csr_matrix) -> sp.csr_matrix:
    """matrix as CSR with each (row, column) named once: duplicates summed, on a copy (the caller's stays)."""
    matrix = matrix.tocsr()
    if not matrix.has_canonical_format:
        matrix = matrix.copy()
        matrix.sum_duplicates()
    return matrix


# A dense step's (B, F) X from a flat sparse batch without filling B * F zeros every step: one zero buffer an epoch,
# carried through the epoch's loop; each step stores its nonzeros and erases them after (the Pallas MLP path,
# textclf/training/steps/pallas.py, and the search's K-network step, textclf/training/steps/stacked.py).


def _scatter(buffer, indices, values, rows, new_values) -> jax.Array:
    """buffer[rows, indices] = new_values for the batch's nonzero slots. The slots of a canonical CSR batch
    (host_csr) name distinct cells and padding slots (value 0) go to row B, out of bounds
    and dropped, so this is a plain store per slot: no atomics, unlike scatter-add."""
    rows = jnp.where(values != 0, rows, buffer.shape[0])
    return buffer.at[rows, indices].set(new_values, mode="drop", unique_indices=True)


def write_batch(buffer, indices, values, rows) -> jax.Array:
    """The epoch's all-zero (B, F) buffer (F: the input columns, padded on the Pallas path) -> this step's dense X
    (in place inside the loop)."""
    return _scatter(buffer, indices, values, rows, values.astype(buffer.dtype))


def erase_batch(x, indices, values, rows) -> jax.Array:
    """This step's dense X -> all zeros again, touching only the cells write_batch set. With write_batch this
    replaces filling B * F zeros every step (at B = 4,096, bf16, 268 MB: the zero fill and the
    scatter-add were 42% of the step, BENCHMARKS.md epoch profile) by two stores per nonzero."""
    return _scatter(x, indices, values, rows, jnp.zeros((), x.dtype))


def _with_zero(array: np.ndarray, dtype, length: int | None = None) -> np.ndarray:
    """array (cast) with zeros appended up to `length` (default: one 0), in one new array (np.append then astype
    made two: a GB at 1M)."""
    out = np.empty(length or len(array) + 1, dtype)
    out[: len(array)] = array
    out[len(array) :] = 0
    return out


def epoch_order(seed: int, epoch: int, n: int, steps: int, batch_size: int) -> np.ndarray:
    """(steps, batch_size) document numbers of one epoch's minibatches, -1 where the last batch is short.
    Drawn on the host (numpy) from (seed, epoch), so a resumed run draws the same order. Decision: drawn on the
    device (jax.random.permutation) it compiled a sort, 1.8-2.3 s of every cold start on the H100
    (BENCHMARKS.md, "Cold start"); numpy permutes a million documents in milliseconds, and the order goes up
    with the epoch's one dispatch."""
    order = np.random.default_rng([seed, epoch]).permutation(n).astype(np.int32)
    return np.pad(order, (0, steps * batch_size - n), constant_values=-1).reshape(steps, batch_size)


def batch_nnz_max(indptr: np.ndarray, order: np.ndarray, parts: int = 1) -> int:
    """Largest nonzero count of any minibatch (of any of its `parts` device slices)."""
    order = np.asarray(order)
    documents = np.diff(np.asarray(indptr))
    if not len(documents):  # no documents here (a process whose share is empty): every slot is padding
        return 0
    lengths = np.where(order >= 0, documents[np.maximum(order, 0)], 0)
    return int(lengths.reshape(order.shape[0], parts, -1).sum(axis=2).max())


def _slots(pointers: jax.Array, order: jax.Array, cap: int, last: int):
    """The entries (nonzeros or pieces) of each batch's documents laid end to end in `cap` slots.
    pointers: (n + 1,) start of each document's entries; order: (steps, B) document numbers, -1 for none.
    -> row (steps, cap) position of each slot's document in its batch (ascending; B - 1 past the end), used
    (steps, cap), source (steps, cap) entry number (`last` for unused slots), valid (steps, B), docs (steps, B)."""
    valid = order >= 0
    docs = jnp.where(valid, order, 0)
    starts = pointers[docs]
    lengths = jnp.where(valid, pointers[docs + 1] - starts, 0)
    ends = jnp.cumsum(lengths, axis=1)  # (steps, B)
    slot = jnp.arange(cap, dtype=jnp.int32)
    row = jax.vmap(lambda e: jnp.searchsorted(e, slot, side="right"))(ends).astype(jnp.int32)  # (steps, cap)
    used = slot[None, :] < ends[:, -1:]
    row = jnp.minimum(row, order.shape[1] - 1)
    source = jnp.take_along_axis(starts, row, 1) + slot[None, :] - jnp.take_along_axis(ends - lengths, row, 1)
    return row, used, jnp.where(used, source, last), valid, docs


# A batch's nonzeros are packed at the front of its cap (pipelines/batches.py), and the cap is the densest
# batch's (batch_shape). Where documents' lengths vary widely most batches fill a fraction of it (news4's search
# on a CPU: ~4,500 nonzeros a batch of 64 against a cap of 32,768), and the sparse formulation's gather and
# scatter cost grows with the cap (2-core CPU: 11.5 ms a K = 3 search step at cap 32,768, 5.7 at 8,192). So a batch
# whose entries past the first 1/NARROW_DIVISOR of the cap are all zero runs on that front slice alone: the same
# sums, since a zero entry adds nothing to a document's pre-activation nor to W1's gradient. Caps under
# NARROW_MIN_CAP are not split (too little to save for a second branch in the program).
NARROW_DIVISOR = 4
NARROW_MIN_CAP = 4096


def narrowed(fn: Callable, batch: tuple) -> Any:
    """fn(batch) for a flat sparse batch (indices, values, rows (cap,), then any per-row arrays), on the front
    1/NARROW_DIVISOR of its (cap,) arrays where the rest of its values are zeros (again on the front of that,
    while wide enough); else on the whole batch. On a CPU only: measured there; a GPU keeps one branch."""
    cap = batch[0].shape[0]
    if cap < NARROW_MIN_CAP or jax.default_backend() != "cpu":
        return fn(batch)
    narrow = cap // NARROW_DIVISOR
    front = (batch[0][:narrow], batch[1][:narrow], batch[2][:narrow], *batch[3:])
    return jax.lax.cond(jnp.all(batch[1][narrow:] == 0), lambda: narrowed(fn, front), lambda: fn(batch))


def gather_batches(data: DeviceCSR, order: jax.Array, cap: int):
    """(steps, B) document numbers -> the epoch's flat sparse minibatches (the layout of make_batches, with the
    same nonzeros in the same order for the same document order): slot j of a batch holds nonzero j of the
    batch's documents laid end to end; slots past the batch's total are padding (value 0, row 0)."""
    row, used, source, valid, docs = _slots(data.indptr, order, cap, data.indices.shape[0] - 1)  # last: zero entry
    indices = jnp.where(used, data.indices[source], 0)
    values = jnp.where(used, data.values[source], 0.0)
    rows = jnp.where(used, row, 0)
    labels = _where_valid(valid, data.labels[docs])
    return indices, values, rows, labels, batch_mask(valid, data.weights, docs)


def gathered_segments(resident: DeviceCSR, order: np.ndarray, cap: int, segment: int):
    """(steps, B) document numbers (-1: none) -> their batches (gather_batches), gathered on the device `segment`
    steps at a time (so that no more than one segment's batches are there at once)."""
    for first in range(0, order.shape[0], segment):
        yield _gathered(resident, jax.device_put(order[first : first + segment]), cap)


def batches_in_row_order(matrix: sp.csr_matrix, labels: np.ndarray, batch_size: int) -> Callable[[], Iterator]:
    """The batches make_batches cuts from matrix's rows in order, for scoring: the rows go to the device as they
    are (upload_csr) and each call of the function returned gathers the batches there anew, a segment at a time
    (gathered_segments). Cut and padded on the host, a million test documents' batches were ~3 GB of padded arrays
    there, and ~3 GB more while being cut."""
    resident = upload_csr(matrix, labels)
    n = matrix.shape[0]
    steps = max(1, -(-n // batch_size))
    order = np.pad(np.arange(n, dtype=np.int32), (0, steps * batch_size - n), constant_values=-1)
    order = order.reshape(steps, batch_size)
    cap = shape_buckets().cap(batch_nnz_max(matrix.indptr, order), batch_size)
    order = bucketed_order(order, 12 * cap)
    segment = segment_steps(len(order), 12 * cap)
    return lambda: gathered_segments(resident, order, cap, segment)


def bucketed_batches(batches: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """make_batches' arrays with all-zero batches up to bucket(steps) and zero slots up to the bucket's cap
    (ShapeBuckets.cap)."""
    return padded_batches(
        batches, bucket(len(batches[0])), shape_buckets().cap(batches[0].shape[1], batches[3].shape[1])
    )


def bucketed_order(order: np.ndarray, bytes_per_step: int) -> np.ndarray:
    """(steps, B) document numbers with rows of -1 (batches of no documents) up to bucket(steps), where the
    epoch still gathers in one segment (segment_steps): the programs fed by it compile once for the bucket."""
    steps = bucket(len(order))
    if segment_steps(steps, bytes_per_step) < steps:
        return order
    return np.concatenate([order, np.full((steps - len(order), order.shape[1]), -1, order.dtype)])


@functools.partial(jax.jit, static_argnames=("cap",))
def _gathered(resident: DeviceCSR, order: jax.Array, cap: int) -> tuple[jax.Array, ...]:
    return gather_batches(resident, order, cap)


# --- The "pieces" layout: each document's nonzeros cut into fixed-width rows -------------------------------
# A document of k nonzeros becomes ceil(k / width) pieces of `width` (index, value) slots; a minibatch is the
# pieces of its documents laid end to end, (cap, width), with each piece's document number. The hidden
# pre-activation is then a fixed-width gather-sum per piece (no per-nonzero segment ids, no contention on a
# document's row) plus a short sorted segment sum over the ~k / width pieces of each document.
PIECE_WIDTH = 16


class DevicePieces(NamedTuple):
    piece_ptr: jax.Array  # (n + 1,) int32: pieces of document d are piece_ptr[d] .. piece_ptr[d + 1]
    indices: (
        jax.Array
    )  # (P + 1, width) int32; padding slots hold n_features (out of range); the last piece is all padding
    values: jax.Array  # (P + 1, width) float32; padding slots hold 0
    labels: jax.Array  # (n,) int32 class numbers, or (n, C) uint8 label sets (label_array)
    weights: jax.Array | None = None  # (n,) float32 each document's weight in the loss (DeviceCSR's)


def host_pieces(
    matrix: sp.csr_matrix,
    labels: np.ndarray,
    width: int = PIECE_WIDTH,
    columns: int | None = None,
    bucketed: bool = False,
    weights: np.ndarray | None = None,
) -> DevicePieces:
    """CSR -> the pieces layout (numpy arrays to upload). Duplicate entries are summed first (as host_csr).
    columns: the first layer's rows where they are more than the matrix's columns (padding slots name the one
    past them); bucketed: the documents and pieces as long as their buckets (upload_csr says why)."""
    matrix = canonical(matrix)
    n, n_features = matrix.shape[0], max(matrix.shape[1], columns or 0)
    lengths = np.diff(matrix.indptr)
    piece_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(-(-lengths // width), out=piece_ptr[1:])
    n_pieces = int(piece_ptr[-1])
    doc = np.repeat(np.arange(n), lengths)
    position = np.arange(matrix.nnz) - matrix.indptr[doc]  # position of each nonzero within its document
    slot = (piece_ptr[doc] + position // width) * width + position % width
    # Padding slots name feature n_features, one past the last: gathers read 0 there (mode "fill") and the
    # gradient's scatter-add drops them, instead of adding zeros to a real row of W1 (thousands of padding
    # slots on one row serialise the scatter's atomic adds).
    stored = bucket(n_pieces + 1) if bucketed else n_pieces + 1
    indices = np.full(stored * width, n_features, np.int64)
    values = np.zeros(stored * width, np.float32)
    indices[slot], values[slot] = matrix.indices, matrix.data
    pointers, labels = (
        (bucketed_pointers(piece_ptr), bucketed_labels(labels))
        if bucketed
        else (piece_ptr.astype(np.int32), label_array(labels))
    )
    if weights is not None:
        weights = bucketed_weights(weights) if bucketed else np.asarray(weights, np.float32)
    return DevicePieces(
        pointers, indices.astype(np.int32).reshape(-1, width), values.reshape(-1, width), labels, weights
    )


# Piece widths tried, and the padding allowed: the widest power of two whose padding slots stay within
# PIECE_MAX_PADDING of the nonzeros. Measured on an H100 (docs/decisions.md, "Input layouts"): news4 rows (88
# nonzeros a document; padding 4% / 8% / 18% at widths 8 / 16 / 32) were fastest at 16, agnews7600 rows (26
# nonzeros; 13% / 29%) at 8: fewer, wider pieces until the padding costs more than the pieces save.
PIECE_WIDTHS = (4, 8, 16, 32)
PIECE_MAX_PADDING = 0.15


def piece_width(matrix: sp.csr_matrix) -> int:
    """The piece width for this training matrix (see PIECE_WIDTHS)."""
    lengths = np.diff(matrix.indptr)
    nnz = max(1, int(lengths.sum()))
    fitting = [w for w in PIECE_WIDTHS if int((-(-lengths // w)).sum()) * w <= (1 + PIECE_MAX_PADDING) * nnz]
    return max(fitting, default=PIECE_WIDTHS[0])


def pieces_cap(widest: int, per_octave: int = 8) -> int:
    """The batch width (pieces) to compile for: `widest` rounded up to 1/per_octave of its power of two (8: at most
    12.5% unused pieces; a power of two left up to half the slots unused, and every slot costs the gradient's
    scatter a pass; ShapeBuckets says where that is worth it) and to a multiple of 128 (the kernel's blocks)."""
    step = max(128, next_power_of_two(widest) // per_octave)
    return -(-max(widest, 1) // step) * step


def gather_piece_batches(data: DevicePieces, order: jax.Array, cap: int):
    """(steps, B) document numbers -> the epoch's minibatches in the pieces layout: indices, values
    (steps, cap, width), piece_rows (steps, cap) (each piece's position in its batch, ascending; unused slots
    after the last piece are all-padding pieces of row B - 1), labels, mask (steps, B)."""
    row, _, source, valid, docs = _slots(data.piece_ptr, order, cap, data.indices.shape[0] - 1)  # all padding
    indices, values = data.indices[source], data.values[source]
    labels = _where_valid(valid, data.labels[docs])
    return indices, values, row, labels, batch_mask(valid, data.weights, docs)
