import numpy as np
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from pipelines.batches import make_batches, next_power_of_two


def _dense_from_batches(batches, n_features):
    steps, batch_size = batches.labels.shape
    dense = np.zeros((steps * batch_size, n_features), np.float32)
    for step in range(steps):
        np.add.at(dense, (step * batch_size + batches.rows[step], batches.indices[step]), batches.values[step])
    return dense


def test_batches_hold_exactly_the_rows_in_order():
    rng = np.random.default_rng(0)
    matrix = sp.random(23, 40, density=0.2, format="csr", random_state=1, dtype=np.float32)
    labels = rng.integers(0, 3, 23)
    order = rng.permutation(23)
    batches = make_batches(matrix, labels, batch_size=5, order=order)
    assert batches.labels.shape == (5, 5)  # 23 rows -> 5 batches, the last padded with 2 masked rows
    assert batches.mask.sum() == 23 and batches.mask[-1].tolist() == [1, 1, 1, 0, 0]
    cap = batches.indices.shape[1]
    assert cap == next_power_of_two(cap)
    dense = _dense_from_batches(batches, 40)
    np.testing.assert_array_equal(dense[:23], matrix[order].toarray())
    assert not dense[23:].any()  # masked padding rows carry no features
    np.testing.assert_array_equal(batches.labels.reshape(-1)[:23], labels[order])


def test_next_power_of_two():
    assert [next_power_of_two(n) for n in (1, 2, 3, 4, 5, 1000)] == [1, 2, 4, 4, 8, 1024]


@given(st.integers(0, 1 << 40), st.sampled_from([1, 2, 4, 8]))
def test_a_shape_bucket_holds_its_length_with_bounded_padding(n, per_octave):
    from pipelines.batches import SHAPE_BUCKET_MIN, shape_bucket

    bucket = shape_bucket(n, per_octave)
    assert bucket >= max(n, SHAPE_BUCKET_MIN)
    assert shape_bucket(bucket, per_octave) == bucket  # a bucket is its own bucket
    assert shape_bucket(n + 1, per_octave) >= bucket  # longer never buckets shorter
    if n >= SHAPE_BUCKET_MIN:
        assert bucket - n < n / per_octave  # under 1/per_octave of the length added


@given(st.integers(0, 1 << 20))
def test_a_cpus_short_lengths_go_to_powers_of_two_and_the_rest_to_eighths_of_an_octave(n):
    from pipelines.batches import SHAPE_BUCKET_MIN, SHAPE_BUCKETS, next_power_of_two, shape_bucket

    cpu = SHAPE_BUCKETS["cpu"]
    if n < cpu.coarse_below:
        assert cpu.length(n) == max(SHAPE_BUCKET_MIN, next_power_of_two(n)) <= cpu.coarse_below
    else:
        assert cpu.length(n) == shape_bucket(n, 8)
    assert cpu.length(n + 1) >= cpu.length(n)  # longer never buckets shorter, across the boundary too
