"""The model search's family trial (halving.py runs it after the networks trial): the linear family
(features -> classes: softmax regression, one sigmoid a label for label sets, or the one-vs-rest squared hinge
where typed; textclf/models/stacked.py with no hidden units) against the chosen network, on the compared folds,
with the chosen vectorizer variant.

The linear models train as the rounds' networks do (textclf/training/ensembles.py, fit_candidates: K side by side
on the same batches, Adam, scored after every epoch), on Settings.linear_loss, their (learning rate,
weight decay) pairs spanning rules.linear_pairs (fewer on a CPU): the decay is the L2 strength a linear model is
tuned by (as LinearSVC's C or SGD's alpha), over four orders of magnitude, and the epochs are read off the curves
(early stopping). The linear family wins where its best mean validation score beats the network's by more than
rules.family_errors binomial standard errors of it on the same validation documents.

Where the networks trial handed over the chosen network's validation log-probabilities, the same linear model (its
pair and epoch as chosen alone) is also scored beside the network: the sum of their log-probabilities, the
"network+linear" model's choice (textclf/models/weights.py). It wins where its mean gain over the network, paired
per validation document, is above rules.mixed_errors standard errors of that gain; where both beat the network
by their rules, the more accurate is chosen (a tie: the linear family).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from textclf.settings import Settings
from textclf.training.search.rounds import fit_candidates
from textclf.training.search.folds import RoundGeometry, SearchContext, SearchCorpus, Variant, binomial_error
from textclf.training.search.networks import standard_error
from textclf.training.search.rounds import fold_round
from textclf.training.search.rules import SearchRules
from textclf.training.search.summary import FamilySummary


class Family(NamedTuple):
    """The trial's answer: the Settings fields it decides, and what was measured."""

    family: str  # Settings.family
    learning_rate: float  # the linear model's (the network's where it won)
    weight_decay: float
    epochs: int  # on the searched documents (search_settings scales it to a larger corpus)
    summary: FamilySummary


def not_tried(settings: Settings, validation_documents: int, rules: SearchRules) -> str | None:
    """Why the trial does not run for these settings and folds (None: it runs). A typed family runs it (linear) or
    skips it (network) whatever the rest says."""
    if "family" in settings.pinned:
        return "family set explicitly" if settings.family == "network" else None
    if "ensemble" in settings.pinned and settings.ensemble > 1:
        return "an ensemble set explicitly"
    if validation_documents < rules.family_min_validation:
        return f"{validation_documents:,} validation documents, under {rules.family_min_validation:,}"
    return None


