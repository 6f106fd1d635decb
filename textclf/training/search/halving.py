"""The model search: choose a corpus's settings by validation on its own training documents.

Why: no one setting wins on every corpus (English stop words remove "what"/"who"/"how", the words that decide a
question's type; short sentiment sentences want other n-grams and rates than newsgroup posts), and a GPU trains
one candidate in a fraction of a second.

How:
- The texts are tokenised once, into the widest view: raw counts of every n-gram up to the longest candidate's,
  no stop words removed (pipelines.vectorize.count_terms). Each vectorizer variant (stop words, n-gram length,
  naive Bayes column weights, sublinear tf, batch size) is a column mask of it (term_masks); within each fold, the
  variant's `features` columns are selected by chi-squared on the fold's training rows only and weighted with IDF
  from those rows (select_and_weigh).
- The variants are a portfolio (portfolio.json beside this module), ordered by an offline study over many corpora
  (benchmarks/search/portfolio.py): the variant that helps most where the ones before it fall short comes next.
- Per (variant, fold) the (learning rate, weight decay) candidates train side by side as one program
  (textclf/training/ensembles.py), scored on the fold's validation rows after every epoch.
- Successive halving: every variant trains on the first fold for a third of a round's epochs; only the
  rules.halving_keep best go on (and the settings' own variant, which the defaults' rule may keep), continued on
  the first fold to all the epochs, then on every other fold.
  Candidates, folds and the ranking: textclf/training/search/folds.py; the networks trial after the rounds:
  networks.py; the rules: rules.py.
- Score of a (variant, rate, decay, epoch count): mean validation accuracy over the folds. The best one wins; ties go
  to the earlier candidate (the defaults come first) and the fewer epochs.
- Rounds run defaults-first and stop when the budget (Budget: network-steps, and seconds where the user asks)
  would be overrun: a tight budget still returns the best candidate of the rounds it finished (at least the
  first). The variants that finished the most folds are compared on those folds; the others rank below them.
- Settings the user set explicitly (Settings.pinned) are not searched.
- Never reads a test corpus: the caller passes only training documents (tests/textclf/training/search/
  test_halving.py checks that `train` opens --test only after the search).
"""

from __future__ import annotations

import dataclasses
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Sequence

import jax
import numpy as np

from pipelines.workers import WorkerPool
from textclf.settings import Settings
from textclf.training.search.rounds import CandidateRound, precompile_epoch, precompile_hits, precompile_scores
from textclf.training.steps.stacked import init_stack
from textclf.training.search.folds import (
    Budget,
    RoundGeometry,
    SearchContext,
    SearchCorpus,
    Variant,
    batch_for_all,
    candidate_space,
    epochs_for_all,
    final_steps,
    keep_defaults,
    leaderboard_of,
    rate_candidates,
)
from textclf.training.search.family import FamilyTrial, not_tried
from textclf.training.search.networks import NetworksTrial
from textclf.training.search.prepare import Prepared, round_geometry, searched_corpus, searched_space
from textclf.training.search.rounds import fold_round
from textclf.training.search.rules import SearchRules
from textclf.training.search.summary import BatchForAll, KeptDefaults, SearchSummary

# The search's format: raise it when its candidates or the rules that choose between them change, so that a
# choice recorded by an older search (textclf/runs/search.py) is not reused for a new run (9: budgets of
# work, network-steps; 10: the linear family; 11: a linear model beside the network; 12: the portfolio raced by
# successive halving; the earlier formats' changes are in git history).
SEARCH_FORMAT = 12


@dataclass
class SearchResult:
    settings: Settings  # the chosen settings (the input's, with the searched fields replaced)
    summary: SearchSummary  # what ran: folds, budget, seconds, rounds, best validation accuracy, or why it was skipped
    trials: list[dict] = field(default_factory=list)  # one per (candidate, fold): settings, epoch_accuracies
    leaderboard: list[dict] = field(default_factory=list)  # candidates, best first: settings, accuracy, epochs


