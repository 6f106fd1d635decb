import pytest

from pallas_kernels.hidden_backward import (
    HiddenBackwardBlocks,
    hidden_backward,
    hidden_backward_partials,
    hidden_backward_reference,
)
from tests.pallas_kernels.conftest import assert_close, poison_device_memory


@pytest.mark.parametrize("m, classes", [(37, 16), (64, 32), (5, 16), (130, 16)])
def test_matches_reference(env, rng, m, classes):
    dz = env.array(rng, (m, classes))
    w2 = env.array(rng, (128, classes))
    h = env.array(rng, (m, 128), kind="uniform")
    poison_device_memory()
    got = hidden_backward(
        dz, w2, h, block_sizes=HiddenBackwardBlocks(block_m=16), precision=env.precision, interpret=env.interpret
    )
    for name, a, b in zip(("dpre", "dw2", "db2", "db1"), got, hidden_backward_reference(dz, w2, h, "highest")):
        assert_close(a, b, env, name)


def test_partials_sum_to_the_gradients(env, rng):
    """One partial per block of rows (here 40 rows, blocks of 16: 3 partials, the last one padded)."""
    dz, w2, h = env.array(rng, (40, 16)), env.array(rng, (128, 16)), env.array(rng, (40, 128), kind="uniform")
    poison_device_memory()
    dpre, dw2, db2, db1 = hidden_backward_partials(
        dz, w2, h, block_sizes=HiddenBackwardBlocks(block_m=16), precision=env.precision, interpret=env.interpret
    )
    assert dw2.shape == (3, 128, 16) and db2.shape == (3, 16) and db1.shape == (3, 128)
    expected = hidden_backward_reference(dz, w2, h, "highest")
    for name, a, b in zip(("dpre", "dw2", "db2", "db1"), (dpre, dw2.sum(0), db2.sum(0), db1.sum(0)), expected):
        assert_close(a, b, env, name)
