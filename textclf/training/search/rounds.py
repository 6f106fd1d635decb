"""The search's rounds: a candidate round of K networks side by side on one fold (CandidateRound, fit_candidates), each
scored after every epoch on the fold's held-out rows; one fold's round as every part of the search cuts it (fold_round:
the fold's matrices and its batches on the device, round_data, with the rows' labels and weights); the programs the
rounds run, compiled ahead (precompile_*)."""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from pipelines.batches import batch_shape, cut_order, next_power_of_two
from textclf.models.weights import Params
from textclf.settings import Settings
from textclf.training.device_data import shape_buckets
from textclf.training.ensembles import device_batches
from textclf.training.search.folds import RoundGeometry, SearchCorpus, Variant, fold_matrices
from textclf.training.steps.optimizers import adam
from textclf.training.steps.stacked import StackedStep, dense_default, init_stack


def fold_round(
    corpus: SearchCorpus,
    geometry: RoundGeometry,
    fold: int,
    variant: Variant,
    settings: Settings,
    seed: int,
    built: tuple | None = None,
) -> RoundData:
    """The round of `fold` for `variant`, its columns selected and weighed by `settings`, its batches cut from
    `seed`'s shuffle at the variant's batch size in the search's shapes; built: the fold's matrices, where made
    ahead."""
    train_rows, val_rows = corpus.folds[fold]
    train_x, val_x = built or fold_matrices(
        corpus.counts,
        corpus.y,
        corpus.masks[variant.stop_words, variant.ngram_max],
        train_rows,
        val_rows,
        settings,
        geometry.features,
        geometry.width,
        variant,
    )
    return round_data(
        train_x,
        corpus.trained_labels(train_rows),
        val_x,
        corpus.trained_labels(val_rows),
        variant.batch_size,
        seed,
        geometry.shapes[variant.batch_size],
        geometry.val_shape,
        geometry.score_batch,
        weights=(corpus.row_weights(train_rows), corpus.row_weights(val_rows)),
    )


class RoundData(NamedTuple):
    """One round's batches on the device, cut before the round trains (round_data): the search builds the next
    round's while the device trains the current one."""

    train: tuple[jax.Array, ...]  # indices, values, rows (steps, cap); labels, mask (steps, B): cut from one shuffle
    val: tuple[jax.Array, ...]  # the validation rows in order, the same five arrays at the scoring batch size
    n_val: int  # validation documents
    n_features: int
    orders: np.random.Generator  # draws the order in which each epoch visits the training batches
    n_steps: int  # training batches an epoch visits (the arrays' steps beyond them: padding, see round_data)

    @property
    def batch_size(self) -> int:
        return self.train[3].shape[1]  # labels: (steps, B)


# Nine arguments: a round's training and validation rows, and the batch geometry the search fixed for all its rounds.
def round_data(
    train_x: sp.csr_matrix,
    train_y: np.ndarray,
    val_x: sp.csr_matrix,
    val_y: np.ndarray,
    batch_size: int,
    seed: int,
    shape: tuple[int, int],
    val_shape: tuple[int, int],
    score_batch: int | None = None,
    *,
    weights: tuple[np.ndarray | None, np.ndarray | None] = (None, None),
) -> RoundData:
    """Cut and upload one round's batches. shape / val_shape: (steps, cap) of the training / validation batches
    (batch_shape), shared by the rounds of one search so that they compile once; a cut they did not foresee
    gets a wider cap (one more compilation) rather than losing nonzeros. score_batch: rows per validation batch
    (default batch_size): scoring has no gradient, so a GPU scores 1,024 rows a step where it trains on 64.
    weights: the training and the validation rows' (None: 1 each), in the loss and in the validation's hits."""
    score_batch = score_batch or batch_size
    # The batches are cut once, from one shuffle, and each epoch visits them in a new order: cutting them anew
    # on the host every epoch would cost more than the GPU's training.
    cut, rng = cut_order(seed, train_x.shape[0])
    buckets = shape_buckets()
    shape = tuple(map(max, shape, batch_shape([train_x], batch_size, [cut], buckets)))
    val_shape = tuple(map(max, val_shape, batch_shape([val_x], score_batch, buckets=buckets)))
    # The arrays' steps rounded up to a power of two (padding batches, never visited: _epoch's traced `steps`;
    # scored as no rows), so that a corpus of another size compiles to the same programs and a later run finds
    # them in the persistent compilation cache.
    padded = (next_power_of_two(shape[0]), shape[1])
    val_padded = (next_power_of_two(val_shape[0]), val_shape[1])
    return RoundData(
        tuple(device_batches(train_x, train_y, batch_size, cut, padded, weights[0])),
        tuple(device_batches(val_x, val_y, score_batch, np.arange(val_x.shape[0]), val_padded, weights[1])),
        val_x.shape[0],
        train_x.shape[1],
        rng,
        shape[0],
    )


