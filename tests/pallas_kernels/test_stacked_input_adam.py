import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.stacked_input_adam import StackedInputAdamBlocks, stacked_input_adam, stacked_input_adam_reference
from tests.pallas_kernels.conftest import assert_close, gpu_only, poison_device_memory


def _problem(env, rng, m, features, n, models):
    x = env.array(rng, (m, features), kind="uniform") * (rng.uniform(size=(m, features)) < 0.3)
    dpre = env.array(rng, (m, n))
    w, mom, v = (
        env.array(rng, (features, n)),
        env.array(rng, (features, n)),
        env.array(rng, (features, n), kind="uniform"),
    )
    # Network k's rate and decay over its n / models columns, all different, so a column block read from the
    # wrong network shows.
    rates = jnp.repeat(jnp.asarray(rng.uniform(1e-3, 1e-2, models), env.dtype), n // models)
    decays = jnp.repeat(jnp.asarray(rng.uniform(0, 1e-3, models), env.dtype), n // models)
    scalars = jnp.asarray([1 - 0.9**3, 1 - 0.999**3, 1, 0], env.dtype)
    return x, dpre, w, mom, v, rates, decays, scalars


@pytest.mark.parametrize(
    "m, features, n, models, sub_tiles, stream, columns",
    [
        (37, 128, 64, 4, 1, None, False),
        (16, 64, 128, 2, 1, None, False),
        (64, 256, 96, 3, 1, None, False),
        (37, 256, 64, 4, 4, "evict_first", False),
        (16, 128, 96, 3, 2, None, False),
        (37, 128, 64, 4, 2, None, True),
        (16, 64, 96, 3, 1, "evict_first", True),
    ],
)
def test_matches_the_gradient_then_adam(env, rng, m, features, n, models, sub_tiles, stream, columns):
    x, dpre, w, mom, v, rates, decays, scalars = _problem(env, rng, m, features, n, models)
    expected = stacked_input_adam_reference(x, dpre, w, mom, v, rates, decays, scalars, "highest")
    poison_device_memory()
    blocks = StackedInputAdamBlocks(
        block_m=16, block_f=32, block_n=32, sub_tiles=sub_tiles, stream=stream, columns=columns
    )
    got = stacked_input_adam(
        x,
        dpre,
        jnp.copy(w),
        jnp.copy(mom),
        jnp.copy(v),
        rates,
        decays,
        scalars,
        block_sizes=blocks,
        precision=env.precision,
        interpret=env.interpret,
    )
    for name, a, b, before in zip("wmv", got, expected, (w, mom, v)):
        assert not np.allclose(np.asarray(b), np.asarray(before))  # every element moves: an unwritten tile shows
        assert_close(a, b, env, name)


def test_matches_textclf_adam_for_stacked_networks(env, rng):
    """The reference is the update textclf.training.steps.optimizers.adam makes with per-network rates (the search's
    XLA step)."""
    from textclf.training.steps.optimizers import AdamState, adam, adam_corrections

    x, dpre, w, mom, v, rates, decays, _ = _problem(env, rng, 24, 64, 64, 2)
    grad = jnp.dot(x.T, dpre, precision="highest")
    state = AdamState((mom,), (v,), jnp.asarray(2.0, env.dtype))
    (want,), _ = adam((decays[None, :],)).update((w,), state, (grad,), (rates[None, :],))
    scalars = jnp.asarray([*adam_corrections(3), 1, 0], env.dtype)
    got = stacked_input_adam_reference(x, dpre, w, mom, v, rates, decays, scalars, "highest")[0]
    assert_close(got, want, env, "w")


def test_a_padding_step_leaves_everything_as_it_was(env, rng):
    x, dpre, w, mom, v, rates, decays, scalars = _problem(env, rng, 16, 64, 64, 2)
    got = stacked_input_adam(
        x,
        dpre,
        jnp.copy(w),
        jnp.copy(mom),
        jnp.copy(v),
        rates,
        decays,
        scalars.at[2].set(0),
        block_sizes=StackedInputAdamBlocks(block_m=16, block_f=32, block_n=32, sub_tiles=1),
        precision=env.precision,
        interpret=env.interpret,
    )
    for a, before in zip(got, (w, mom, v)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(before))


@gpu_only
@pytest.mark.parametrize(
    "rows, blocks",
    [
        (64, StackedInputAdamBlocks()),
        (64, StackedInputAdamBlocks(block_f=32, num_warps=4, num_stages=2, sub_tiles=1, stream=None)),
        (1024, StackedInputAdamBlocks(block_m=32, num_warps=4, sub_tiles=8)),  # many chunks: the GEMM loop order
        (1024, StackedInputAdamBlocks(block_m=32, block_f=64, block_n=64, num_warps=4, sub_tiles=1, columns=True)),
    ],
)
def test_search_shape_with_bf16_rows(env, rng, rows, blocks):
    """The search's shape: 8,192 columns, 6 networks of 128 units, a batch of news4-like rows in bf16."""
    x, dpre, w, mom, v, rates, decays, scalars = _problem(env, rng, rows, 8192, 768, 6)
    x = (x * (rng.uniform(size=x.shape) < 0.01)).astype(jnp.bfloat16)
    expected = stacked_input_adam_reference(
        x.astype(jnp.float32), dpre.astype(jnp.bfloat16), w, mom, v, rates, decays, scalars, "highest"
    )
    poison_device_memory()
    got = stacked_input_adam(
        x, dpre, jnp.copy(w), jnp.copy(mom), jnp.copy(v), rates, decays, scalars, block_sizes=blocks
    )
    for name, a, b in zip("wmv", got, expected):
        assert float(jnp.abs(a - b).max()) < 1e-4 * float(jnp.abs(b).max()) + 1e-6, name
