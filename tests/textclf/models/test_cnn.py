"""The image network on a tiny two-class problem; the Pallas path (interpret mode) against the XLA path."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from textclf.models.cnn import augment_batch, cnn_logits, init_cnn, predict_cnn
from textclf.settings import Settings
from textclf.training.cnn import fit_cnn, learning_rates


def _problem(n=96, seed=0):
    """Bright left half vs bright right half, with noise: easy, but only if the convolutions work."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n).astype(np.int32)
    images = rng.integers(0, 60, (n, 12, 12, 1)).astype(np.uint8)
    for i, label in enumerate(labels):
        images[i, :, (0 if label == 0 else 6) : (6 if label == 0 else 12)] += 150
    return images, labels


def test_cnn_learns_a_spatial_pattern():
    images, labels = _problem()
    settings = Settings(
        model="cnn", conv_channels="4,8", conv_kernel=3, hidden=16, epochs=6, batch_size=16, learning_rate=3e-3
    )
    params, history = fit_cnn(images, labels, 2, settings, "xla", images[:32], labels[:32])
    assert history[-1].loss < history[0].loss
    test_images, test_labels = _problem(64, seed=1)
    assert (predict_cnn(params, test_images) == test_labels).mean() >= 0.9


def test_pallas_and_xla_paths_agree():
    images, _ = _problem(8)
    params = init_cnn(jax.random.PRNGKey(0), (12, 12, 1), 3, (4, 8), 3, 16)
    # Both sides at IEEE fp32: on a GPU the interpreted kernels' dots would otherwise run in TF32.
    loss = lambda backend, interpret: jax.grad(lambda p: cnn_logits(p, images, backend, interpret).sum())(params)
    with jax.default_matmul_precision("highest"):
        xla = cnn_logits(params, images, "xla")
        pallas = cnn_logits(params, images, "pallas", interpret=True)
        want = jax.tree.leaves(loss("xla", False))
        got = jax.tree.leaves(loss("pallas", True))
    np.testing.assert_allclose(np.asarray(pallas), np.asarray(xla), rtol=1e-4, atol=1e-4)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-3, atol=1e-4)


