"""K networks of one view trained side by side on the same minibatches (textclf/models/stacked.py, stepped by
textclf/training/steps/stacked.py) through the one epoch loop (textclf/training/epochs.py, run_epochs), or one after
another where that is faster (a CPU's): an ensemble (fit_ensemble, fit_members) and the rate candidates with held-out
documents choosing one (fit_rates). After every epoch each network is scored on the held-out rows, so a choice reads
the best epoch count off the curve (early stopping for free). The search's rounds (training/search/rounds.py) cut
their batches here too (device_batches).
"""

from __future__ import annotations

import time
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from pipelines.batches import batch_shape, make_batches, padded_batches
from textclf.models.stacked import member, merged
from textclf.models.weights import Params
from textclf.settings import Settings
from textclf.training.device_data import (
    ResidentRows,
    batches_in_row_order,
    bucket,
    bucketed_order,
    canonical,
    gathered_segments,
    on_device,
    scoring_rows,
    segment_steps,
    shape_buckets,
)
from textclf.training.inputs import TrainingRows, Watch
from textclf.training.steps.stacked import StackedStep, dense_default


def device_batches(
    matrix: sp.csr_matrix,
    labels: np.ndarray,
    batch_size: int,
    order: np.ndarray,
    shape: tuple[int, int],
    weights: np.ndarray | None = None,
) -> list[jax.Array]:
    return [jnp.asarray(a) for a in _padded_batches(matrix, labels, batch_size, order, *shape, weights)]


def _padded_batches(
    matrix: sp.csr_matrix,
    labels: np.ndarray,
    batch_size: int,
    order: np.ndarray,
    steps: int,
    cap: int,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, ...]:
    """make_batches (weights: the rows', None: 1 each), padded to `steps` batches of `cap` nonzeros (padding rows
    have mask 0), so every fold and every vectorizer variant of one search reuses one compiled epoch."""
    # every cell once: write_batch's stores
    batches = make_batches(canonical(matrix), labels, batch_size, order, weights)
    return padded_batches(batches.arrays(), steps, cap)


