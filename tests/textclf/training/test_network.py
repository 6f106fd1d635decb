import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

from pipelines.batches import next_power_of_two
from textclf.inference.device_scores import DeviceScores
from textclf.training import network
from textclf.settings import Settings
from textclf.training.device_data import batch_nnz_max, epoch_order
from textclf.training.inputs import TrainingRows, Watch


def _two_long_documents(n=40, features=64):
    """n documents of 1-4 nonzeros, two of 50: the batch width (a power of two) doubles in the epochs that batch them
    together."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 5, n)
    lengths[[3, 17]] = 50
    rows = np.repeat(np.arange(n), lengths)
    columns = np.concatenate([rng.choice(features, k, replace=False) for k in lengths])
    matrix = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, columns)), shape=(n, features))
    return matrix, (np.arange(n) % 3).astype(np.int32)


def _widths(matrix, settings, epochs):
    n, batch = matrix.shape[0], settings.batch_size
    return {
        next_power_of_two(
            int(batch_nnz_max(jnp.asarray(matrix.indptr), epoch_order(settings.seed, e, n, -(-n // batch), batch)))
        )
        for e in range(epochs)
    }


def test_a_run_compiles_its_epoch_once_although_its_epochs_batch_widths_differ(fast_settings):
    matrix, labels = _two_long_documents()
    base = fast_settings.replace(batch_size=4, epochs=6, min_steps=0)
    # A seed whose epochs would need two power-of-two batch widths (so this test can fail).
    settings = next(
        base.replace(seed=seed) for seed in range(100) if len(_widths(matrix, base.replace(seed=seed), 6)) > 1
    )
    network._warm_epoch.cache_clear()
    result = network.fit_network(TrainingRows(matrix, labels, 3), settings)
    assert len(result.history) == 6
    assert network._warm_epoch.cache_info().currsize == 1  # one width for the run, one compiled epoch


@pytest.mark.parametrize("layout", ["flat", "pieces"])
def test_an_epoch_gathered_in_segments_trains_the_network_of_one_gather(fast_settings, monkeypatch, layout):
    """One network's epoch gathered a few steps at a time (device_data.SEGMENT_BYTES shrunk: 10 steps of 4
    documents in segments of at most 3; the learning rates follow the steps; validation with the last segment): the
    same parameters and epoch records as gathered whole, in either batch layout (the XLA step reads pieces where it
    takes the device for a GPU). The same bits on a CPU; on a GPU, whose scatter-adds sum in no fixed order, the
    same to float32 rounding."""
    from textclf.training import backends, device_data
    from textclf.training.steps.step import make_step

    monkeypatch.setattr(backends, "device_kind", lambda: "gpu" if layout == "pieces" else "cpu")
    matrix, labels = _two_long_documents()
    settings = fast_settings.replace(
        batch_size=4, epochs=2, min_steps=0, lr_schedule="linear", optimizer="adam", learning_rate=0.01
    )
    assert make_step("xla", settings, 4).layout == layout
    whole = network.fit_network(TrainingRows(matrix, labels, 3, matrix[:9], labels[:9]), settings)
    width = max(1, int(batch_nnz_max(matrix.indptr, epoch_order(0, 0, 40, 10, 4))))  # a step's slots, at least
    monkeypatch.setattr(device_data, "SEGMENT_BYTES", 12 * width * 3)  # 3 steps a segment, or fewer
    segmented = network.fit_network(TrainingRows(matrix, labels, 3, matrix[:9], labels[:9]), settings)
    on_cpu = jax.default_backend() == "cpu"
    got, want = ([(h.loss, h.train_accuracy, h.eval_accuracy) for h in run.history] for run in (segmented, whole))
    if on_cpu:
        assert got == want
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5)
    for got, want in zip(segmented.params, whole.params):
        np.testing.assert_allclose(got, want, rtol=1e-6 if on_cpu else 1e-4, atol=1e-7 if on_cpu else 1e-5)


def test_a_later_run_reuses_an_epoch_compiled_twice_as_wide(monkeypatch):
    import weakref

    config = ("xla", "adam", 0.9, 0.0, 4, None, None)
    built = network._Compiled(lambda: None)  # held here: the registry keeps entries only while they live
    monkeypatch.setattr(network, "_warm_epochs_built", weakref.WeakValueDictionary({(*config, 8192): built}))
    assert network._reusable_width(config, 4096) == 8192  # padding only: no second compilation
    assert network._reusable_width(config, 8192) == 8192
    assert network._reusable_width(config, 2048) == 2048  # four times as wide: compile its own
    assert network._reusable_width(("pallas", *config[1:]), 4096) == 4096


def test_make_step_is_the_one_place_that_names_a_backend():
    import re
    from pathlib import Path

    from textclf.training.steps.step import PallasStep, XlaStep, make_step

    settings = Settings(batch_size=2048)
    # XLA reads pieces on a GPU and flat batches on a CPU (make_step's docstring says why)
    assert make_step("xla", settings, 2048) == XlaStep("pieces" if jax.default_backend() == "gpu" else "flat")
    pallas = make_step("pallas", settings, 2048)
    assert isinstance(pallas, PallasStep) and pallas.layout == "pieces" and pallas.padding is pallas.kernel_config
    assert make_step("pallas", settings, 64).layout == "flat"  # dense X below PIECES_MIN_BATCH
    # the loop, the data-parallel wrapper and the daemon never compare a backend's name
    root = Path(__file__).resolve().parents[3] / "textclf"
    for module in ("training/network.py", "training/parallel/data.py", "frontends/daemon.py"):
        assert not re.search(r'==\s*"(pallas|xla)"', (root / module).read_text()), module


def _judged(accuracies, patience=1):
    """An EarlyStopping whose held-out accuracies are given (its scoring is tested below); .seen: the
    parameters it was shown, epoch by epoch."""
    from textclf.training.epochs import EarlyStopping

    class Judged(EarlyStopping):
        seen: list = []

        def score(self, params):
            self.seen.append(params)
            return accuracies[len(self.accuracies)]

    judged = Judged(sp.csr_matrix((1, 1), dtype=np.float32), np.zeros(1), patience)
    judged.seen = []
    return judged


def test_early_stopping_ends_training_and_keeps_the_best_epoch(fast_settings):
    matrix, labels = _two_long_documents()
    settings = fast_settings.replace(batch_size=4, epochs=6, min_steps=0)
    judged = _judged([0.5, 0.7, 0.6, 0.9, 0.9, 0.9])
    result = network.fit_network(TrainingRows(matrix, labels, 3), settings, watch=Watch(early_stopping=judged))
    assert len(result.history) == 3  # epoch 3 did not improve on epoch 2: stopped
    kept = judged.seen[1]  # epoch 2's parameters, not the last epoch's
    assert all(np.array_equal(a, b) for a, b in zip(result.params, kept))
    assert not np.array_equal(result.params.w1, judged.seen[2].w1)


def test_early_stopping_judges_the_last_epoch_too(fast_settings):
    matrix, labels = _two_long_documents()
    settings = fast_settings.replace(batch_size=4, epochs=2, min_steps=0)
    judged = _judged([0.5, 0.7])
    result = network.fit_network(TrainingRows(matrix, labels, 3), settings, watch=Watch(early_stopping=judged))
    assert judged.accuracies == [0.5, 0.7] and judged.best_epoch == 2  # the best epoch was the last one
    assert all(np.array_equal(a, b) for a, b in zip(result.params, judged.seen[1]))


def test_early_stopping_scores_the_held_out_documents():
    from textclf.models.weights import Params
    from textclf.training.epochs import EarlyStopping

    x = sp.csr_matrix(np.eye(4, dtype=np.float32))
    y = np.array([0, 1, 0, 1])
    # hidden = sigmoid(x @ w1): unit i of document i; w2 sends units 0, 2 to class 0 and 1, 3 to class 1
    right = Params(
        np.eye(4, dtype=np.float32) * 10,
        np.zeros(4, np.float32),
        np.array([[1, 0], [0, 1], [1, 0], [0, 1]], np.float32),
        np.zeros(2, np.float32),
    )
    wrong = Params(right.w1, right.b1, right.w2[:, ::-1].copy(), right.b2)
    rule = EarlyStopping(x, y, patience=2)
    assert rule(0, lambda: wrong) is False and rule(1, lambda: right) is False
    assert rule(2, lambda: wrong) is False and rule(3, lambda: wrong) is True
    assert rule.accuracies == [0.0, 1.0, 0.0, 0.0] and rule.best_epoch == 2 and rule.best_params is right


def test_a_corpus_beyond_the_search_sample_holds_out_documents_to_stop(fast_settings):
    from textclf.runs.fitting import held_out_stopping as _held_out_stopping
    from textclf.training.plan import STOPPING_DOCUMENTS
    from textclf.training.plan import stops_early as _stops_early
    from textclf.training.search.summary import SearchSummary
    from textclf.training.search.rules import SearchRules

    rules = SearchRules()
    sample = rules.search_documents
    searched = fast_settings.replace(search="auto")
    assert _stops_early(searched, SearchSummary(rounds=3), sample + 1, rules)
    assert not _stops_early(searched, SearchSummary(rounds=3), sample, rules)  # the search's folds judged its epochs
    assert not _stops_early(searched.replace(pinned=("epochs",)), SearchSummary(rounds=3), sample + 1, rules)
    assert not _stops_early(searched, SearchSummary.skip("--search off"), sample + 1, rules)
    n = 1_000_000
    x = sp.csr_matrix((n, 3), dtype=np.float32)
    kept, rule = _held_out_stopping(x, np.arange(n) % 2, seed=0)
    assert rule.x.shape[0] == STOPPING_DOCUMENTS and len(kept) == n - STOPPING_DOCUMENTS
    assert np.all(np.diff(kept) > 0) and kept[0] >= 0 and kept[-1] < n  # rows of x, sorted, none twice


def test_an_ensemble_stops_early_too():
    from textclf.training.ensembles import fit_ensemble

    matrix, labels = _two_long_documents()
    judged = _judged([0.5, 0.4, 0.9, 0.9])
    settings = Settings(
        ensemble=2, learning_rate=0.01, weight_decay=0.0, epochs=4, min_steps=0, batch_size=4, hidden=8, seed=0
    )
    params, history, _, _ = fit_ensemble(TrainingRows(matrix, labels, 3), settings, Watch(early_stopping=judged))
    assert len(history) == 2 and all(np.array_equal(a, b) for a, b in zip(params, judged.seen[0]))


def test_a_one_network_epoch_of_wide_caps_trains_as_the_same_batches_cut_to_their_nonzeros():
    """xla_epoch over flat batches whose cap is far wider than some batches' nonzeros (on a CPU those run on the
    front of their arrays, device_data.narrowed) gives what the same batches cut to their own width give."""
    from textclf.models.mlp import init_params
    from textclf.training.device_data import NARROW_DIVISOR, NARROW_MIN_CAP
    from textclf.training.steps.optimizers import adam
    from textclf.training.steps.step import xla_epoch

    rng = np.random.default_rng(3)
    n_features, batch_rows, cap = 200, 32, NARROW_MIN_CAP * NARROW_DIVISOR
    uses = (cap // NARROW_DIVISOR**2 - 7, cap // NARROW_DIVISOR - 7, cap - 7)  # each batch's nonzeros

    def batches(width_of):
        arrays = [[], [], [], [], []]
        for batch, used in enumerate(uses):
            draw = np.random.default_rng(batch)
            width = width_of(used)
            indices, values, rows = np.zeros(width, np.int32), np.zeros(width, np.float32), np.zeros(width, np.int32)
            indices[:used] = draw.integers(0, n_features, used)
            values[:used] = draw.random(used) / 40
            rows[:used] = np.sort(draw.integers(0, batch_rows, used))
            for into, array in zip(
                arrays,
                (
                    indices,
                    values,
                    rows,
                    draw.integers(0, 3, batch_rows).astype(np.int32),
                    np.ones(batch_rows, np.float32),
                ),
            ):
                into.append(array)
        return arrays

    epoch = jax.jit(lambda p, s, *b: xla_epoch(p, s, *b, momentum=0.9, weight_decay=0.0, optimizer="adam"))
    params = init_params(jax.random.PRNGKey(rng.integers(1000)), n_features, 16, 3)
    lrs = jnp.full((len(uses),), 0.01)
    wide = epoch(params, adam().init(params), *[jnp.asarray(np.stack(a)) for a in batches(lambda used: cap)], lrs)
    cut = (params, adam().init(params))
    for step in range(len(uses)):  # one batch at a time, each array as wide as its nonzeros
        arrays = [jnp.asarray(a[step])[None] for a in batches(lambda used: used)]
        cut = epoch(*cut[:2], *arrays, lrs[step : step + 1])
    for got, want in zip(jax.tree.leaves(wide[:2]), jax.tree.leaves(cut[:2])):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_held_out_scores_gathered_on_the_device_are_the_host_batches_scores(monkeypatch):
    """A run's held-out documents scored from their rows on the device, cut there a segment at a time, get the
    scores of the batches cut on the host (inference.device_scores) and of NumPy's scoring, row for row."""
    from textclf.models.mlp import Params
    from textclf.models.weights import host_scores
    from textclf.training import device_data

    rng = np.random.default_rng(5)
    matrix = sp.random(2500, 300, density=0.05, format="csr", random_state=6, dtype=np.float32)
    matrix.data = rng.random(matrix.nnz).astype(np.float32)
    params = Params(
        rng.normal(size=(300, 16)).astype(np.float32),
        rng.normal(size=16).astype(np.float32),
        rng.normal(size=(16, 3)).astype(np.float32),
        rng.normal(size=3).astype(np.float32),
    )
    monkeypatch.setattr(device_data, "SEGMENT_BYTES", 1)  # one batch a segment: three segments, the last short
    got = network.held_out_scores_device(params, matrix)
    assert got.shape == (2500, 3)
    # a GPU's products of these float32 weights round through TF32 (10-bit mantissas) in either program
    tolerance = 1e-5 if jax.default_backend() == "cpu" else 2e-3
    np.testing.assert_allclose(got, DeviceScores(params)(matrix), rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(got, host_scores(params, matrix), rtol=max(tolerance, 1e-4), atol=max(tolerance, 1e-4))


@pytest.mark.parametrize("program", ["stacked", "one network"])
def test_initial_weights_compiled_at_o1_are_the_o3_programs_bit_for_bit(program):
    """The seeded initialisations compile with LLVM's -O1 (backends.INIT_COMPILER_OPTIONS) for their compile time:
    the weights must be those of the default -O3 program."""
    from textclf.training.steps import stacked as stacked_step, step

    jitted, args = {
        "stacked": (stacked_step.init_stack, (jax.random.PRNGKey(7), 300, 16, 3, 4)),
        "one network": (step._start_state, (7, 300, 16, 3, 1.0, "adam", None)),
    }[program]
    o3 = jax.jit(
        jitted.__wrapped__,
        static_argnums=tuple(range(1, len(args))),
        compiler_options={"xla_backend_optimization_level": 3},
    )
    for ours, reference in zip(jax.tree.leaves(jitted(*args)), jax.tree.leaves(o3(*args)), strict=True):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(reference))


