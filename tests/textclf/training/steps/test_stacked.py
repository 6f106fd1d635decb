"""The K-network step's starting state (textclf/training/steps/stacked.py): seeded or given, each one program."""

import jax
import numpy as np

from textclf.models.stacked import init_stacked
from textclf.training.steps.stacked import StackedStep, init_stack


def test_a_seeded_stack_and_a_given_one_start_as_written_out_with_zeroed_adam_moments():
    step = StackedStep("flat", models=3)
    params, state = step.start_state(7, 64, 8, 5)
    written_out = init_stacked(jax.random.PRNGKey(7), 64, 8, 5, 3)  # op by op, not compiled as one program
    assert all(np.array_equal(a, b) for a, b in zip(params, written_out))
    given = init_stack(jax.random.PRNGKey(7), 64, 8, 5, 3)
    copied, copied_state = step.ready_state(given)
    for a, b in zip(copied, given):
        assert np.array_equal(a, b)
        assert a.unsafe_buffer_pointer() != b.unsafe_buffer_pointer()  # a copy: the epoch donates what it is given
    for adam in (state, copied_state):
        assert float(adam.step) == 0.0
        assert all(not np.any(np.asarray(m)) for m in (*adam.m, *adam.v))
        assert [m.shape for m in adam.m] == [p.shape for p in params]
