"""The model search: choose a corpus's settings by validation on its own training documents.

Why: no one setting wins on every corpus (English stop words remove "what"/"who"/"how", the words that decide a
question's type; short sentiment sentences want other n-grams and rates than newsgroup posts), and a GPU trains
one candidate in a fraction of a second.

How:
- The texts are tokenised once, into the widest view: raw counts of every n-gram up to the longest candidate's,
  no stop words removed (pipelines.vectorize.count_terms). Each vectorizer variant (stop words x n-gram length;
  naive Bayes column weights, sublinear tf and the batch size as refinements, below) is a column mask of it
  (term_masks); within each fold, the variant's `features` columns are selected by chi-squared on the fold's
  training rows only and weighted with IDF from those rows (select_and_weigh).
- Per (variant, fold) the (learning rate, weight decay) candidates train side by side as one program
  (textclf/training/candidates.py), scored on the fold's validation rows after every epoch.
- Racing: every variant trains on the first fold; only the rules.race_keep best go on to the other folds. Then the
  winner's one-field changes (refinements), each on to the other folds only if it matched the winner on the first.
- Score of a (variant, rate, decay, epoch count): mean validation accuracy over the folds. The best one wins; ties go
  to the earlier candidate (the defaults come first) and the fewer epochs.
- Rounds run defaults-first and stop when the time budget would be overrun: a tight budget still returns the
  best candidate of the rounds it finished (at least the first). The variants that finished the most folds
  are compared on those folds; the others rank below them.
- Settings the user set explicitly (Settings.pinned) are not searched.
- Never reads a test corpus: the caller passes only training documents (tests/textclf/test_search.py checks
  that `train` opens --test only after the search).
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Sequence

import jax
import numpy as np

from pipelines.batches import next_power_of_two
from pipelines.vectorize import count_chars, count_terms, nb_ratios, select_and_weigh, term_masks, weigh_counts
from pipelines.workers import WorkerPool
from textclf.settings import Settings
from textclf.training.search_rules import SearchRules
from textclf.training.candidates import (
    batch_shape, cut_order, fit_candidates, init_stacked, precompile_epoch, precompile_scores, round_data)

# The search's format: raise it when its candidates or the rules that choose between them change, so that a
# choice recorded by an older search (textclf/runs/search_cache.py) is not reused for a new run. 2: the defaults'
# variant kept within a standard error (DEFAULT_VARIANT_ERRORS), and a CPU's rounds narrowed (more in its budget);
# 3: more networks on any validated gain (NETWORKS_ERRORS 0); 4: a larger batch for a corpus far larger than the
# sample (batch_for_all); 5: NB weights off tried as a refinement, not raced (NB_IN_RACE), and a CPU's networks
# trial bounded by the final training's steps (CPU_TRIAL_STEPS); 6: a small corpus's rounds as long as
# ROUND_MIN_STEPS and PATIENCE_STEPS make them, and on a CPU on 3 folds (CPU_FOLDS_DOCUMENTS); corpora from
# MIN_DOCUMENTS 60 up searched (200 before); 7: the characters of scripts written without spaces words of their own
# (Settings.unspaced_as_characters), so a choice made on such a corpus's older tokens is not reused, and a CPU's
# networks trial up to CPU_TRIAL_STEPS 4,000; 8: a CPU searches up to CPU_FOLDS_DOCUMENTS 8,000 documents on 3 folds
# (1,000 before), and a round trains up to MAX_EPOCHS 40 epochs (20 before); 9: budgets of work (network-steps).
SEARCH_FORMAT = 9


@dataclass
class SearchResult:
    settings: Settings  # the chosen settings (the input's, with the searched fields replaced)
    summary: dict  # what ran: folds, budget, seconds, rounds, best validation accuracy, or why it was skipped
    trials: list[dict] = field(default_factory=list)  # one per (candidate, fold): settings, epoch_accuracies
    leaderboard: list[dict] = field(default_factory=list)  # candidates, best first: settings, accuracy, epochs


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

    def summary(self) -> dict:
        return {"budget_steps": self.steps, "budget_s": self.seconds}


def _folds(labels: np.ndarray, count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """`count` (>= 2) stratified folds: (training rows, validation rows) each."""
    from sklearn.model_selection import StratifiedKFold

    splitter = StratifiedKFold(n_splits=count, shuffle=True, random_state=seed)
    with warnings.catch_warnings():  # a class of fewer documents than folds validates in fewer folds: expected
        warnings.filterwarnings("ignore", "The least populated class", UserWarning)
        return [(np.sort(a), np.sort(b)) for a, b in splitter.split(np.zeros(len(labels)), labels)]


def _epochs_for_all(best_epoch: int, epochs_tried: int, settings: Settings) -> int:
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


def _cpu_split(y: np.ndarray, seed: int, rules: SearchRules) -> tuple[np.ndarray, np.ndarray]:
    """The CPU's one split (training rows, validation rows), stratified by label: validation takes
    max(a fifth of the documents, those beyond rules.cpu_train_documents), at most
    rules.cpu_validation_documents; training
    at most rules.cpu_train_documents of the rest."""
    n = len(y)
    val_count = min(rules.cpu_validation_documents, max(n // 5, n - rules.cpu_train_documents))
    val, rest = stratified_sample(y, np.arange(n), val_count, seed)
    train, _ = stratified_sample(y, rest, rules.cpu_train_documents, seed)
    return train, val


def _search_folds(y: np.ndarray, seed: int, platform: str, rules: SearchRules) -> list[tuple[np.ndarray, np.ndarray]]:
    if platform == "cpu" and len(y) > rules.cpu_folds_documents:
        return [_cpu_split(y, seed, rules)]
    return _device_folds(y, seed, rules)


def _sample(folds: list[tuple[np.ndarray, np.ndarray]], n_documents: int) -> np.ndarray | None:
    """The rows the folds use (sorted), or None where they use every one of the n_documents."""
    sample = np.unique(np.concatenate([np.concatenate(fold) for fold in folds]))
    return sample if len(sample) < n_documents else None


def searched_rows(labels: list[str], settings: Settings, platform: str, rules: SearchRules) -> np.ndarray | None:
    """The rows of these training documents whose texts search_settings reads (sorted), or None for all of them:
    a caller holding the texts elsewhere (pipelines.corpus.FileTexts) fetches only these."""
    if _too_few(labels, rules):  # not searched: search_settings reads nothing
        return None
    y = np.unique(np.asarray(labels), return_inverse=True)[1]
    return _sample(_search_folds(y, settings.seed, platform, rules), len(y))


def _too_few(labels: Sequence[str], rules: SearchRules) -> str | None:
    """Why training documents with these labels are too few to search (rules.min_documents), or None."""
    if len(labels) < rules.min_documents:
        return f"fewer than {rules.min_documents} training documents"
    if max(Counter(labels).values()) < 3:
        return "fewer than 3 documents in every class"
    return None


def _device_folds(y: np.ndarray, seed: int, rules: SearchRules) -> list[tuple[np.ndarray, np.ndarray]]:
    """3 stratified folds (a GPU's, and a CPU's for a corpus of at most rules.cpu_folds_documents); where the corpus is
    larger than rules.search_documents, one split of a stratified sample of that many (the first of its 3 folds:
    training on two thirds, validating on 6,667 documents), because on a validation set of thousands of
    documents the other folds narrow a standard error that is already a few tenths of a point, and their rounds
    cost time (a million synthetic documents on an H100: 18 rounds, search 39.3 s -> 10 rounds, 34.0 s; the same
    settings but one more epoch, the same test accuracy; BENCHMARKS.md, "Big corpora with no flags")."""
    sample, _ = stratified_sample(y, np.arange(len(y)), rules.search_documents, seed)
    folds = [(sample[train], sample[val]) for train, val in _folds(y[sample], 3, seed)]
    return folds if len(sample) == len(y) else folds[:1]


class Variant(NamedTuple):
    """One variant of the search's rounds (vectorizer and batch): the Settings fields it sets."""

    stop_words: str | None
    ngram_max: int
    nb_weighting: bool
    sublinear_tf: bool
    batch_size: int