def _corpus(n, features, seed):
    rng = np.random.default_rng(seed)
    matrix = sp.random(n, features, density=0.1, format="csr", dtype=np.float32, random_state=seed)
    return matrix, rng.integers(0, 3, n).astype(np.int32)


@pytest.mark.parametrize("networks", ["one", "stacked"])
def test_corpora_of_one_shape_bucket_train_on_one_compiled_epoch(fast_settings, monkeypatch, networks):
    """Two corpora whose documents, nonzeros, steps and columns differ but fall in the same buckets (here powers of
    two, as a GPU's), at different weight decays, train on one compiled epoch: nothing compiled for the second.
    (The pieces layout's piece width, chosen from a corpus's document lengths, is a bucket of its own: fixed here.)"""
    from textclf.training import ensembles, device_data
    from textclf.training.steps.stacked import stacked_epoch

    monkeypatch.setattr(device_data, "shape_buckets", lambda: device_data.ShapeBuckets(1, 16))
    monkeypatch.setattr(device_data, "piece_width", lambda matrix: 8)
    network._warm_epoch.cache_clear()
    jax.clear_caches()
    for (n, features), decay in zip([(70, 100), (67, 120)], [0.0, 1e-4]):
        x, y = _corpus(n, features, n)
        settings = fast_settings.replace(batch_size=8, epochs=2, min_steps=0, weight_decay=decay, optimizer="adam")
        if networks == "one":
            params = network.fit_network(TrainingRows(x, y, 3, x[:10], y[:10]), settings).params
        else:
            params = ensembles.fit_ensemble(
                TrainingRows(x, y, 3, x[:10], y[:10]), settings.replace(ensemble=2, seed=n)
            )[0]
        assert params.w1.shape[0] == features  # the padding rows never reach the model
    if networks == "one":
        compiled = [f for f in network._warm_epochs_built.values()]
        assert len(compiled) == 1 and len(compiled[0].cache) == 1
    else:
        assert stacked_epoch._cache_size() == 1