def fit_candidates(
    data: RoundData,
    n_classes: int,
    rates: list[float],
    decays: list[float],
    epochs: int,
    hidden: int,
    seed: int,
    *,
    patience: int | None = None,
    initial: Params | None = None,
    scores_from: int | None = None,
    metric: str = "micro-f1",
    on_scores: Callable[[int, np.ndarray], None] | None = None,
    loss: str = "log",
):
    # Thirteen arguments: a round's data and what trains in it (classes, rates, decays, epochs, width, seed), and
    # the six optional ways the search runs a round, each named by the call that uses it.
    """Train K = len(rates) networks side by side for `epochs` epochs on one round's batches (round_data),
    network k with learning rate rates[k] and weight decay decays[k]; -> (epochs, K) validation accuracy after
    each epoch (label sets: the metric at probability 0.5, micro-F1 unless told). patience: stop once this many
    epochs in a row improved no network's best validation accuracy (early stopping); the epochs not run score 0.
    initial: the K networks' starting weights (copied, not consumed), else drawn from `seed` as
    StackedStep.start_state does: a search starts every round of a fold from the same weights, and drawing 25M
    uniform numbers cost ~0.3 s a round. scores_from: return (accuracies, the (epochs run from this one (1-based)
    on, validation documents, K, C) log-probabilities after each of them), for the search to score combinations
    of networks (an ensemble, networks trained on other columns). on_scores: called after each epoch with (epoch,
    the (validation documents, K, C) log-probabilities), for a combination scored as the models train, without
    keeping every epoch's. loss: the models' (textclf.settings.LINEAR_LOSSES; the family trial's linear models:
    Settings.linear_loss)."""
    round_ = CandidateRound(
        data,
        n_classes,
        rates,
        decays,
        epochs,
        hidden,
        seed,
        patience=patience,
        initial=initial,
        scores_from=scores_from,
        metric=metric,
        on_scores=on_scores,
        loss=loss,
    )
    accuracies = round_.run(epochs)
    return (accuracies, np.stack(round_.scores)) if scores_from is not None else accuracies


class CandidateRound:
    """fit_candidates' networks as a round that trains in parts: run(until) trains the epochs up to `until`, and
    a later run(more) goes on from there as if never paused (the same batch orders, weights, optimizer state and
    early-stopping count), so successive halving continues a survivor instead of training it again."""

    # Thirteen arguments: fit_candidates' (its docstring says what each is).
    def __init__(
        self,
        data: RoundData,
        n_classes: int,
        rates: list[float],
        decays: list[float],
        epochs: int,
        hidden: int,
        seed: int,
        *,
        patience: int | None = None,
        initial: Params | None = None,
        scores_from: int | None = None,
        metric: str = "micro-f1",
        on_scores: Callable[[int, np.ndarray], None] | None = None,
        loss: str = "log",
    ):
        self.data, self.patience, self.metric = data, patience, metric
        self.scores_from, self.on_scores = scores_from, on_scores
        models = len(rates)
        self.step = StackedStep.for_batch(data.batch_size, data.n_features, hidden, models, loss)
        self.params, self.state = (
            self.step.start_state(seed, data.n_features, hidden, n_classes)
            if initial is None
            else self.step.ready_state(initial)
        )
        self.rates, self.decays = jnp.asarray(rates, jnp.float32), jnp.asarray(decays, jnp.float32)
        self.run_step = self.step.epoch()
        self.accuracies = np.zeros((epochs, models))  # after each epoch; 0 for an epoch not run
        self.best, self.stale = np.full(models, -1.0), 0  # (stale: epochs in a row that improved no network)
        self.scores: list[np.ndarray] = []
        self.done = 0  # epochs trained
        self.stopped = False  # early-stopped: no more epochs

    def run(self, until: int) -> np.ndarray:
        """Train on to `until` epochs (at most the round's), unless stopped early -> (epochs, K) accuracies."""
        from textclf.training.epochs import run_epochs

        until = min(until, len(self.accuracies))
        if not self.stopped and self.done < until:
            run_epochs(self.params, self.state, [], self.done, until, self._one_epoch, early_stop=self._no_gain)
        return self.accuracies

    def _one_epoch(self, epoch: int, params, state):
        data, step = self.data, self.step
        steps, padded = data.n_steps, data.train[0].shape[0]
        # a new order of the cut batches each epoch; the padding batches after them are never visited
        order = np.concatenate([data.orders.permutation(steps), np.arange(steps, padded)]).astype(np.int32)
        params, state, _ = self.run_step(
            params, state, self.rates, self.decays, *data.train, jnp.asarray(order), jnp.asarray(steps, jnp.int32)
        )
        self.params, self.state, self.done = params, state, epoch + 1
        each, _ = step.hits(params, *data.val)
        self.accuracies[epoch] = (
            label_set_score(each, data.n_val, self.metric)
            if data.val[3].ndim == 3
            else np.asarray(each) / max(1, data.n_val)
        )
        scoring = self.scores_from is not None and epoch + 1 >= self.scores_from
        if self.on_scores is not None or scoring:
            batched = np.asarray(step.log_probabilities(params, *data.val[:4]))  # (steps, B, K, C)
            batched = batched.reshape(-1, *batched.shape[2:])[: data.n_val]
            if self.on_scores is not None:
                self.on_scores(epoch, batched)
            if scoring:
                self.scores.append(batched)
        return params, state, None  # (the rounds keep no EpochStats: the accuracies are their record)

    def _no_gain(self, epoch: int, params) -> bool:
        self.stale = 0 if np.any(self.accuracies[epoch] > self.best) else self.stale + 1
        self.best = np.maximum(self.best, self.accuracies[epoch])
        self.stopped = self.patience is not None and self.stale >= self.patience
        return self.stopped


