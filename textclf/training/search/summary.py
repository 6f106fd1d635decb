"""What a model search ran and chose, as typed records: SearchSummary (and the trials' NetworksSummary and
FamilySummary, the final training's RateChoice). The search writes them; the plan, the run record and the faces read
their fields. In the run database and a model file's metadata they are JSON objects (to_record: the fields that
apply, under their names; from_record reads one back, leaving out keys an older version recorded). JAX-free.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any


class _Record:
    """to_record / from_record for a dataclass of JSON values, None fields left out, nested records by type."""

    def to_record(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = value.to_record() if isinstance(value, _Record) else value
        return out

    @classmethod
    def from_record(cls, record: dict[str, Any]):
        hints = typing.get_type_hints(cls)
        values = {}
        for name, value in record.items():
            if name not in hints:  # recorded by another version of the search
                continue
            nested = _record_type(hints[name])
            values[name] = nested.from_record(value) if nested is not None and isinstance(value, dict) else value
        return cls(**values)


def _record_type(hint) -> type | None:
    """The _Record class a field's type names (alone or beside None), or None."""
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    return next((o for o in options if isinstance(o, type) and issubclass(o, _Record)), None)


@dataclass
class NetworksSummary(_Record):
    """The networks trial (networks.py): one network against an ensemble and a character network beside it."""

    members: int  # networks chosen for the words (Settings.ensemble)
    reason: str | None = None  # why the trial did not run
    char_ngrams: bool | None = None
    single_accuracy: float | None = None  # one network's mean validation accuracy over the folds
    folds: int | None = None
    ensemble_accuracy: float | None = None
    ensemble_standard_error: float | None = None
    ensemble_not_tried: str | None = None
    char_pair_accuracy: float | None = None
    char_pair_standard_error: float | None = None
    char_learning_rate: float | None = None
    char_epochs: int | None = None
    char_ngrams_not_tried: str | None = None


@dataclass
class FamilySummary(_Record):
    """The family trial (family.py): the linear family against the chosen network, and beside it."""

    chosen: str  # "network", "linear" or "network+linear"
    linear_not_tried: str | None = None
    network_score: float | None = None
    linear_score: float | None = None
    by: float | None = None  # linear_score - network_score
    standard_error: float | None = None
    margin: float | None = None  # what the linear family must win by (rules.family_errors standard errors)
    linear_learning_rate: float | None = None
    linear_weight_decay: float | None = None
    linear_epochs: int | None = None
    linear_loss: str | None = None
    pairs: int | None = None
    folds: int | None = None
    mixed_not_tried: str | None = None
    mixed_score: float | None = None
    mixed_by: float | None = None
    mixed_standard_error: float | None = None
    seconds: float | None = None


@dataclass
class KeptDefaults(_Record):
    """The settings' own variant kept over the winner, within rules.default_variant_errors standard errors."""

    over: dict  # the winner's settings
    by: float  # the winner's validation accuracy


@dataclass
class BatchForAll(_Record):
    """A sampled corpus's batch, doubled for all its documents (rules.epoch_steps)."""

    sample: int
    all: int
    documents: int
    epoch_steps: int


@dataclass
class RateChoice(_Record):
    """The final training's choice among the search's rate candidates (textclf/runs/fitting.py)."""

    candidates: list  # {"learning_rate", "weight_decay", "epochs"} each
    chosen: int
    held_out: list  # each candidate's held-out accuracy after each epoch
    held_out_documents: int | None = None  # a refit's (chosen on a fraction, then trained on all)
    refit: bool | None = None
    features: int | None = None


@dataclass
class SearchSummary(_Record):
    """A search's record: why it did not run (skipped), or what ran and what it chose."""

    skipped: str | None = None  # why the corpus was not searched (None: it was)
    platform: str | None = None
    budget_steps: int | None = None
    budget_s: float | None = None
    seconds: float | None = None
    folds: int | None = None  # folds the leaderboard's finalists were compared on
    rounds: int | None = None
    rounds_planned: int | None = None
    steps: int | None = None  # network-steps spent
    candidates: int | None = None
    halving: bool | None = None
    best_accuracy: float | None = None
    chosen: dict | None = None  # the winner's searched fields (its epochs for all the documents)
    subsampled: bool | None = None
    documents: int | None = None
    searched_documents: int | None = None
    terms: int | None = None
    round_features: int | None = None
    metric: str | None = None  # label sets: what the rounds scored
    kept_defaults: KeptDefaults | None = None
    rate_candidates: list | None = None  # a sampled corpus's near rates: {"learning_rate", "weight_decay", "epochs"}
    batch_for_all: BatchForAll | None = None
    ensemble: NetworksSummary | None = None
    family: FamilySummary | None = None
    leaderboard: list | None = None  # the best candidates, best first
    reused_from: int | None = None  # the run whose recorded search this one reused
    rate_choice: RateChoice | None = None

    @property
    def searched(self) -> bool:
        return self.skipped is None

    @classmethod
    def skip(cls, reason: str, **fields: Any) -> SearchSummary:
        return cls(skipped=reason, **fields)