class StackedEpochs:
    """K networks side by side (different initialisations, the same batches; network k with rates[k] and
    decays[k]) for the one epoch loop (textclf/training/epochs.py, run_epochs): start() -> (params, Adam state);
    epoch(epoch, params, state) -> (params, state, hits of the epoch's batches with the new params, (steps,) losses
    summed over the K networks). Only rows.training_rows train (default all); the others go to the device with
    them but no batch holds them, so that a held-out split needs no copy of the matrix (16 GB at ten million
    documents). rows.x may be on the device already (device_data.ResidentRows): the same batches, and the
    caller's host copy can go first. settings: the batch size, hidden units and seed; loss: the models'
    (textclf.settings.LINEAR_LOSSES)."""

    def __init__(
        self,
        rows: TrainingRows,
        rates: list[float],
        decays: list[float],
        epochs: int,
        settings: Settings,
        loss: str = "log",
    ):
        train_x, training_rows, batch_size = rows.x, rows.training_rows, settings.batch_size
        # W1's rows, the documents and the epoch's steps in their buckets (pipelines.batches.shape_bucket): the
        # programs serve every corpus of the bucket; W1's padding rows are cut off on the way to the host (host).
        self.columns = train_x.shape[1]
        self.shape = (settings.seed, bucket(self.columns), settings.units, rows.n_classes)  # units 0: linear
        self.rates, self.decays = jnp.asarray(rates, jnp.float32), jnp.asarray(decays, jnp.float32)
        rng = np.random.default_rng(settings.seed)
        self.n = rows.n_training
        # every epoch's shuffle, drawn first for the shape: as document numbers of train_x
        self.orders = [
            rng.permutation(self.n) if training_rows is None else training_rows[rng.permutation(self.n)]
            for _ in range(epochs)
        ]
        self.cap = batch_shape([train_x] * epochs, batch_size, self.orders, shape_buckets())[1]
        self.batch_size = batch_size
        self.steps = -(-self.n // batch_size)  # (batch_shape's steps would count the rows not trained on too)
        # The training set goes to the device once and each epoch's batches are gathered there from its order
        # (textclf/training/device_data.py: the batches make_batches would cut, nonzero for nonzero), not cut on
        # the host, where each epoch's padded arrays held 11 GB of a million-document run's 18 GB peak.
        self.resident = on_device(train_x, rows.y, rows.weights)
        self.step = side_by_side_step(batch_size, self.columns, settings.units, len(rates), loss)
        self.run_step = self.step.epoch()
        self.segment = segment_steps(bucket(self.steps), 12 * self.cap)  # (the last may be shorter)

    def start(self):
        return self.step.start_state(*self.shape, columns=self.columns)

    def host(self, params: Params) -> Params:
        """The stack as the one network whose scores are the mean of theirs, on the host (models.stacked.merged),
        its W1 cut to the input's columns."""
        params = merged(params)
        return params._replace(w1=params.w1[: self.columns])

    def member(self, params: Params, k: int) -> Params:
        """Network k of the stack on the host (models.stacked.member), its W1 cut to the input's columns."""
        params = member(params, k)
        return params._replace(w1=params.w1[: self.columns])

    def _gathered(self, order: np.ndarray):
        return gathered_segments(self.resident, order, self.cap, self.segment)

    def epoch(self, epoch: int, params: Params, state):
        order = np.pad(self.orders[epoch], (0, self.steps * self.batch_size - self.n), constant_values=-1)
        order = bucketed_order(order.reshape(self.steps, self.batch_size).astype(np.int32), 12 * self.cap)
        steps = jnp.int32(self.steps) if len(order) <= self.segment else None  # one segment: padding not run
        losses = []
        for batches in self._gathered(order):
            params, state, part = self.run_step(params, state, self.rates, self.decays, *batches, steps=steps)
            losses.append(part)
        if len(losses) == 1:  # one segment: its batches, still on the device, are scored as they are
            return params, state, self.step.hits(params, *batches), losses[0][: self.steps]
        # Several: each gathered again, so that no more than one segment's batches are on the device at once.
        hits = [self.step.hits(params, *batches) for batches in self._gathered(order)]
        return params, state, (sum(h[0] for h in hits), sum(h[1] for h in hits)), jnp.concatenate(losses)


class _EpochClock:
    """Seconds an epoch took; the first one's counted as compilation (it compiles the step), as fit_network does."""

    def __init__(self):
        self.mark, self.compile_seconds, self.train_seconds = time.perf_counter(), 0.0, 0.0

    def lap(self, epoch: int) -> float:
        seconds, self.mark = time.perf_counter() - self.mark, time.perf_counter()
        if epoch == 0:
            self.compile_seconds, seconds = seconds, 0.0
        self.train_seconds += seconds
        return seconds


def _epoch_stats(
    epoch: int,
    losses,
    members: int,
    n: int,
    batch_size: int,
    train_correct: float,
    eval_accuracy: float | None,
    seconds: float,
):
    """EpochStats of one epoch of K stacked networks (losses: (steps,) summed over them, each a batch mean).
    Eight arguments: the one epoch's numbers, each computed by the caller."""
    from textclf.training.events import EpochStats

    rows = np.minimum(batch_size, n - np.arange(len(losses)) * batch_size).clip(0)
    return EpochStats(
        epoch + 1,
        float((np.asarray(losses) * rows).sum() / n / members),
        train_correct / n,
        eval_accuracy,
        seconds,
        n / seconds if seconds > 0 else float("inf"),
    )


def fit_ensemble(rows: TrainingRows, settings: Settings, watch: Watch = Watch(), loss: str = "log"):
    """Train settings.ensemble networks side by side (different initialisations, the same batches, rate and decay)
    for settings.epochs_for(the training rows) epochs; -> (merged parameters, list of EpochStats, compile seconds,
    train seconds). After each epoch the ensemble is scored on rows.eval_x if given. No checkpoints: an
    interrupted ensemble starts over. watch.early_stopping (textclf.training.epochs.EarlyStopping): judges the
    merged network after each epoch; its best epoch's parameters are returned. loss: the networks' (the plan's view's,
    textclf.training.plan.ViewPlan)."""
    from textclf.training.epochs import run_epochs

    members, n_training, early_stopping = max(1, settings.ensemble), rows.n_training, watch.early_stopping
    epochs = settings.epochs_for(n_training)
    label_sets = rows.y.ndim == 2
    step = StackedEpochs(
        rows, [settings.learning_rate] * members, [settings.weight_decay] * members, epochs, settings, loss
    )
    eval_accuracy_of = _eval_accuracy(rows, settings.batch_size, step.host) if rows.scored else None
    clock = _EpochClock()

    def one_epoch(epoch: int, params, state):
        params, state, train_hits, losses = step.epoch(epoch, params, state)
        eval_accuracy = None if eval_accuracy_of is None else eval_accuracy_of(params)
        seconds = clock.lap(epoch)
        together = train_hits[1]  # label sets: (per-label counts, the documents' summed F1), which it records
        train_right = float(together[1] if label_sets else together)
        return (
            params,
            state,
            _epoch_stats(epoch, losses, members, n_training, settings.batch_size, train_right, eval_accuracy, seconds),
        )

    judge = None if early_stopping is None else (lambda epoch, params: early_stopping(epoch, lambda: step.host(params)))
    params, _, history = run_epochs(*step.start(), [], 0, epochs, one_epoch, watch.on_epoch, early_stop=judge)
    if early_stopping is not None and early_stopping.best_params is not None:
        return early_stopping.best_params, history, clock.compile_seconds, clock.train_seconds
    return step.host(params), history, clock.compile_seconds, clock.train_seconds


def _eval_accuracy(rows: TrainingRows, batch_size: int, host: Callable[[Params], Params]) -> Callable[[Params], float]:
    """params -> the share of rows.eval_x the merged stack predicts right: scored on the device, or, for label
    sets, on the host (every output on the right side of 0.5, as one network's epochs record it)."""
    if rows.eval_y.ndim == 2:
        from textclf.models.weights import host_scores

        return lambda params: float(
            np.mean(np.all((host_scores(host(params), rows.eval_x) > 0) == (rows.eval_y > 0), axis=1))
        )
    hits = device_scoring(rows.eval_x, rows.eval_y, batch_size, dense_default())
    return lambda params: float(hits(params)[1]) / rows.eval_x.shape[0]


def device_scoring(
    x: sp.csr_matrix, y: np.ndarray, batch_size: int, dense: bool
) -> Callable[[Params], tuple[jax.Array, jax.Array]]:
    """A scorer of (x, y) for stacked networks: params -> StackedStep.hits over every row (each network's and the
    ensemble's documents right), on batches gathered on the device (device_data.batches_in_row_order)."""
    batches = batches_in_row_order(x, y, batch_size)
    step = StackedStep("flat", dense=dense)

    def hits(params: Params) -> tuple[jax.Array, jax.Array]:
        parts = [step.hits(params, *batch) for batch in batches()]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)

    return hits