class FamilyTrial:
    """The linear family against the network for the chosen variant on the compared folds (module docstring)."""

    # Six arguments: the search's parts the trial reads, the chosen network and its validation log-probabilities.
    def __init__(
        self,
        search: SearchContext,
        corpus: SearchCorpus,
        geometry: RoundGeometry,
        chosen: Settings,
        shared_folds: list[int],
        network_scores: list[tuple[np.ndarray, np.ndarray]] | None = None,
    ):
        self.search, self.corpus, self.geometry, self.chosen, self.folds = (
            search,
            corpus,
            geometry,
            chosen,
            shared_folds,
        )
        # per compared fold: (the network's (documents, C) log-probabilities, the truth), None: no mixture tried
        self.network_scores = None if chosen.family == "linear" else network_scores
        # per compared fold, per epoch run: whether network + linear model k is right, (documents, K)
        self.mixed_right: list[list[np.ndarray]] = []
        rules, pinned = search.rules, chosen.pinned
        # the platform's pairs, a typed rate or decay in place of theirs (each pair once, in their order): the
        # linear model's own where it is typed to stand beside the network
        beside = chosen.family == "network+linear" and "family" in pinned
        typed = chosen.linear_view() if beside else chosen
        rate_typed, decay_typed, epochs_typed = (
            ("linear_learning_rate", "linear_weight_decay", "linear_epochs")
            if beside
            else ("learning_rate", "weight_decay", "epochs")
        )
        self.pairs = list(
            dict.fromkeys(
                (
                    typed.learning_rate if rate_typed in pinned else rate,
                    typed.weight_decay if decay_typed in pinned else decay,
                )
                for rate, decay in rules.linear_pairs(search.platform)
            )
        )
        self.epochs = typed.epochs if epochs_typed in pinned else rules.linear_epochs(search.platform)
        self.epochs_typed = epochs_typed in pinned
        self.loss = chosen.linear_loss  # the linear models' (LINEAR_LOSSES)

    def cost(self) -> int:
        """Network-steps of the trial: K linear models of C outputs weigh as K*C hidden units, at least one
        network."""
        fold_steps = sum(-(-len(self.corpus.folds[f][0]) // self.chosen.batch_size) for f in self.folds)
        return self._network_weight() * self.epochs * fold_steps

    def choose(self, network_score: float) -> Family:
        """network_score: the chosen network's mean validation score on the compared folds."""
        chosen, search = self.chosen, self.search
        keep = Family("network", chosen.learning_rate, chosen.weight_decay, chosen.epochs, FamilySummary("network"))
        documents = sum(len(self.corpus.folds[f][1]) for f in self.folds)
        why_not = not_tried(chosen, documents, search.rules)
        if why_not:
            return keep._replace(summary=FamilySummary("network", linear_not_tried=why_not))
        steps = self.cost()
        if "family" not in chosen.pinned and not search.budget.affords(steps, 0.0):
            return keep._replace(
                summary=FamilySummary("network", linear_not_tried=f"no budget left (needs ~{steps:,} network-steps)")
            )
        started = time.perf_counter()
        curves = self._curves()  # (epochs, K) mean over the folds
        epoch, k = np.unravel_index(np.argmax(curves), curves.shape)  # the first maximum: fewest epochs, earlier pair
        linear_score = float(curves[epoch, k])
        error = binomial_error(network_score, documents)
        margin = search.rules.family_errors * error
        rate, decay = self.pairs[k]
        summary = FamilySummary(
            "network",
            network_score=round(network_score, 6),
            linear_score=round(linear_score, 6),
            by=round(linear_score - network_score, 6),
            standard_error=round(error, 6),
            margin=round(margin, 6),
            linear_learning_rate=rate,
            linear_weight_decay=decay,
            linear_epochs=int(epoch) + 1,
            linear_loss=self.loss,
            pairs=len(self.pairs),
            folds=len(self.folds),
        )
        options = {}  # the families that beat the network by their rule, and their validation scores
        if linear_score - network_score > margin:
            options["linear"] = linear_score
        mixed = self._mixed(int(epoch), int(k))
        if mixed is None:
            summary.mixed_not_tried = (
                "the linear family typed"
                if chosen.family == "linear" and "family" in chosen.pinned
                else "the networks trial did not train (label sets, an ensemble typed or a CPU's large corpus)"
                if self.network_scores is None
                else "a fold stopped before the linear model's epoch"
            )
        else:
            gain, gain_error = mixed
            summary.mixed_score, summary.mixed_by = round(network_score + gain, 6), round(gain, 6)
            summary.mixed_standard_error = round(gain_error, 6)
            if gain > search.rules.mixed_errors * gain_error:
                options["network+linear"] = network_score + gain
        family = (
            chosen.family
            if "family" in chosen.pinned
            else max(options, key=lambda name: options[name])
            if options
            else "network"
        )
        summary.chosen, summary.seconds = family, round(time.perf_counter() - started, 3)
        if family == "network":
            return keep._replace(summary=summary)
        epochs = self.epochs if self.epochs_typed else int(epoch) + 1
        return Family(family, rate, decay, epochs, summary)

    def _mixed(self, epoch: int, k: int) -> tuple[float, float] | None:
        """(mean gain, its standard error) of the network + linear model k after `epoch` (0-based) over the
        network alone, paired per validation document of the compared folds; None where not scored (no network
        scores, or a fold stopped before that epoch)."""
        if self.network_scores is None or any(len(fold) <= epoch for fold in self.mixed_right):
            return None
        gains = [
            fold[epoch][:, k].astype(np.float64) - (np.argmax(scores, axis=-1) == truth)
            for fold, (scores, truth) in zip(self.mixed_right, self.network_scores)
        ]
        return float(np.mean(np.concatenate(gains))), standard_error(gains)

    def _curves(self) -> np.ndarray:
        """(epochs, K) validation score of each (rate, decay) pair after each epoch, the mean over the folds (the
        epochs after a fold's early stop count 0 there)."""
        search, corpus, geometry, chosen = self.search, self.corpus, self.geometry, self.chosen
        variant = Variant(
            chosen.stop_words, chosen.ngram_max, chosen.nb_weighting, chosen.sublinear_tf, chosen.batch_size
        )
        total = np.zeros((self.epochs, len(self.pairs)))
        for fold in self.folds:
            data = fold_round(corpus, geometry, fold, variant, chosen, chosen.seed + 300 + fold)
            curves = fit_candidates(
                data,
                corpus.n_classes,
                [rate for rate, _ in self.pairs],
                [decay for _, decay in self.pairs],
                self.epochs,
                0,
                chosen.seed + 300 + fold,
                patience=geometry.patience,
                metric=chosen.metric or "micro-f1",
                on_scores=self._mixed_scorer(len(self.mixed_right)),
                loss=self.loss,
            )
            ran = int(np.max(np.flatnonzero(curves.any(axis=1)), initial=0)) + 1
            search.budget.steps_done += self._network_weight() * ran * data.n_steps
            total += curves
        return total / len(self.folds)

    def _mixed_scorer(self, fold: int):
        """The fold's on_scores for fit_candidates: which documents the network + each linear model gets right
        after each epoch (None: no network scores to add)."""
        if self.network_scores is None:
            return None
        scores, truth = self.network_scores[fold]
        self.mixed_right.append([])
        return lambda epoch, linear: self.mixed_right[fold].append(
            np.argmax(scores[:, None, :] + linear, axis=-1) == truth[:, None]
        )

    def _network_weight(self) -> int:
        """The K linear models' cost in networks: their K*C columns against a network's hidden units."""
        return max(1, -(-len(self.pairs) * self.corpus.n_classes // max(1, self.chosen.hidden)))
