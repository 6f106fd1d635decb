"""The model search's candidates, folds and budget, and the records every step of a search shares (SearchContext,
SearchCorpus, RoundGeometry): which settings it tries (candidate_space: the portfolio), on which
documents (stratified folds, a CPU's split, samples), with which round shapes, and how it ranks what they scored
(the leaderboard, the defaults kept within a standard error, the near rates handed to the final training). Pure
NumPy and scikit-learn, no JAX."""

from __future__ import annotations

import functools
import json
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from typing import Callable, NamedTuple, Sequence

import numpy as np

from pipelines.batches import next_power_of_two
from pipelines.vectorize import nb_ratios, select_and_weigh, weigh_counts
from pipelines.workers import WorkerPool
from textclf.settings import Settings
from textclf.training.search.rules import SearchRules


def stratified_folds(labels: np.ndarray, count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """`count` (>= 2) stratified folds: (training rows, validation rows) each."""
    from sklearn.model_selection import StratifiedKFold

    splitter = StratifiedKFold(n_splits=count, shuffle=True, random_state=seed)
    with warnings.catch_warnings():  # a class of fewer documents than folds validates in fewer folds: expected
        warnings.filterwarnings("ignore", "The least populated class", UserWarning)
        return [(np.sort(a), np.sort(b)) for a, b in splitter.split(np.zeros(len(labels)), labels)]


def epochs_for_all(best_epoch: int, epochs_tried: int, settings: Settings) -> int:
    """The epochs for all the training documents from a sample's validation curve. A curve that peaked before
    its last epoch gives its epoch count as it is: a bag-of-words network overfits by passes over each document
    more than by optimizer steps (measured: converting to equal steps gave 2 epochs on every corpus and cost
    2.4 points on agnews7600 and 0.4 on news4, BENCHMARKS.md). A curve still rising at its last epoch says only
    "more": the default epochs, if that is more."""
    if best_epoch >= epochs_tried:
        return max(best_epoch, settings.epochs)
    return best_epoch


def batch_for_all(batch_size: int, n_documents: int, rules: SearchRules) -> int:
    """The batch size for all n_documents training documents, given the one the search chose on its sample."""
    batch = batch_size
    while n_documents > rules.epoch_steps * batch and batch * 2 <= rules.max_batch_for_all:
        batch *= 2
    return batch


def stratified_sample(y: np.ndarray, rows: np.ndarray, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """-> (`count` of the rows, the rest), both sorted, stratified by label when every class allows it."""
    from sklearn.model_selection import train_test_split

    if count >= len(rows):
        return rows, rows[:0]
    try:
        kept, rest = train_test_split(rows, train_size=count, random_state=seed, stratify=y[rows])
    except ValueError:  # a class with a single document here cannot be stratified: sample plainly
        shuffled = np.random.default_rng(seed).permutation(rows)
        kept, rest = shuffled[:count], shuffled[count:]
    return np.sort(kept), np.sort(rest)


def cpu_split(y: np.ndarray, seed: int, rules: SearchRules) -> tuple[np.ndarray, np.ndarray]:
    """The CPU's one split (training rows, validation rows), stratified by label: validation takes
    max(a fifth of the documents, those beyond rules.cpu_train_documents), at most
    rules.cpu_validation_documents; training
    at most rules.cpu_train_documents of the rest."""
    n = len(y)
    val_count = min(rules.cpu_validation_documents, max(n // 5, n - rules.cpu_train_documents))
    val, rest = stratified_sample(y, np.arange(n), val_count, seed)
    train, _ = stratified_sample(y, rest, rules.cpu_train_documents, seed)
    return train, val


def search_folds(y: np.ndarray, seed: int, platform: str, rules: SearchRules) -> list[tuple[np.ndarray, np.ndarray]]:
    if platform == "cpu" and len(y) > rules.cpu_folds_documents:
        return [cpu_split(y, seed, rules)]
    return device_folds(y, seed, rules)


def folds_sample(folds: list[tuple[np.ndarray, np.ndarray]], n_documents: int) -> np.ndarray | None:
    """The rows the folds use (sorted), or None where they use every one of the n_documents."""
    sample = np.unique(np.concatenate([np.concatenate(fold) for fold in folds]))
    return sample if len(sample) < n_documents else None


def searched_rows(labels: list[str], settings: Settings, platform: str, rules: SearchRules) -> np.ndarray | None:
    """The rows of these training documents whose texts search_settings reads (sorted), or None for all of them:
    a caller holding the texts elsewhere (pipelines.shares.FileTexts) fetches only these."""
    if too_few(labels, rules):  # not searched: search_settings reads nothing
        return None
    y = np.unique(np.asarray(labels), return_inverse=True)[1]
    return folds_sample(search_folds(y, settings.seed, platform, rules), len(y))


def too_few(labels: Sequence[str], rules: SearchRules) -> str | None:
    """Why training documents with these labels are too few to search (rules.min_documents), or None."""
    if len(labels) < rules.min_documents:
        return f"fewer than {rules.min_documents} training documents"
    if max(Counter(labels).values()) < 3:
        return "fewer than 3 documents in every class"
    return None


def device_folds(y: np.ndarray, seed: int, rules: SearchRules) -> list[tuple[np.ndarray, np.ndarray]]:
    """3 stratified folds (a GPU's, and a CPU's for a corpus of at most rules.cpu_folds_documents); where the corpus is
    larger than rules.search_documents, one split of a stratified sample of that many (the first of its 3 folds:
    training on two thirds, validating on 6,667 documents), because on a validation set of thousands of
    documents the other folds narrow a standard error that is already a few tenths of a point, and their rounds
    cost time (a million synthetic documents on an H100: 18 rounds, search 39.3 s -> 10 rounds, 34.0 s; the same
    settings but one more epoch, the same test accuracy; BENCHMARKS.md, "Big corpora with no flags")."""
    sample, _ = stratified_sample(y, np.arange(len(y)), rules.search_documents, seed)
    folds = [(sample[train], sample[val]) for train, val in stratified_folds(y[sample], 3, seed)]
    return folds if len(sample) == len(y) else folds[:1]


class Variant(NamedTuple):
    """One variant of the search's rounds (vectorizer and batch): the Settings fields it sets."""

    stop_words: str | None
    ngram_max: int
    nb_weighting: bool
    sublinear_tf: bool
    batch_size: int


@functools.cache
def portfolio() -> tuple[Variant, ...]:
    """The portfolio's variants, best first (textclf/training/search/portfolio.json; rebuilt by
    benchmarks/search/portfolio.py)."""
    data = json.loads(resources.files("textclf.training.search").joinpath("portfolio.json").read_text(encoding="utf-8"))
    return tuple(Variant(**dict(zip(data["fields"], values))) for values in data["variants"])


def candidate_space(
    settings: Settings, platform: str, rules: SearchRules
) -> tuple[list[Variant], list[tuple[float, float]], list[int]]:
    """(vectorizer variants, (learning rate, weight decay) pairs, epoch counts) to try; pinned fields keep the
    settings' own value. The settings' own values come first in each list; then the portfolio's first
    rules.portfolio_size variants, each with the pinned fields set as the user set them, repeats dropped. Weight
    decays are searched where the networks of a round are cheap (not on a CPU, where each one more costs a round's
    time again)."""
    pinned = set(settings.pinned)

    def options(name, values):
        own = getattr(settings, name)
        return [own] if name in pinned else [own] + [v for v in values if v != own]

    own = Variant(*(getattr(settings, field) for field in Variant._fields))
    variants = [own]
    for entry in portfolio()[: rules.portfolio_size]:
        variant = entry._replace(**{field: getattr(settings, field) for field in Variant._fields if field in pinned})
        if variant not in variants:
            variants.append(variant)
    rates = options("learning_rate", rules.learning_rates)
    decays = options("weight_decay", rules.weight_decays) if platform != "cpu" else [settings.weight_decay]
    optimizers = [(rate, decay) for decay in decays for rate in rates]
    epochs = [settings.epochs] if "epochs" in pinned else list(range(1, max(rules.max_epochs, settings.epochs) + 1))
    return variants, optimizers, epochs


def round_epochs(
    epoch_options: list[int], fold_documents: int, settings: Settings, platform: str, rules: SearchRules
) -> tuple[int, list[int], int]:
    """-> (the most epochs a round trains, the epoch counts it may choose, its early-stopping patience in epochs)
    for folds whose smallest trains on fold_documents: rules.max_epochs (rules.cpu_max_epochs on a CPU), or as
    many as make rules.round_min_steps steps at the settings' batch; patience rules.patience epochs and at least
    rules.patience_steps steps. A typed
    epoch count stays the only one tried."""
    epochs = max(epoch_options) if platform != "cpu" else min(max(epoch_options), rules.cpu_max_epochs)
    fold_steps = -(-fold_documents // settings.batch_size)  # an epoch's optimizer steps
    if "epochs" not in settings.pinned:
        epochs = max(epochs, -(-rules.round_min_steps // fold_steps))
        epoch_options = list(range(1, max(epochs, max(epoch_options)) + 1))
    return epochs, epoch_options, max(rules.patience, -(-rules.patience_steps // fold_steps))


def with_headroom(rules: SearchRules, shape: tuple[int, int], steps: int) -> tuple[int, int]:
    """(steps, cap) of batch_shape with at least `steps` steps and rules.round_cap_headroom more cap."""
    return max(shape[0], steps), next_power_of_two(int(shape[1] * rules.round_cap_headroom))


def final_steps(settings: Settings, n_documents: int) -> int:
    """The steps (batches x epochs) of one network's final training on n_documents with these settings."""
    return -(-n_documents // settings.batch_size) * settings.epochs_for(n_documents)


def binomial_error(accuracy: float, documents: int) -> float:
    """The binomial standard error of an accuracy measured on `documents`, Laplace-smoothed (a perfect score
    on a sample still has an error)."""
    n = max(1, documents)
    estimate = (accuracy * n + 1) / (n + 2)
    return float(np.sqrt(estimate * (1 - estimate) / n))


def keep_defaults(leaderboard: list[dict], defaults: Variant, validation_documents: int, errors: float) -> int | None:
    """The row of the defaults' vectorizer variant (the settings as given: stop words, n-grams, NB weights,
    sublinear tf, batch) to choose instead of the winner, or None: its best row, where the winner is another
    variant that beats it by no more than rules.default_variant_errors standard errors on the same folds."""
    winner = leaderboard[0]
    if winner["_variant"] == defaults:
        return None
    for number, row in enumerate(leaderboard):
        if row["_variant"] == defaults and row["folds"] == winner["folds"]:
            margin = errors * binomial_error(winner["accuracy"], validation_documents)
            return number if winner["accuracy"] - row["accuracy"] <= margin else None
    return None


def rate_candidates(
    leaderboard: list[dict], validation_documents: int, epochs_for_all: Callable[[int], int], rules: SearchRules
) -> list[dict]:
    """The winner's (learning rate, weight decay) and those of its variant within rules.near_rate_errors binomial
    standard errors of its validation accuracy (on `validation_documents`), best first, at most
    rules.max_rate_candidates: {"learning_rate", "weight_decay", "epochs"} each, epochs for all the documents. The
    final training of the sampled corpus trains them all and held-out documents choose (rules.near_rate_errors)."""
    winner = leaderboard[0]
    margin = rules.near_rate_errors * binomial_error(winner["accuracy"], validation_documents)
    accuracy = winner["accuracy"]
    variant = {k: v for k, v in winner["settings"].items() if k not in ("learning_rate", "weight_decay", "epochs")}
    near = [
        row
        for row in leaderboard
        if row["folds"] == winner["folds"]
        and row["accuracy"] >= accuracy - margin
        and all(row["settings"][k] == v for k, v in variant.items())
    ]
    return [
        {
            "learning_rate": row["settings"]["learning_rate"],
            "weight_decay": row["settings"]["weight_decay"],
            "epochs": epochs_for_all(row["settings"]["epochs"]),
        }
        for row in near[: rules.max_rate_candidates]
    ]


# Nine arguments: one fold's rows and the variant's columns, each computed once by the search for all its rounds.
def fold_matrices(counts, y, columns_mask, rows_train, rows_val, settings, features, width, variant: Variant):
    """One fold's (training, validation) TF-IDF rows for one variant, `width` columns wide; features selected
    and weighted from the fold's training rows only."""
    fold_counts = counts[rows_train]  # (fold documents, terms): sliced once, used three times
    columns, idf = select_and_weigh(
        fold_counts, y[rows_train], columns_mask, features, settings.feature_selection, variant.sublinear_tf
    )
    kept = fold_counts[:, columns]
    if variant.nb_weighting:
        idf = idf * nb_ratios(kept, y[rows_train])
    train_x = weigh_counts(kept, idf, variant.sublinear_tf)
    val_x = weigh_counts(counts[rows_val][:, columns], idf, variant.sublinear_tf)
    train_x.resize((train_x.shape[0], width))
    val_x.resize((val_x.shape[0], width))
    return train_x, val_x


def leaderboard_of(
    results: dict, variants: list[Variant], going_on: set[Variant], n_folds: int, optimizers: list, usable: list[int]
) -> tuple[list[dict], list[int]]:
    """Rank every (variant, rate, decay) tried -> (rows best first, the folds the contenders were compared on).
    The contenders (the variants that went on past the first rung, else every variant tried) are compared on the
    folds all of them finished: a fold the budget cut short for some of them counts for none. The rest rank below
    them, by their fold-0 accuracy. Within a rank, ties go to the earlier candidate (the defaults come first) and
    the fewer epochs. Each row's "_variant" is the Variant it came from (for the caller, not for the record)."""
    tried = [v for v in variants if (v, 0) in results]
    contenders = [v for v in tried if v in going_on] if going_on else tried
    shared_folds = [f for f in range(n_folds) if all((v, f) in results for v in contenders)]
    others = [v for v in tried if v not in contenders]
    rows = []
    for v in contenders + others:
        done = shared_folds if v in contenders else [0]
        mean = np.mean([results[(v, f)] for f in done], axis=0)  # (epochs, K)
        for k, (rate, decay) in enumerate(optimizers):
            curve = mean[np.array(usable) - 1, k]
            best = int(np.argmax(curve))  # first maximum: the fewest epochs
            rows.append(
                {
                    "settings": {**v._asdict(), "learning_rate": rate, "weight_decay": decay, "epochs": usable[best]},
                    "accuracy": float(curve[best]),
                    "folds": len(done),
                    "order": len(rows),
                    "_variant": v,
                }
            )
    rows.sort(key=lambda row: (-row["folds"], -row["accuracy"], row["order"]))
    for row in rows:
        del row["order"]
    return rows, shared_folds


def char_fold_matrices(terms, counts, y, rows_train, rows_val, settings: Settings, features: int):
    """One fold's (training, validation) rows of the character view, selected and weighted from the fold's
    training rows only, as fit_vectorizer does the final model's character view."""
    train_counts = counts[rows_train]
    columns, idf = select_and_weigh(
        train_counts, y[rows_train], np.arange(len(terms)), features, settings.feature_selection, settings.sublinear_tf
    )
    kept = train_counts[:, columns]
    if settings.nb_weighting:
        idf = idf * nb_ratios(kept, y[rows_train])
    width = next_power_of_two(len(columns))  # one compilation for any fold's count
    train_x = weigh_counts(kept, idf, settings.sublinear_tf)
    val_x = weigh_counts(counts[rows_val][:, columns], idf, settings.sublinear_tf)
    train_x.resize((train_x.shape[0], width))
    val_x.resize((val_x.shape[0], width))
    return train_x, val_x


class Budget:
    """What the search may spend: network-steps (Settings.search_steps, else the device's default unless the user
    gave a clock budget alone) and, only where the user asked for one, seconds (Settings.search_budget)."""

    def __init__(self, settings: Settings, platform: str, rules: SearchRules):
        self.steps = settings.search_steps or (None if settings.search_budget else rules.budget_steps(platform))
        self.seconds = settings.search_budget or None
        self.start = time.perf_counter()
        self.steps_done = 0

    def affords(self, steps: int, seconds: float) -> bool:
        """Whether `steps` more network-steps, `seconds` more seconds, stay within the budget."""
        if self.steps is not None and self.steps_done + steps > self.steps:
            return False
        return self.seconds is None or time.perf_counter() - self.start + seconds <= self.seconds


@dataclass
class SearchContext:
    """What every step of one search reads: its settings, device, rules, workers and budget, and its candidates."""

    settings: Settings
    platform: str
    rules: SearchRules
    pool: WorkerPool
    budget: Budget
    variants: list[Variant]  # the vectorizer variants raced, the settings' own first
    optimizers: list[tuple[float, float]]  # the (learning rate, weight decay) pairs a round trains side by side


@dataclass
class SearchCorpus:
    """The searched documents, tokenised once into the widest view, and their folds."""

    texts: list[str]  # the searched texts (a sample's, where the corpus is larger than the folds cover)
    y: np.ndarray  # their class numbers (label sets: each distinct set's, for the folds and the column selection)
    n_classes: int  # (label sets: the labels)
    n_documents: int  # every training document, searched or not
    folds: list[tuple[np.ndarray, np.ndarray]]  # (training rows, validation rows) of the searched texts
    subsampled: bool
    terms: object  # the widest view's terms (count_terms)
    counts: object  # (searched documents, terms) raw counts
    masks: dict  # (stop words, n-grams) -> the widest view's columns of that variant
    targets: np.ndarray | None = None  # label sets: (searched documents, labels) 0/1, what the networks learn
    weights: np.ndarray | None = None  # (searched documents,) each one's weight in the loss, mean 1; None: 1 each

    def trained_labels(self, rows: np.ndarray) -> np.ndarray:
        """What the networks learn of these rows: class numbers, or label sets' 0/1 rows."""
        return self.y[rows] if self.targets is None else self.targets[rows]

    def row_weights(self, rows: np.ndarray) -> np.ndarray | None:
        """These rows' weights in the loss, or None where the documents have none."""
        return None if self.weights is None else self.weights[rows]


@dataclass
class RoundGeometry:
    """The shape every round shares, so that the epoch compiles once: the input width, the batches' (steps, cap)
    by batch size, the validation batches', and a round's epochs."""

    features: int  # columns a variant selects for the rounds
    width: int  # the rounds' input width (features padded to a power of two)
    shapes: dict[int, tuple[int, int]]  # batch size -> (steps, cap)
    val_shape: tuple[int, int]
    score_batch: int
    epochs: int  # the most a round trains
    usable: list[int]  # the epoch counts a round may choose
    patience: int
    built: dict  # (fold, variant) -> its (training, validation) rows, built ahead (a GPU's race)
