import jax
import jax.numpy as jnp
import pytest

from pallas_kernels.maxpool import MaxpoolBlocks, maxpool2d, maxpool_backward, maxpool_forward, maxpool_reference
from tests.pallas_kernels.conftest import assert_close, gpu_only, poison_device_memory

CASES = [(2, 8, 8, 4, 2), (3, 7, 9, 16, 2), (1, 9, 9, 3, 3), (2, 28, 28, 1, 2)]  # odd sizes leave rows uncovered


@pytest.mark.parametrize("n, h, w, c, size", CASES)
def test_forward_matches_reduce_window(env, rng, n, h, w, c, size):
    x = env.array(rng, (n, h, w, c))
    poison_device_memory()
    y, arg = maxpool_forward(x, size=size, block_sizes=MaxpoolBlocks(block_m=16), interpret=env.interpret)
    assert_close(y, maxpool_reference(x, size), env)
    assert int(arg.min()) >= 0 and int(arg.max()) < size * size


@pytest.mark.parametrize("n, h, w, c, size", CASES)
def test_gradient_matches_jax_grad_of_reference(env, rng, n, h, w, c, size):
    x = env.array(rng, (n, h, w, c))  # continuous values: no ties, so the winning tap is unambiguous
    probe = env.array(rng, (n, h // size, w // size, c))
    got = jax.grad(lambda a: jnp.sum(maxpool2d(a, size, env.interpret) * probe))(x)
    want = jax.grad(lambda a: jnp.sum(maxpool_reference(a, size) * probe))(x)
    assert_close(got, want, env)


def test_ties_send_the_gradient_to_the_first_largest_tap_in_kernel_and_reference(env, rng):
    """A ReLU's zeros and 8-bit pixels tie often: kernel and reference agree on where the gradient goes."""
    x = jnp.floor(env.array(rng, (2, 8, 8, 4)) * 2).clip(0).astype(env.array(rng, (1,)).dtype)  # many 0s and 1s
    probe = env.array(rng, (2, 4, 4, 4))
    got = jax.grad(lambda a: jnp.sum(maxpool2d(a, 2, env.interpret) * probe))(x)
    want = jax.grad(lambda a: jnp.sum(maxpool_reference(a, 2) * probe))(x)
    assert_close(got, want, env)
    assert int(jnp.sum(got != 0)) <= 2 * 4 * 4 * 4  # one tap a window, never a split


def test_backward_routes_to_the_recorded_tap(env, rng):
    dy = env.array(rng, (1, 2, 2, 4))
    arg = jnp.full((1, 2, 2, 4), 3, jnp.int32)  # bottom-right of every 2x2 window
    dx = maxpool_backward(
        dy, arg, size=2, height=5, width=5, block_sizes=MaxpoolBlocks(block_m=16), interpret=env.interpret
    )
    assert_close(dx[:, 1:4:2, 1:4:2], dy, env)
    assert float(jnp.abs(dx).sum()) == pytest.approx(float(jnp.abs(dy).sum()))
    assert float(jnp.abs(dx[:, 4]).sum()) == 0 and float(jnp.abs(dx[:, :, 4]).sum()) == 0  # uncovered


@gpu_only
def test_production_shape(env, rng):
    x = env.array(rng, (1000, 28, 28, 16))
    y, _ = maxpool_forward(x)
    assert_close(y, maxpool_reference(x), env)