def test_stopped_and_resumed_training_equals_uninterrupted(tmp_path):
    import pytest

    from textclf.training.checkpoint import Checkpointer
    from textclf.training.events import TrainingStopped

    images, labels = _problem(48)
    # Dropout, augmentation and a decaying rate draw from (seed, epoch): a resumed run repeats them exactly.
    settings = Settings(
        model="cnn",
        conv_channels="4",
        conv_kernel=3,
        hidden=8,
        epochs=3,
        batch_size=16,
        dropout=0.3,
        augment="shift,flip",
        lr_schedule="cosine",
    )
    whole, _ = fit_cnn(images, labels, 2, settings)
    checkpoint = Checkpointer(tmp_path / "cnn.npz", every_seconds=3600)
    with pytest.raises(TrainingStopped, match="after epoch 1 of 3"):
        fit_cnn(images, labels, 2, settings, checkpointer=checkpoint, stop_requested=lambda: True)
    assert checkpoint.load().epochs_done == 1
    resumed, history = fit_cnn(images, labels, 2, settings, checkpointer=checkpoint)
    assert [h.epoch for h in history] == [1, 2, 3]
    for a, b in zip(jax.tree.leaves(resumed), jax.tree.leaves(whole)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_training_epoch_pallas_equals_xla_with_dropout_and_augmentation():
    """A whole training epoch (augmentation, dropout, the Pallas output-layer loss kernel, Adam) on both paths
    from the same seed ends at the same parameters."""
    images, labels = _problem(32)
    settings = Settings(
        model="cnn",
        conv_channels="4",
        conv_kernel=3,
        hidden=16,
        epochs=1,
        batch_size=16,
        dropout=0.5,
        augment="shift,flip",
    )
    with jax.default_matmul_precision("highest"):
        xla, _ = fit_cnn(images, labels, 2, settings, "xla")
        pallas, _ = fit_cnn(images, labels, 2, settings, "pallas", interpret=True)
    for a, b in zip(jax.tree.leaves(pallas), jax.tree.leaves(xla)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_augmentation_shifts_and_flips_whole_images():
    images = np.zeros((64, 10, 10, 1), np.uint8)
    images[:, 4:6, 2:5] = 200  # a blob 2 px from every edge: shifts of up to 2 px keep all of it
    out = np.asarray(augment_batch(jax.random.PRNGKey(0), images, ("shift",)))
    assert (out.sum(axis=(1, 2, 3)) == images.sum(axis=(1, 2, 3))).all()
    assert len({out[i].tobytes() for i in range(64)}) > 10  # shifts differ per image
    flipped = np.asarray(augment_batch(jax.random.PRNGKey(1), images, ("flip",)))
    mirrored = (flipped == images[:, :, ::-1]).all(axis=(1, 2, 3))
    assert ((flipped == images).all(axis=(1, 2, 3)) | mirrored).all() and 10 < mirrored.sum() < 54


def test_learning_rate_schedules():
    settings = Settings(model="cnn", epochs=2, learning_rate=0.5, lr_schedule="constant")
    assert np.allclose(learning_rates(settings, 1, 4), 0.5)
    linear = np.concatenate([learning_rates(settings.replace(lr_schedule="linear"), e, 4) for e in (0, 1)])
    np.testing.assert_allclose(linear, 0.5 * (1 - np.arange(8) / 8), rtol=1e-6)
    cosine = learning_rates(settings.replace(lr_schedule="cosine"), 0, 4)
    assert cosine[0] == 0.5 and np.all(np.diff(cosine) < 0)


def test_a_stepwise_epoch_equals_the_scanned_one_and_reports_its_steps():
    """On a CPU the epoch runs one jitted step at a time (XLA's convolution inside a scan is 13-17x slower
    there): same parameters as the scanned epoch, with a report after each step."""
    from textclf.training.steps.optimizers import adam
    from textclf.training.cnn import _epoch_fn

    images, labels = _problem(40)
    settings = Settings(
        model="cnn",
        conv_channels="4",
        conv_kernel=3,
        hidden=16,
        epochs=1,
        batch_size=16,
        dropout=0.5,
        augment="shift,flip",
    )
    order = np.concatenate([np.arange(40), -np.ones(8, int)]).reshape(3, 16).astype(np.int32)  # last batch part-full
    results, steps = [], []
    for stepwise in (False, True):
        params = init_cnn(
            jax.random.PRNGKey(0), images.shape[1:], 2, settings.channels, settings.conv_kernel, settings.hidden
        )
        run = _epoch_fn("xla", False, settings.dropout, settings.augmentations, 0.0, stepwise=stepwise)
        results.append(
            run(
                params,
                adam().init(params),
                jax.numpy.asarray(images),
                jax.numpy.asarray(labels),
                order,
                jax.numpy.full(3, 0.01),
                jax.random.PRNGKey(1),
                on_step=lambda done, total: steps.append((done, total)),
            )
        )
    (scanned_params, _, scanned_loss, scanned_hits), (params, _, loss, hits) = results
    for a, b in zip(jax.tree.leaves(scanned_params), jax.tree.leaves(params)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss, scanned_loss, rtol=1e-5)
    assert float(hits) == float(scanned_hits)
    assert steps == [(1, 3), (2, 3), (3, 3)]  # the scanned epoch reports none, the stepwise one each step


@pytest.mark.parametrize("shape, size", [((4, 28, 28, 32), 2), ((2, 9, 7, 3), 3), ((3, 5, 6, 2), 2)])
def test_the_xla_pool_equals_the_kernels_oracle_bit_for_bit_ties_included(shape, size):
    from pallas_kernels.maxpool import maxpool_reference
    from textclf.models.cnn import max_pool

    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.integers(0, 3, shape).astype(np.float32))  # few values: most windows hold ties
    probe = jnp.asarray(rng.normal(size=maxpool_reference(x, size).shape), jnp.float32)
    np.testing.assert_array_equal(max_pool(x, size), maxpool_reference(x, size))
    got = jax.grad(lambda a: jnp.sum(max_pool(a, size) * probe))(x)
    want = jax.grad(lambda a: jnp.sum(maxpool_reference(a, size) * probe))(x)
    np.testing.assert_array_equal(got, want)
    assert float(jnp.abs(got).sum()) > 0
