"""The model search: the K-model step against the single-model network, the choice it makes, and that it never
sees the test corpus."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

from pipelines import batches as batches_module
from pipelines.batches import cut_order, make_batches
from textclf.models.mlp import Params, logits, masked_loss
from textclf.training.steps.optimizers import adam
from textclf.settings import Settings
from textclf.models.stacked import dense_loss, dense_scores, init_stacked, stacked_logits, stacked_loss
from pipelines.batches import batch_shape
from textclf.training.search.rounds import fit_candidates, round_data
from textclf.training.inputs import TrainingRows, Watch
from textclf.training.steps.stacked import stacked_epoch, stacked_hits
from textclf.training.device_data import write_batch
from textclf.training.search import folds as folds_module, halving as search_module
from textclf.training.search import prepare_search, search_settings
from textclf.training.search.rules import SearchRules

RULES = SearchRules()

QUESTION_WORDS = {"DESC": "what", "HUM": "who", "LOC": "where"}


def question_corpus(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Questions whose class is decided by a stop word alone ("what" / "who" / "where"): with English stop
    words removed nothing but noise is left."""
    rng = np.random.default_rng(seed)
    filler = [f"w{i}" for i in range(40)]
    labels = [list(QUESTION_WORDS)[i % 3] for i in range(n)]
    texts = [f"{QUESTION_WORDS[label]} " + " ".join(rng.choice(filler, 5)) for label in labels]
    return texts, labels


def cpu_split_of_a_large_corpus(train: int = 100, validation: int = 70, rules: SearchRules = RULES) -> SearchRules:
    """Rules for a CPU's search of a few hundred documents as of a large corpus: one split (not a small corpus's
    folds), a training sample of `train` documents validated on `validation` of the others."""
    return rules.replace(cpu_train_documents=train, cpu_validation_documents=validation, cpu_folds_documents=0)


def suffix_corpus(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Sentences whose class shows only in how their words end ("-ing" / "-ed"): nearly every word is new, so
    the words' view has little to go on and the character n-grams decide."""
    rng = np.random.default_rng(seed)
    filler = [f"the{i}" for i in range(20)]
    labels = ["ING" if i % 2 else "ED" for i in range(n)]
    stem = lambda: (
        "".join(rng.choice(list("bcdfgklmnprstvz"), 2))
        + rng.choice(list("aeiou"))
        + "".join(rng.choice(list("bcdfgklmnprstvz"), 2))
    )  # noqa: E731
    texts = [
        " ".join([*rng.choice(filler, 3), *(stem() + ("ing" if label == "ING" else "ed") for _ in range(2))])
        for label in labels
    ]
    return texts, labels


def _random_batch(rng, n_features=50, batch=6, classes=3):
    matrix = sp.random(
        batch, n_features, density=0.2, format="csr", random_state=int(rng.integers(1 << 30)), dtype=np.float32
    )
    labels = rng.integers(0, classes, batch).astype(np.int32)
    b = make_batches(matrix, labels, batch)
    return [jnp.asarray(a[0]) for a in b.arrays()]


def _model(stacked: Params, k: int) -> Params:
    hidden = stacked.w2.shape[1]
    return Params(
        stacked.w1[:, k * hidden : (k + 1) * hidden],
        stacked.b1[k * hidden : (k + 1) * hidden],
        stacked.w2[k],
        stacked.b2[k],
    )


def test_each_stacked_model_gets_the_gradient_it_would_get_alone():
    rng = np.random.default_rng(1)
    stacked = init_stacked(jax.random.PRNGKey(int(rng.integers(1000))), 50, 8, 3, 3)
    stacked = stacked._replace(
        b1=jnp.asarray(rng.normal(size=stacked.b1.shape), jnp.float32),
        b2=jnp.asarray(rng.normal(size=stacked.b2.shape), jnp.float32),
    )
    indices, values, rows, labels, mask = _random_batch(rng)
    mask = mask.at[-1].set(0.0)  # a padding row counts for nothing
    scores = stacked_logits(stacked, indices, values, rows, labels.shape[0])
    grads = jax.grad(stacked_loss)(stacked, indices, values, rows, labels, mask)
    for k in range(3):
        alone = _model(stacked, k)
        np.testing.assert_allclose(
            scores[:, k], logits(alone, indices, values, rows, labels.shape[0]), rtol=1e-5, atol=1e-6
        )
        expected = jax.grad(lambda p: masked_loss(logits(p, indices, values, rows, labels.shape[0]), labels, mask)[0])(
            alone
        )
        for got, want in zip(_model(grads, k), expected):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_the_dense_formulation_of_the_stacked_step_matches_the_sparse_one():
    rng = np.random.default_rng(7)
    stacked = init_stacked(jax.random.PRNGKey(8), 50, 8, 3, 3)
    indices, values, rows, labels, mask = _random_batch(rng)
    sparse = stacked_logits(stacked, indices, values, rows, labels.shape[0])
    # the dense step's X: the batch stored in an all-zero (B, F) buffer, as _epoch does
    x = write_batch(jnp.zeros((labels.shape[0], 50), jnp.float32), indices, values, rows)
    dense = dense_scores(stacked, x)
    np.testing.assert_allclose(dense, sparse, rtol=2e-3, atol=2e-4)  # a GPU's float32 matmul rounds to TF32
    grads = [
        jax.grad(stacked_loss)(stacked, indices, values, rows, labels, mask),
        jax.grad(dense_loss)(stacked, x, labels, mask),
    ]
    for got, want in zip(grads[1], grads[0]):
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-5)


def test_a_stacked_epoch_is_k_adam_runs_with_their_own_rates_and_decays():
    rng = np.random.default_rng(2)
    stacked = init_stacked(jax.random.PRNGKey(3), 50, 8, 3, 3)
    batches = [_random_batch(rng) for _ in range(3)]
    arrays = [jnp.stack([b[i] for b in batches]) for i in range(5)]
    rates, decays = [0.01, 0.003, 0.01], [0.0, 0.0, 0.05]
    state = adam().init(stacked)
    singles = [_model(stacked, k) for k in range(3)]  # sliced before the donating epoch call
    trained, _, _ = stacked_epoch(stacked, state, jnp.asarray(rates), jnp.asarray(decays), *arrays)
    for k, (rate, decay) in enumerate(zip(rates, decays)):
        params, opt = singles[k], adam().init(singles[k])
        for indices, values, rows, labels, mask in batches:
            grads = jax.grad(lambda p: masked_loss(logits(p, indices, values, rows, labels.shape[0]), labels, mask)[0])(
                params
            )
            params, opt = adam(decay).update(params, opt, grads, rate)
        for got, want in zip(_model(trained, k), params):
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-6)