def search_settings(
    texts: Sequence[str],
    labels: list[str],
    settings: Settings,
    pool: WorkerPool,
    platform: str,
    on_round: Callable[[int, int], None] | None = None,
    rules: SearchRules = SearchRules(),
    prepared: Prepared | None = None,
    weights: np.ndarray | None = None,
) -> SearchResult:
    # Seven arguments, the work prepared ahead (a caller that starts JAX meanwhile: textclf/runs/text_data.py) and
    # the documents' weights (None: 1 each), each document's in its rounds' loss and their validation's hits.
    """Choose stop words, n-grams, learning rate and epochs for these training documents (see the module
    docstring): the corpus tokenised, the rounds raced within the budget, then the choice and the networks
    trial. platform: jax's default backend ("cpu", "gpu", ...). on_round(done, total): after each round.
    prepared: prepare_search's work for these documents and settings, used where made for this platform."""
    start = time.perf_counter()
    budget = Budget(settings, platform, rules)
    summary = SearchSummary(platform=platform, budget_steps=budget.steps, budget_s=budget.seconds)
    space = searched_space(labels, settings, platform, rules)
    if isinstance(space, str):
        summary.skipped = space
        return SearchResult(settings, summary)
    variants, optimizers, epoch_options = space
    search = SearchContext(settings, platform, rules, pool, budget, variants, optimizers)
    if prepared is not None and prepared.platform == platform:
        corpus, geometry, start = prepared.corpus, prepared.geometry, start - prepared.seconds
        budget.start -= prepared.seconds  # a clock budget counts the work done ahead too
    else:
        corpus = searched_corpus(search, texts, labels, weights)
        geometry = round_geometry(search, corpus, epoch_options)
    rounds = _Rounds(search, corpus, geometry)
    rounds.run(on_round)
    result = _choice(search, corpus, geometry, rounds, summary)
    result.summary.seconds = round(time.perf_counter() - start, 3)
    return result


def search_curves(
    texts: Sequence[str],
    labels: list[str],
    settings: Settings,
    pool: WorkerPool,
    platform: str,
    variants: list[Variant],
    rules: SearchRules = SearchRules(),
) -> tuple[dict, list, list]:
    """Every variant on every fold as a round of the search trains it, nothing pruned or skipped (the offline
    study that orders the portfolio: benchmarks/search/portfolio.py) -> ({(variant, fold): (epochs, K) validation
    accuracy}, the folds, the (rate, decay) pairs)."""
    _, optimizers, epoch_options = candidate_space(settings, platform, rules)
    search = SearchContext(settings, platform, rules, pool, Budget(settings, platform, rules), variants, optimizers)
    corpus = searched_corpus(search, texts, labels)
    rounds = _Rounds(search, corpus, round_geometry(search, corpus, epoch_options))
    rounds.schedule = [(fold, v, rounds.geometry.epochs) for fold in range(len(corpus.folds)) for v in variants]
    for number, (fold, variant, _) in enumerate(rounds.schedule):
        rounds._train(number, rounds._prepare(fold, variant), time.perf_counter())
    return rounds.results, corpus.folds, optimizers