def label_set_score(hits, documents: int, metric: str = "micro-f1") -> np.ndarray:
    """StackedStep.hits of label sets ((K, C, 3) counts, (K,) summed document F1) -> (K,) the metric at 0.5:
    micro-F1 from the summed counts, macro-F1 the labels' F1 averaged, samples-F1 the documents' averaged."""
    counts, document_f1 = (np.asarray(part, np.float64) for part in hits)
    if metric == "samples-f1":
        return document_f1 / max(1, documents)
    tp, fp, fn = np.moveaxis(counts, -1, 0)  # (K, C) each
    if metric == "macro-f1":
        return (2 * tp / np.maximum(1.0, 2 * tp + fp + fn)).mean(axis=-1)
    tp, fp, fn = tp.sum(axis=-1), fp.sum(axis=-1), fn.sum(axis=-1)
    return 2 * tp / np.maximum(1.0, 2 * tp + fp + fn)


# Compiling ahead, without running: for a thread while the device trains the search's first rounds. jax keeps what
# it compiled, and the later call of the same program with arrays of these shapes runs it without compiling (and
# the persistent compilation cache, textclf/training/backends.py, keeps it for the next process), so a first search
# waits for compilation less (a first search is mostly compilation, BENCHMARKS.md "Accuracy").


def precompile_epoch(
    data: RoundData,
    n_classes: int,
    models: int,
    hidden: int,
    batch_size: int,
    shape: tuple[int, int],
    loss: str = "log",
) -> None:
    """The epoch program that fit_candidates will run for a round of K = `models` networks over `data`'s input
    width, cut at `batch_size` into batches of `shape` (steps, cap; round_data's), trained on `loss`."""
    from textclf.training.steps.stacked import stacked_epoch

    step = StackedStep.for_batch(batch_size, data.n_features, hidden, models, loss)
    steps = next_power_of_two(shape[0])

    # Shapes and dtypes only, as the round's uploaded (uncommitted) arrays lower: a sharding here would change the
    # program's text, and so its cache key.
    train = [jax.ShapeDtypeStruct((steps, shape[1]), a.dtype) for a in data.train[:3]] + [
        jax.ShapeDtypeStruct((steps, batch_size, *a.shape[2:]), a.dtype) for a in data.train[3:]
    ]
    params = _abstract_params(data, n_classes, models, hidden)
    per_model = jax.ShapeDtypeStruct((models,), jnp.float32)
    stacked_epoch.lower(
        params,
        jax.eval_shape(adam().init, params),
        per_model,
        per_model,
        *train,
        jax.ShapeDtypeStruct((steps,), jnp.int32),
        jax.ShapeDtypeStruct((), jnp.int32),
        dense=step.dense,
        fused=step.fused,
        loss=loss,
    ).compile()


def precompile_hits(data: RoundData, n_classes: int, models: int, hidden: int) -> None:
    """The scoring program fit_candidates runs after each epoch of K = `models` networks (hidden 0: linear models)
    over `data`'s validation batches."""
    from textclf.training.steps.stacked import stacked_hits

    stacked_hits.lower(_abstract_params(data, n_classes, models, hidden), *data.val, dense=dense_default()).compile()


def precompile_scores(data: RoundData, n_classes: int, models: int, hidden: int) -> None:
    """The program of fit_candidates(..., scores_from=...) for K = `models` networks over `data`'s validation
    batches (the search's networks trial)."""
    from textclf.training.steps.stacked import stacked_scores

    stacked_scores.lower(
        _abstract_params(data, n_classes, models, hidden), *data.val[:4], dense=dense_default()
    ).compile()


def _abstract_params(data: RoundData, n_classes: int, models: int, hidden: int) -> Params:
    # (init_stack's own eval_shape: traced inside another function it would be a nested jit, which its
    # compiler options do not allow)
    return init_stack.eval_shape(jax.random.PRNGKey(0), data.n_features, hidden, n_classes, models)