def test_a_bucketed_network_learns_what_the_unpadded_one_does(fast_settings, monkeypatch):
    """W1 padded past the input's columns, documents and nonzeros past the corpus's, steps of no documents: the
    same network as the one trained on the corpus's own shapes (to float32 rounding: another program)."""
    from textclf.training import device_data

    x, y = _corpus(70, 100, 1)
    settings = fast_settings.replace(batch_size=8, epochs=3, min_steps=0, optimizer="adam", weight_decay=1e-4)
    monkeypatch.setattr(device_data, "shape_buckets", lambda: device_data.ShapeBuckets(1, 0))
    padded = network.fit_network(TrainingRows(x, y, 3, x[:10], y[:10]), settings)
    monkeypatch.setattr(device_data, "shape_buckets", lambda: device_data.ShapeBuckets(1 << 20, 0))  # no padding
    own = network.fit_network(TrainingRows(x, y, 3, x[:10], y[:10]), settings)
    on_cpu = jax.default_backend() == "cpu"  # a GPU's scatter-adds sum in no fixed order
    for got, want in zip(padded.params, own.params):
        np.testing.assert_allclose(got, want, rtol=1e-5 if on_cpu else 1e-4, atol=1e-6 if on_cpu else 1e-5)
    np.testing.assert_allclose(
        [h.loss for h in padded.history], [h.loss for h in own.history], rtol=1e-5 if on_cpu else 1e-4
    )


@pytest.mark.parametrize("held_out, most", [(3, 1024), (21, 8)])
def test_each_epochs_held_out_accuracy_is_the_host_scores_of_its_parameters(fast_settings, monkeypatch, held_out, most):
    """The held-out documents scored on the device after each epoch, in one batch of their own bucket (3 documents,
    not 1,024 rows) or in several (21 in batches of 8): each epoch's accuracy is the one its parameters score on the
    host (EarlyStopping's)."""
    from textclf.training.epochs import EarlyStopping

    monkeypatch.setattr(network, "EVAL_BATCH", most)
    matrix, labels = _two_long_documents()
    eval_x, eval_y = matrix[:held_out], (labels[:held_out] + np.arange(held_out)) % 3
    settings = fast_settings.replace(batch_size=4, epochs=5, min_steps=0)
    seen = []
    host = EarlyStopping(eval_x, eval_y, patience=100)
    rows = TrainingRows(matrix, labels, 3, eval_x, eval_y)
    network.fit_network(
        rows, settings, watch=Watch(on_epoch=lambda s: seen.append(s.eval_accuracy), early_stopping=host)
    )
    assert len(seen) == 5 and seen == host.accuracies
