import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.conv2d import (
    Conv2dForwardBlocks,
    Conv2dWeightGradBlocks,
    conv2d,
    conv2d_forward,
    conv2d_pool,
    conv2d_pool_forward,
    conv2d_reference,
    conv2d_weight_grad,
)
from pallas_kernels.maxpool import maxpool_reference
from tests.pallas_kernels.conftest import assert_close, gpu_only, poison_device_memory

CASES = [  # (N, H, W, Cin, Cout, K, pad): odd sizes, both paddings, 3/5/7 kernels, the LeNet layers' channels
    (2, 9, 7, 1, 4, 3, 1),
    (3, 8, 8, 4, 16, 5, 0),
    (1, 11, 10, 3, 20, 7, 3),
    (2, 7, 9, 17, 5, 3, 0),
    (1, 5, 6, 130, 3, 3, 1),  # 3*3*130 = 1,170 im2col columns: the looped (not unrolled) K path
    (2, 6, 5, 32, 8, 3, 1),  # Cin a multiple of 16: the row-gather implicit GEMM, taps in the padding masked
    (1, 4, 5, 128, 4, 3, 1),  # ... several channel blocks a tap
    (3, 9, 7, 16, 24, 5, 0),  # ... no padding: a smaller output grid
    (2, 7, 6, 48, 16, 5, 1),  # ... padding narrower than the kernel's half; Cin's largest power-of-two factor 16
]


@pytest.mark.parametrize("channels_fastest", [True, False])
@pytest.mark.parametrize("n, h, w, cin, cout, size, pad", CASES)
def test_forward_matches_lax_conv(env, rng, n, h, w, cin, cout, size, pad, channels_fastest):
    x, weights, bias = (
        env.array(rng, (n, h, w, cin)),
        env.array(rng, (size, size, cin, cout), 0.3),
        env.array(rng, (cout,)),
    )
    poison_device_memory()
    blocks = Conv2dForwardBlocks(block_m=32, block_n=16, channels_fastest=channels_fastest)  # 2 channel blocks
    got = conv2d_forward(
        x, weights, bias, pad=pad, block_sizes=blocks, precision=env.precision, interpret=env.interpret
    )
    assert_close(got, conv2d_reference(x, weights, bias, pad, "highest"), env)
    assert (got == 0).any() and (got > 0).any()  # the ReLU cut some, not all


# Both dW kernels: rows (Cin a multiple of 16: whole pixel rows a tap) and the im2col gather (any Cin).
@pytest.mark.parametrize(
    "n, h, w, cin, cout, size, pad, rows",
    [(*case, False) for case in CASES] + [(*case, True) for case in CASES if case[3] % 16 == 0],
)
def test_weight_grad_matches_reference(env, rng, n, h, w, cin, cout, size, pad, rows):
    x = env.array(rng, (n, h, w, cin))
    out_h, out_w = h + 2 * pad - size + 1, w + 2 * pad - size + 1
    dz = env.array(rng, (n, out_h, out_w, cout))
    poison_device_memory()
    blocks = Conv2dWeightGradBlocks(block_r=16, block_m=32, programs=6, rows=rows)
    got = conv2d_weight_grad(
        x, dz, size=size, pad=pad, block_sizes=blocks, precision=env.precision, interpret=env.interpret
    )
    linear = lambda wt: jnp.sum(
        jax.lax.conv_general_dilated(
            x,
            wt,
            (1, 1),
            [(pad, pad), (pad, pad)],
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
            precision=jax.lax.Precision.HIGHEST,
        )
        * dz
    )
    assert_close(got, jax.grad(linear)(jnp.zeros((size, size, cin, cout), env.dtype)), env)


@pytest.mark.parametrize("n, h, w, cin, cout, size, pad", CASES[:3])
def test_gradients_match_jax_grad_of_reference(env, rng, n, h, w, cin, cout, size, pad):
    x, weights, bias = (
        env.array(rng, (n, h, w, cin)),
        env.array(rng, (size, size, cin, cout), 0.3),
        env.array(rng, (cout,)),
    )
    out_h, out_w = h + 2 * pad - size + 1, w + 2 * pad - size + 1
    probe = env.array(rng, (n, out_h, out_w, cout))
    kernel = (
        Conv2dForwardBlocks(block_m=32, block_n=16),
        Conv2dWeightGradBlocks(block_m=32),
        env.precision,
        env.interpret,
    )
    loss = lambda *a: jnp.sum(conv2d(*a, pad, kernel) * probe)
    with jax.default_matmul_precision("highest"):
        want = jax.grad(lambda *a: jnp.sum(conv2d_reference(*a, pad, "highest") * probe), argnums=(0, 1, 2))(
            x, weights, bias
        )
    got = jax.grad(loss, argnums=(0, 1, 2))(x, weights, bias)
    for name, a, b in zip(("dx", "dw", "db"), got, want):
        assert_close(a, b, env, name)


POOL_CASES = [  # (N, H, W, Cin, Cout, K, pad): both kernels, odd output sizes (a row and a column no window takes)
    (2, 9, 7, 1, 4, 3, 1),
    (3, 8, 8, 4, 16, 5, 0),
    (2, 6, 5, 32, 8, 3, 1),
    (2, 7, 6, 48, 16, 5, 2),
]


