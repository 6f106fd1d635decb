"""The K-network step (textclf/training/stacked_step.py): its starting state, seeded or given, each one program;
the lazy step of a CPU's search against Adam written out."""

import jax
import jax.numpy as jnp
import numpy as np

from textclf.models.stacked import init_stacked
from textclf.models.weights import Params
from textclf.training.stacked_step import StackedStep, init_stack


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


def _lazy_adam_written_out(params, batches, rates, decays):
    """Lazy Adam in NumPy over `batches` of K stacked networks: W1's rows of a batch's columns take Adam's update
    (coupled decay, bias corrections of the global step), every other row, its moments included, is left as it was;
    b1, W2, b2 take Adam's update every step."""
    from textclf.models.stacked import stacked_loss
    from textclf.training.optimizers import ADAM_BETA1 as b1, ADAM_BETA2 as b2, ADAM_EPS as eps

    hidden = params.w2.shape[1]
    per_leaf = lambda values: [np.repeat(values, hidden)[None, :], np.repeat(values, hidden),  # noqa: E731
                               np.asarray(values)[:, None, None], np.asarray(values)[:, None]]
    lrs, wds = per_leaf(rates), per_leaf(decays)
    p = [np.array(a, np.float64) for a in params]
    m, v = [np.zeros_like(a) for a in p], [np.zeros_like(a) for a in p]
    for t, batch in enumerate(batches, start=1):
        now = Params(*(jnp.asarray(a, jnp.float32) for a in params))
        grads = [np.asarray(g, np.float64) for g in jax.grad(stacked_loss)(now, *batch)]
        touched = np.unique(np.asarray(batch[0])[np.asarray(batch[1]) != 0])
        for i, (w, g) in enumerate(zip(p, grads)):
            rows = touched if i == 0 else slice(None)
            lr, wd = (np.broadcast_to(each[i], w.shape)[rows] for each in (lrs, wds))
            g = g[rows] + wd * w[rows]
            m[i][rows] = b1 * m[i][rows] + (1 - b1) * g
            v[i][rows] = b2 * v[i][rows] + (1 - b2) * g * g
            w[rows] -= lr * (m[i][rows] / (1 - b1 ** t)) / (np.sqrt(v[i][rows] / (1 - b2 ** t)) + eps)
        params = Params(*p)
    return params


def test_the_lazy_step_is_adam_on_the_batch_rows_of_w1_only():
    from tests.textclf.training.test_search import _random_batch
    from textclf.training.optimizers import adam
    from textclf.training.stacked_step import stacked_epoch

    rng = np.random.default_rng(5)
    stacked = init_stacked(jax.random.PRNGKey(3), 50, 4, 3, 2)
    batches = [_random_batch(rng) for _ in range(3)]
    rates, decays = [0.01, 0.03], [0.0, 0.01]
    start = Params(*(np.asarray(a) for a in stacked))  # (the epoch donates the arrays it is given)
    padding = [jnp.zeros_like(a) for a in batches[0]]  # a batch with no rows: changes nothing
    arrays = [jnp.stack([b[i] for b in [batches[0], padding, *batches[1:]]]) for i in range(5)]
    trained, state, _ = stacked_epoch(stacked, adam().init(stacked), jnp.asarray(rates), jnp.asarray(decays), *arrays,
                                      lazy=True)
    expected = _lazy_adam_written_out(start, batches, rates, decays)
    for got, want in zip(trained, expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert float(state.step) == 3.0
    never = np.setdiff1d(np.arange(50), np.concatenate([np.asarray(b[0])[np.asarray(b[1]) != 0] for b in batches]))
    assert len(never) and np.array_equal(np.asarray(trained.w1)[never], start.w1[never])
    assert not np.asarray(state.m.w1)[never].any()  # a row no batch held: no moments either
