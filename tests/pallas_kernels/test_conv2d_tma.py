"""conv2d_blocked_forward against plain JAX: in interpret mode on any machine, compiled on a Hopper GPU."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.conv2d_tma import (
    Conv2dTmaBlocks,
    conv2d_blocked,
    conv2d_blocked_forward,
    conv2d_blocked_reference,
    default_blocks,
    from_blocked,
    supports_tma,
    to_blocked,
)


def _reference(x, w, b, pad, relu):
    """x NHWC -> NHWC."""
    return from_blocked(conv2d_blocked_reference(to_blocked(x), w, b, pad, relu))


def _check_gradients(x, w, b, pad, blocks, interpret):
    """conv2d_blocked's value and gradients against the reference's, for a random cotangent."""
    x_blocked = to_blocked(x)
    y = conv2d_blocked(x_blocked, w, b, pad, blocks, interpret)
    cotangent = jnp.asarray(np.random.default_rng(2).normal(size=y.shape), jnp.float32)

    def loss(f):
        return lambda x_, w_, b_: jnp.sum(f(x_, w_, b_).astype(jnp.float32) * cotangent)

    got = jax.grad(loss(lambda x_, w_, b_: conv2d_blocked(x_, w_, b_, pad, blocks, interpret)), argnums=(0, 1, 2))(
        x_blocked, w, b
    )
    want = jax.grad(loss(lambda x_, w_, b_: conv2d_blocked_reference(x_, w_, b_, pad)), argnums=(0, 1, 2))(
        x_blocked.astype(jnp.float32), w.astype(jnp.float32), b
    )
    for name, g, e in zip(("dx", "dw", "db"), got, want):
        scale = float(jnp.max(jnp.abs(e)))
        np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(e), atol=0.02 * scale, rtol=0.02, err_msg=name)


def _case(seed, shape, size, cout):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.normal(size=shape), jnp.bfloat16)
    w = jnp.asarray(rng.normal(size=(size, size, shape[3], cout)) / np.sqrt(size * size * shape[3]), jnp.bfloat16)
    b = jnp.asarray(rng.normal(size=(cout,)), jnp.float32)
    return x, w, b


# Interpret mode (jax 0.11.2) zero-fills a TMA box that overhangs the far end of an array but not one that starts
# before it, which the hardware also zero-fills: the "same" padding's boxes start at -pad, so the padded cases run
# on the GPU only; on a CPU the valid (pad 0) ones cover the tiling, the pipeline and the tiles that overhang.
@pytest.mark.parametrize(
    "shape, size, cout, blocks, relu",
    [
        ((16, 6, 7, 128), 3, 128, Conv2dTmaBlocks(tile_h=2, tile_w=2, tile_n=16, block_n=64, stages=3), True),
        ((16, 5, 6, 64), 3, 256, Conv2dTmaBlocks(tile_h=1, tile_w=4, tile_n=16, block_n=128, stages=2), False),
        ((8, 4, 5, 64), 1, 64, Conv2dTmaBlocks(tile_h=2, tile_w=4, tile_n=8, block_n=64, stages=4), True),
    ],
)
def test_valid_convolution_in_interpret_mode(shape, size, cout, blocks, relu):
    x, w, b = _case(0, shape, size, cout)
    out = from_blocked(conv2d_blocked_forward(to_blocked(x), w, b, pad=0, relu=relu, blocks=blocks, interpret=True))
    expected = _reference(x, w, b, 0, relu)
    assert out.shape == expected.shape and out.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(out, np.float32), np.asarray(expected), atol=0.05, rtol=0.02)


@pytest.mark.parametrize("images", [8, 16, 24, 32, 64])
@pytest.mark.parametrize("cout", [64, 128, 256, 512])
def test_default_blocks_fit_one_warpgroup(images, cout):
    blocks = default_blocks(images, cout)
    rows = blocks.tile_h * blocks.tile_w * blocks.tile_n
    assert images % blocks.tile_n == 0 and blocks.tile_n % 8 == 0 and rows % 64 == 0
    assert cout % min(blocks.block_n, cout) == 0 and rows * min(blocks.block_n, cout) <= 128 * 256


def test_default_blocks_in_interpret_mode():
    x, w, b = _case(5, (8, 3, 5, 64), 1, 128)
    out = from_blocked(conv2d_blocked_forward(to_blocked(x), w, b, pad=0, interpret=True))
    np.testing.assert_allclose(
        np.asarray(out, np.float32), np.asarray(_reference(x, w, b, 0, True)), atol=0.05, rtol=0.02
    )


def test_gradients_in_interpret_mode():
    # 1 x 1 (pad 0 both ways): the backward's dX convolution runs on the kernel too, and its boxes stay in bounds.
    x, w, b = _case(3, (16, 4, 6, 128), 1, 64)
    _check_gradients(x, w, b, 0, Conv2dTmaBlocks(tile_h=2, tile_w=2, tile_n=16, block_n=64, stages=3), True)


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(cout=96), "Cout a multiple of 64"),
        (dict(cout=192), "multiple of block_n"),
        (dict(images=12), "N a multiple of 8"),
        (dict(images=16, blocks=Conv2dTmaBlocks(tile_n=32)), "multiple of tile_n 32"),
        (
            dict(images=16, blocks=Conv2dTmaBlocks(tile_h=1, tile_w=2, tile_n=16)),
            "multiple of 64 .a wgmma's rows., not 32",
        ),
    ],
)
def test_rejects_shapes_it_cannot_tile(bad, match):
    cout, images = bad.get("cout", 128), bad.get("images", 32)
    x, w, b = _case(0, (images, 8, 8, 64), 3, cout)
    with pytest.raises(ValueError, match=match):
        conv2d_blocked_forward(to_blocked(x), w, b, pad=1, blocks=bad.get("blocks"), interpret=True)


def test_blocked_layout_round_trip():
    x = jnp.arange(2 * 3 * 4 * 128, dtype=jnp.float32).reshape(2, 3, 4, 128)
    blocked = to_blocked(x)
    assert blocked.shape == (3, 4, 2, 2, 64)
    assert float(blocked[1, 2, 1, 0, 5]) == float(x[0, 1, 2, 64 + 5])
    np.testing.assert_array_equal(from_blocked(blocked), x)


hopper = pytest.mark.skipif(
    not any(d.platform == "gpu" and getattr(d, "compute_capability", "").startswith("9") for d in jax.devices()),
    reason="needs a Hopper GPU (TMA and wgmma)",
)


@hopper
@pytest.mark.parametrize(
    "shape, size, cout, blocks",
    [
        ((32, 32, 48, 64), 3, 64, Conv2dTmaBlocks(tile_h=2, tile_w=2, tile_n=32, block_n=64, stages=4)),
        ((24, 14, 14, 128), 3, 256, Conv2dTmaBlocks(tile_h=4, tile_w=4, tile_n=8, block_n=128, stages=4)),
        ((16, 13, 11, 64), 3, 128, Conv2dTmaBlocks(tile_h=2, tile_w=4, tile_n=16, block_n=128, stages=3)),
        ((16, 7, 9, 256), 5, 512, Conv2dTmaBlocks(tile_h=1, tile_w=4, tile_n=16, block_n=256, stages=4)),
    ],
)
def test_same_padding_on_the_gpu(shape, size, cout, blocks):
    x, w, b = _case(1, shape, size, cout)
    assert supports_tma(x, w)
    # Poisoned output memory shows unwritten elements: fill the allocator's free blocks with NaN first.
    poison = jnp.full((4, *shape[:3], cout), jnp.nan, jnp.bfloat16).block_until_ready()
    del poison
    out = from_blocked(conv2d_blocked_forward(to_blocked(x), w, b, pad=size // 2, blocks=blocks))
    np.testing.assert_allclose(
        np.asarray(out, np.float32), np.asarray(_reference(x, w, b, size // 2, True)), atol=0.05, rtol=0.02
    )


@hopper
def test_gradients_on_the_gpu():
    x, w, b = _case(4, (16, 12, 10, 64), 3, 128)
    _check_gradients(x, w, b, 1, Conv2dTmaBlocks(tile_h=2, tile_w=2, tile_n=16, block_n=64, stages=4), False)


@hopper
@pytest.mark.parametrize("shape, cout", [((32, 20, 18, 64), 64), ((16, 9, 7, 128), 128), ((8, 6, 6, 256), 512)])
def test_default_blocks_on_the_gpu(shape, cout):
    x, w, b = _case(6, shape, 3, cout)
    out = from_blocked(conv2d_blocked_forward(to_blocked(x), w, b, pad=1))
    np.testing.assert_allclose(
        np.asarray(out, np.float32), np.asarray(_reference(x, w, b, 1, True)), atol=0.05, rtol=0.02
    )