def side_by_side_step(batch_size: int, columns: int, hidden: int, models: int, loss: str = "log") -> StackedStep:
    """The step K networks side by side train with (an ensemble, rate candidates, a linear model): the one rule the
    search's rounds take theirs by (StackedStep.for_batch), W1's rows in their bucket as they train."""
    return StackedStep.for_batch(batch_size, bucket(columns), hidden, models, loss)


def side_by_side_backend(batch_size: int, columns: int, hidden: int, models: int, loss: str = "log") -> str:
    """What a run records of side_by_side_step: "pallas" where W1's update is the fused kernel, else "xla"."""
    return "pallas" if side_by_side_step(batch_size, columns, hidden, models, loss).fused else "xla"


def stacked_is_faster() -> bool:
    """Whether an ensemble trains faster stacked (fit_ensemble) than one member after another (fit_members) on
    this process's default device. Stacked on a GPU (one K-wide step costs little more than one network's);
    one by one on a CPU, where a step is Adam's memory-bound pass over W1: K networks stacked take longer there than
    K one after another."""
    return jax.default_backend() != "cpu"


def fit_members(rows: TrainingRows, settings: Settings, backend: str, on_epoch: Callable | None = None):
    """settings.ensemble networks trained one after another (seeds seed, seed + 1, ...) by the one-network
    loop, merged into one network as fit_ensemble's are -> (merged parameters, EpochStats of every member's
    epochs, numbered on from one member to the next, compile seconds, train seconds)."""
    from textclf.training.network import fit_network

    members, history = [], _Numbered(on_epoch)
    compile_seconds = train_seconds = 0.0
    for member_number in range(settings.ensemble):
        result = fit_network(
            rows, settings.replace(seed=settings.seed + member_number, ensemble=1), backend, Watch(history.on_epoch)
        )
        members.append(result.params)
        compile_seconds += result.compile_seconds
        train_seconds += result.train_seconds
        history.next_network()
    stacked = Params(
        np.concatenate([np.asarray(m.w1) for m in members], axis=1),
        np.concatenate([np.asarray(m.b1) for m in members]),
        np.stack([np.asarray(m.w2) for m in members]),
        np.stack([np.asarray(m.b2) for m in members]),
    )
    return merged(stacked), history.epochs, compile_seconds, train_seconds