def refinements(winner: Variant, settings: Settings, rules: SearchRules) -> list[Variant]:
    """The one-field changes of the race's winner tried after it (rules.nb_weighting unless
    rules.nb_in_race, rules.sublinear_tf,
    rules.batch_sizes), in that order; pinned fields are not changed."""
    options = ((() if rules.nb_in_race else (("nb_weighting", rules.nb_weighting),))
               + (("sublinear_tf", rules.sublinear_tf), ("batch_size", rules.batch_sizes)))
    return [winner._replace(**{field: value}) for field, values in options if field not in settings.pinned
            for value in values if value != getattr(winner, field)]


def candidate_space(settings: Settings, platform: str, rules: SearchRules
                    ) -> tuple[list[Variant], list[tuple[float, float]], list[int]]:
    """(vectorizer variants, (learning rate, weight decay) pairs, epoch counts) to try; pinned fields keep the
    settings' own value. The settings' own values come first in each list. Weight decays are searched where the
    networks of a round are cheap (not on a CPU, where each one more costs a round's time again)."""
    pinned = set(settings.pinned)

    def options(name, values):
        own = getattr(settings, name)
        return [own] if name in pinned else [own] + [v for v in values if v != own]

    # Most promising first, so that a tight budget tries stop words (and NB weights, where they race) before the
    # n-gram length.
    nb_options = options("nb_weighting", rules.nb_weighting) if rules.nb_in_race else [settings.nb_weighting]
    variants = [Variant(s, n, b, settings.sublinear_tf, settings.batch_size) for n in options("ngram_max", rules.ngrams)
                for b in nb_options for s in options("stop_words", rules.stop_words)]
    rates = options("learning_rate", rules.learning_rates)
    decays = options("weight_decay", rules.weight_decays) if platform != "cpu" else [settings.weight_decay]
    optimizers = [(rate, decay) for decay in decays for rate in rates]
    epochs = [settings.epochs] if "epochs" in pinned else list(range(1, max(rules.max_epochs, settings.epochs) + 1))
    return variants, optimizers, epochs