@pytest.mark.parametrize("fused", [False, True])
def test_an_epoch_of_a_counted_number_of_batches_leaves_the_padding_after_them_unvisited(fused):
    """_epoch's traced `steps` (round_data pads a search's batches to a power of two): running the first `steps`
    of `order` over arrays with padding batches after them is the epoch over the unpadded arrays."""
    rng = np.random.default_rng(6)
    batches = [_random_batch(rng, n_features=128) for _ in range(3)]  # the fused kernel's 128 rows a program
    arrays = [jnp.stack([b[i] for b in batches]) for i in range(5)]
    padded = [jnp.concatenate([a, jnp.full((2, *a.shape[1:]), 7, a.dtype)]) for a in arrays]  # poisoned, unvisited
    rates, decays = jnp.asarray([0.01, 0.003]), jnp.asarray([0.0, 1e-3])
    order = jnp.asarray([2, 0, 1], jnp.int32)
    results = []
    for data, steps, visit in (
        (arrays, None, order),
        (padded, jnp.asarray(3, jnp.int32), jnp.asarray([2, 0, 1, 3, 4], jnp.int32)),
    ):
        stacked = init_stacked(jax.random.PRNGKey(4), 128, 128, 3, 2)
        results.append(
            stacked_epoch(stacked, adam().init(stacked), rates, decays, *data, visit, steps, dense=True, fused=fused)
        )
    (want, want_state, want_losses), (got, got_state, got_losses) = results
    np.testing.assert_allclose(got_losses[:3], want_losses, rtol=1e-5, atol=1e-6)
    assert got_losses.shape == (5,) and not np.any(np.asarray(got_losses[3:]))
    assert int(got_state.step) == int(want_state.step) == 3
    for a, b in zip(jax.tree.leaves((got, got_state)), jax.tree.leaves((want, want_state))):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="narrowing is a CPU's (device_data.narrowed)")