class _Numbered:
    """EpochStats of networks trained one after another, their epochs numbered on from one network to the next."""

    def __init__(self, on_epoch: Callable | None):
        self.forward, self.epochs, self.done = on_epoch, [], 0

    def on_epoch(self, stats) -> None:
        from dataclasses import replace

        stats = replace(stats, epoch=self.done + stats.epoch)
        self.epochs.append(stats)
        if self.forward:
            self.forward(stats)

    def next_network(self) -> None:
        self.done = len(self.epochs)


# Rows per scoring batch where the K networks of fit_rates are scored on the device (no gradient: wide batches).
SCORE_BATCH = 1024


class RateChoice(NamedTuple):
    """fit_rates' answer."""

    params: Params  # the chosen network after its best held-out epoch (NumPy)
    chosen: int  # which of the candidates
    best_epoch: int  # 1-based
    held_out: list[list[float]]  # per candidate: its held-out accuracy after each epoch it trained
    history: list  # EpochStats of every epoch (one after another on a CPU)
    compile_seconds: float
    train_seconds: float


def fit_rates(
    rows: TrainingRows,
    settings: Settings,
    backend: str,
    candidates: list[tuple[float, float, int]],
    held: tuple,
    watch: Watch = Watch(),
    patience: int = 1,
    side_by_side: bool | None = None,
) -> RateChoice:
    """One network per candidate (learning rate, weight decay, epochs at most), the held-out documents
    (held: (x, y), training documents none of them trains on) picking one network and its epoch: the best
    held-out accuracy, a tie going to the earlier candidate and the earlier epoch. Why: a corpus larger than the
    search's sample gets its rate from the sample, where an epoch has a fraction of the steps and the leading rates
    tie within noise; the choice did not carry to all the documents (BENCHMARKS.md, "100,000 documents on this
    2-core CPU"). Side by side on a GPU (one stacked program, the held-out documents scored on the device; training
    stops once `patience` epochs in a row improved none of them), one after another elsewhere (each stopped by its
    own textclf.training.epochs.EarlyStopping). No checkpoints: where watch.stop_requested() says so after an epoch,
    textclf.training.events.TrainingStopped is raised and the training starts over when resumed.
    After each epoch the leading network is scored on rows.eval_x if given, for the run's record. Side by side
    trains rows.training_rows in place (StackedEpochs); rows.x already on the device (ResidentRows) trains side
    by side only. side_by_side: the plan's arrangement (TrainingPlan.arrangement)."""
    if side_by_side is None:  # (a caller without a plan: the device's rule)
        side_by_side = stacked_is_faster()
    if side_by_side or isinstance(rows.x, ResidentRows):
        return _rates_side_by_side(rows, settings, candidates, held, watch, patience)
    return _rates_one_by_one(rows.only_training(), settings, backend, candidates, held, watch, patience)