def round_epochs(epoch_options: list[int], fold_documents: int, settings: Settings, platform: str, rules: SearchRules
                 ) -> tuple[int, list[int], int]:
    """-> (the most epochs a round trains, the epoch counts it may choose, its early-stopping patience in epochs)
    for folds whose smallest trains on fold_documents: rules.max_epochs (rules.cpu_max_epochs on a CPU), or as
    many as make rules.round_min_steps steps at the race's batch; patience rules.patience epochs and at least
    rules.patience_steps steps. A typed
    epoch count stays the only one tried."""
    epochs = max(epoch_options) if platform != "cpu" else min(max(epoch_options), rules.cpu_max_epochs)
    fold_steps = -(-fold_documents // settings.batch_size)  # an epoch's optimizer steps
    if "epochs" not in settings.pinned:
        epochs = max(epochs, -(-rules.round_min_steps // fold_steps))
        epoch_options = list(range(1, max(epochs, max(epoch_options)) + 1))
    return epochs, epoch_options, max(rules.patience, -(-rules.patience_steps // fold_steps))


def search_settings(texts: Sequence[str], labels: list[str], settings: Settings, pool: WorkerPool, platform: str,
                    on_round: Callable[[int, int], None] | None = None, rules: SearchRules = SearchRules()
                    ) -> SearchResult:
    """Choose stop words, n-grams, learning rate and epochs for these training documents (see the module
    docstring). platform: jax's default backend ("cpu", "gpu", ...), for the default budget.
    on_round(done, total): called after each round, for a progress bar."""
    start = time.perf_counter()
    budget = Budget(settings, platform, rules)
    summary = {**budget.summary(), "platform": platform}
    too_few = _too_few(labels, rules)
    if too_few:
        return SearchResult(settings, {**summary, "skipped": too_few})
    variants, optimizers, epoch_options = candidate_space(settings, platform, rules)
    if (len(variants) == 1 and len(optimizers) == 1 and len(epoch_options) == 1 and settings.ensemble
            and not refinements(variants[0], settings, rules)):
        return SearchResult(settings, {**summary, "skipped": "every searched setting was set explicitly"})

    classes = sorted(set(labels))
    y = np.searchsorted(np.array(classes), np.array(labels)).astype(np.int32)  # (documents,) class numbers
    n_documents = len(texts)
    folds = _search_folds(y, settings.seed, platform, rules)
    sample = _sample(folds, len(y))
    subsampled = sample is not None
    if subsampled:
        # Only the sample is tokenised: counting all of news4's 9,650 posts cost the 2-core CPU several seconds
        # of a CPU's budget for documents no round would see. Its rows are renumbered 0..n-1.
        folds = [tuple(np.searchsorted(sample, part) for part in fold) for fold in folds]
        texts, y = [texts[i] for i in sample], y[sample]
    widest_ngram = max(v.ngram_max for v in variants)
    terms, counts = count_terms(texts, widest_ngram, None, settings.min_df, pool, settings.start_token,
                                unspaced_as_characters=settings.unspaced_as_characters)
    masks = {key: np.flatnonzero(mask)
             for key, mask in term_masks(terms, {(v.stop_words, v.ngram_max) for v in variants}).items()}
    epochs, epoch_options, patience = round_epochs(epoch_options, min(len(train) for train, _ in folds), settings,
                                                   platform, rules)
    # The input width of every round: the widest variant's selected columns, rounded up to a power of two (the
    # W1 update, the cost of every step, scales with it: a corpus of short questions keeps ~10k columns, not 32k).
    features = min(settings.features, rules.round_features)
    width = min(features, next_power_of_two(max(min(features, len(m)) for m in masks.values())))
    # One batch shape per batch size for every round (one compilation).
    cuts = [cut_order(settings.seed + fold, len(train))[0] for fold, (train, _) in enumerate(folds)]
    batch_sizes = {settings.batch_size, *([] if "batch_size" in settings.pinned else rules.batch_sizes)}
    score_batch = settings.batch_size if platform == "cpu" else rules.gpu_score_batch
    matrices: dict[tuple[int, Variant], tuple] = {}  # (fold, variant) -> its (training, validation) rows, built ahead
    if platform == "cpu":
        # The widest view's nonzeros in each fold's cut: a bound for every variant, at no cost; a CPU's step
        # trims the padding of its batches (device_data.narrowed).
        shapes = {batch: batch_shape([counts[train] for train, _ in folds], batch, cuts) for batch in batch_sizes}
        val_shape = batch_shape([counts[val] for _, val in folds], score_batch)
    else:
        # A GPU's step works on every slot of a batch, padding included, and the widest view (every n-gram, no
        # selection) holds ~10x the nonzeros of a variant's `features` columns: news4's batches of 64 were cut
        # 65,536 slots wide for ~4,500 nonzeros. So the cap is that of the race's own rows (every variant on
        # fold 0, built here, ahead of their rounds), with ROUND_CAP_HEADROOM for the other folds' batches; a
        # batch wider still widens it (round_data: one more compilation).
        with ThreadPoolExecutor(min(8, len(variants))) as builders:
            built = builders.map(lambda v: _fold_matrices(counts, y, masks[v.stop_words, v.ngram_max], *folds[0],
                                                          settings, features, width, v), variants)
            matrices = {(0, v): pair for v, pair in zip(variants, built)}
        most_train, most_val = max(len(train) for train, _ in folds), max(len(val) for _, val in folds)
        shapes = {batch: _with_headroom(rules, batch_shape([train_x for train_x, _ in matrices.values()], batch,
                                                    [cuts[0]] * len(matrices)), -(-most_train // batch))
                  for batch in batch_sizes}
        val_shape = _with_headroom(rules, batch_shape([val_x for _, val_x in matrices.values()], score_batch),
                                   -(-most_val // score_batch))

    # Racing: every variant trains on fold 0; only the RACE_KEEP best of them go on to the other folds. Then the
    # winner's refinements, fold 0 first.
    racing = len(folds) > 1 and len(variants) > rules.race_keep
    raced = len(variants) + (len(folds) - 1) * (min(rules.race_keep, len(variants)))
    planned = raced
    rounds = [(0, v) for v in variants]
    refined: list[Variant] = []
    winner = None
    usable = [e for e in epoch_options if e <= epochs]
    results: dict[tuple, np.ndarray] = {}  # (variant, fold) -> (epochs, K) validation accuracy
    trials: list[dict] = []
    round_seconds: list[float] = []
    round_steps: list[int] = []  # network-steps of each round
    network_epoch_seconds: list[float] = []  # per round: seconds per (network, epoch, training document)

    def prepare(fold: int, variant: Variant):
        # Every round the same input width, so the epoch compiles once: fewer columns are padded with unused ones.
        train_rows, val_rows = folds[fold]
        built = matrices.pop((fold, variant), None)
        train_x, val_x = built or _fold_matrices(counts, y, masks[variant.stop_words, variant.ngram_max], train_rows,
                                                 val_rows, settings, features, width, variant)
        return round_data(train_x, y[train_rows], val_x, y[val_rows], variant.batch_size, settings.seed + fold,
                          shapes[variant.batch_size], val_shape, score_batch)

    initial: dict[int, object] = {}  # fold -> the networks' starting weights: every variant of a fold starts alike

    def starting_weights(fold: int):
        if fold not in initial:
            initial[fold] = init_stacked(jax.random.PRNGKey(settings.seed + fold), width, settings.hidden,
                                         len(classes), len(optimizers))
        return initial[fold]

    # The rounds leave time for the cheapest trial of a character network (_choose_networks), so that a tight
    # budget (a CPU's) still tries it where it may be chosen: on mr it added 1.1 points of cross-validated
    # accuracy (BENCHMARKS.md, "The character view").
    characters = sum(map(len, texts))
    cheap = platform != "cpu" or _final_steps(settings, n_documents) <= rules.cpu_trial_steps
    pair_possible = (settings.ensemble == 0 and "char_ngrams" not in settings.pinned
                     and characters <= rules.char_max_characters and cheap)
    reserve, reserve_steps = 0.0, 0
    # Where the device trains (a GPU), the next round's matrices and batches are built and uploaded meanwhile (a
    # thread: scipy, the uploads and the device wait release the GIL); on a CPU both would share the same cores.
    prefetch = ThreadPoolExecutor(1) if platform != "cpu" else None
    # And the programs that later rounds and the networks trial will run but the first round does not (the other
    # batch size's epoch, the trial's scoring) are compiled meanwhile, on a thread of their own (candidates.
    # precompile_epoch); on a CPU the compiler would take the cores the rounds train on. Their results are not read:
    # a program that failed to compile here compiles when its round runs, and fails there with its own error.
    compiler = ThreadPoolExecutor(1) if platform != "cpu" else None
    upcoming = {}
    number = 0
    try:
        while number < len(rounds):
            fold, variant = rounds[number]
            if number and not budget.affords(max(round_steps) + reserve_steps, max(round_seconds) + reserve):
                break
            round_start = time.perf_counter()
            train_rows, val_rows = folds[fold]
            pending = upcoming.pop(number, None)
            data = pending.result() if pending else prepare(fold, variant)
            if prefetch and number + 1 < len(rounds):
                upcoming[number + 1] = prefetch.submit(prepare, *rounds[number + 1])
            if compiler and number == 0:
                for batch in sorted(set(shapes) - {variant.batch_size}):
                    compiler.submit(precompile_epoch, data, len(classes), len(optimizers), settings.hidden, batch,
                                    shapes[batch])
                if settings.ensemble == 0:
                    compiler.submit(precompile_scores, data, len(classes), len(optimizers), settings.hidden)
            curves = fit_candidates(data, len(classes), [rate for rate, _ in optimizers],
                                    [decay for _, decay in optimizers], epochs, settings.hidden,
                                    settings.seed + fold, patience=patience, initial=starting_weights(fold))
            results[(variant, fold)] = curves
            run_epochs = int(np.max(np.flatnonzero(curves.any(axis=1)), initial=0)) + 1  # epochs before early stop
            seconds = time.perf_counter() - round_start
            round_seconds.append(seconds)
            round_steps.append(len(optimizers) * run_epochs * data.n_steps)
            budget.steps_done += round_steps[-1]
            network_epoch_seconds.append(seconds / (run_epochs * len(optimizers) * len(train_rows)))
            if pair_possible and len(network_epoch_seconds) > 1:
                # What the cheapest trial of _choose_networks would cost, held back for it: 2 networks, at most
                # `epochs`, every fold, at the rate of the rounds after the first (which also compiled); counting
                # the character n-grams ~1 s a million characters.
                reserve = min(network_epoch_seconds[1:]) * 2 * epochs * sum(len(train) for train, _ in folds) + \
                    characters / 1e6
                reserve_steps = 2 * epochs * sum(-(-len(train) // settings.batch_size) for train, _ in folds)
            for k, (rate, decay) in enumerate(optimizers):
                trials.append({"candidate": (variants + refined).index(variant) * len(optimizers) + k, "fold": fold,
                               "settings": {**variant._asdict(), "learning_rate": rate, "weight_decay": decay},
                               "epoch_accuracies": [round(float(a), 6) for a in curves[:run_epochs, k]],
                               "seconds": seconds / len(optimizers)})
            number += 1
            if number == len(variants):  # fold 0 done: the rest of the folds for the best variants only
                ranked = sorted(variants, key=lambda v: -float(results[(v, 0)].max())) if racing else variants
                rounds += [(f, v) for f in range(1, len(folds)) for v in ranked[:rules.race_keep]]
            if number == raced:  # the race is over: its winner's refinements, on fold 0
                winner = _leaderboard(results, variants, rounds[len(variants):raced], [], len(folds), optimizers,
                                      usable)[0][0]["_variant"]
                refined = refinements(winner, settings, rules)
                rounds += [(0, v) for v in refined]
                planned += len(refined)
            elif variant in refined and fold == 0 and len(folds) > 1 and \
                    results[(variant, 0)].max() >= results[(winner, 0)].max():
                rounds += [(f, variant) for f in range(1, len(folds))]  # as good on fold 0: on to the other folds
                planned += len(folds) - 1
            if on_round:
                on_round(number, planned)
    finally:  # however the loop ends: no build or compilation left running behind it
        for executor in (prefetch, compiler):
            if executor:
                executor.shutdown(wait=True, cancel_futures=True)

    leaderboard, shared_folds = _leaderboard(results, variants, rounds[len(variants):raced], refined, len(folds),
                                             optimizers, usable)
    validation_documents = sum(len(folds[f][1]) for f in shared_folds)
    kept = _keep_defaults(leaderboard, variants[0], validation_documents, rules.default_variant_errors)
    if kept is not None:
        summary["kept_defaults"] = {"over": dict(leaderboard[0]["settings"]), "by": leaderboard[0]["accuracy"]}
        leaderboard.insert(0, leaderboard.pop(kept))
    for row in leaderboard:
        del row["_variant"]
    best = dict(leaderboard[0]["settings"])
    if subsampled and "epochs" not in settings.pinned:
        best["epochs"] = _epochs_for_all(best["epochs"], epochs, settings)
    if subsampled and "learning_rate" not in settings.pinned:
        summary["rate_candidates"] = _rate_candidates(
            leaderboard, validation_documents,
            lambda e: e if "epochs" in settings.pinned else _epochs_for_all(e, epochs, settings), rules)
    # min_steps 0: the epoch count was read off the validation curves; the small-corpus rule must not raise it.
    chosen = settings.replace(**best, min_steps=0)
    if settings.ensemble == 0:
        # Costs from the cheapest round (the first one also compiled), per network, epoch and document.
        networks = _choose_networks(
            chosen, platform, budget, min(network_epoch_seconds), n_documents,
            texts, characters, pool, counts, y, len(classes), masks, folds, shared_folds, features, width,
            shapes[chosen.batch_size], val_shape, score_batch, leaderboard[0]["settings"]["epochs"], len(optimizers),
            epochs, patience, rules)
        chosen = chosen.replace(ensemble=networks.members, char_ngrams=networks.char_ngrams)
        if networks.char_epochs:  # the character network's own rate and epochs (0 in Settings: the words')
            char_epochs = networks.char_epochs
            if subsampled and "epochs" not in settings.pinned:
                char_epochs = _epochs_for_all(char_epochs, epochs, settings)
            chosen = chosen.replace(char_learning_rate=networks.char_learning_rate, char_epochs=char_epochs)
        summary["ensemble"] = networks.summary
    all_batch = batch_for_all(chosen.batch_size, n_documents, rules)
    if subsampled and "batch_size" not in settings.pinned and all_batch != chosen.batch_size:
        # After the networks trial, which trained on the sample at the sample's batch.
        summary["batch_for_all"] = {"sample": chosen.batch_size, "all": all_batch, "documents": n_documents,
                                    "epoch_steps": rules.epoch_steps}
        chosen = chosen.replace(batch_size=all_batch)
    summary.update(folds=len(shared_folds), rounds=len(results), rounds_planned=planned, steps=budget.steps_done,
                   candidates=len(leaderboard), seconds=round(time.perf_counter() - start, 3), racing=racing,
                   best_accuracy=leaderboard[0]["accuracy"], chosen=best, subsampled=subsampled,
                   documents=n_documents, searched_documents=len(texts), terms=len(terms), round_features=features)
    return SearchResult(chosen, summary, trials, leaderboard)


def _with_headroom(rules: SearchRules, shape: tuple[int, int], steps: int) -> tuple[int, int]:
    """(steps, cap) of batch_shape with at least `steps` steps and rules.round_cap_headroom more cap."""
    return max(shape[0], steps), next_power_of_two(int(shape[1] * rules.round_cap_headroom))


def _final_steps(settings: Settings, n_documents: int) -> int:
    """The steps (batches x epochs) of one network's final training on n_documents with these settings."""
    return -(-n_documents // settings.batch_size) * settings.epochs_for(n_documents)


def _binomial_error(accuracy: float, documents: int) -> float:
    """The binomial standard error of an accuracy measured on `documents`, Laplace-smoothed (a perfect score
    on a sample still has an error)."""
    n = max(1, documents)
    estimate = (accuracy * n + 1) / (n + 2)
    return float(np.sqrt(estimate * (1 - estimate) / n))


def _keep_defaults(leaderboard: list[dict], defaults: Variant, validation_documents: int, errors: float
                   ) -> int | None:
    """The row of the defaults' vectorizer variant (the settings as given: stop words, n-grams, NB weights,
    sublinear tf, batch) to choose instead of the winner, or None: its best row, where the winner is another
    variant that beats it by no more than rules.default_variant_errors standard errors on the same folds."""
    winner = leaderboard[0]
    if winner["_variant"] == defaults:
        return None
    for number, row in enumerate(leaderboard):
        if row["_variant"] == defaults and row["folds"] == winner["folds"]:
            margin = errors * _binomial_error(winner["accuracy"], validation_documents)
            return number if winner["accuracy"] - row["accuracy"] <= margin else None
    return None


def _rate_candidates(leaderboard: list[dict], validation_documents: int, epochs_for_all: Callable[[int], int],
                     rules: SearchRules) -> list[dict]:
    """The winner's (learning rate, weight decay) and those of its variant within rules.near_rate_errors binomial
    standard errors of its validation accuracy (on `validation_documents`), best first, at most
    rules.max_rate_candidates: {"learning_rate", "weight_decay", "epochs"} each, epochs for all the documents. The
    final training of the sampled corpus trains them all and held-out documents choose (rules.near_rate_errors)."""
    winner = leaderboard[0]
    margin = rules.near_rate_errors * _binomial_error(winner["accuracy"], validation_documents)
    accuracy = winner["accuracy"]
    variant = {k: v for k, v in winner["settings"].items() if k not in ("learning_rate", "weight_decay", "epochs")}
    near = [row for row in leaderboard if row["folds"] == winner["folds"] and row["accuracy"] >= accuracy - margin
            and all(row["settings"][k] == v for k, v in variant.items())]
    return [{"learning_rate": row["settings"]["learning_rate"], "weight_decay": row["settings"]["weight_decay"],
             "epochs": epochs_for_all(row["settings"]["epochs"])} for row in near[:rules.max_rate_candidates]]


def _fold_matrices(counts, y, columns_mask, rows_train, rows_val, settings, features, width, variant: Variant):
    """One fold's (training, validation) TF-IDF rows for one variant, `width` columns wide; features selected
    and weighted from the fold's training rows only."""
    fold_counts = counts[rows_train]  # (fold documents, terms): sliced once, used three times
    columns, idf = select_and_weigh(fold_counts, y[rows_train], columns_mask, features,
                                    settings.feature_selection, variant.sublinear_tf)
    kept = fold_counts[:, columns]
    if variant.nb_weighting:
        idf = idf * nb_ratios(kept, y[rows_train])
    train_x = weigh_counts(kept, idf, variant.sublinear_tf)
    val_x = weigh_counts(counts[rows_val][:, columns], idf, variant.sublinear_tf)
    train_x.resize((train_x.shape[0], width))
    val_x.resize((val_x.shape[0], width))
    return train_x, val_x


def _leaderboard(results: dict, variants: list[Variant], racing_rounds: list, refined: list[Variant], n_folds: int,
                 optimizers: list, usable: list[int]) -> tuple[list[dict], list[int]]:
    """Rank every (variant, rate, decay) tried -> (rows best first, the folds the contenders were compared on).
    The contenders (the survivors of fold 0 when it was raced, else every variant tried) are compared on the
    folds all of them finished: a fold the budget cut short for some of them counts for none; a refinement joins
    them if it finished those folds too. The rest rank below them, by their fold-0 accuracy. Within a rank,
    ties go to the earlier candidate (the defaults come first) and the fewer epochs. Each row's "_variant" is
    the Variant it came from (for the caller, not for the record)."""
    tried = [v for v in variants if (v, 0) in results]
    survivors = {v for _, v in racing_rounds}
    contenders = [v for v in tried if v in survivors] if survivors else tried
    shared_folds = [f for f in range(n_folds) if all((v, f) in results for v in contenders)]
    contenders += [v for v in refined if all((v, f) in results for f in shared_folds)]
    others = [v for v in tried + refined if v not in contenders and (v, 0) in results]
    rows = []
    for v in contenders + others:
        done = shared_folds if v in contenders else [0]
        mean = np.mean([results[(v, f)] for f in done], axis=0)  # (epochs, K)
        for k, (rate, decay) in enumerate(optimizers):
            curve = mean[np.array(usable) - 1, k]
            best = int(np.argmax(curve))  # first maximum: the fewest epochs
            rows.append({"settings": {**v._asdict(), "learning_rate": rate, "weight_decay": decay,
                                      "epochs": usable[best]},
                         "accuracy": float(curve[best]), "folds": len(done), "order": len(rows), "_variant": v})
    rows.sort(key=lambda row: (-row["folds"], -row["accuracy"], row["order"]))
    for row in rows:
        del row["order"]
    return rows, shared_folds


def _choose_networks(chosen: Settings, platform: str, budget: Budget, unit_seconds: float, n_documents: int,
                     texts: list[str], characters: int, pool: WorkerPool, counts, y, n_classes, masks, folds,
                     shared_folds, features, width, shape, val_shape, score_batch: int, searched_epochs: int,
                     round_networks: int, max_epochs: int, patience: int, rules: SearchRules) -> "Networks":
    """How many networks, and whether a second one reads character n-grams: on the compared folds, for the chosen
    candidate's `searched_epochs` (the epoch count read off the folds' curves),
    - on a GPU, rules.ensemble_members copies of the chosen network trained side by side (different initialisations):
      their average against the members' mean accuracy;
    - one network on the character view (`_char_fold_matrices`), its scores added to each word network's: the
      pairs' mean accuracy against the members' (the same word networks, so the comparison is paired).
    The most accurate option wins, the pair and the ensemble only where their mean gain over one network is above
    rules.networks_errors standard errors of it, a tie keeping fewer networks (one, then the pair, then the
    ensemble). The
    character view is tried where Settings.char_ngrams is not pinned and the searched texts hold at most
    rules.char_max_characters (`characters`: the searched texts' total). unit_seconds: what the search's
    rounds took per (network, epoch, training document), for the cost of these trials and of the final training;
    round_networks: how many networks a round trained side by side; max_epochs, patience: a round's epoch cap and
    early stopping (search_settings).
    -> Networks."""
    work = _final_steps(chosen, n_documents)
    if platform == "cpu" and work > rules.cpu_trial_steps:
        return Networks(1, chosen.char_ngrams, chosen.char_learning_rate, chosen.char_epochs,
                        {"members": 1, "reason": f"not tried on a CPU: {work:,} steps (batches x epochs) to train, "
                                                 f"over {rules.cpu_trial_steps:,}"})
    try_chars, why_not = "char_ngrams" not in chosen.pinned, "set explicitly"
    if try_chars and characters > rules.char_max_characters:
        try_chars, why_not = False, f"{characters:,} characters searched, over {rules.char_max_characters:,}"
    # The character network's learning rate and epochs: on a GPU read off its own validation curves (its rates
    # side by side, as a round's; CV on mr: 0.7759 with the words' settings, 0.7817 with its own), on a CPU the
    # words' (each rate there costs a network's time again). A typed rate or epoch count holds for it too.
    own_settings = platform != "cpu"
    char_rates = [chosen.learning_rate] if not own_settings or "learning_rate" in chosen.pinned else \
        list(rules.learning_rates)
    char_epochs = searched_epochs if not own_settings or "epochs" in chosen.pinned else max_epochs
    fold_documents = sum(len(folds[f][0]) for f in shared_folds)
    fold_steps = sum(-(-len(folds[f][0]) // chosen.batch_size) for f in shared_folds)

    def cost(networks: int) -> tuple[int, float]:  # (network-steps, seconds): word networks and the character trial
        network_epochs = networks * searched_epochs + (len(char_rates) * char_epochs if try_chars else 0)
        return network_epochs * fold_steps, unit_seconds * network_epochs * fold_documents

    # The ensemble where a GPU trains it and the budget allows it, else (the cheaper trial) one word network
    # against a pair.
    members = rules.ensemble_members if platform != "cpu" and budget.affords(*cost(rules.ensemble_members)) else 1
    ensemble_not_tried = "not on a CPU (its members train one after another)" if platform == "cpu" else \
        f"no budget left (needs ~{cost(rules.ensemble_members)[0]:,} network-steps)"
    if members == 1 and (not try_chars or not budget.affords(*cost(1))):
        return Networks(1, chosen.char_ngrams, chosen.char_learning_rate, chosen.char_epochs,
                        {"members": 1, "ensemble_not_tried": ensemble_not_tried,
                         "char_ngrams_not_tried": why_not if not try_chars else
                         f"no budget left (needs ~{cost(1)[0]:,} network-steps)"})
    # Where a GPU's rounds trained more networks at once than the trial needs, it trains as many (the extra ones
    # unused): the rounds' compiled program then serves it (same shapes). A program of its own cost a first
    # search's trial 4.6-5.3 s more on news4 (H100, BENCHMARKS.md, "Accuracy", the search's cost); one more
    # network of a stacked step costs a GPU little.
    trained = max(members, round_networks) if platform != "cpu" else members
    variant = Variant(chosen.stop_words, chosen.ngram_max, chosen.nb_weighting, chosen.sublinear_tf,
                      chosen.batch_size)
    chars = count_chars(texts, chosen.min_df, pool) if try_chars else None
    # Per validation document of every compared fold: how much more often the ensemble / each pair is right
    # than its members alone (paired: the same word networks, so their noise cancels).
    single, together, ensemble_gains, word_scores, word_right, char_curves, char_scores = [], [], [], [], [], [], []
    for fold in shared_folds:
        train_rows, val_rows = folds[fold]
        train_x, val_x = _fold_matrices(counts, y, masks[variant.stop_words, variant.ngram_max], train_rows,
                                        val_rows, chosen, features, width, variant)
        data = round_data(train_x, y[train_rows], val_x, y[val_rows], chosen.batch_size, chosen.seed + 100 + fold,
                          shape, val_shape, score_batch)
        _, scores = fit_candidates(data, n_classes, [chosen.learning_rate] * trained,
                                   [chosen.weight_decay] * trained, searched_epochs, chosen.hidden,
                                   chosen.seed + 100 + fold, scores_from=searched_epochs)
        scores = scores[-1, :, :members]  # (documents, members, C) after the searched epochs
        truth = y[val_rows]
        # Summed log-probabilities pick the class that summed scores do (each network's normaliser is the same
        # for every class), so this is the merged model's (candidates.merged) choice.
        member_right = np.argmax(scores, axis=-1) == truth[:, None]  # (documents, members)
        ensemble_right = np.argmax(scores.sum(axis=1), axis=-1) == truth
        single.append(float(member_right.mean()))
        together.append(float(ensemble_right.mean()))
        ensemble_gains.append(ensemble_right - member_right.mean(axis=1))
        word_scores.append(scores)
        word_right.append(member_right)
        if chars is not None:
            train_c, val_c = _char_fold_matrices(*chars, y, train_rows, val_rows, chosen, features)
            char_data = round_data(train_c, y[train_rows], val_c, y[val_rows], chosen.batch_size,
                                   chosen.seed + 200 + fold, (1, 1), (1, 1), score_batch)
            curve, fold_scores = fit_candidates(char_data, n_classes, char_rates,
                                                [chosen.weight_decay] * len(char_rates), char_epochs, chosen.hidden,
                                                chosen.seed + 200 + fold, patience=patience if own_settings else None,
                                                scores_from=1)
            char_curves.append(curve)  # (char_epochs, rates); epochs after an early stop score 0
            char_scores.append(fold_scores)  # (epochs run, documents, rates, C)
    paired, pair_gains, char_rate, char_epoch = [], [], 0.0, 0  # 0: Settings' "the words'"
    if char_scores:
        # The character network's (epoch, rate): on a GPU its best mean validation accuracy over the folds, among
        # the epochs every fold ran (the first maximum: the fewest epochs); elsewhere the words' (its only rate,
        # its last epoch).
        epoch, rate = char_epochs - 1, 0
        if own_settings:
            run = min(len(f) for f in char_scores)
            mean = np.mean([c[:run] for c in char_curves], axis=0)
            epoch, rate = np.unravel_index(np.argmax(mean), mean.shape)
            char_rate, char_epoch = char_rates[rate], int(epoch) + 1
        for fold, scores, member_right, fold_scores in zip(shared_folds, word_scores, word_right, char_scores):
            truth = y[folds[fold][1]]
            pair_right = np.argmax(scores + fold_scores[epoch, :, rate][:, None, :], axis=-1) == truth[:, None]
            paired.append(float(pair_right.mean()))
            pair_gains.append(np.mean(pair_right.astype(np.float64) - member_right, axis=1))
    # The paired gains' standard errors are recorded with the choice (NETWORKS_ERRORS says which bar applies).
    ensemble_margin = _standard_error(ensemble_gains) if members > 1 else 0.0
    pair_margin = _standard_error(pair_gains) if paired else 0.0
    chosen_members, char_ngrams = _fewest_networks_that_win(
        np.mean(single), (np.mean(together), ensemble_gains) if members > 1 else None,
        (np.mean(paired), pair_gains) if paired else None, members, rules.networks_errors)
    summary = {"members": chosen_members, "char_ngrams": char_ngrams or chosen.char_ngrams,
               "single_accuracy": float(np.mean(single)), "folds": len(shared_folds)}
    if not char_ngrams:
        char_rate, char_epoch = 0.0, 0  # no character network to train
    if members > 1:
        summary.update(ensemble_accuracy=float(np.mean(together)), ensemble_standard_error=ensemble_margin)
    else:
        summary["ensemble_not_tried"] = ensemble_not_tried
    if paired:
        summary.update(char_pair_accuracy=float(np.mean(paired)), char_pair_standard_error=pair_margin,
                       char_learning_rate=char_rate, char_epochs=char_epoch)
    else:
        summary["char_ngrams_not_tried"] = why_not
    return Networks(chosen_members, char_ngrams or chosen.char_ngrams, char_rate, char_epoch, summary)


class Networks(NamedTuple):
    """_choose_networks' answer: the Settings fields it decides, and what was measured."""

    members: int  # Settings.ensemble
    char_ngrams: bool
    char_learning_rate: float  # the character network's, as read off its curves (0: the words')
    char_epochs: int  # on the searched documents, 0: the words' (search_settings scales it to a larger corpus)
    summary: dict


def _fewest_networks_that_win(single: float, ensemble: tuple[float, list[np.ndarray]] | None,
                              pair: tuple[float, list[np.ndarray]] | None, members: int, errors: float
                              ) -> tuple[int, bool]:
    """(networks, with a character network) of the most accurate option: one network (`single`, its validation
    accuracy), the ensemble of `members` or the character pair ((accuracy, per-fold per-document gains over one
    network) each, None if not tried), each of the latter only where its mean gain is above rules.networks_errors
    standard errors of it;
    a tie keeps fewer networks (one, then the pair, then the ensemble)."""
    options = {(1, False): single}
    for key, option in (((1, True), pair), ((members, False), ensemble)):
        if option is not None and np.mean(np.concatenate(option[1])) > errors * _standard_error(option[1]):
            options[key] = option[0]
    return max(options, key=lambda key: options[key])  # dicts keep insertion order: the first maximum wins


def _standard_error(gains: list[np.ndarray]) -> float:
    """Standard error of the mean of the per-document gains of every fold."""
    gain = np.concatenate(gains).astype(np.float64)
    return float(gain.std() / np.sqrt(max(1, len(gain))))


def _char_fold_matrices(terms, counts, y, rows_train, rows_val, settings: Settings, features: int):
    """One fold's (training, validation) rows of the character view, selected and weighted from the fold's
    training rows only, as fit_vectorizer does the final model's character view."""
    train_counts = counts[rows_train]
    columns, idf = select_and_weigh(train_counts, y[rows_train], np.arange(len(terms)), features,
                                    settings.feature_selection, settings.sublinear_tf)
    kept = train_counts[:, columns]
    if settings.nb_weighting:
        idf = idf * nb_ratios(kept, y[rows_train])
    width = next_power_of_two(len(columns))  # one compilation for any fold's count
    train_x = weigh_counts(kept, idf, settings.sublinear_tf)
    val_x = weigh_counts(counts[rows_val][:, columns], idf, settings.sublinear_tf)
    train_x.resize((train_x.shape[0], width))
    val_x.resize((val_x.shape[0], width))
    return train_x, val_x
