import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from pipelines.batches import next_power_of_two
from textclf.training import loop as trainloop
from textclf.settings import Settings
from textclf.training.device_data import batch_nnz_max, epoch_order


def _two_long_documents(n=40, features=64):
    """n documents of 1-4 nonzeros, two of 50: the batch width (a power of two) doubles in the epochs that batch them together."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 5, n)
    lengths[[3, 17]] = 50
    rows = np.repeat(np.arange(n), lengths)
    columns = np.concatenate([rng.choice(features, k, replace=False) for k in lengths])
    matrix = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, columns)), shape=(n, features))
    return matrix, (np.arange(n) % 3).astype(np.int32)


def _widths(matrix, settings, epochs):
    n, batch = matrix.shape[0], settings.batch_size
    return {next_power_of_two(int(batch_nnz_max(jnp.asarray(matrix.indptr),
                                                epoch_order(settings.seed, e, n, -(-n // batch), batch))))
            for e in range(epochs)}


def test_a_run_compiles_its_epoch_once_although_its_epochs_batch_widths_differ(fast_settings):
    matrix, labels = _two_long_documents()
    base = fast_settings.replace(batch_size=4, epochs=6, min_steps=0)
    # A seed whose epochs would need two power-of-two batch widths (so this test can fail).
    settings = next(base.replace(seed=seed) for seed in range(100)
                    if len(_widths(matrix, base.replace(seed=seed), 6)) > 1)
    trainloop._warm_epoch.cache_clear()
    result = trainloop.fit_network(matrix, labels, 3, settings)
    assert len(result.history) == 6
    assert trainloop._warm_epoch.cache_info().currsize == 1  # one width for the run, one compiled epoch


def test_a_later_run_reuses_an_epoch_compiled_twice_as_wide(monkeypatch):
    import weakref

    config = ("xla", "adam", 0.9, 0.0, 4, None, None)
    built = trainloop._Compiled(lambda: None)  # held here: the registry keeps entries only while they live
    monkeypatch.setattr(trainloop, "_warm_epochs_built", weakref.WeakValueDictionary({(*config, 8192): built}))
    assert trainloop._reusable_width(config, 4096) == 8192  # padding only: no second compilation
    assert trainloop._reusable_width(config, 8192) == 8192
    assert trainloop._reusable_width(config, 2048) == 2048  # four times as wide: compile its own
    assert trainloop._reusable_width(("pallas", *config[1:]), 4096) == 4096


def test_make_step_is_the_one_place_that_names_a_backend():
    import re
    from pathlib import Path

    from textclf.training.step import PallasStep, XlaStep, make_step

    settings = Settings(batch_size=2048)
    # XLA reads pieces on a GPU and flat batches on a CPU (make_step's docstring says why)
    assert make_step("xla", settings, 2048) == XlaStep("pieces" if jax.default_backend() == "gpu" else "flat")
    pallas = make_step("pallas", settings, 2048)
    assert isinstance(pallas, PallasStep) and pallas.layout == "pieces" and pallas.padding is pallas.kernel_config
    assert make_step("pallas", settings, 64).layout == "flat"  # dense X below PIECES_MIN_BATCH
    # the loop, the data-parallel wrapper and the daemon never compare a backend's name
    root = Path(__file__).resolve().parents[2] / "textclf"
    for module in ("training/loop.py", "training/data_parallel.py", "frontends/daemon.py"):
        assert not re.search(r'==\s*"(pallas|xla)"', (root / module).read_text()), module