def _rates_side_by_side(
    rows: TrainingRows, settings: Settings, candidates, held: tuple, watch: Watch, patience: int
) -> RateChoice:
    from textclf.training.epochs import run_epochs

    dense = dense_default()
    held_hits = device_scoring(*held, scoring_rows(held[0].shape[0], SCORE_BATCH), dense)
    eval_hits = (
        device_scoring(rows.eval_x, rows.eval_y, scoring_rows(rows.eval_x.shape[0], SCORE_BATCH), dense)
        if rows.scored
        else None
    )
    count = len(candidates)
    caps = np.array([epochs for _, _, epochs in candidates])  # a network is judged up to its own epoch count
    step = StackedEpochs(
        rows, [rate for rate, _, _ in candidates], [decay for _, decay, _ in candidates], int(caps.max()), settings
    )
    judge = _HeldOutRates(held_hits, held[0].shape[0], caps, patience, step.member)
    clock = _EpochClock()

    def one_epoch(epoch: int, params, state):
        params, state, train_hits, losses = step.epoch(epoch, params, state)
        leading = judge.score(epoch, params)
        train_correct = float(np.asarray(train_hits[0])[leading])
        eval_accuracy = None
        if eval_hits is not None:
            eval_accuracy = float(np.asarray(eval_hits(params)[0])[leading]) / rows.eval_x.shape[0]
        return (
            params,
            state,
            _epoch_stats(
                epoch,
                losses,
                count,
                rows.n_training,
                settings.batch_size,
                train_correct,
                eval_accuracy,
                clock.lap(epoch),
            ),
        )

    _, _, history = run_epochs(
        *step.start(),
        [],
        0,
        int(caps.max()),
        one_epoch,
        watch.on_epoch,
        stop_requested=watch.stop_requested,
        early_stop=judge.stale,
    )
    chosen = int(np.argmax(judge.best))
    return RateChoice(
        judge.best_params[chosen],
        chosen,
        int(judge.best_epoch[chosen]),
        judge.held_out,
        history,
        clock.compile_seconds,
        clock.train_seconds,
    )


class _HeldOutRates:
    """The held-out documents' judgement of K rate candidates side by side: each one's best epoch and parameters
    up to its own epoch cap; the round stops once `patience` epochs in a row improved none of them."""

    def __init__(self, held_hits, n_held: int, caps: np.ndarray, patience: int, member: Callable):
        self.held_hits, self.n_held, self.caps, self.patience = held_hits, n_held, caps, patience
        self.member = member  # (params, k) -> network k on the host (StackedEpochs.member)
        self.best = np.full(len(caps), -1.0)
        self.best_epoch, self.best_params = np.zeros(len(caps), int), [None] * len(caps)
        self.held_out: list[list[float]] = [[] for _ in caps]
        self.improved, self.without_gain = False, 0

    def score(self, epoch: int, params) -> int:
        """Score the candidates after this epoch -> the leading one (the first maximum: the earlier candidate)."""
        accuracy = np.asarray(self.held_hits(params)[0]) / self.n_held  # (K,)
        improved = (accuracy > self.best) & (epoch < self.caps)
        for k in np.flatnonzero(improved):
            self.best[k], self.best_epoch[k], self.best_params[k] = accuracy[k], epoch + 1, self.member(params, int(k))
        for k in np.flatnonzero(epoch < self.caps):
            self.held_out[k].append(round(float(accuracy[k]), 6))
        self.improved = bool(improved.any())
        return int(np.argmax(self.best))

    def stale(self, epoch: int, params) -> bool:
        """run_epochs' early_stop: True once no candidate has improved for `patience` epochs."""
        self.without_gain = 0 if self.improved else self.without_gain + 1
        return self.without_gain >= self.patience


def _rates_one_by_one(
    rows: TrainingRows, settings: Settings, backend: str, candidates, held: tuple, watch: Watch, patience: int
) -> RateChoice:
    from textclf.training.epochs import EarlyStopping
    from textclf.training.network import fit_network

    history, judges, networks = _Numbered(watch.on_epoch), [], []
    compile_seconds = train_seconds = 0.0
    for rate, decay, epochs in candidates:
        judge = EarlyStopping(*held, patience)
        result = fit_network(
            rows,
            settings.replace(learning_rate=rate, weight_decay=decay, epochs=epochs, ensemble=1),
            backend,
            Watch(history.on_epoch, watch.stop_requested, early_stopping=judge),
        )
        judges.append(judge)
        networks.append(result.params)
        compile_seconds += result.compile_seconds
        train_seconds += result.train_seconds
        history.next_network()
    best = [judge.accuracies[judge.best_epoch - 1] for judge in judges]
    chosen = int(np.argmax(best))
    return RateChoice(
        networks[chosen],
        chosen,
        judges[chosen].best_epoch,
        [[round(a, 6) for a in judge.accuracies] for judge in judges],
        history.epochs,
        compile_seconds,
        train_seconds,
    )
