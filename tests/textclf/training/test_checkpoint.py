import jax
import numpy as np
import pytest

from pipelines.corpus import read_corpus
from pipelines.vectorize import fit_vectorizer
from textclf.training.checkpoint import Checkpointer
from textclf.inference.text_model import encode_labels
from textclf.training.events import TrainingStopped
from textclf.training.inputs import TrainingRows, Watch
from textclf.training.network import fit_network


@pytest.fixture
def problem(corpus_dir, fast_settings):
    corpus = read_corpus(corpus_dir)
    _, matrix = fit_vectorizer(corpus.texts, corpus.labels, fast_settings)
    classes = sorted(set(corpus.labels))
    return matrix, encode_labels(corpus.labels, classes), len(classes)


def test_resumed_training_equals_uninterrupted(problem, fast_settings, tmp_path):
    matrix, labels, n_classes = problem
    settings = fast_settings.replace(epochs=4, min_steps=0)
    rows = TrainingRows(matrix, labels, n_classes)
    whole = fit_network(rows, settings)
    checkpoint = Checkpointer(tmp_path / "ckpt.npz")
    with pytest.raises(TrainingStopped, match="after epoch 2 of 4"):
        fit_network(
            rows,
            settings,
            watch=Watch(stop_requested=lambda: checkpoint.load().epochs_done >= 2, checkpointer=checkpoint),
        )
    assert checkpoint.load().epochs_done == 2
    resumed = fit_network(rows, settings, watch=Watch(checkpointer=checkpoint))
    assert [h.epoch for h in resumed.history] == [1, 2, 3, 4]
    for a, b in zip(resumed.params, whole.params):
        if jax.default_backend() == "cpu":
            np.testing.assert_array_equal(a, b)
        else:  # XLA's GPU scatter-add sums in no fixed order: equal to float32 rounding, not bit for bit
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_checkpoints_are_spaced_but_a_stop_always_saves(problem, fast_settings, tmp_path):
    matrix, labels, n_classes = problem
    settings = fast_settings.replace(epochs=4, min_steps=0)
    spaced = Checkpointer(tmp_path / "spaced.npz", every_seconds=3600)
    fit_network(TrainingRows(matrix, labels, n_classes), settings, watch=Watch(checkpointer=spaced))
    assert spaced.load() is None  # never due, never asked to stop: nothing written
    asked = []
    with pytest.raises(TrainingStopped, match="after epoch 1 of 4"):
        fit_network(
            TrainingRows(matrix, labels, n_classes),
            settings,
            watch=Watch(stop_requested=lambda: asked.append(1) or True, checkpointer=spaced),
        )
    assert spaced.load().epochs_done == 1


@pytest.mark.parametrize("damage", [b"", b"PK\x03\x04 truncated", b"not a checkpoint at all"])
def test_a_damaged_checkpoint_is_as_good_as_none_and_removed(tmp_path, damage):
    from textclf.training.checkpoint import Checkpointer

    path = tmp_path / "job-1.npz"
    path.write_bytes(damage)
    assert Checkpointer(path, 0).load() is None
    assert not path.exists()  # the job starts over instead of failing on it at every attempt


def test_a_checkpoint_with_wrong_numbers_is_as_good_as_none(tmp_path):
    import json

    import numpy as np

    from textclf.training.checkpoint import Checkpointer

    header = {"epochs_done": 1, "history": []}
    for name, arrays in (
        ("nan", {"param.0": np.full(4, np.nan, np.float32)}),
        ("negative", {"param.0": np.zeros(4, np.float32)}),
    ):
        path = tmp_path / f"{name}.npz"
        np.savez(
            path, header=np.array(json.dumps({**header, "epochs_done": -3} if name == "negative" else header)), **arrays
        )
        assert Checkpointer(path, 0).load() is None and not path.exists(), name


def test_a_checkpoint_of_other_shapes_is_not_resumed():
    """A checkpoint whose arrays are not the shapes this version trains (another version's, W1's rows in another
    bucket) starts the training over instead of failing inside the first epoch."""
    from textclf.training.checkpoint import TrainState
    from textclf.training.epochs import resume

    params, opt_state = (np.zeros((8, 4), np.float32), np.zeros(4, np.float32)), (np.zeros((8, 4), np.float32),)

    class Saved:
        def __init__(self, rows):
            self.state = TrainState(
                3,
                [np.ones((rows, 4), np.float32), np.ones(4, np.float32)],
                [np.ones((rows, 4), np.float32)],
                ["three epochs"],
            )

        def load(self):
            return self.state

    *_, history, done = resume(Saved(6), params, opt_state)
    assert (history, done) == ([], 0)
    resumed, _, history, done = resume(Saved(8), params, opt_state)
    assert (history, done) == (["three epochs"], 3) and np.asarray(resumed[0]).sum() == 32