def test_a_batch_that_fills_a_fraction_of_its_cap_runs_on_the_front_of_it():
    from textclf.training.device_data import NARROW_DIVISOR, NARROW_MIN_CAP, narrowed

    cap = NARROW_MIN_CAP * NARROW_DIVISOR  # the front quarter may be split once more

    def width_run(used: int, arrays_cap: int = cap) -> int:
        values = np.zeros(arrays_cap, np.float32)
        values[:used] = 1.0
        batch = (
            jnp.zeros(arrays_cap, jnp.int32),
            jnp.asarray(values),
            jnp.zeros(arrays_cap, jnp.int32),
            jnp.zeros(4, jnp.int32),
        )
        return int(jax.jit(lambda b: narrowed(lambda part: jnp.int32(part[0].shape[0]), b))(batch))

    assert width_run(cap // NARROW_DIVISOR**2) == cap // NARROW_DIVISOR**2
    assert width_run(cap // NARROW_DIVISOR**2 + 1) == cap // NARROW_DIVISOR
    assert width_run(cap // NARROW_DIVISOR + 1) == cap
    assert width_run(0, NARROW_MIN_CAP // 2) == NARROW_MIN_CAP // 2  # a narrow cap is not split


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="narrowing is a CPU's (device_data.narrowed)")
def test_narrowed_batches_train_and_score_as_the_dense_formulation_does():
    """Batches filling a sixteenth, a quarter and all of a wide cap: the sparse epoch (which runs each on the
    front of its arrays on a CPU, device_data.narrowed) and its scoring give what the dense formulation (never narrowed)
    gives."""
    from textclf.training.device_data import NARROW_DIVISOR, NARROW_MIN_CAP

    rng = np.random.default_rng(11)
    cap, n_features, batch_rows = NARROW_MIN_CAP * NARROW_DIVISOR, 300, 64
    arrays = []
    for used in (cap // NARROW_DIVISOR**2 - 5, cap // NARROW_DIVISOR - 5, cap - 5):
        indices, values, rows = np.zeros(cap, np.int32), np.zeros(cap, np.float32), np.zeros(cap, np.int32)
        cells = np.sort(rng.choice(batch_rows * n_features, used, replace=False))  # each cell once, as from CSR
        indices[:used], rows[:used] = cells % n_features, cells // n_features
        values[:used] = rng.random(used) / 50
        arrays.append(
            (indices, values, rows, rng.integers(0, 3, batch_rows).astype(np.int32), np.ones(batch_rows, np.float32))
        )
    stacked_arrays = [jnp.asarray(np.stack([a[i] for a in arrays])) for i in range(5)]
    rates, decays = jnp.asarray([0.01, 0.003]), jnp.asarray([0.0, 1e-3])
    results = []
    for dense in (False, True):
        stacked = init_stacked(jax.random.PRNGKey(5), n_features, 8, 3, 2)
        trained, _, losses = stacked_epoch(stacked, adam().init(stacked), rates, decays, *stacked_arrays, dense=dense)
        results.append((trained, losses, stacked_hits(trained, *stacked_arrays, dense=dense)))
    (sparse, sparse_losses, sparse_hits), (dense, dense_losses, dense_hits) = results
    np.testing.assert_allclose(sparse_losses, dense_losses, rtol=2e-3, atol=1e-4)
    for got, want in zip(sparse, dense):
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(sparse_hits[0], dense_hits[0], atol=1)  # a near-tie may round either way


def test_round_data_pads_the_steps_to_a_power_of_two():
    rng = np.random.default_rng(0)
    x = sp.random(300, 40, density=0.1, format="csr", random_state=1, dtype=np.float32)
    y = rng.integers(0, 3, 300).astype(np.int32)
    data = round_data(x[:200], y[:200], x[200:], y[200:], 16, 0, (1, 1), (1, 1), 32)
    assert data.n_steps == 13 and data.train[0].shape[0] == 16  # 200 / 16 -> 13 batches, padded to 16
    assert data.val[0].shape[0] == 4 and int(np.asarray(data.train[4][13:]).sum()) == 0  # 100 / 32 -> 4


@pytest.mark.parametrize("batch", [6, 72])  # 72: more than one 64-row chunk, the batch handed over as columns
def test_the_fused_pallas_step_equals_the_dense_xla_step_and_skips_padding_batches(batch):
    """The W1 update through pallas_kernels/stacked_input_adam.py (interpreted here) against the dense XLA
    formulation: 4 batches, the third a padding batch (no rows), over an epoch in a given order."""
    rng = np.random.default_rng(5)
    # 128 columns: the kernel's 8 x 16 rows a program at one chunk, 64 at several
    batches = [_random_batch(rng, n_features=128, batch=batch) for _ in range(4)]
    batches[2] = [jnp.zeros_like(a) for a in batches[2]]  # padding: mask all zero
    arrays = [jnp.stack([b[i] for b in batches]) for i in range(5)]
    rates, decays = jnp.asarray([0.01, 0.003]), jnp.asarray([0.0, 1e-3])
    order = jnp.asarray([3, 2, 0, 1], jnp.int32)
    results = []
    for fused in (False, True):
        stacked = init_stacked(jax.random.PRNGKey(4), 128, 128, 3, 2)  # K*H = 256: the kernel's 128-unit tiles
        params, state, losses = stacked_epoch(
            stacked, adam().init(stacked), rates, decays, *arrays, order, dense=True, fused=fused
        )
        results.append((params, state, losses))
    (want, want_state, want_losses), (got, got_state, got_losses) = results
    # On a GPU both products are TF32 (about 3 decimal digits), summed in another order by the kernel's tiles than
    # by cuBLAS: the moments agree to that, relative to the largest of them (a sum much smaller than its terms
    # keeps their rounding); Adam divides each gradient by its own size, so a small one's rounding moves its weight
    # by up to a part of the rate (0.01). Even the first batch's loss, from the same weights, comes from each
    # program's own forward GEMM (cuBLAS picks one per program): once in 8 runs on an H200 it differed by 3.2e-5
    # of itself.
    gpu = jax.default_backend() == "gpu"
    np.testing.assert_allclose(got_losses, want_losses, rtol=2e-4 if gpu else 1e-5, atol=1e-6)
    assert int(got_state.step) == int(want_state.step) == 3  # the padding batch is not a step
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):  # (2e-4: seen at 1.14e-4 on an H200)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-4 if gpu else 1e-6)
    for a, b in zip(jax.tree.leaves(got_state), jax.tree.leaves(want_state)):
        np.testing.assert_allclose(
            a, b, rtol=5e-3 if gpu else 1e-4, atol=max(1e-6, 1e-3 * float(np.abs(b).max())) if gpu else 1e-6
        )


def test_fit_candidates_learns_and_reports_every_epoch():
    texts, labels = question_corpus(240)
    from sklearn.feature_extraction.text import TfidfVectorizer

    x = TfidfVectorizer().fit_transform(texts).astype(np.float32).tocsr()
    y = np.searchsorted(sorted(set(labels)), labels).astype(np.int32)
    train, val = np.arange(0, 240, 2), np.arange(1, 240, 2)
    shape, val_shape = batch_shape([x[train]], 32), batch_shape([x[val]], 32)
    data = round_data(x[train], y[train], x[val], y[val], 32, 0, shape, val_shape)
    curves = fit_candidates(data, 3, [0.03, 0.0001], [0.0, 0.0], 15, 16, 0)
    assert curves.shape == (15, 2)
    assert curves[-1, 0] > 0.75 and curves[0, 0] < 0.5  # the question word decides: learnable, and learned
    assert curves[-1, 1] < 0.5  # a tiny rate has not learned it yet
    # the validation scores after each epoch from the third: every document's, in order, giving its accuracies
    again = round_data(x[train], y[train], x[val], y[val], 32, 0, shape, val_shape, score_batch=64)
    curves, scores = fit_candidates(again, 3, [0.03, 0.0001], [0.0, 0.0], 6, 16, 0, scores_from=3)
    assert scores.shape == (4, len(val), 2, 3)  # epochs 3 to 6
    np.testing.assert_allclose(np.exp(scores).sum(axis=-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose((scores.argmax(axis=-1) == y[val][None, :, None]).mean(axis=1), curves[2:])


def test_shared_starting_weights_and_wide_scoring_batches_change_no_curve():
    """The search starts each fold's rounds from one copy of the weights and scores in wide batches on a GPU:
    the curves must equal drawing the weights from the seed and scoring at the training batch size."""
    texts, labels = question_corpus(160)
    from sklearn.feature_extraction.text import TfidfVectorizer

    x = TfidfVectorizer().fit_transform(texts).astype(np.float32).tocsr()
    x.resize((x.shape[0], 64 * -(-x.shape[1] // 64)))
    y = np.searchsorted(sorted(set(labels)), labels).astype(np.int32)
    train, val = np.arange(0, 160, 2), np.arange(1, 160, 2)
    shape, val_shape = batch_shape([x[train]], 16), batch_shape([x[val]], 16)
    plain = fit_candidates(
        round_data(x[train], y[train], x[val], y[val], 16, 3, shape, val_shape), 3, [0.03, 0.003], [0.0, 1e-4], 4, 8, 3
    )
    initial = init_stacked(jax.random.PRNGKey(3), x.shape[1], 8, 3, 2)
    kept = np.asarray(initial.w1).copy()
    wide = round_data(x[train], y[train], x[val], y[val], 16, 3, shape, batch_shape([x[val]], 64), score_batch=64)
    assert wide.val[0].shape[0] == 2  # 80 validation rows in batches of 64
    shared = fit_candidates(wide, 3, [0.03, 0.003], [0.0, 1e-4], 4, 8, 3, initial=initial)
    np.testing.assert_array_equal(shared, plain)
    np.testing.assert_array_equal(np.asarray(initial.w1), kept)  # copied, not consumed by the donating epoch


def test_the_search_keeps_the_stop_words_that_decide_the_class(pool):
    rules = RULES.replace(cpu_folds_documents=0)  # one split, as a CPU searches a larger corpus
    texts, labels = question_corpus(300)
    result = search_settings(texts, labels, Settings(epochs=5, search_budget=120), pool, "cpu", rules=rules)
    assert result.settings.stop_words is None
    # The portfolio's 7 variants on the one split for a third of the epochs; the best 2 and the settings' own went on
    # (unless their first rung had stopped early); one trial a (candidate, fold), the one that went on holding its
    # whole curve.
    variants, _, _ = folds_module.candidate_space(Settings(), "cpu", rules)
    assert len(variants) == 7 and result.summary.halving
    assert result.summary.rounds == result.summary.rounds_planned and 7 <= result.summary.rounds <= 10
    assert (
        result.leaderboard[0]["accuracy"]
        > 0.6
        > max(r["accuracy"] for r in result.leaderboard if r["settings"]["stop_words"] == "english")
    )
    assert len(result.trials) == 7 * 3  # x 3 learning rates
    assert [
        folds_module.Variant(**{f: t["settings"][f] for f in folds_module.Variant._fields}) for t in result.trials[::3]
    ] == variants
    # a large corpus's sample folds pass round_min_steps anyway
    rules = RULES.replace(search_documents=150, round_min_steps=0)
    texts, labels = question_corpus(300)
    y = np.searchsorted(sorted(set(labels)), labels)
    folds = folds_module.device_folds(y, 0, rules)
    assert len(folds) == 1 and (len(folds[0][0]), len(folds[0][1])) == (100, 50)
    assert not set(folds[0][0]) & set(folds[0][1])
    assert len(folds_module.device_folds(y[:150], 0, rules)) == 3  # a corpus the size of the sample: 3 folds of it
    result = search_settings(texts, labels, Settings(epochs=7, search_budget=120), pool, "gpu", rules=rules)
    assert result.summary.subsampled and result.summary.searched_documents == 150
    assert result.summary.folds == 1 and result.summary.halving
    # the trial trained a round's 6 networks side by side and judged an ensemble of 5 of them
    networks = result.summary.ensemble
    assert networks.members in (1, 5) and 0 < networks.ensemble_accuracy <= 1


def test_a_gpu_cuts_its_round_batches_to_their_own_nonzeros_not_the_widest_views(pool, monkeypatch):
    """On a GPU every slot of a batch costs (padding too): the rounds' cap comes from the variants' own rows after
    selection (with headroom), not from the widest view of every n-gram; and every round's batches still fit."""
    from pipelines.vectorize import count_terms

    texts, labels = question_corpus(300)
    seen = []  # per round: (batch size, the (steps, cap) the search gave, the round's own densest batch's)
    from textclf.training.search import rounds as rounds_module

    real_round_data = rounds_module.round_data

    def recording(train_x, train_y, val_x, val_y, batch_size, seed, shape, val_shape, score_batch=None, **weights):
        own = batch_shape([train_x], batch_size, [cut_order(seed, train_x.shape[0])[0]])
        seen.append((batch_size, shape, own))
        return real_round_data(
            train_x, train_y, val_x, val_y, batch_size, seed, shape, val_shape, score_batch, **weights
        )

    monkeypatch.setattr(rounds_module, "round_data", recording)
    # (a GPU's cap floor off: the questions' batches fall under it, which would hide where the cap came from)
    monkeypatch.setitem(batches_module.SHAPE_BUCKETS, "gpu", batches_module.ShapeBuckets(1, 0))
    # (no character network: its rounds size their batches on their own)
    settings = Settings(epochs=2, hidden=8, features=8, search_budget=600, pinned=("epochs", "char_ngrams"))
    search_settings(texts, labels, settings, pool, "gpu")
    y = np.searchsorted(sorted(set(labels)), labels)
    train = folds_module.device_folds(y, settings.seed, RULES)[0][0]
    counts = count_terms(
        texts,
        2,
        None,
        settings.min_df,
        pool,
        settings.start_token,
        unspaced_as_characters=settings.unspaced_as_characters,
    )[1][train]
    cut = cut_order(settings.seed, len(train))[0]
    assert len(seen) > 8 and {b for b, _, _ in seen} == {64, 256}
    for batch, given, own in seen:
        assert given[1] >= own[1]  # every round's batches fit the shape given (no wider program compiled)
        assert given[1] < batch_shape([counts], batch, [cut])[1]  # and it is narrower than the widest view's


def test_the_cpu_split_validates_on_what_the_training_sample_leaves_out():
    rules = RULES.replace(cpu_train_documents=400, cpu_validation_documents=300)
    y = np.arange(1000) % 4
    for n, train_size, val_size in ((1000, 400, 300), (600, 400, 200), (300, 240, 60)):
        train, val = folds_module.cpu_split(y[:n], 0, rules)
        assert (len(train), len(val)) == (train_size, val_size) and not set(train) & set(val)
        assert np.bincount(y[val], minlength=4).min() >= val_size // 4 - 1  # stratified


def test_a_cpu_searches_a_small_corpus_on_folds_and_a_larger_one_on_one_split():
    limit = RULES.cpu_folds_documents
    y = np.arange(limit + 1000) % 4
    small = folds_module.search_folds(y[:limit], 0, "cpu", RULES)
    assert len(small) == 3  # every document validates once
    assert sorted(np.concatenate([val for _, val in small])) == list(range(limit))
    assert len(folds_module.search_folds(y[: limit + 1], 0, "cpu", RULES)) == 1
    assert len(folds_module.search_folds(y, 0, "gpu", RULES)) == 3


def test_a_small_corpus_rounds_train_to_the_steps_and_patience_of_a_larger_ones():
    from textclf.training.search.folds import round_epochs

    options = list(range(1, 21))
    settings = Settings(batch_size=64)
    # 160 documents a fold: 3 steps an epoch, so 100 epochs make 300 steps, and 34 epochs 100 steps of patience
    assert round_epochs(options, 160, settings, "gpu", RULES) == (100, list(range(1, 101)), 34)
    assert round_epochs(options, 160, settings, "cpu", RULES)[0] * 3 >= RULES.round_min_steps
    # a larger corpus keeps the epoch caps and PATIENCE epochs
    assert round_epochs(options, 4000, settings, "gpu", RULES) == (20, options, 3)
    assert round_epochs(options, 4000, settings, "cpu", RULES) == (10, options, 3)
    # a typed epoch count is the only one tried, however few steps it makes
    pinned = Settings(epochs=3, pinned=("epochs",))
    assert round_epochs([3], 160, pinned, "gpu", RULES)[:2] == (3, [3])


def test_epochs_for_all_documents_from_a_sample_curve():
    from textclf.training.search.folds import epochs_for_all as _epochs_for_all

    settings = Settings(epochs=12)
    assert _epochs_for_all(10, 10, settings) == 12  # still rising at the last epoch: at least the default
    assert _epochs_for_all(4, 10, settings) == 4  # peaked: the same passes over every document


def test_a_gpu_search_halves_the_portfolio_over_folds_and_tries_weight_decays(pool):
    texts, labels = question_corpus(300)
    settings = Settings(epochs=3, hidden=16, search_budget=600, pinned=("epochs",))
    result = search_settings(texts, labels, settings, pool, "gpu")  # the platform decides the plan, not the device
    summary = result.summary
    assert summary.halving and summary.folds == 3
    variants, optimizers, _ = folds_module.candidate_space(settings, "gpu", RULES)
    assert len(optimizers) == len(RULES.learning_rates) * len(RULES.weight_decays)
    assert {t["settings"]["weight_decay"] for t in result.trials} == set(RULES.weight_decays)

    # every variant on fold 0 for one epoch (a third of 3), the best two of that epoch (and the settings' own) on to
    # all 3 epochs on fold 0 (continued: one trial, its whole curve), then folds 1 and 2 (3 epochs, pinned: no early
    # stop)
    def variant_of(trial):
        return folds_module.Variant(**{f: trial["settings"][f] for f in folds_module.Variant._fields})

    first = {}  # variant -> its best fold-0 accuracy after the first epoch
    for t in result.trials:
        if t["fold"] == 0:
            first[variant_of(t)] = max(first.get(variant_of(t), 0.0), t["epoch_accuracies"][0])
        assert len(t["epoch_accuracies"]) in (1, 3)
    going_on = sorted(variants, key=lambda v: -first[v])[: RULES.halving_keep]  # and the settings' own variant:
    going_on += [] if variants[0] in going_on else [variants[0]]  # the defaults' rule may keep it
    assert summary.rounds == summary.rounds_planned == len(variants) + len(going_on) * 3
    assert len(result.trials) == (len(variants) + len(going_on) * 2) * len(optimizers)

    went_on = {variant_of(t) for t in result.trials if t["fold"] == 2}
    assert went_on == set(going_on)
    assert all(len(t["epoch_accuracies"]) == (3 if variant_of(t) in went_on else 1) for t in result.trials)
    finalists = {variant_of({"settings": row["settings"]}) for row in result.leaderboard if row["folds"] == 3}
    assert finalists == went_on and result.leaderboard[0]["folds"] == 3
    assert result.settings.stop_words is None
    assert summary.ensemble.members in (1, RULES.ensemble_members)


def test_the_candidates_are_the_settings_own_then_the_portfolio_with_the_pinned_fields_kept():
    portfolio = folds_module.portfolio()
    own = folds_module.Variant(*(getattr(Settings(), f) for f in folds_module.Variant._fields))
    assert len(set(portfolio)) == len(portfolio) >= RULES.portfolio_size and portfolio[0] == own
    variants, _, _ = folds_module.candidate_space(Settings(), "gpu", RULES)
    assert variants == list(portfolio[: RULES.portfolio_size])
    typed = Settings(stop_words=None, ngram_max=1, pinned=("stop_words", "ngram_max"))
    variants, _, _ = folds_module.candidate_space(typed, "gpu", RULES)
    assert variants[0] == own._replace(stop_words=None, ngram_max=1) and len(set(variants)) == len(variants)
    assert {(v.stop_words, v.ngram_max) for v in variants} == {(None, 1)}
    assert len(folds_module.candidate_space(Settings(), "gpu", RULES.replace(portfolio_size=3))[0]) == 3


def test_the_search_is_skipped_only_when_every_searched_field_is_pinned(pool):
    texts, labels = question_corpus(240)
    fields = ("stop_words", "ngram_max", "nb_weighting", "learning_rate", "weight_decay", "epochs", "ensemble")
    settings = Settings(epochs=2, ensemble=1, search_budget=60, pinned=fields)
    result = search_settings(texts, labels, settings, pool, "cpu")
    assert result.summary.searched  # sublinear tf and the batch size are still searched
    assert {(t["settings"]["sublinear_tf"], t["settings"]["batch_size"]) for t in result.trials} == {
        (True, 64),
        (False, 64),
        (True, 256),
    }
    everything = search_settings(
        texts, labels, settings.replace(pinned=fields + ("sublinear_tf", "batch_size")), pool, "cpu"
    )
    assert everything.summary.skipped == "every searched setting was set explicitly"


def test_views_join_into_one_network_whose_scores_are_the_views_mean():
    from textclf.models.stacked import joined_views

    rng = np.random.default_rng(6)
    views = [
        Params(*(rng.normal(size=shape).astype(np.float32) for shape in ((30, 8), (8,), (8, 3), (3,)))),
        Params(*(rng.normal(size=shape).astype(np.float32) for shape in ((20, 16), (16,), (16, 3), (3,)))),
    ]
    joined = joined_views(views)
    assert joined.w1.shape == (50, 24)
    assert not joined.w1[:30, 8:].any() and not joined.w1[30:, :8].any()  # no view reads the other's columns
    x = rng.normal(size=(5, 50)).astype(np.float32)

    def scores(p, x):
        return (1 / (1 + np.exp(-(x @ p.w1 + p.b1)))) @ p.w2 + p.b2

    np.testing.assert_allclose(
        scores(joined, x), (scores(views[0], x[:, :30]) + scores(views[1], x[:, 30:])) / 2, rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("platform", ["cpu", "gpu"])
def test_the_search_adds_a_character_network_where_word_endings_decide(pool, platform):
    texts, labels = suffix_corpus(400)
    # Epochs typed: the words here are noise, so the epoch their curves peak at is chance (1 would leave the
    # character network, which takes the words' epochs on a CPU, untrained).
    result = search_settings(texts, labels, Settings(epochs=8, search_budget=300, pinned=("epochs",)), pool, platform)
    networks, chosen = result.summary.ensemble, result.settings
    assert chosen.char_ngrams and networks.char_ngrams and chosen.ensemble == 1
    assert networks.char_pair_accuracy > networks.single_accuracy + 0.1
    if platform == "gpu":  # the character network's own rate and epochs, read off its own curves
        assert chosen.char_learning_rate in RULES.learning_rates and 1 <= chosen.char_epochs <= 20
        assert (networks.char_learning_rate, networks.char_epochs) == (chosen.char_learning_rate, chosen.char_epochs)
    else:  # the words' (0: Settings.char_view uses learning_rate and epochs)
        assert (chosen.char_learning_rate, chosen.char_epochs) == (0.0, 0)
        assert chosen.char_view().learning_rate == chosen.learning_rate


def test_the_character_network_is_not_tried_when_pinned_or_over_the_text_limit(pool):
    texts, labels = suffix_corpus(400)
    one_split = RULES.replace(cpu_folds_documents=0)  # (the reasons do not depend on the folds)
    settings = Settings(epochs=3, search_budget=300)
    pinned = search_settings(texts, labels, settings.replace(pinned=("char_ngrams",)), pool, "cpu", rules=one_split)
    assert not pinned.settings.char_ngrams and pinned.summary.ensemble.char_ngrams_not_tried == "set explicitly"
    long = search_settings(texts, labels, settings, pool, "cpu", rules=one_split.replace(char_max_characters=1000))
    assert not long.settings.char_ngrams and "over 1,000" in long.summary.ensemble.char_ngrams_not_tried
    costly = search_settings(
        texts, labels, settings, pool, "cpu", rules=one_split.replace(char_max_characters=10**9, cpu_trial_steps=5)
    )
    assert not costly.settings.char_ngrams and costly.summary.ensemble.reason.startswith("not tried on a CPU")
    assert "steps (batches x epochs) to train, over 5" in costly.summary.ensemble.reason


def test_a_cpu_counts_the_final_trainings_work_in_steps_not_documents():
    """A CPU's step costs Adam's pass over W1 whatever the batch: wisesight's 21,628 posts x 18 epochs at batch 256
    are 1,530 steps, under CPU_TRIAL_STEPS, where the same at batch 64 (6,084) are over it."""
    at_256 = Settings(batch_size=256, epochs=18, min_steps=0)
    assert folds_module.final_steps(at_256, 21628) == 85 * 18 <= RULES.cpu_trial_steps
    assert folds_module.final_steps(at_256.replace(batch_size=64), 21628) == 338 * 18 > RULES.cpu_trial_steps


def test_train_writes_words_and_characters_as_one_model_file(tmp_path):
    from textclf.inference.artifacts import load_model, read_header
    from textclf.runs.run import train

    texts, labels = suffix_corpus(300)
    corpus = tmp_path / "train.jsonl"
    corpus.write_text("".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in zip(texts, labels)))
    # Without the start token, so that the file takes the character view's own version (2).
    settings = Settings(
        search="off",
        char_ngrams=True,
        hidden=16,
        epochs=6,
        min_steps=0,
        learning_rate=0.01,
        char_epochs=4,
        char_learning_rate=0.02,
        start_token=False,
    )
    result = train(corpus, settings, db_path=tmp_path / "runs.db", model_path=tmp_path / "m.npz")
    model = load_model(tmp_path / "m.npz")
    assert read_header(tmp_path / "m.npz")["format_version"] == 2
    np.testing.assert_allclose(model.predict_proba(texts[:20]), result.model.predict_proba(texts[:20]), rtol=1e-6)
    words, chars = model.vectorizer.view_widths
    assert model.params.w1.shape == (words + chars, 32) and model.settings.char_ngrams
    assert not np.asarray(model.params.w1)[:words, 16:].any()  # the character network reads no word column
    assert [stats.epoch for stats in result.history] == list(range(1, 11))  # 6 + the characters' 4, numbered on
    assert settings.char_view() == settings.replace(learning_rate=0.02, epochs=4)
    assert result.eval_accuracy > 0.8
    assert model.predict(["the1 zapoking mulrading", "the2 zapoked mulraded"]) == ["ING", "ED"]


def test_more_networks_are_chosen_past_networks_errors_standard_errors_of_their_gain():
    from textclf.training.search.networks import fewest_networks_that_win as _fewest_networks_that_win

    noise = [np.array([1.0, -1.0] * 50 + [1.0])]  # mean gain 0.0099, standard error ~0.1
    clear = [np.array([1.0] * 20 + [0.0] * 81)]  # mean gain 0.198, standard error ~0.04
    loss = [np.array([-1.0] * 3 + [0.0] * 98)]  # mean gain below 0
    assert _fewest_networks_that_win(0.80, (0.81, noise), None, 5, 0.0) == (5, False)  # the default bar: any gain
    assert _fewest_networks_that_win(0.80, (0.79, loss), (0.79, loss), 5, 0.0) == (1, False)
    assert _fewest_networks_that_win(0.80, (0.81, noise), None, 5, 1.0) == (1, False)
    assert _fewest_networks_that_win(0.80, (0.95, clear), None, 5, 1.0) == (5, False)
    assert _fewest_networks_that_win(0.80, None, (0.95, clear), 5, 1.0) == (1, True)
    assert _fewest_networks_that_win(0.80, (0.95, clear), (0.95, clear), 5, 1.0) == (1, True)  # a tie: fewer networks
    assert _fewest_networks_that_win(0.80, (0.97, clear), (0.95, clear), 5, 1.0) == (5, False)


def _board_row(rate, decay, accuracy, folds=1, stop_words=None, epochs=4):
    return {
        "settings": {
            "stop_words": stop_words,
            "ngram_max": 2,
            "nb_weighting": True,
            "sublinear_tf": True,
            "batch_size": 64,
            "learning_rate": rate,
            "weight_decay": decay,
            "epochs": epochs,
        },
        "accuracy": accuracy,
        "folds": folds,
    }


def test_the_defaults_variant_is_kept_unless_another_beats_it_by_more_than_a_standard_error():
    from textclf.training.search.folds import Variant, keep_defaults as _keep_defaults

    defaults, other = Variant("english", 2, True, True, 64), Variant(None, 2, True, True, 64)

    def board(*rows):  # (variant, accuracy, folds), best first
        return [{"_variant": v, "accuracy": a, "folds": f, "settings": {}} for v, a, f in rows]

    # 3,000 validation documents at ~0.88: one standard error is ~0.6 points
    assert _keep_defaults(board((other, 0.883, 1), (defaults, 0.882, 1)), defaults, 3000, 1.0) == 1
    assert _keep_defaults(board((other, 0.883, 1), (other, 0.880, 1), (defaults, 0.878, 1)), defaults, 3000, 1.0) == 2
    assert _keep_defaults(board((other, 0.900, 1), (defaults, 0.882, 1)), defaults, 3000, 1.0) is None  # ~3 errors
    assert _keep_defaults(board((defaults, 0.883, 1), (other, 0.882, 1)), defaults, 3000, 1.0) is None  # it won
    # compared on fewer folds (cut short by the budget): it ranks below, it is not a contender
    assert _keep_defaults(board((other, 0.883, 3), (defaults, 0.884, 1)), defaults, 3000, 1.0) is None


def test_rate_candidates_are_the_winners_variant_within_two_standard_errors():
    from textclf.training.search.folds import rate_candidates as _rate_candidates

    board = [
        _board_row(0.01, 0.0, 0.90, epochs=3),
        _board_row(0.003, 0.0, 0.897, epochs=5),
        _board_row(0.01, 0.0, 0.899, stop_words="english"),  # another variant: not a rate candidate
        _board_row(0.001, 1e-4, 0.898, folds=0),  # ranked on fewer folds: not comparable
        _board_row(0.001, 0.0, 0.88),
    ]  # 2 points behind: outside 2 SE of 0.9 on 3,000 documents (1.1 points)
    got = _rate_candidates(board, 3000, lambda epochs: epochs * 10, RULES)
    assert got == [
        {"learning_rate": 0.01, "weight_decay": 0.0, "epochs": 30},
        {"learning_rate": 0.003, "weight_decay": 0.0, "epochs": 50},
    ]
    assert len(_rate_candidates(board, 100, lambda e: e, RULES)) == 3  # on 100 documents 0.88 is within the noise too
    assert len(_rate_candidates(board[:1], 3000, lambda e: e, RULES)) == 1  # the winner alone: nothing to choose


def test_a_searched_sample_hands_its_near_rates_to_the_final_training(pool):
    rules = cpu_split_of_a_large_corpus()  # 300 documents stand for a large corpus
    texts, labels = question_corpus(300)
    # the rounds alone: the trials after them (ensemble, characters, family) take the rate as the rounds chose it
    rounds = Settings(epochs=7, search_budget=120, ensemble=1, char_ngrams=False, family="network")
    rounds = rounds.replace(pinned=("ensemble", "char_ngrams", "family"))
    result = search_settings(texts, labels, rounds, pool, "cpu", rules=rules)
    candidates = result.summary.rate_candidates
    assert candidates[0]["learning_rate"] == result.settings.learning_rate
    assert candidates[0]["epochs"] == result.settings.epochs
    typed = rounds.replace(learning_rate=0.01, pinned=(*rounds.pinned, "learning_rate"))
    pinned = search_settings(texts, labels, typed, pool, "cpu", rules=rules)
    assert pinned.summary.rate_candidates is None  # a typed rate is not chosen again
    small = search_settings(texts[:150], labels[:150], rounds, pool, "cpu", rules=rules)
    assert small.summary.rate_candidates is None  # the folds validated on every document already


def _separable(n, seed):
    """Two classes, each with its own 20 of 40 features: any network that learns at all separates them."""
    rng = np.random.default_rng(seed)
    y = (np.arange(n) % 2).astype(np.int32)
    columns = rng.integers(0, 20, (n, 4)) + 20 * y[:, None]
    rows = np.repeat(np.arange(n), 4)
    return sp.csr_matrix((np.ones(4 * n, np.float32), (rows, columns.ravel())), shape=(n, 40)), y


@pytest.mark.parametrize("side_by_side", [True, False])
def test_fit_rates_lets_the_held_out_documents_choose(side_by_side, monkeypatch):
    from textclf.training import ensembles
    from textclf.training.epochs import EarlyStopping

    monkeypatch.setattr(ensembles, "stacked_is_faster", lambda: side_by_side)
    train_x, train_y = _separable(200, 0)
    held_x, held_y = _separable(60, 1)
    settings = Settings(hidden=8, batch_size=16, seed=0)
    # a rate that cannot move the weights first: the held-out documents must pass it over for the second
    choice = ensembles.fit_rates(
        TrainingRows(train_x, train_y, 2, held_x, held_y),
        settings,
        "xla",
        [(1e-7, 0.0, 6), (0.05, 0.0, 5)],
        (held_x, held_y),
    )
    assert choice.chosen == 1 and len(choice.held_out) == 2 and len(choice.held_out[1]) <= 5  # its own cap
    assert max(choice.held_out[1]) == 1.0 and max(choice.held_out[0]) < 0.9
    assert choice.held_out[1][choice.best_epoch - 1] == max(choice.held_out[1])
    # the returned network is the chosen one after its best epoch: it scores what was recorded for it
    assert EarlyStopping(held_x, held_y).score(choice.params) == max(choice.held_out[1])
    assert choice.history and all(stats.eval_accuracy is not None for stats in choice.history)


def test_device_scoring_counts_what_batches_cut_on_the_host_count(monkeypatch):
    """candidates.device_scoring (rows gathered on the device, a segment at a time) scores every row once, as the
    batches make_batches cuts on the host did."""
    from textclf.training import ensembles, device_data

    x, y = _separable(203, 5)
    x.data = np.random.default_rng(6).random(x.nnz).astype(np.float32)
    params = init_stacked(jax.random.PRNGKey(1), 40, 8, 2, 3)
    host = ensembles.device_batches(x, y, 16, np.arange(203), batch_shape([x], 16))
    expected = stacked_hits(params, *host)
    monkeypatch.setattr(device_data, "SEGMENT_BYTES", 12 * batch_shape([x], 16)[1] * 3)  # 3 of the 13 steps a segment
    hits = ensembles.device_scoring(x, y, 16, False)(params)
    np.testing.assert_array_equal(np.asarray(hits[0]), np.asarray(expected[0]))
    assert float(hits[1]) == float(expected[1]) and 0 < float(hits[1]) <= 203


@pytest.mark.parametrize("side_by_side", [True, False])
def test_training_rows_train_as_a_matrix_of_those_rows_would(side_by_side, monkeypatch):
    """A held-out split without a copy (training_rows of the whole matrix) trains the very networks that the
    copied rows train: the same batches, the same epochs, the same parameters."""
    from textclf.training import ensembles, device_data

    monkeypatch.setattr(ensembles, "stacked_is_faster", lambda: side_by_side)
    x, y = _separable(300, 2)
    x.data = np.random.default_rng(3).random(x.nnz).astype(np.float32)  # unequal rows: an order that differs shows
    held = np.zeros(300, bool)
    held[np.random.default_rng(4).choice(300, 40, replace=False)] = True
    kept = np.flatnonzero(~held)
    settings = Settings(hidden=8, batch_size=16, seed=0)
    rates = [(0.01, 0.0, 4), (0.003, 1e-4, 3)]
    held_out = (x[held], y[held])
    copied = ensembles.fit_rates(TrainingRows(x[kept], y[kept], 2), settings, "xla", rates, held_out)
    in_places = [ensembles.fit_rates(TrainingRows(x, y, 2, training_rows=kept), settings, "xla", rates, held_out)]
    if side_by_side:  # the matrix may be on the device already, its host copy gone (device_data.ResidentRows)
        in_places.append(
            ensembles.fit_rates(
                TrainingRows(device_data.resident_rows(x, y), y, 2, training_rows=kept),
                settings,
                "xla",
                rates,
                held_out,
            )
        )
    # Bit for bit on a CPU. A GPU's one-network XLA step sums its scatter-adds with atomics, in no fixed order, so
    # there the parameters agree to float32 rounding (measured: 6e-8 apart on an H200, the same in the tree before).
    exact = jax.default_backend() == "cpu"
    for in_place in in_places:
        assert in_place.held_out == copied.held_out and in_place.chosen == copied.chosen
        for a, b in zip(in_place.params, copied.params):
            if exact:
                np.testing.assert_array_equal(a, b)
            else:
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            [s.loss for s in in_place.history], [s.loss for s in copied.history], rtol=0 if exact else 1e-5
        )
        assert [s.train_accuracy for s in in_place.history] == [s.train_accuracy for s in copied.history]
    if side_by_side:  # the ensemble's path too
        three = Settings(
            ensemble=3, learning_rate=0.01, weight_decay=0.0, epochs=3, min_steps=0, batch_size=16, hidden=8, seed=0
        )
        one = ensembles.fit_ensemble(TrainingRows(x[kept], y[kept], 2), three)
        for matrix in (x, device_data.resident_rows(x, y)):
            other = ensembles.fit_ensemble(TrainingRows(matrix, y, 2, training_rows=kept), three)
            for a, b in zip(one[0], other[0]):
                np.testing.assert_array_equal(a, b)
            assert [s.loss for s in one[1]] == [s.loss for s in other[1]]


@pytest.mark.parametrize("side_by_side", [True, False])
def test_fit_rates_stops_between_epochs_when_asked(side_by_side, monkeypatch):
    from textclf.training import ensembles
    from textclf.training.events import TrainingStopped

    monkeypatch.setattr(ensembles, "stacked_is_faster", lambda: side_by_side)
    train_x, train_y = _separable(100, 0)
    held_x, held_y = _separable(30, 1)
    epochs_seen = []
    with pytest.raises(TrainingStopped):
        ensembles.fit_rates(
            TrainingRows(train_x, train_y, 2),
            Settings(hidden=8, batch_size=16, seed=0),
            "xla",
            [(1e-7, 0.0, 6), (1e-7, 0.0, 6)],
            (held_x, held_y),
            Watch(epochs_seen.append, lambda: True),
            patience=10,
        )
    assert len(epochs_seen) == 1  # asked after the first epoch: no second one


def test_precompiled_programs_are_found_in_the_compilation_cache(tmp_path, caplog):
    """rounds.precompile_epoch / precompile_scores compile, from the first round's arrays, what a later round
    of another batch size and the networks trial run: those calls must find the very programs compiled, not
    compile their own."""
    import logging

    from jax._src import compilation_cache
    from sklearn.feature_extraction.text import TfidfVectorizer

    from textclf.training.backends import configure_compilation
    from pipelines.batches import cut_order
    from textclf.training.search.rounds import precompile_epoch, precompile_scores

    texts, labels = question_corpus(240)
    x = TfidfVectorizer().fit_transform(texts).astype(np.float32).tocsr()
    x.resize((x.shape[0], 64 * -(-x.shape[1] // 64)))
    y = np.searchsorted(sorted(set(labels)), labels).astype(np.int32)
    train, val = np.arange(0, 240, 2), np.arange(1, 240, 2)
    shapes = {b: batch_shape([x[train]], b, [cut_order(seed, len(train))[0]]) for seed, b in ((0, 16), (1, 64))}
    val_shape = batch_shape([x[val]], 32)
    previous = jax.config.jax_compilation_cache_dir
    configure_compilation(tmp_path / "cache")
    compilation_cache.reset_cache()  # a cache set up before this test (or none) would otherwise stay in use
    caplog.set_level(logging.DEBUG, logger="jax._src.compiler")
    try:
        first = round_data(x[train], y[train], x[val], y[val], 16, 0, shapes[16], val_shape, 32)
        precompile_epoch(first, 3, 2, 8, 64, shapes[64])
        precompile_scores(first, 3, 2, 8)
        caplog.clear()
        later = round_data(x[train], y[train], x[val], y[val], 64, 1, shapes[64], val_shape, 32)
        fit_candidates(later, 3, [0.03, 0.003], [0.0, 0.0], 2, 8, 1, scores_from=1)
    finally:
        jax.config.update("jax_compilation_cache_dir", previous)
        compilation_cache.reset_cache()
    # Compiling logs a cache lookup (with a persistent cache set up); a program compiled ahead is not looked up.
    lookups = [r.getMessage() for r in caplog.records if "COMPILATION CACHE" in r.getMessage().upper()]
    assert lookups and not [m for m in lookups if "'jit__epoch'" in m or "'jit__scores'" in m], lookups


@pytest.mark.skipif(
    jax.default_backend() != "cpu",
    reason="bit for bit on a CPU: a GPU's scatter-adds (the sparse gradients) sum in no fixed order",
)
def test_the_same_search_beside_busy_processes_gives_the_same_model(tmp_path, monkeypatch):
    """The search's budget counts work, not seconds: the same command on a machine whose every core is busy with
    other processes searches the same rounds and trains bit for bit the same weights."""
    import os
    import subprocess
    import sys

    from textclf.runs.run import train

    texts, labels = question_corpus(300)
    corpus = tmp_path / "train.jsonl"
    corpus.write_text("".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in zip(texts, labels)))
    settings = Settings(search_steps=1500)

    def trained(name: str):
        monkeypatch.setenv("TEXTCLF_HOME", str(tmp_path / name))  # no cache shared between the two runs
        return train(corpus, settings, db_path=tmp_path / f"{name}.db", model_path=tmp_path / f"{name}.npz")

    quiet = trained("quiet")
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        busy = trained("busy")
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    # the budget cut the search short (where a clock would have cut it elsewhere on the busy machine)
    assert quiet.search.rounds < quiet.search.rounds_planned
    assert quiet.search.rounds == busy.search.rounds and quiet.search.steps == busy.search.steps <= 4000
    assert quiet.search.leaderboard == busy.search.leaderboard
    assert quiet.model.settings == busy.model.settings
    for a, b in zip(quiet.model.params, busy.model.params):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("platform", ["cpu", "gpu"])
def test_a_search_prepared_while_jax_starts_chooses_as_one_that_is_not(pool, platform, monkeypatch):
    texts, labels = question_corpus(300)
    settings = Settings(epochs=3, search_steps=1500, ensemble=1, pinned=("ensemble",))  # the rounds alone
    plain = search_settings(texts, labels, settings, pool, platform)
    prepared = prepare_search(texts, labels, settings, pool, platform)
    other = prepare_search(texts, labels, settings, pool, "gpu" if platform == "cpu" else "cpu")
    assert prepare_search(texts[:40], labels[:40], settings, pool, platform) is None  # too few
    tokenised = []
    counted = search_module.searched_corpus
    monkeypatch.setattr(search_module, "searched_corpus", lambda *args: tokenised.append(1) or counted(*args))
    ahead = search_settings([], labels, settings, pool, platform, prepared=prepared)  # its texts: the prepared ones
    assert not tokenised
    assert ahead.settings == plain.settings and ahead.leaderboard == plain.leaderboard
    assert [t["epoch_accuracies"] for t in ahead.trials] == [t["epoch_accuracies"] for t in plain.trials]
    # work prepared for another platform is not used: the texts are tokenised for this one
    search_settings(texts, labels, settings.replace(search_steps=300), pool, platform, prepared=other)
    assert tokenised == [1]


def test_the_search_package_its_rules_and_its_host_work_load_without_jax():
    """The plan and the settings read the search's rules before a run forks its vectorizing workers, which it does
    only while JAX is not imported (pipelines/workers.py); the search's host work (prepare_search) runs while JAX
    starts in another thread, so it must not wait for JAX's import."""
    import subprocess
    import sys

    code = (
        "import sys, textclf.training.search, textclf.training.search.rules, textclf.training.plan; "
        "from textclf.training.search import prepare_search; "
        "print('jax' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"