class _Rounds:
    """The search's rounds, successive halving: every variant on fold 0 for rules.first_rung of a round's epochs
    (the first rung); the rules.halving_keep best there go on, and the settings' own variant with them: fold 0
    continued to all the epochs (CandidateRound: as if never paused), then every other fold. With no more variants
    than that, every variant trains all the epochs on every fold. Each round trains the optimizers side by side;
    the rounds stop when the budget would be overrun."""

    def __init__(self, search: SearchContext, corpus: SearchCorpus, geometry: RoundGeometry):
        self.search, self.corpus, self.geometry = search, corpus, geometry
        variants, folds, keep = search.variants, corpus.folds, search.rules.halving_keep
        self.halving = len(variants) > keep
        first = max(1, math.ceil(geometry.epochs * search.rules.first_rung)) if self.halving else geometry.epochs
        self.schedule = [(0, v, first) for v in variants]  # (fold, variant, epochs) of every round run or to run
        # (at most: the settings' own variant goes on beside the best; the count is known after the first rung)
        self.planned = len(variants) + (keep + 1) * len(folds) if self.halving else len(variants) * len(folds)
        self.live: dict[tuple, CandidateRound] = {}  # (fold, variant) -> a round that may go on
        self.results: dict[tuple, np.ndarray] = {}  # (variant, fold) -> (epochs, K) validation accuracy
        self.trials: list[dict] = []
        self.trial_rows: dict[tuple, int] = {}  # (variant, fold) -> its first row in trials
        self.seconds: list[float] = []
        self.steps: list[int] = []  # network-steps of each round
        self.network_epoch_seconds: list[float] = []  # per round: seconds per (network, epoch, training document)
        self.initial: dict[int, object] = {}  # fold -> the networks' starting weights: every variant starts alike
        self.reserve, self.reserve_steps = 0.0, 0  # what the cheapest networks trial would cost, held back for it
        settings = search.settings
        self.characters = sum(map(len, corpus.texts))
        cheap = search.platform != "cpu" or final_steps(settings, corpus.n_documents) <= search.rules.cpu_trial_steps
        self.pair_possible = (
            settings.ensemble == 0
            and "char_ngrams" not in settings.pinned
            and self.characters <= search.rules.char_max_characters
            and cheap
        )

    def _prepare(self, fold: int, variant: Variant):
        """One round's batches (None for a round that goes on): every round the same input width, so the epoch
        compiles once."""
        if (fold, variant) in self.live:
            return None
        search, geometry = self.search, self.geometry
        built = geometry.built.pop((fold, variant), None)
        return fold_round(self.corpus, geometry, fold, variant, search.settings, search.settings.seed + fold, built)

    def _starting_weights(self, fold: int):
        if fold not in self.initial:
            self.initial[fold] = init_stack(
                jax.random.PRNGKey(self.search.settings.seed + fold),
                self.geometry.width,
                self.search.settings.hidden,
                self.corpus.n_classes,
                len(self.search.optimizers),
            )
        return self.initial[fold]

    def run(self, on_round: Callable[[int, int], None] | None) -> None:
        """The rounds in order until the schedule ends or the budget would be overrun by the next. Where the
        device trains (a GPU), the next round's batches are built and uploaded meanwhile, and the programs later
        rounds and the networks trial will run are compiled (their results are not read: a program that failed
        to compile here compiles when its round runs, and fails there with its own error)."""
        gpu = self.search.platform != "cpu"
        prefetch = ThreadPoolExecutor(1) if gpu else None
        # One thread compiles ahead: more made each compilation slower (docs/decisions.md, "The search's cost").
        compiler = ThreadPoolExecutor(1) if gpu else None
        upcoming, number = {}, 0
        try:
            while number < len(self.schedule):
                if number and not self.search.budget.affords(
                    max(self.steps) + self.reserve_steps, max(self.seconds) + self.reserve
                ):
                    break
                started = time.perf_counter()
                pending = upcoming.pop(number, None)
                data = pending.result() if pending else self._prepare(*self.schedule[number][:2])
                if prefetch and number + 1 < len(self.schedule):
                    upcoming[number + 1] = prefetch.submit(self._prepare, *self.schedule[number + 1][:2])
                if compiler and number == 0:
                    self._precompile(compiler, data, self.schedule[0][1])
                self._train(number, data, started)
                number += 1
                self._extend_schedule(number)
                if on_round:
                    on_round(number, self.planned)
        finally:  # however the loop ends: no build or compilation left running behind it
            for executor in (prefetch, compiler):
                if executor:
                    executor.shutdown(wait=True, cancel_futures=True)

    def _precompile(self, compiler: ThreadPoolExecutor, data, variant: Variant) -> None:
        settings, shapes, models = self.search.settings, self.geometry.shapes, len(self.search.optimizers)
        # (the first round's epoch compiles in the rounds' thread, as the round calls it; its scoring here)
        compiler.submit(precompile_hits, data, self.corpus.n_classes, models, settings.hidden)
        for batch in sorted(set(shapes) - {variant.batch_size}):
            compiler.submit(
                precompile_epoch, data, self.corpus.n_classes, models, settings.hidden, batch, shapes[batch]
            )
        if settings.ensemble == 0:
            compiler.submit(precompile_scores, data, self.corpus.n_classes, models, settings.hidden)
        rules, classes = self.search.rules, self.corpus.n_classes
        validation = sum(len(val) for _, val in self.corpus.folds)
        if not_tried(settings, validation, rules) is None:  # the family trial's linear models (family.py)
            linear = len(rules.linear_pairs(self.search.platform))
            compiler.submit(
                precompile_epoch,
                data,
                classes,
                linear,
                0,
                variant.batch_size,
                shapes[variant.batch_size],
                settings.linear_loss,
            )
            compiler.submit(precompile_hits, data, classes, linear, 0)

    def _train(self, number: int, data, started: float) -> None:
        """Round `number`: its networks trained (a new round, or one that goes on), its curves, cost and trials
        recorded."""
        search, geometry = self.search, self.geometry
        fold, variant, epochs = self.schedule[number]
        optimizers = search.optimizers
        round_ = self.live.pop((fold, variant), None)
        if round_ is None:
            round_ = CandidateRound(
                data,
                self.corpus.n_classes,
                [rate for rate, _ in optimizers],
                [decay for _, decay in optimizers],
                geometry.epochs,
                search.settings.hidden,
                search.settings.seed + fold,
                patience=geometry.patience,
                initial=self._starting_weights(fold),
                metric=search.settings.metric or "micro-f1",
            )
        before = round_.done
        curves = round_.run(epochs)
        if epochs < geometry.epochs and not round_.stopped:  # a first rung: it may go on
            self.live[(fold, variant)] = round_
        self.results[(variant, fold)] = curves
        ran = max(1, round_.done - before)  # epochs trained in this round
        seconds = time.perf_counter() - started
        self.seconds.append(seconds)
        self.steps.append(len(optimizers) * ran * round_.data.n_steps)
        search.budget.steps_done += self.steps[-1]
        train_rows = self.corpus.folds[fold][0]
        self.network_epoch_seconds.append(seconds / (ran * len(optimizers) * len(train_rows)))
        if self.pair_possible and len(self.network_epoch_seconds) > 1:
            # The cheapest trial of _choose_networks: 2 networks, at most `epochs`, every fold, at the rate of the
            # rounds after the first (which also compiled); counting the character n-grams ~1 s a million
            # characters.
            folds = self.corpus.folds
            self.reserve = (
                min(self.network_epoch_seconds[1:]) * 2 * geometry.epochs * sum(len(train) for train, _ in folds)
                + self.characters / 1e6
            )
            self.reserve_steps = (
                2 * geometry.epochs * sum(-(-len(train) // search.settings.batch_size) for train, _ in folds)
            )
        self._record_trials(fold, variant, curves[: round_.done], seconds)

    def _record_trials(self, fold: int, variant: Variant, curves: np.ndarray, seconds: float) -> None:
        """One trial a (candidate, fold): a round that went on replaces its first rung's."""
        optimizers = self.search.optimizers
        first = self.trial_rows.setdefault((variant, fold), len(self.trials))
        for k, (rate, decay) in enumerate(optimizers):
            row = {
                "candidate": self.search.variants.index(variant) * len(optimizers) + k,
                "fold": fold,
                "settings": {**variant._asdict(), "learning_rate": rate, "weight_decay": decay},
                "epoch_accuracies": [round(float(a), 6) for a in curves[:, k]],
                "seconds": seconds / len(optimizers),
            }
            if first + k < len(self.trials):
                row["seconds"] += self.trials[first + k]["seconds"]
                self.trials[first + k] = row
            else:
                self.trials.append(row)

    def _extend_schedule(self, done: int) -> None:
        """After the first rung (every variant on fold 0): the best rules.halving_keep go on, fold 0 to all the
        epochs and then the other folds (every variant, where there are no more than that)."""
        variants, folds, results = self.search.variants, self.corpus.folds, self.results
        if done != len(variants):
            return
        epochs = self.geometry.epochs
        if self.halving:
            ranked = sorted(variants, key=lambda v: -float(results[(v, 0)].max()))  # stable: ties keep the order
            going_on = ranked[: self.search.rules.halving_keep]
            if variants[0] not in going_on:  # the settings' own variant too: default_variant_errors may keep it
                going_on.append(variants[0])
            self.live = {key: round_ for key, round_ in self.live.items() if key[1] in going_on}
            self.schedule += [(0, v, epochs) for v in going_on if (0, v) in self.live]
        else:
            going_on = variants
        self.schedule += [(f, v, epochs) for f in range(1, len(folds)) for v in going_on]
        self.planned = len(self.schedule)

    def leaderboard(self) -> tuple[list[dict], list[int]]:
        going_on = {v for _, v, _ in self.schedule[len(self.search.variants) :]}
        return leaderboard_of(
            self.results,
            self.search.variants,
            going_on,
            len(self.corpus.folds),
            self.search.optimizers,
            self.geometry.usable,
        )


def _choice(
    search: SearchContext, corpus: SearchCorpus, geometry: RoundGeometry, rounds: _Rounds, summary: SearchSummary
) -> SearchResult:
    """The leaderboard's winner (the defaults kept within a standard error), its epochs and near rates for all the
    documents, the networks trial, and the batch for all the documents."""
    settings, rules = search.settings, search.rules
    leaderboard, shared_folds = rounds.leaderboard()
    validation_documents = sum(len(corpus.folds[f][1]) for f in shared_folds)
    kept = keep_defaults(leaderboard, search.variants[0], validation_documents, rules.default_variant_errors)
    if kept is not None:
        summary.kept_defaults = KeptDefaults(dict(leaderboard[0]["settings"]), leaderboard[0]["accuracy"])
        leaderboard.insert(0, leaderboard.pop(kept))
    for row in leaderboard:
        del row["_variant"]
    best = dict(leaderboard[0]["settings"])

    def for_all(epochs: int) -> int:  # a sample's epoch count for all the documents
        if not corpus.subsampled or "epochs" in settings.pinned:
            return epochs
        return epochs_for_all(epochs, geometry.epochs, settings)

    best["epochs"] = for_all(best["epochs"])
    if corpus.subsampled and "learning_rate" not in settings.pinned:
        summary.rate_candidates = rate_candidates(leaderboard, validation_documents, for_all, rules)
    # min_steps 0: the epoch count was read off the validation curves; the small-corpus rule must not raise it.
    chosen = settings.replace(**best, min_steps=0)
    network_score = leaderboard[0]["accuracy"]  # the network as chosen, on the compared folds
    network_scores = None  # its log-probabilities on the compared folds, where the networks trial trained them
    if settings.ensemble == 0 and corpus.targets is not None:
        # label sets train one network a view (textclf/training/plan.py): no ensemble, the character view as given
        chosen = chosen.replace(ensemble=1)
        summary.metric = (
            f"{settings.metric or 'micro-f1'} at probability 0.5 (the threshold is chosen after the training)"
        )
    elif settings.ensemble == 0:
        # Costs from the cheapest round (the first one also compiled), per network, epoch and document.
        trial = NetworksTrial(search, corpus, geometry, chosen, shared_folds)
        networks = trial.choose(leaderboard[0]["settings"]["epochs"], min(rounds.network_epoch_seconds))
        chosen = chosen.replace(ensemble=networks.members, char_ngrams=networks.char_ngrams)
        if networks.char_epochs:  # the character network's own rate and epochs (0 in Settings: the words')
            chosen = chosen.replace(
                char_learning_rate=networks.char_learning_rate, char_epochs=for_all(networks.char_epochs)
            )
        summary.ensemble = networks.summary
        network_score += networks.gain  # the networks trial's choice over one network, on the same folds
        network_scores = networks.scores
    chosen = _chosen_family(
        search, corpus, geometry, chosen, shared_folds, (network_score, network_scores), summary, for_all
    )
    all_batch = batch_for_all(chosen.batch_size, corpus.n_documents, rules)
    if corpus.subsampled and "batch_size" not in settings.pinned and all_batch != chosen.batch_size:
        # After the networks trial, which trained on the sample at the sample's batch.
        summary.batch_for_all = BatchForAll(chosen.batch_size, all_batch, corpus.n_documents, rules.epoch_steps)
        chosen = chosen.replace(batch_size=all_batch)
    summary = dataclasses.replace(
        summary,
        folds=len(shared_folds),
        rounds=len(rounds.seconds),
        rounds_planned=rounds.planned,
        steps=search.budget.steps_done,
        candidates=len(leaderboard),
        halving=rounds.halving,
        best_accuracy=leaderboard[0]["accuracy"],
        chosen=best,
        subsampled=corpus.subsampled,
        documents=corpus.n_documents,
        searched_documents=len(corpus.texts),
        terms=len(corpus.terms),
        round_features=geometry.features,
    )
    return SearchResult(chosen, summary, rounds.trials, leaderboard)


# Eight arguments: the search's parts the trial reads, the chosen settings and the network's validation, the summary
# it adds to and how a sample's epochs scale to all the documents.
def _chosen_family(
    search: SearchContext,
    corpus: SearchCorpus,
    geometry: RoundGeometry,
    chosen: Settings,
    shared_folds: list[int],
    network: tuple,
    summary: SearchSummary,
    for_all,
) -> Settings:
    """The family trial (family.py) against the network as chosen. network: (its validation score on the
    compared folds, with what the networks trial's choice gained there; its log-probabilities there or None)."""
    score, scores = network
    family = FamilyTrial(search, corpus, geometry, chosen, shared_folds, scores).choose(min(1.0, score))
    summary.family = family.summary
    if family.family == "network":
        return chosen
    if family.family == "network+linear":
        return chosen.replace(
            family="network+linear",
            linear_learning_rate=family.learning_rate,
            linear_weight_decay=family.weight_decay,
            linear_epochs=for_all(family.epochs),
        )
    return chosen.replace(
        family="linear",
        learning_rate=family.learning_rate,
        weight_decay=family.weight_decay,
        epochs=for_all(family.epochs),
        ensemble=1,
        char_ngrams=chosen.char_ngrams if "char_ngrams" in chosen.pinned else False,
    )
