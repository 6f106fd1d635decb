"""CSR rows -> fixed-shape sparse minibatches the device can scan over.

A minibatch of B documents is three flat arrays of length `cap` (the batch's nonzeros, padded):
  indices (cap,) int32   feature column of each nonzero
  values  (cap,) float32 its TF-IDF weight (0 in padding)
  rows    (cap,) int32   which document of the batch (0..B-1) it belongs to (0 in padding)
plus labels (B,) int32 and mask (B,) float32 (0 for the rows that pad the last batch).
cap is rounded up to a power of two so the compiled step is reused across epochs (few distinct shapes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass
class SparseBatches:
    indices: np.ndarray  # (steps, cap) int32
    values: np.ndarray  # (steps, cap) float32
    rows: np.ndarray  # (steps, cap) int32
    labels: np.ndarray  # (steps, B) int32
    mask: np.ndarray  # (steps, B) float32

    @property
    def steps(self) -> int:
        return int(self.labels.shape[0])

    @property
    def batch_size(self) -> int:
        return int(self.labels.shape[1])

    def arrays(self) -> tuple[np.ndarray, ...]:
        return self.indices, self.values, self.rows, self.labels, self.mask


def next_power_of_two(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


# Array lengths that follow a corpus (documents, nonzeros, steps of an epoch, a network's input columns) are rounded
# up to a bucket before they reach a compiled program, so that one program serves every corpus of its bucket and
# the persistent compilation cache serves it to the next corpus: a multiple of 1/per_octave of the largest power of
# two not above the length (per_octave 8: under 12.5% padding), at least SHAPE_BUCKET_MIN.
SHAPE_BUCKET_MIN = 8


def shape_bucket(n: int, per_octave: int = 8) -> int:
    """n rounded up to its bucket (see SHAPE_BUCKET_MIN); per_octave: buckets between two powers of two (1, 2, 4, 8)."""
    n = max(int(n), SHAPE_BUCKET_MIN)
    step = max(1, (1 << (n.bit_length() - 1)) // per_octave)
    return -(-n // step) * step


@dataclass(frozen=True)
class ShapeBuckets:
    """How the shapes that follow a corpus are rounded before they reach a compiled program (shape_bucket), so that
    a program compiled for one corpus serves the next of its bucket (from the persistent compilation cache, or a
    daemon's memory). Coarse where compiling costs more than the padding (a GPU, whose epochs are short beside a
    program's compilation), fine where the padding costs its share of every step (a CPU, whose step is Adam's pass
    over W1's rows). docs/decisions.md, "Shape buckets"."""

    per_octave: int  # lengths (documents, nonzeros, steps, W1's rows) to shape_bucket(n, per_octave)
    rows_per_cap: int  # a batch's nonzero slots at least this many a document (cap)
    # Lengths under this to a power of two: padding so short costs a step nothing measurable, and one program then
    # serves every small corpus of the power (the vocabularies and document counts of small corpora all differ).
    coarse_below: int = 0

    def length(self, n: int) -> int:
        return shape_bucket(n, 1 if n < self.coarse_below else self.per_octave)

    def cap(self, nonzeros: int, batch_size: int) -> int:
        """The slots of a batch whose densest holds `nonzeros`: a power of two, at least rows_per_cap a row."""
        return next_power_of_two(max(1, nonzeros, self.rows_per_cap * batch_size))


# By platform (jax's backend name); any other platform takes the CPU's.
SHAPE_BUCKETS = {"gpu": ShapeBuckets(1, 64), "cpu": ShapeBuckets(8, 0, coarse_below=1024)}


def buckets_for(platform: str) -> ShapeBuckets:
    """The shape buckets of a platform, named without starting JAX (a search prepares its batches while JAX starts)."""
    return SHAPE_BUCKETS.get(platform, SHAPE_BUCKETS["cpu"])


def cut_order(seed: int, n_rows: int) -> tuple[np.ndarray, np.random.Generator]:
    """The one shuffle that a round of the search (textclf/training/ensembles.py, fit_candidates) cuts its training
    batches from, and the generator after it (which then orders the batches of each epoch): callers that size the
    batches in advance draw the same cut."""
    rng = np.random.default_rng(seed)
    return rng.permutation(n_rows), rng


def batch_shape(
    matrices: list[sp.csr_matrix],
    batch_size: int,
    orders: list[np.ndarray] | None = None,
    buckets: ShapeBuckets = SHAPE_BUCKETS["cpu"],
) -> tuple[int, int]:
    """(steps, cap) that fits the batches of every matrix cut in its order (orders[i]: a permutation of matrix
    i's rows; default: as stored): steps of the longest, cap of the densest batch, rounded up to a power of
    two and to the platform's floor (buckets.cap). A matrix with a subset of another's columns (a search variant of
    the widest counts) has at most its nonzeros in every batch, so the widest view's shape fits every variant's.
    The cut is known, so the cap is its densest batch's, not the densest batch possible (the B longest
    documents): on news4 that was several times wider, and the CPU's gather step scales with the cap."""
    steps = max(-(-m.shape[0] // batch_size) for m in matrices)
    densest = 1
    for i, matrix in enumerate(matrices):
        lengths = np.diff(matrix.indptr)[orders[i] if orders is not None else slice(None)]
        padded = np.zeros(-(-len(lengths) // batch_size) * batch_size, np.int64)
        padded[: len(lengths)] = lengths
        densest = max(densest, int(padded.reshape(-1, batch_size).sum(axis=1).max(initial=0)))
    return steps, buckets.cap(densest, batch_size)


def padded_batches(arrays: tuple[np.ndarray, ...], steps: int, cap: int) -> tuple[np.ndarray, ...]:
    """make_batches' arrays (indices, values, rows (steps, cap); labels, mask (steps, B)) padded with all-zero
    batches up to `steps` and zero slots up to `cap` (a padding batch has no rows: mask 0)."""
    out = []
    for position, array in enumerate(arrays):
        width = cap if position < 3 else array.shape[1]
        padded = np.zeros((steps, width, *array.shape[2:]), array.dtype)  # (label sets: (steps, B, C) labels)
        padded[: array.shape[0], : array.shape[1]] = array
        out.append(padded)
    return tuple(out)


def make_batches(
    matrix: sp.csr_matrix,
    labels: np.ndarray,
    batch_size: int,
    order: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> SparseBatches:
    """Cut the rows of `matrix` (in `order`, default as stored) into minibatches of `batch_size` documents. weights:
    each row's weight in the loss, the mask's value for it (None: 1 each)."""
    n = matrix.shape[0]
    order = np.arange(n) if order is None else order
    steps = max(1, -(-n // batch_size))
    padded_n = steps * batch_size
    # Rows past n repeat row 0 but get mask 0, so they add nothing to the loss or the gradient.
    take = np.zeros(padded_n, dtype=np.int64)
    take[:n] = order
    real = np.arange(padded_n) < n
    mask = np.zeros(padded_n, dtype=np.float32)
    mask[:n] = 1.0 if weights is None else np.asarray(weights, np.float32)[order]
    sub = matrix[take].tocsr()
    nnz_per_row = np.diff(sub.indptr) * real
    nnz_per_batch = nnz_per_row.reshape(steps, batch_size).sum(axis=1)
    cap = next_power_of_two(int(max(1, nnz_per_batch.max())))

    # Position of every kept nonzero inside its batch's flat array.
    row_of_nz = np.repeat(np.arange(padded_n), np.diff(sub.indptr))
    keep = real[row_of_nz]
    row_of_nz = row_of_nz[keep]
    batch_of_nz = row_of_nz // batch_size
    batch_start = np.concatenate([[0], np.cumsum(nnz_per_batch)[:-1]])
    slot = np.arange(row_of_nz.size) - batch_start[batch_of_nz]

    indices = np.zeros((steps, cap), np.int32)
    values = np.zeros((steps, cap), np.float32)
    rows = np.zeros((steps, cap), np.int32)
    indices[batch_of_nz, slot] = sub.indices[keep]
    values[batch_of_nz, slot] = sub.data[keep]
    rows[batch_of_nz, slot] = row_of_nz % batch_size
    labels = np.asarray(labels)  # (n,) class numbers, or (n, C) 0/1 label sets
    batch_labels = labels.astype(np.uint8 if labels.ndim == 2 else np.int32)[take].reshape(
        steps, batch_size, *labels.shape[1:]
    )
    return SparseBatches(indices, values, rows, batch_labels, mask.reshape(steps, batch_size))