@pytest.mark.parametrize("n, h, w, cin, cout, size, pad", POOL_CASES)
def test_pooled_forward_matches_conv_then_pool(env, rng, n, h, w, cin, cout, size, pad):
    x, weights, bias = (
        env.array(rng, (n, h, w, cin)),
        env.array(rng, (size, size, cin, cout), 0.3),
        env.array(rng, (cout,)),
    )
    poison_device_memory()
    blocks = Conv2dForwardBlocks(block_m=16, block_n=16)  # 16 windows a program, 2 channel blocks where Cout is 32
    pooled, which = conv2d_pool_forward(
        x, weights, bias, pad=pad, block_sizes=blocks, precision=env.precision, interpret=env.interpret
    )
    conv = conv2d_reference(x, weights, bias, pad, "highest")
    assert_close(pooled, maxpool_reference(conv), env)
    # `which` names a window pixel holding the window's value
    out_h, out_w = pooled.shape[1], pooled.shape[2]
    windows = conv[:, : 2 * out_h, : 2 * out_w].reshape(n, out_h, 2, out_w, 2, cout).transpose(0, 1, 3, 5, 2, 4)
    chosen = jnp.take_along_axis(windows.reshape(n, out_h, out_w, cout, 4), which[..., None], axis=-1)[..., 0]
    assert which.dtype == jnp.int32 and bool(((which >= 0) & (which < 4)).all())
    assert_close(chosen, pooled, env)
    assert (pooled == 0).any() and (pooled > 0).any()  # the ReLU cut some windows whole, not all


@pytest.mark.parametrize("n, h, w, cin, cout, size, pad", POOL_CASES)
def test_pooled_gradients_match_jax_grad_of_reference(env, rng, n, h, w, cin, cout, size, pad):
    x, weights, bias = (
        env.array(rng, (n, h, w, cin)),
        env.array(rng, (size, size, cin, cout), 0.3),
        env.array(rng, (cout,)),
    )
    out_h, out_w = h + 2 * pad - size + 1, w + 2 * pad - size + 1
    probe = env.array(rng, (n, out_h // 2, out_w // 2, cout))
    kernel = (
        Conv2dForwardBlocks(block_m=16, block_n=16),
        Conv2dWeightGradBlocks(block_m=32),
        env.precision,
        env.interpret,
        Conv2dForwardBlocks(block_m=32, block_n=16),
    )
    loss = lambda *a: jnp.sum(conv2d_pool(*a, pad, kernel) * probe)
    with jax.default_matmul_precision("highest"):
        want = jax.grad(
            lambda *a: jnp.sum(maxpool_reference(conv2d_reference(*a, pad, "highest")) * probe), argnums=(0, 1, 2)
        )(x, weights, bias)
    got = jax.grad(loss, argnums=(0, 1, 2))(x, weights, bias)
    for name, a, b in zip(("dx", "dw", "db"), got, want):
        assert_close(a, b, env, name)


@pytest.mark.parametrize("cin", [3, 32])
def test_bf16_operands_round_only_the_products_inputs(env, rng, cin):
    """operand_dtype="bfloat16": the products of x and w rounded to bf16, summed in fp32; the output keeps x's
    dtype. Compared with the reference on the same rounded inputs, so only the summation order differs."""
    x, weights, bias = env.array(rng, (2, 7, 6, cin)), env.array(rng, (3, 3, cin, 24), 0.3), env.array(rng, (24,))
    poison_device_memory()
    got = conv2d_forward(
        x,
        weights,
        bias,
        pad=1,
        block_sizes=Conv2dForwardBlocks(block_m=32, block_n=16),
        operand_dtype="bfloat16",
        interpret=env.interpret,
    )
    rounded = lambda a: a.astype(jnp.bfloat16).astype(env.dtype)
    want = conv2d_reference(rounded(x), rounded(weights), bias, 1, "highest")
    assert got.dtype == x.dtype
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-4, atol=1e-4)
    assert not np.allclose(np.asarray(got), np.asarray(conv2d_reference(x, weights, bias, 1, "highest")), atol=1e-6)


@gpu_only
def test_lenet_layer_shapes(env, rng):
    """The original design's layers at batch 1,000: 1->4 channels then 4->16, 7x7 kernels, 'same' padding."""
    x = env.array(rng, (1000, 28, 28, 1))
    for cin, cout in ((1, 4), (4, 16)):
        w, b = env.array(rng, (7, 7, cin, cout), 0.1), env.array(rng, (cout,))
        x_in = x if cin == 1 else jnp.maximum(env.array(rng, (1000, 28, 28, 4)), 0)
        got = conv2d_forward(x_in, w, b, pad=3)
        want = conv2d_reference(x_in, w, b, 3, "highest")
        assert float(jnp.abs(got - want).max()) < 1e-2 * float(jnp.abs(want).max())


def test_one_by_one_convolution_is_a_dense_layer(env, rng):
    """VGG's fully connected layers run as 1x1 convolutions over (B, 1, 1, features): x @ w + b, ReLU."""
    x, weights, bias = env.array(rng, (3, 1, 1, 70)), env.array(rng, (1, 1, 70, 33), 0.3), env.array(rng, (33,))
    poison_device_memory()
    got = conv2d_forward(
        x,
        weights,
        bias,
        pad=0,
        relu=False,
        block_sizes=Conv2dForwardBlocks(block_m=16, block_n=16, block_k=16),
        precision=env.precision,
        interpret=env.interpret,
    )
    assert got.shape == (3, 1, 1, 33)
    want = jnp.dot(x[:, 0, 0], weights[0, 0], precision=jax.lax.Precision.HIGHEST) + bias
    assert_close(got[:, 0, 0], want, env)
