"""The training plan: how a run trains, decided once before any training, from the settings (after the search), the
search's summary, the data's size and the device: a draft before vectorizing (draft_plan), completed with the views'
widths and the backend the run chose (TrainingPlan.completed). Pure: no I/O, no JAX. The run records it (`textclf runs
show`), `textclf train --plan-only` prints it, and the trainer (textclf/runs/run.py) carries it out without deciding
again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from textclf.errors import SettingsError
from textclf.settings import Settings
from textclf.training.search.rules import SearchRules
from textclf.training.search.summary import SearchSummary

# A corpus larger than the search's sample holds out this many of its training documents (at most this fraction)
# to stop its training early on them, keeping the best epoch ("Big corpora with no flags").
STOPPING_DOCUMENTS = 20_000
STOPPING_FRACTION = 0.05
# A sampled corpus too small to hold documents out for good chooses among its rate candidates on this fraction
# of its documents, then trains the chosen settings on all of them ("CPU": ~2,000 of news20's documents judge).
REFIT_HELD_OUT_FRACTION = 0.2
# A multi-label corpus always holds out this fraction of its training documents (at most STOPPING_DOCUMENTS): they
# stop its training early and choose the threshold of its sigmoid outputs.
MULTI_LABEL_HELD_OUT_FRACTION = 0.1
# A multi-label corpus trains up to this many epochs unless they are typed, its held-out documents stopping it once
# two epochs in a row improved their micro-F1 none (Reuters-21578's training documents, 10% set aside: at the
# default rate the best epoch was 31; BENCHMARKS.md, "Multi-label").
MULTI_LABEL_MAX_EPOCHS = 40
MULTI_LABEL_PATIENCE = 2  # ... or as many as make SearchRules.patience_steps steps (multi_label_patience)
# One network on several GPUs of one host (2 x H200, BENCHMARKS.md "Several GPUs"): W1 split by feature rows stepped
# 1.16-1.44x faster than one GPU from a batch of 1,024 on resident rows (benchmarks/gpu/parallel_auto.sh), but end to
# end (`textclf train` of a million documents, benchmarks/gpu/parallel_end_to_end.sh) every split trained 1.7-2.3x
# longer than one GPU and the runs took as long or longer; so "auto" trains one network on one GPU, and a typed
# --devices or --parallel is followed. Data parallelism, the layout of several processes, splits the batch only
# where each device gets this many documents (1.19-1.30x a step at 16,384 on 2).
DATA_MIN_ROWS_PER_DEVICE = 8192


@dataclass(frozen=True)
class Machine:
    """What the plan needs to know of the devices: read once from JAX by the caller."""

    local_devices: int  # devices of this process
    processes: int = 1
    stacked_faster: bool = True  # K networks side by side beat K one after another (ensembles.stacked_is_faster)


@dataclass(frozen=True)
class ViewPlan:
    """One input view and the network(s) that read it."""

    name: str  # "words" or "characters"
    columns: int
    learning_rate: float
    weight_decay: float
    epochs: int  # as trained on the training rows (Settings.epochs_for)
    loss: str = "log"  # what its models train on: "log" (a network's), or a linear model's (Settings.linear_loss)


@dataclass(frozen=True)
class TrainingPlan:
    views: tuple[ViewPlan, ...]
    networks: int  # networks a view trains, averaged into one model (an ensemble: > 1)
    # "one" (one network), "side_by_side" (K networks as one stacked program), "one_after_another"
    arrangement: str
    # How the search's rate candidates (a sampled corpus's) are chosen: "none", "held_out" (trained on the
    # training rows, the early-stopping documents choose) or "refit" (chosen on REFIT_HELD_OUT_FRACTION of the
    # documents, then the choice trains on all).
    rate_choice: str
    rate_candidates: tuple[tuple[float, float, int], ...]  # (learning rate, weight decay, epochs)
    held_out_documents: int  # training documents held out to stop early (0: the epochs as given)
    training_documents: int  # documents the final networks train on
    rows: str  # where the training matrix lives while it trains: "host", "device" or "shares" (one per process)
    backend: str
    batch_size: int
    processes: int
    parallel: str = "data"  # how several devices share one network: "data" (batch split) or "features" (W1 split)
    devices: int = 1  # devices of this process that train it (0: data_parallel.data_mesh's own count, processes > 1)
    # Sigmoid outputs and binary cross-entropy, the threshold chosen on the held-out documents (Settings.multi_label)
    multi_label: bool = False
    # "network", "linear" or "network+linear" (Settings.family): a linear model trains as one model of the
    # side-by-side step (XLA); "cnn": a convolutional network on images (Settings.model)
    family: str = "network"
    # family "network+linear": the linear model on the words' columns, trained after the networks (one model of the
    # side-by-side step) and joined to them (textclf.models.stacked.with_linear)
    linear: ViewPlan | None = None
    # epochs without a gain on the held-out documents before they stop a multi-label training (0: none decided)
    patience: int = 0

    def completed(self, view_widths: tuple[int, ...], backend: str, stacked_backend: str = "xla") -> TrainingPlan:
        """A draft plan (draft_plan: made before vectorizing) with what vectorizing and the device's start-up
        learned: each view's columns and, where the plan leaves it to the run, the backend chosen for one device
        (`backend`) or the K-network step's where networks train side by side (`stacked_backend`: "pallas" where
        W1's update is the fused kernel, training.ensembles.side_by_side_backend, the search's rule)."""
        if len(view_widths) != len(self.views):
            raise ValueError(f"{len(view_widths)} view widths for a plan of {len(self.views)} views")
        views = tuple(dataclasses.replace(view, columns=width) for view, width in zip(self.views, view_widths))
        linear = None if self.linear is None else dataclasses.replace(self.linear, columns=view_widths[0])
        return dataclasses.replace(
            self,
            views=views,
            linear=linear,
            backend={AS_CHOSEN: backend, SIDE_BY_SIDE: stacked_backend}.get(self.backend, self.backend),
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainingPlan":
        views = tuple(ViewPlan(**view) for view in data["views"])
        candidates = tuple(tuple(c) for c in data["rate_candidates"])
        linear = ViewPlan(**data["linear"]) if data.get("linear") else None
        return cls(**{**data, "views": views, "rate_candidates": candidates, "linear": linear})

    def lines(self) -> list[str]:
        """The plan as a reader reads it, one line a decision."""
        views = ", ".join(
            f"{v.name} ({v.columns:,} columns, lr {v.learning_rate:g}, decay {v.weight_decay:g}, {v.epochs} epochs)"
            for v in self.views
        )
        outputs = (
            "sigmoid (multi-label), threshold from the held-out documents"
            if self.multi_label
            else "softmax (one label a document)"
        )
        family = {
            "cnn": "convolutional network (images -> convolutions -> hidden -> classes)",
            "linear": "linear (features -> classes)",
            "network+linear": "network (features -> hidden (sigmoid) -> classes) + a linear model's scores",
        }.get(self.family, "network (features -> hidden (sigmoid) -> classes)")
        lines = [
            f"family               {family}",
            f"outputs              {outputs}",
            f"views                {views}",
            (
                f"models               one linear model a view ({self.views[0].loss.replace('_', ' ')} loss), on the "
                "side-by-side step"
                if self.family == "linear"
                else f"networks             {self.networks} a view, {self.arrangement.replace('_', ' ')}"
            ),
            *(
                [
                    f"linear model         on the {self.linear.name} ({self.linear.columns:,} columns, lr "
                    f"{self.linear.learning_rate:g}, decay {self.linear.weight_decay:g}, {self.linear.epochs} epochs, "
                    f"{self.linear.loss.replace('_', ' ')} loss), its scores added to the network's"
                ]
                if self.linear
                else []
            ),
            f"documents            {self.training_documents:,} train"
            + (f", {self.held_out_documents:,} held out to stop early" if self.held_out_documents else "")
            + (f" (after {self.patience} epochs without a gain)" if self.patience else ""),
            f"rows                 on the {self.rows}; backend {self.backend}, batch {self.batch_size}, "
            f"{self.processes} process(es), {self.devices or 'every'} device(s) a process"
            + (" (W1 split by feature rows)" if self.parallel == "features" and self.devices != 1 else ""),
        ]
        if self.rate_choice != "none":
            rates = "; ".join(f"lr {r:g}, decay {d:g}, {e} epochs" for r, d, e in self.rate_candidates)
            how = (
                "held-out documents choose"
                if self.rate_choice == "held_out"
                else f"a {REFIT_HELD_OUT_FRACTION:.0%} share chooses, then all train"
            )
            lines.append(f"rate candidates      {rates} ({how})")
        return lines


def stops_early(settings: Settings, search: SearchSummary | None, n_train: int, rules: SearchRules) -> bool:
    """Whether a searched corpus larger than the search's sample holds documents out to stop early (its epochs
    came from the sample's curves); a corpus within the sample keeps the search's count. (A run that records no
    search, a hashed corpus's, stops early as a searched one: its epochs were not read off its own curves.)"""
    searched = settings.search != "off" and (search is None or search.searched)
    return searched and "epochs" not in settings.pinned and n_train > rules.search_documents


def held_out_count(n_train: int) -> int:
    return min(STOPPING_DOCUMENTS, int(n_train * STOPPING_FRACTION))


def plan_training(
    settings: Settings,
    search: SearchSummary | None,
    n_train: int,
    view_widths: tuple[int, ...],
    backend: str,
    machine: Machine = Machine(1),
    rules: SearchRules = SearchRules(),
) -> TrainingPlan:
    """The plan for `n_train` training documents whose views are `view_widths` columns wide (the words', then the
    characters' where Settings.char_ngrams), trained by `backend` (as chosen for one device) on `machine`: the
    draft plan, completed. Seven arguments: each a separate fact about the run that the plan combines."""
    return draft_plan(settings, search, n_train, len(view_widths), machine, rules).completed(view_widths, backend)


# The backend of a draft plan where the plan leaves it to the backend the run chooses for one device, or to the
# K-network step's (TrainingPlan.completed).
AS_CHOSEN = "as chosen"
SIDE_BY_SIDE = "the K-network step's"


# Over 80 lines as formatted: every decision of the plan in one function, read in one place.
def draft_plan(
    settings: Settings,
    search: SearchSummary | None,
    n_train: int,
    views: int,
    machine: Machine = Machine(1),
    rules: SearchRules = SearchRules(),
) -> TrainingPlan:
    """The plan decided before vectorizing, from the settings, the search, the documents' count, the number of
    views and the machine: every decision but each view's columns and the backend the run chooses for one device
    (TrainingPlan.completed adds them, to views of 0 columns and the backend AS_CHOSEN; a run plans once)."""
    if settings.model == "cnn":
        return _image_plan(settings, n_train)
    if settings.family == "linear":
        if machine.processes > 1:
            raise SettingsError("family linear trains in one process: drop --processes (or pass --family network)")
        if settings.ensemble > 1:
            raise SettingsError(
                f"ensemble {settings.ensemble}: the linear family trains one model; drop --ensemble "
                "(or pass --family network)"
            )
        plan = (
            _multi_label_plan(settings, n_train, views, machine, rules)
            if settings.multi_label
            else draft_plan(settings.replace(family="network", ensemble=1), None, n_train, views, machine, rules)
        )
        # one linear model a view, on the side-by-side step (K = 1); no rate candidates (they are the network's)
        return dataclasses.replace(
            plan,
            views=tuple(dataclasses.replace(v, loss=settings.linear_loss) for v in plan.views),
            family="linear",
            networks=1,
            arrangement="side_by_side",
            rate_choice="none",
            rate_candidates=(),
            backend="xla",
            parallel="data",
            devices=1,
        )
    if settings.family == "network+linear":
        return _with_linear_plan(settings, search, n_train, views, machine, rules)
    if settings.multi_label:
        return _multi_label_plan(settings, n_train, views, machine, rules)
    stacked_faster, processes = machine.stacked_faster, machine.processes
    networks = max(1, settings.ensemble)
    one_view = views == 1
    one_by_one = networks > 1 and not stacked_faster
    candidates = tuple(
        (r["learning_rate"], r["weight_decay"], r["epochs"]) for r in (search.rate_candidates if search else None) or []
    )
    one_network = networks == 1 and processes == 1 and one_view
    held_out = 0
    rate_choice = "none"
    if not one_by_one and one_view and stops_early(settings, search, n_train, rules):
        held_out = held_out_count(n_train)
        if one_network and len(candidates) > 1:
            rate_choice = "held_out"
    elif one_network and len(candidates) > 1 and "epochs" not in settings.pinned:
        rate_choice = "refit"
    several = networks > 1 or rate_choice == "held_out"  # the final networks: an ensemble, or rate candidates
    side_by_side = several and stacked_faster
    in_place = bool(held_out) and processes == 1 and side_by_side
    training = n_train - held_out
    planned = [ViewPlan("words", 0, settings.learning_rate, settings.weight_decay, settings.epochs_for(training))]
    if not one_view:
        chars = settings.char_view()
        planned.append(ViewPlan("characters", 0, chars.learning_rate, chars.weight_decay, chars.epochs_for(training)))
    arrangement = "side_by_side" if side_by_side else "one_after_another" if several else "one"
    parallel, devices = device_layout(settings, arrangement, machine)
    return TrainingPlan(
        views=tuple(planned),
        networks=networks,
        arrangement=arrangement,
        rate_choice=rate_choice,
        rate_candidates=candidates if rate_choice != "none" else (),
        held_out_documents=held_out,
        training_documents=training,
        rows="shares" if processes > 1 else "device" if in_place else "host",
        backend=SIDE_BY_SIDE if side_by_side else "xla" if parallel == "features" else AS_CHOSEN,
        batch_size=settings.batch_size,
        processes=processes,
        parallel=parallel,
        devices=devices,
    )


def _image_plan(settings: Settings, n_train: int) -> TrainingPlan:
    """A CNN on images (Settings.model "cnn"): one network on one device, its images held there, the epochs as given
    (no search, no held-out images: the validation images score every epoch)."""
    return TrainingPlan(
        views=(ViewPlan("pixels", 0, settings.learning_rate, settings.weight_decay, settings.epochs),),
        networks=1,
        arrangement="one",
        rate_choice="none",
        rate_candidates=(),
        held_out_documents=0,
        training_documents=n_train,
        rows="device",
        backend=AS_CHOSEN,
        batch_size=settings.batch_size,
        processes=1,
        family="cnn",
    )


def _with_linear_plan(
    settings: Settings, search: SearchSummary | None, n_train: int, views: int, machine: Machine, rules: SearchRules
) -> TrainingPlan:
    """The network's plan, and the linear model beside it on the words' columns (one process, one label a
    document: the search tries it there only)."""
    if machine.processes > 1:
        raise SettingsError("family network+linear trains in one process: drop --processes (or pass --family network)")
    if settings.multi_label:
        raise SettingsError(
            "family network+linear is for one label a document: pass --family network or linear for label sets"
        )
    plan = draft_plan(settings.replace(family="network"), search, n_train, views, machine, rules)
    linear = settings.linear_view()
    return dataclasses.replace(
        plan,
        family="network+linear",
        linear=ViewPlan(
            "words",
            0,
            linear.learning_rate,
            linear.weight_decay,
            linear.epochs_for(plan.training_documents),
            settings.linear_loss,
        ),
    )


def _multi_label_plan(
    settings: Settings, n_train: int, views: int, machine: Machine, rules: SearchRules
) -> TrainingPlan:
    """One network a view on one device (the backend as chosen: either step's loss is then binary cross-entropy),
    a share of the documents held out to stop early and choose the outputs' threshold."""
    if settings.ensemble > 1:
        raise SettingsError(
            f"ensemble {settings.ensemble}: a multi-label model trains one network a view; drop --ensemble"
        )
    held_out = max(1, min(STOPPING_DOCUMENTS, int(n_train * MULTI_LABEL_HELD_OUT_FRACTION)))
    training = n_train - held_out
    planned = [
        ViewPlan("words", 0, settings.learning_rate, settings.weight_decay, multi_label_epochs(settings, training))
    ]
    if views > 1:
        chars = settings.char_view()
        planned.append(
            ViewPlan("characters", 0, chars.learning_rate, chars.weight_decay, multi_label_epochs(chars, training))
        )
    return TrainingPlan(
        views=tuple(planned),
        networks=1,
        arrangement="one",
        rate_choice="none",
        rate_candidates=(),
        held_out_documents=held_out,
        training_documents=training,
        rows="shares" if machine.processes > 1 else "host",
        backend=AS_CHOSEN,
        batch_size=settings.batch_size,
        processes=machine.processes,
        multi_label=True,
        patience=multi_label_patience(training, settings.batch_size, rules),
    )


def multi_label_patience(n_train: int, batch_size: int, rules: SearchRules) -> int:
    """Epochs without a gain before a multi-label training stops: MULTI_LABEL_PATIENCE, or as many as make
    rules.patience_steps optimizer steps (what a search round waits, "Small corpora") where an epoch holds fewer:
    2 epochs of 3 steps stopped the README's 144-document example at its second epoch."""
    steps = max(1, -(-n_train // batch_size))
    return max(MULTI_LABEL_PATIENCE, -(-rules.patience_steps // steps))


def multi_label_epochs(settings: Settings, n_train: int) -> int:
    """The most epochs a multi-label network trains (its held-out documents stop it): as typed, else at least
    MULTI_LABEL_MAX_EPOCHS."""
    typed = "epochs" in settings.pinned
    return settings.epochs_for(n_train) if typed else max(settings.epochs_for(n_train), MULTI_LABEL_MAX_EPOCHS)


def device_layout(settings: Settings, arrangement: str, machine: Machine) -> tuple[str, int]:
    """(how several devices share the network, how many of this process's devices train it). Networks side by
    side or one after another train on one device; several processes split the batch (data, --devices a
    process); one process: one device unless --devices or --parallel says otherwise (measured: above), several
    devices then sharing W1 by feature rows where the XLA step can (faster per step than the batch split)."""
    if arrangement != "one":
        return "data", 1
    if machine.processes > 1:
        return "data", settings.devices
    if settings.parallel == "features":
        return "features", settings.devices or machine.local_devices
    if settings.parallel == "auto" and settings.devices > 1 and settings.backend in ("auto", "xla"):
        return "features", settings.devices
    if settings.parallel == "data" and not settings.devices:  # typed, with every device: as many as pay a step
        return "data", data_device_count(machine.local_devices, settings.batch_size)
    return "data", settings.devices or 1


def data_device_count(local_devices: int, batch_size: int) -> int:
    """Devices of each process that split each batch when --devices is all and several processes train together:
    the most that split it evenly with at least DATA_MIN_ROWS_PER_DEVICE documents each (1 when none does)."""
    fitting = [
        count
        for count in range(1, local_devices + 1)
        if batch_size % count == 0 and batch_size // count >= DATA_MIN_ROWS_PER_DEVICE
    ]
    return max(fitting, default=1)
