"""The image classifier: a LeNet-style network trained like the text MLP (whole epochs on the device, Adam).

  (conv KxK "same" + bias + ReLU -> 2x2 max-pool) per entry of `channels`, then a ReLU fully connected layer of
  `hidden` units and a softmax over the classes. Defaults: channels (32, 64), 5x5 kernels, hidden 128; Adam
  at 1e-3, batch 64, decayed by a cosine over 20 epochs, dropout 0.25 on the hidden layer, training images shifted by up
  to 2 px: Fashion-MNIST test accuracy 0.9294 on an H100 (0.909-0.917 with 10 epochs, with or without them;
  BENCHMARKS.md has the sweep).

backend "xla": lax.conv_general_dilated (cuDNN on a GPU) and max_pool (a fused reshape and max); "pallas": the
implicit-GEMM convolution with the pool fused into it (pallas_kernels/conv2d.py conv2d_pool) and its explicit
backward passes, and the output layer + softmax + log-loss is the text MLP's softmax_xent kernel (softmax_xent_loss);
the hidden dense layer is plain JAX on both paths (the MLP's hidden kernels fuse a sigmoid, not a ReLU).
Images arrive as uint8 (N, H, W, C) and are scaled to [0, 1] on the device.

The training loop is textclf/training/cnn.py (fit_cnn, reached from `textclf train IMAGES --model cnn` through
textclf/runs/images.py); trained models are textclf/inference/image_model.py.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class ConvLayer(NamedTuple):
    w: jax.Array  # (K, K, Cin, Cout)
    b: jax.Array  # (Cout,)


class CNNParams(NamedTuple):
    convs: tuple  # of ConvLayer
    fc_w: jax.Array  # (features after the last pool, hidden)
    fc_b: jax.Array
    out_w: jax.Array  # (hidden, classes)
    out_b: jax.Array


def init_cnn(
    key, image_shape: tuple[int, int, int], n_classes: int, channels: tuple[int, ...], kernel: int, hidden: int
) -> CNNParams:
    """He-uniform convolutions (one of kernel x kernel per entry of channels, its output channels) and dense
    layers (ReLU, `hidden` units), zero biases."""
    h, w, c = image_shape
    keys = jax.random.split(key, len(channels) + 2)
    convs = []
    for k, cout in zip(keys, channels):
        fan_in = kernel * kernel * c
        limit = np.sqrt(6.0 / fan_in)
        convs.append(
            ConvLayer(
                jax.random.uniform(k, (kernel, kernel, c, cout), jnp.float32, -limit, limit),
                jnp.zeros((cout,), jnp.float32),
            )
        )
        h, w, c = h // 2, w // 2, cout
    flat = h * w * c
    dense = lambda k, n_in, n_out: jax.random.uniform(
        k, (n_in, n_out), jnp.float32, -np.sqrt(6.0 / n_in), np.sqrt(6.0 / n_in)
    )
    return CNNParams(
        tuple(convs),
        dense(keys[-2], flat, hidden),
        jnp.zeros((hidden,)),
        dense(keys[-1], hidden, n_classes),
        jnp.zeros((n_classes,)),
    )


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def max_pool(x: jax.Array, size: int = 2) -> jax.Array:
    """The XLA path's max pool, (N, H, W, C) -> (N, H // size, W // size, C): each window's largest value by a
    reshape and a max, which XLA fuses into one pass; its gradient goes to the window's first largest tap (row by
    row), as the Pallas kernel's does, ties included: the same values and gradients, bit for bit, as
    pallas_kernels.maxpool.maxpool_reference (the kernel's test oracle, whose argmax-and-take gradient took 3.9x
    this one's time on the 2-core CPU for the default CNN's first pool; BENCHMARKS.md, "The CNN on a CPU").
    Rows and columns past the last whole window are dropped (and get no gradient)."""
    return jnp.max(_windows(x, size), axis=(2, 4))


def _windows(x: jax.Array, size: int) -> jax.Array:
    """(N, H, W, C) -> (N, H // size, size, W // size, size, C): the whole windows, no copy."""
    n, height, width, channels = x.shape
    out_h, out_w = height // size, width // size
    return x[:, : out_h * size, : out_w * size].reshape(n, out_h, size, out_w, size, channels)


def _max_pool_fwd(x, size):
    y = max_pool(x, size)
    return y, (x, y)


def _max_pool_bwd(size, residuals, dy):
    x, y = residuals
    n, height, width, channels = x.shape
    out_h, out_w = height // size, width // size
    windows = _windows(x, size)
    taken = jnp.zeros(y.shape, bool)  # (N, OH, OW, C): the window's largest tap already found
    rows = []
    for kh in range(size):  # taps in row order: the first largest gets dy, elementwise (no gather or scatter)
        columns = []
        for kw in range(size):
            first = (windows[:, :, kh, :, kw] == y) & ~taken
            taken = taken | first
            columns.append(jnp.where(first, dy, jnp.zeros((), dy.dtype)))
        rows.append(jnp.stack(columns, axis=3))  # (N, OH, OW, size, C)
    dx = jnp.stack(rows, axis=2).reshape(n, out_h * size, out_w * size, channels)
    return (jnp.pad(dx, ((0, 0), (0, height - out_h * size), (0, width - out_w * size), (0, 0))),)


max_pool.defvjp(_max_pool_fwd, _max_pool_bwd)


@dataclass(frozen=True)
class ConvKernels:
    """How the Pallas path runs a convolution layer: fused_pool, the convolution with the 2x2 pool after it as one
    kernel (pallas_kernels/conv2d.py conv2d_pool: the convolution's output never goes to memory) or the convolution,
    then the pool kernel; weight_grad, the dW blocks for layers of 16 or more input channels (None: conv_blocks').
    The product runs PALLAS_CONV; a benchmark passes the others in (BENCHMARKS.md, "CNN")."""

    fused_pool: bool = True
    weight_grad: object | None = None


PALLAS_CONV = ConvKernels()


def conv_blocks(cin: int, interpret: bool = False, pooled: bool = False, kernels: ConvKernels = PALLAS_CONV) -> tuple:
    """The Pallas conv2d's blocks for a layer over cin input channels: (forward, dW, precision, interpret, dX);
    pooled: the forward entry for conv2d_pool, whose block_m counts 2x2 windows (4 pixels each).
    From a sweep of the default network's two layers (5x5) at batch 64 on an H200 (`python -m
    benchmarks.kernels.mlp.cnn_layers --sweep`, then the training epoch): an image's few channels (the im2col
    gather) and 16 or more (whole pixel rows) want others."""
    from pallas_kernels.conv2d import Conv2dForwardBlocks, Conv2dWeightGradBlocks

    if cin % 16:
        forward = Conv2dForwardBlocks(block_m=128, block_n=32)
        pool_forward = Conv2dForwardBlocks(block_m=64, block_n=32)
        weight_grad = Conv2dWeightGradBlocks(block_m=128, programs=512)
    else:
        forward = pool_forward = Conv2dForwardBlocks(block_m=32, block_n=64, num_stages=3)
        weight_grad = kernels.weight_grad or Conv2dWeightGradBlocks(block_m=128, programs=512)
    return (pool_forward if pooled else forward, weight_grad, "default", interpret, forward)


def cnn_hidden(
    params: CNNParams,
    images: jax.Array,
    backend: str = "xla",
    interpret: bool = False,
    kernels: ConvKernels = PALLAS_CONV,
) -> jax.Array:
    """uint8 or float (B, H, W, C) -> (B, hidden) activations of the fully connected ReLU layer."""
    x = images.astype(jnp.float32) / 255.0 if images.dtype == jnp.uint8 else images
    for layer in params.convs:
        pad = layer.w.shape[0] // 2
        cin = layer.w.shape[2]
        if backend == "pallas" and kernels.fused_pool:
            from pallas_kernels.conv2d import conv2d_pool

            x = conv2d_pool(x, layer.w, layer.b, pad, conv_blocks(cin, interpret, pooled=True, kernels=kernels))
        elif backend == "pallas":
            from pallas_kernels.conv2d import conv2d
            from pallas_kernels.maxpool import maxpool2d

            x = maxpool2d(conv2d(x, layer.w, layer.b, pad, conv_blocks(cin, interpret, kernels=kernels)), 2, interpret)
        else:
            from pallas_kernels.conv2d import conv2d_reference

            x = max_pool(conv2d_reference(x, layer.w, layer.b, pad), 2)
    x = x.reshape(x.shape[0], -1)
    return jax.nn.relu(x @ params.fc_w + params.fc_b)


def cnn_logits(params: CNNParams, images: jax.Array, backend: str = "xla", interpret: bool = False) -> jax.Array:
    """uint8 or float (B, H, W, C) -> (B, classes) scores."""
    return cnn_hidden(params, images, backend, interpret) @ params.out_w + params.out_b


SHIFT_PIXELS = 2


def augment_batch(key, images: jax.Array, kinds: tuple[str, ...]) -> jax.Array:
    """Random label-preserving changes, drawn per image: "shift" moves it by up to SHIFT_PIXELS each way
    (zeros fill in), "flip" mirrors it left-right with probability 1/2. images (B, H, W, C) -> same shape."""
    shift_key, flip_key = jax.random.split(key)
    if "shift" in kinds:
        b, h, w, c = images.shape
        p = SHIFT_PIXELS
        padded = jnp.pad(images, ((0, 0), (p, p), (p, p), (0, 0)))
        offsets = jax.random.randint(shift_key, (b, 2), 0, 2 * p + 1)
        images = jax.vmap(lambda im, o: jax.lax.dynamic_slice(im, (o[0], o[1], 0), (h, w, c)))(padded, offsets)
    if "flip" in kinds:
        flip = jax.random.bernoulli(flip_key, 0.5, (images.shape[0], 1, 1, 1))
        images = jnp.where(flip, images[:, :, ::-1, :], images)
    return images


def head_loss(
    params: CNNParams, hidden: jax.Array, labels: jax.Array, weight: jax.Array, backend: str, interpret: bool
):
    """hidden (B, H), labels (B,), weight (B,) -> (sum of weight * nll, number of rows predicted right).
    The Pallas path runs the text MLP's fused output layer + softmax + log-loss kernel (softmax_xent_loss)."""
    if backend == "pallas":
        from pallas_kernels.softmax_xent import softmax_xent_loss

        loss, predicted = softmax_xent_loss(
            hidden, params.out_w, params.out_b, labels, weight, params.out_w.shape[1], "default", interpret
        )
    else:
        scores = hidden @ params.out_w + params.out_b
        nll = -jnp.take_along_axis(jax.nn.log_softmax(scores), labels[:, None], axis=1)[:, 0]
        loss, predicted = jnp.sum(nll * weight), scores.argmax(1)
    return loss, jnp.sum((predicted == labels) * (weight > 0))


@functools.lru_cache(maxsize=8)
def scorer(backend: str = "xla", interpret: bool = False, probabilities: bool = False):
    """jit(params, uint8 images -> predicted class numbers, or softmax probabilities), one per configuration
    for the life of the process (a fresh jit per call would compile again every epoch and every request)."""

    def score(params, images):
        logits = cnn_logits(params, images, backend, interpret)
        return jax.nn.softmax(logits) if probabilities else logits.argmax(axis=1)

    return jax.jit(score)


def predict_cnn(
    params: CNNParams, images: np.ndarray, backend: str = "xla", interpret: bool = False, batch_size: int = 1000
) -> np.ndarray:
    """uint8 (N, H, W, C) -> (N,) predicted class numbers."""
    score = scorer(backend, interpret)
    return np.concatenate(
        [np.asarray(score(params, jnp.asarray(images[i : i + batch_size]))) for i in range(0, len(images), batch_size)]
    )
