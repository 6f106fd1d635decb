"""The training steps a plan names (textclf/training/plan.py): the backend, held-out rows to stop early, the
rate candidates' choice, each view's network(s), and scoring the held-out documents."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from textclf.inference.text_model import Model, encode_labels
from textclf.runs.context import RunContext
from textclf.settings import Settings
from pipelines.workers import return_freed_memory
from textclf.runs.results import TrainEvent
from textclf.training import EpochStats
from textclf.training import TrainingRows, Watch
from textclf.training import MULTI_LABEL_PATIENCE, REFIT_HELD_OUT_FRACTION, TrainingPlan, held_out_count
from textclf.training.search import RateChoice, SearchSummary


def record_backend(run: RunContext, requested: str, network: str, settings: Settings) -> str:
    """The backend that trains ("auto" decided from measurements, textclf/training/backends.py) and why, in the
    run row."""
    import jax

    from textclf.training import choose_backend
    from textclf.training import data_mesh

    # the per-device batch: one device unless typed (the plan's device_layout), or each process's share
    several = network == "mlp" and (settings.devices > 1 or jax.process_count() > 1)
    devices = data_mesh(settings.devices, settings.batch_size).size if several else 1
    backend, why = choose_backend(requested, network, settings.batch_size // devices, jax.default_backend() == "gpu")
    run.record(backend=backend, backend_reason=why)
    return backend


# A held-out set is scored on the device where the run trained on a GPU once its documents x hidden units reach
# this (eval_scores): below it the host's NumPy is faster than batching, uploading and compiling ("Big corpora
# with no flags").
DEVICE_EVAL_WORK = 40_000_000


def held_out_stopping(train_x, train_y: np.ndarray, seed: int, count: int | None = None, **rule):
    """-> (the rows of train_x that train, sorted, an EarlyStopping judging the held-out rest). The training rows
    are not copied out of the matrix here: networks side by side train on them in place (candidates.
    StackedEpochs), and a copy beside the matrix doubled a ten-million-document run's host memory. train_x on
    the device already (ResidentRows): the held-out rows are read back from it. rule: EarlyStopping's (patience,
    metric, earliest_stop; default: stop after one epoch without gain)."""
    from textclf.training import ResidentRows, host_rows
    from textclf.training import EarlyStopping

    n = len(train_y)
    held = np.zeros(n, bool)
    held[np.random.default_rng(seed).choice(n, count or held_out_count(n), replace=False)] = True
    held_x = host_rows(train_x, np.flatnonzero(held)) if isinstance(train_x, ResidentRows) else train_x[held]
    return np.flatnonzero(~held), EarlyStopping(held_x, train_y[held], **rule)


def eval_scores(model: Model, eval_x) -> np.ndarray:
    """The held-out documents' (n, C) scores: on a GPU from DEVICE_EVAL_WORK documents x hidden units up (where
    the network trained, JAX started), else with NumPy on the host."""
    import jax

    if jax.default_backend() == "cpu" or eval_x.shape[0] * model.params.w1.shape[1] < DEVICE_EVAL_WORK:
        return model.scores(eval_x)
    from textclf.models.mlp import Params
    from textclf.training import held_out_scores_device

    return held_out_scores_device(Params(*jax.device_put(tuple(model.params))), eval_x)


def choose_rate_then_refit(
    run: RunContext, training: tuple, n_classes, settings, backend, rates, search: SearchSummary, record: dict
) -> Settings:
    # Eight arguments: the run, its training rows, what the choice trains with, and where its record goes.
    """The rate candidates trained on all but a stratified REFIT_HELD_OUT_FRACTION of the training documents
    (training: their matrix, labels and weights or None), which choose one and its epoch (ensembles.fit_rates);
    -> the settings with the chosen rate, decay and epoch count, for the final training on every document.
    Its record (search: rate_choice; the settings) goes into `record`, which the run writes."""
    from textclf.training import fit_rates
    from textclf.training.search import stratified_sample

    train_x, train_y, weights = training
    held, rest = stratified_sample(
        train_y, np.arange(len(train_y)), int(len(train_y) * REFIT_HELD_OUT_FRACTION), settings.seed
    )
    rest_x, held_x = _rate_choice_columns(train_x[rest], train_y[rest], train_x[held], run.rules.rate_choice_features)
    choice = fit_rates(
        TrainingRows(rest_x, train_y[rest], n_classes, weights=None if weights is None else weights[rest]),
        settings,
        backend,
        [(r["learning_rate"], r["weight_decay"], r["epochs"]) for r in rates],
        (held_x, train_y[held]),
        Watch(stop_requested=run.stop_requested),
    )
    search.rate_choice = RateChoice(
        rates, choice.chosen, choice.held_out, held_out_documents=len(held), refit=True, features=rest_x.shape[1]
    )
    settings = _with_choice(settings, rates, choice)
    record.update(search=search.to_record(), settings=settings.to_dict())
    return settings


def _rate_choice_columns(train_x: sp.csr_matrix, train_y: np.ndarray, held_x: sp.csr_matrix, features: int):
    """The training and held-out rows on the `features` columns (0: all) that a chi-squared test on the training
    rows ties most to the labels (pipelines.vectorize.most_tied_columns, as the search's rounds select theirs),
    each row scaled back to unit length as the search's fold matrices are -> (train_x, held_x) narrowed."""
    if not features or train_x.shape[1] <= features:
        return train_x, held_x
    from sklearn.preprocessing import normalize

    from pipelines.vectorize import most_tied_columns

    columns = most_tied_columns(train_x, train_y, features)
    return normalize(train_x[:, columns]), normalize(held_x[:, columns])


def _with_choice(settings: Settings, rates: list[dict], choice) -> Settings:
    """The settings with the rate, decay and epoch count the held-out documents chose (a candidates.RateChoice)."""
    chosen = rates[choice.chosen]
    return settings.replace(
        learning_rate=chosen["learning_rate"], weight_decay=chosen["weight_decay"], epochs=choice.best_epoch
    )


@dataclass
class Fitted:
    """What fit_plan trained: the one network of the model (views joined, ensembles merged) and how."""

    params: object
    history: list[EpochStats]
    settings: Settings  # the run's settings with what the training chose (a rate, the best epoch)
    backend: str  # the backend that trained
    n_training: int  # documents the networks trained on
    thresholds: object = None  # a multi-label model's (textclf.models.thresholds.Thresholds)
    # the run row's fields the training decided (backend, devices, early stopping, the rate choice, thresholds,
    # settings), written by the run once the training is done
    record: dict = field(default_factory=dict)
    # the settings the held-out documents' rate choice gave, which the run adds to the recorded search (None: none)
    rate_chosen: Settings | None = None


def fit_plan(run: RunContext, data, plan: TrainingPlan, settings: Settings, backend: str, record_epoch) -> Fitted:
    """Carry the plan out on the run's data (runs.text_data.TextData): hold documents out to stop early or choose
    the rate on a share first, as it says; then each view's network(s), joined into one network. What it decided
    for the run's row is in Fitted.record (the trainers record nothing themselves). An image plan (family "cnn")
    trains its one CNN on runs.images.ImageData (fit_images)."""
    if plan.family == "cnn":
        return fit_images(run, data, plan, settings, backend, record_epoch)
    record: dict = {}
    train_x, train_y = data.train_x, encode_labels(data.train_labels, data.classes, plan.multi_label)
    weights = data.train_weights  # (each row of train_x's, as it is split below)
    candidates = (data.search.rate_candidates if data.search else None) or []
    rates = candidates if plan.rate_choice == "held_out" else []  # chosen among by the held-out documents
    training_rows = early_stopping = rate_chosen = None  # the rows of train_x that train, where train_x is not copied
    if plan.held_out_documents:
        train_x, train_y, training_rows, early_stopping, weights = _held_out_split(
            data, plan, train_x, train_y, settings
        )
    elif plan.rate_choice == "refit":
        with run.phase("rates"):
            settings = choose_rate_then_refit(
                run, (train_x, train_y, weights), len(data.classes), settings, backend, candidates, data.search, record
            )
        rate_chosen = settings
    n_training = len(train_y) if training_rows is None else len(training_rows)
    if plan.backend != backend:  # the plan's layout trains with another backend (W1 split: XLA)
        backend = plan.backend
        record.update(
            backend=backend,
            backend_reason=f"the plan: {plan.arrangement} "
            f"networks, {plan.parallel} parallel on {plan.devices or 'every'} device(s)",
        )
    views = _Views(plan, settings, n_training, rates, record_epoch, run.report, weights, record)
    params, backend, settings = views.fit(run, data, train_x, train_y, backend, settings, early_stopping, training_rows)
    if early_stopping is not None and not rates:  # the model keeps the best epoch: its settings say so
        settings = settings.replace(epochs=early_stopping.best_epoch)
        record.update(early_stopping=early_stopping.summary(), settings=settings.to_dict())
    thresholds = None
    if plan.multi_label:  # the held-out documents choose where the sigmoid outputs say yes
        from textclf.models.thresholds import choose_thresholds

        thresholds = choose_thresholds(early_stopping.scores(params), early_stopping.y, early_stopping.metric)
        record.update(thresholds=thresholds.summary())
    data.train_x = None  # the training matrices are done with: their memory goes back before the scoring
    return_freed_memory()
    return Fitted(
        params, views.history, settings, backend, n_training, thresholds, record, rate_chosen or views.rate_chosen
    )


def fit_images(run: RunContext, data, plan: TrainingPlan, settings: Settings, backend: str, record_epoch) -> Fitted:
    """An image plan carried out: its one CNN (textclf/training/cnn.py) on the images, scored on the held-out images
    after every epoch; its epochs recorded and reported as they end."""
    from textclf.training import fit_cnn

    view = plan.views[0]

    def on_epoch(stats: EpochStats) -> None:
        record_epoch(stats)
        run.report(TrainEvent("epoch", epoch=stats, total_epochs=view.epochs))

    # Reported once, with the epoch count (a `phase("train")` would report the phase a second time, without it);
    # its wall time is recorded as the phase's.
    run.report(TrainEvent("phase", "train", total_epochs=view.epochs))
    interpret = backend == "pallas" and bool(os.environ.get("TEXTCLF_PALLAS_INTERPRET"))
    start = time.perf_counter()  # the first epoch includes compiling the epoch function
    trained = settings.replace(epochs=view.epochs, batch_size=plan.batch_size)
    # history: every epoch of the run, those before a resume included (on_epoch sees this attempt's)
    params, history = fit_cnn(
        data.train_x,
        data.train_y,
        len(data.classes),
        trained,
        backend,
        data.eval_x,
        data.eval_y,
        interpret,
        on_epoch=on_epoch,
        checkpointer=run.checkpointer,
        stop_requested=run.stop_requested,
        on_step=lambda done, total: run.report(TrainEvent("steps", done=done, total=total)),
    )
    run.phase.seconds["train"] = time.perf_counter() - start
    return Fitted(params, history, settings, backend, plan.training_documents)


def _held_out_split(data, plan: TrainingPlan, train_x, train_y, settings: Settings):
    """Documents held out to stop early -> (train_x, train_y, training rows of train_x or None, EarlyStopping, the
    rows' weights or None: data.train_weights as train_x is cut). Networks side by side in place (plan.rows
    "device") train on the matrix's rows without a copy; the others on a matrix of their rows."""
    from textclf.training import ResidentRows, resident_rows

    rule = {}
    if plan.multi_label:  # the metric the held-out documents judge; no stop before the minimum steps are made
        steps = -(-plan.training_documents // settings.batch_size)
        rule = dict(
            patience=plan.patience or MULTI_LABEL_PATIENCE,
            metric=settings.metric or "micro-f1",
            earliest_stop=-(-settings.min_steps // steps),
        )
    training_rows, early_stopping = held_out_stopping(train_x, train_y, settings.seed, plan.held_out_documents, **rule)
    weights = data.train_weights
    if plan.rows != "device":
        train_x, train_y, training_rows = train_x[training_rows], train_y[training_rows], None
        weights = None if weights is None else weights[training_rows]
        data.train_x = None  # the matrix before the split: its two parts are all that is needed (a GB at 1M)
    elif not isinstance(train_x, ResidentRows):  # (there already where vectorizing put it there)
        # The matrix goes to the device now, and the host's copy of it (~1.6 GB at a million documents) goes
        # before the training starts; the networks need nothing else of it.
        train_x = data.train_x = resident_rows(train_x, train_y, weights)
        return_freed_memory()
    elif weights is not None:
        raise ValueError("documents' weights and a training matrix vectorized onto the device: not both")
    return train_x, train_y, training_rows, early_stopping, weights


# How a run's record names the K-network step's backend (the plan's, side_by_side_backend's rule).
_STEP_KIND = {"pallas": "the K-network step, W1's update the fused Pallas kernel", "xla": "the K-network step in XLA"}


class _Views:
    """The plan's views trained one after another, each on its own columns, joined into one network whose scores
    are their mean (textclf.models.stacked.joined_views); their epochs recorded and reported numbered on from one view
    to the next. (Only a one-view run keeps checkpoints: the daemon resumes a stopped job's one network.)"""

    def __init__(
        self,
        plan: TrainingPlan,
        settings: Settings,
        n_training: int,
        rates: list[dict],
        record_epoch,
        report,
        weights: np.ndarray | None = None,
        record: dict | None = None,
    ):
        # Eight arguments: the plan, the settings and rows it trains, and where epochs, events and records go.
        # weights: each training row's in the loss (TrainingRows.weights), None: 1 each; record: the run row's
        # fields the views decide (fit_plan's, written by the run)
        self.plan, self.rates, self.record_epoch, self.report = plan, rates, record_epoch, report
        self.weights, self.record = weights, {} if record is None else record
        self.settings = [settings, settings.char_view()][: len(plan.views)]
        self.names = ("word network", "character network")[: len(plan.views)] if len(plan.views) > 1 else ()
        self.n_training = n_training
        one_by_one = plan.arrangement == "one_after_another" and plan.rate_choice == "none"
        self.total_epochs = sum(view.epochs for view in plan.views) * (settings.ensemble if one_by_one else 1)
        if rates:  # every candidate's epochs where they train one after another, the most where side by side
            epochs = [r["epochs"] for r in rates]
            self.total_epochs = max(epochs) if plan.arrangement == "side_by_side" else sum(epochs)
        if plan.linear:  # the linear model beside the network(s), trained after them
            self.total_epochs += plan.linear.epochs
            self.names = (*(self.names or ("network",)), "linear model")
        self.history: list[EpochStats] = []
        self.current = ""  # the view training now, named in its epochs' events
        self.rate_chosen: Settings | None = None  # the settings the held-out documents' rate choice gave

    def on_epoch(self, stats: EpochStats) -> None:
        view_epoch = stats.epoch
        stats = replace(stats, epoch=len(self.history) + stats.epoch, view=self.current or None)
        self.record_epoch(stats)
        self.report(
            TrainEvent("epoch", epoch=stats, total_epochs=self.total_epochs, view=self.current, view_epoch=view_epoch)
        )

    def fit(
        self, run: RunContext, data, train_x, train_y, backend: str, settings: Settings, early_stopping, training_rows
    ) -> tuple:
        """-> (the joined parameters, the backend that trained, the settings with the rate choice if any).
        Eight arguments: the run, its data and the rows, backend, settings and early stopping this view trains
        with, each already decided by the plan's steps before it."""
        from textclf.models.stacked import joined_views, with_linear

        self.report(TrainEvent("phase", "train", total_epochs=self.total_epochs, views=self.names))
        one_view = len(self.plan.views) == 1
        eval_y = encode_labels(data.eval_labels, data.classes, self.plan.multi_label)
        params, compile_s, train_s, first = [], 0.0, 0.0, 0
        for view, view_settings, self.current in zip(self.plan.views, self.settings, self.names or ("",)):
            columns = slice(first, first + view.columns)
            first += view.columns
            view_train, view_eval = (
                (train_x, data.eval_x) if one_view else (train_x[:, columns], data.eval_x[:, columns])
            )
            rows = TrainingRows(view_train, train_y, len(data.classes), view_eval, eval_y, training_rows, self.weights)
            if self.rates:
                view_params, history, backend, view_compile, view_train_s, settings = self._rates(
                    run, data, rows, settings, backend, early_stopping
                )
                self.rate_chosen = settings
            else:
                laid_out = view_settings.replace(parallel=self.plan.parallel, devices=self.plan.devices)
                if self.plan.multi_label:  # its epochs as planned (plan.multi_label_epochs; min_steps in them)
                    laid_out = laid_out.replace(epochs=view.epochs, min_steps=0)
                # several views: each network judged on its own columns of the held-out documents
                judge = early_stopping if one_view or early_stopping is None else early_stopping.on_columns(columns)
                view_params, history, backend, view_compile, view_train_s = self._networks(
                    run, rows, laid_out, backend, judge, run.checkpointer if one_view else None, data.rows, view.loss
                )
                if judge is not early_stopping and not params:  # the run records the word network's epochs
                    early_stopping.kept_from(judge)
            self._add_history(history)
            params.append(view_params)
            compile_s, train_s = compile_s + view_compile, train_s + view_train_s
        joined = params[0] if one_view else joined_views(params)
        if self.plan.linear:
            self.current = "linear model"
            linear, view_compile, view_train_s, settings = self._linear(
                data, (train_x, train_y, eval_y), settings, early_stopping, training_rows
            )
            joined = with_linear(joined, linear)
            compile_s, train_s = compile_s + view_compile, train_s + view_train_s
        run.phase.seconds["compile"], run.phase.seconds["train"] = compile_s, train_s
        return joined, backend, settings

    def _add_history(self, history: list[EpochStats]) -> None:
        offset = len(self.history)  # the epochs of the views before this one
        self.history += [replace(stats, epoch=offset + stats.epoch, view=self.current or None) for stats in history]

    def _linear(self, data, labelled: tuple, settings: Settings, early_stopping, training_rows) -> tuple:
        """The linear model beside the network(s) (plan.linear), on the words' columns; the held-out documents, if
        any, stop it on those columns. -> (its parameters, compile seconds, train seconds, the settings with its
        best epoch where they stopped it)."""
        from textclf.training import fit_ensemble

        train_x, train_y, eval_y = labelled
        columns = slice(0, self.plan.linear.columns)
        whole = len(self.plan.views) == 1
        rows = TrainingRows(
            train_x if whole else train_x[:, columns],
            train_y,
            len(data.classes),
            data.eval_x if whole or data.eval_x is None else data.eval_x[:, columns],
            eval_y,
            training_rows,
            self.weights,
        )
        judge = None if early_stopping is None else early_stopping.on_columns(columns)
        linear = settings.linear_view().replace(epochs=self.plan.linear.epochs, min_steps=0)
        params, history, compile_s, train_s = fit_ensemble(
            rows, linear, Watch(self.on_epoch, early_stopping=judge), self.plan.linear.loss
        )
        self._add_history(history)
        if judge is not None:  # the model's settings say which epoch it kept
            settings = settings.replace(linear_epochs=judge.best_epoch)
        return params, compile_s, train_s, settings

    def _rates(self, run: RunContext, data, rows: TrainingRows, settings: Settings, backend: str, judge) -> tuple:
        """One network per rate candidate of the search, the held-out documents of `judge` (an EarlyStopping's)
        choosing one and its epoch (ensembles.fit_rates); the choice recorded in the run (early_stopping: every
        candidate's held-out curve; search: rate_choice) and in the settings returned.
        -> (parameters, EpochStats, backend, compile seconds, train seconds, settings)."""
        import jax

        from textclf.training import fit_rates

        rates = self.rates
        side_by_side = self.plan.arrangement == "side_by_side"
        choice = fit_rates(
            rows,
            settings,
            backend,
            [(r["learning_rate"], r["weight_decay"], r["epochs"]) for r in rates],
            (judge.x, judge.y),
            Watch(self.on_epoch, run.stop_requested),
            judge.patience,
            side_by_side=side_by_side,
        )
        settings = _with_choice(settings, rates, choice)
        data.search.rate_choice = RateChoice(rates, choice.chosen, choice.held_out)
        self.record.update(
            search=data.search.to_record(),
            settings=settings.to_dict(),
            early_stopping={
                "held_out": int(judge.x.shape[0]),
                "patience": judge.patience,
                "accuracies": choice.held_out[choice.chosen],
                "best_epoch": choice.best_epoch,
                "rates": [[r["learning_rate"], r["weight_decay"]] for r in rates],
                "rate_accuracies": choice.held_out,
                "chosen_rate": choice.chosen,
            },
        )
        if side_by_side:
            backend = self.plan.backend  # the K-network step's, as the plan took it (TrainingPlan.completed)
            self.record.update(
                backend=backend,
                devices=1,
                processes=jax.process_count(),
                backend_reason=f"networks at several rates train side by side ({_STEP_KIND[backend]})",
            )
        else:
            self.record.update(devices=1, processes=jax.process_count())
        return choice.params, choice.history, backend, choice.compile_seconds, choice.train_seconds, settings

    def _networks(
        self,
        run: RunContext,
        rows: TrainingRows,
        settings: Settings,
        backend: str,
        early_stopping,
        checkpointer,
        shares,
        loss: str,
    ) -> tuple:
        # Eight arguments: the run, the view's rows, settings and loss, and the backend, early stopping, checkpoints
        # and process shares the plan's earlier steps chose for it.
        """The network(s) of one view as the plan arranges them: settings.ensemble networks one after another or
        side by side, or one (training/network.py; shares: several processes' data_parallel.RowShare). Only networks
        side by side are given training_rows (fit_plan hands the others a matrix of their rows). loss: the view's
        (ViewPlan.loss: a linear model's where the family is linear, trained side by side; a network's is "log").
        -> (parameters, EpochStats of each epoch, backend that trained them, compile seconds, train seconds)."""
        import jax

        from textclf.training import fit_ensemble, fit_members
        from textclf.training import fit_network

        if self.plan.arrangement == "one_after_another":
            # Averaged into one model file; their epochs are recorded one member after another.
            params, history, compile_s, train_s = fit_members(rows, settings, backend, self.on_epoch)
            self.record.update(devices=1, processes=jax.process_count())
            return params, history, backend, compile_s, train_s
        if self.plan.arrangement == "side_by_side":
            # An ensemble or a linear model: side by side, averaged into one model file (XLA, one device, no
            # checkpoints).
            watch = Watch(self.on_epoch, early_stopping=early_stopping)
            params, history, compile_s, train_s = fit_ensemble(rows, settings, watch, loss)
            what = "a linear model trains" if self.plan.family == "linear" else "an ensemble trains side by side"
            backend = self.plan.backend  # the K-network step's, as the plan took it (TrainingPlan.completed)
            self.record.update(
                backend=backend,
                devices=1,
                processes=jax.process_count(),
                backend_reason=f"{what} ({_STEP_KIND[backend]})",
            )
            return params, history, backend, compile_s, train_s
        network = fit_network(
            rows,
            settings,
            backend,
            Watch(self.on_epoch, run.stop_requested, checkpointer, early_stopping),
            shares=shares,
        )
        self.record.update(devices=network.devices, processes=jax.process_count())
        return network.params, network.history, backend, network.compile_seconds, network.train_seconds
