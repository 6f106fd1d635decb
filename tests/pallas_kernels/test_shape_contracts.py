"""Every kernel wrapper refuses arrays it cannot take, naming itself, what it takes and what it got, instead of
zero-padding a caller's mismatch into quietly wrong results. Checked while tracing: nothing is compiled."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from pallas_kernels.adam_update import adam_update
from pallas_kernels.common import KernelShapeError
from pallas_kernels.conv2d import conv2d_forward, conv2d_weight_grad
from pallas_kernels.head_update import head_adam_update, head_update
from pallas_kernels.hidden_backward import hidden_backward_partials
from pallas_kernels.hidden_forward import hidden_forward
from pallas_kernels.input_grad import input_grad, input_grad_adam_update, input_grad_update
from pallas_kernels.maxpool import maxpool_backward, maxpool_forward
from pallas_kernels.pieces_hidden import pieces_gather_sum
from pallas_kernels.sgd_update import SgdUpdateBlocks, sgd_update
from pallas_kernels.softmax_xent import softmax_xent
from pallas_kernels.sparse_hidden import sparse_hidden_forward, sparse_input_grad, sparse_input_grad_update


def z(*shape, dtype=jnp.float32):
    return jnp.zeros(shape, dtype)


I = jnp.int32
CASES = {
    # kernel name: a call with one mismatch (the comment says which)
    "hidden_forward": lambda: hidden_forward(
        z(8, 64), z(128, 16), z(16), interpret=True
    ),  # x has 64 columns, w1 128 rows
    "hidden_forward bias": lambda: hidden_forward(z(8, 64), z(64, 16), z(8), interpret=True),
    "hidden_backward_partials": lambda: hidden_backward_partials(z(8, 4), z(16, 8), z(8, 16), interpret=True),
    "softmax_xent": lambda: softmax_xent(z(8, 16), z(16, 4), z(4), z(7, dtype=I), z(8), n_classes=4, interpret=True),
    "softmax_xent classes": lambda: softmax_xent(
        z(8, 16), z(16, 4), z(4), z(8, dtype=I), z(8), n_classes=5, interpret=True
    ),
    "input_grad": lambda: input_grad(z(8, 128), z(9, 16), interpret=True),
    "input_grad_update": lambda: input_grad_update(
        z(8, 128), z(8, 16), z(128, 8), z(128, 8), 0.1, momentum=0.9, weight_decay=0.0, interpret=True
    ),
    "input_grad_adam_update": lambda: input_grad_adam_update(
        z(8, 128), z(8, 16), z(128, 16), z(128, 16), z(64, 16), z(4), weight_decay=0.0, interpret=True
    ),
    "adam_update": lambda: adam_update(z(64), z(64), z(32), z(64), z(4), interpret=True),
    "sgd_update": lambda: sgd_update(z(64), z(64), z(64, 2), 0.1, momentum=0.9, weight_decay=0.0, interpret=True),
    "sgd_update block": lambda: sgd_update(
        z(64), z(64), z(64), 0.1, momentum=0.9, weight_decay=0.0, block_sizes=SgdUpdateBlocks(block=48), interpret=True
    ),
    "head_update": lambda: head_update(
        z(16),
        z(16),
        z(16, 4),
        z(16, 4),
        z(4),
        z(4),
        z(2, 16),
        z(2, 16, 8),
        z(2, 4),
        0.1,
        momentum=0.9,
        weight_decay=0.0,
        interpret=True,
    ),
    "head_adam_update": lambda: head_adam_update(
        z(16),
        z(16),
        z(16),
        z(16, 4),
        z(16, 4),
        z(16, 4),
        z(4),
        z(4),
        z(4),
        z(3, 16),
        z(2, 16, 4),
        z(2, 4),
        z(4),
        weight_decay=0.0,
        interpret=True,
    ),
    "sparse_hidden_forward": lambda: sparse_hidden_forward(
        z(32, dtype=I), z(31), z(32, dtype=I), z(64, 16), z(16), batch_size=4, interpret=True
    ),
    "sparse_input_grad": lambda: sparse_input_grad(
        z(32, dtype=I), z(32), z(32, dtype=I), z(4, 16), n_features=100, interpret=True
    ),
    "sparse_input_grad_update": lambda: sparse_input_grad_update(
        z(32, dtype=I),
        z(32),
        z(32, dtype=I),
        z(4, 16),
        z(64, 8),
        z(64, 8),
        0.1,
        momentum=0.9,
        weight_decay=0.0,
        interpret=True,
    ),
    "pieces_gather_sum": lambda: pieces_gather_sum(z(8, 4, dtype=I), z(8, 2), z(64, 16), interpret=True),
    "conv2d_forward": lambda: conv2d_forward(z(2, 8, 8, 3), z(3, 3, 4, 8), z(8), pad=1, interpret=True),
    "conv2d_weight_grad": lambda: conv2d_weight_grad(z(2, 8, 8, 3), z(2, 7, 8, 8), size=3, pad=1, interpret=True),
    "maxpool_forward": lambda: maxpool_forward(z(8, 8, 3), interpret=True),
    "maxpool_backward": lambda: maxpool_backward(
        z(2, 4, 4, 3), z(2, 4, 4, 3, dtype=I), size=2, height=8, width=10, interpret=True
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_mismatched_shape_is_refused_by_name(case):
    kernel = case.split()[0]
    with pytest.raises(KernelShapeError, match=f"^{kernel}"):
        CASES[case]()
