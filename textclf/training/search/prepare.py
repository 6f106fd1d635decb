"""The model search's host work, which needs no device (textclf/training/search/halving.py runs the rounds on it):
the documents tokenised into their folds, the rounds' shapes and their first matrices. JAX-free, so that a run does
it while JAX starts in another thread (textclf/runs/text_data.py, _search_ahead): imported from halving.py, the
same work waited for JAX's import first."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pipelines.batches import batch_shape, buckets_for, cut_order, next_power_of_two
from pipelines.labels import indicator, label_names
from pipelines.vectorize import count_terms, term_masks
from pipelines.workers import WorkerPool
from textclf.training.inputs import mean_one
from textclf.settings import Settings
from textclf.training.search.folds import (
    Budget,
    RoundGeometry,
    SearchContext,
    SearchCorpus,
    Variant,
    candidate_space,
    fold_matrices,
    folds_sample,
    round_epochs,
    search_folds,
    too_few,
    with_headroom,
)
from textclf.training.search.rules import SearchRules


@dataclass
class Prepared:
    """The search's host work that needs no device, done for one platform (prepare_search): the documents tokenised
    into their folds, and the rounds' shapes with their first matrices. search_settings takes it only where JAX
    started on that platform."""

    platform: str
    corpus: SearchCorpus
    geometry: RoundGeometry
    seconds: float


def prepare_search(
    texts: Sequence[str],
    labels: list[str],
    settings: Settings,
    pool: WorkerPool,
    platform: str,
    rules: SearchRules = SearchRules(),
    weights: np.ndarray | None = None,
) -> Prepared | None:
    """search_settings' host work for `platform` (tokenising, the folds, the rounds' shapes and first matrices),
    which needs no device: a caller does it while JAX starts. -> None where the search would not run. weights: the
    documents' (search_settings')."""
    start = time.perf_counter()
    space = searched_space(labels, settings, platform, rules)
    if isinstance(space, str):
        return None
    variants, optimizers, epoch_options = space
    search = SearchContext(settings, platform, rules, pool, Budget(settings, platform, rules), variants, optimizers)
    corpus = searched_corpus(search, texts, labels, weights)
    return Prepared(platform, corpus, round_geometry(search, corpus, epoch_options), time.perf_counter() - start)


# Why several processes training together do not search: each would search its own share, and a float that
# rounds differently on one host would make them choose different settings and then deadlock in their collectives.
SEVERAL_PROCESSES = "several processes train together: pass the settings a one-process search chose"


def why_not_searched(
    settings: Settings, labels: Sequence[str], platform: str, rules: SearchRules, processes: int = 1
) -> str | None:
    """Why a corpus with these training labels is not searched on this platform, or None where it is: the one
    rule, which a run asks once before any of the search's work (textclf/runs/text_data.py)."""
    space = searched_space(labels, settings, platform, rules, processes)
    return space if isinstance(space, str) else None


def searched_space(
    labels: Sequence[str], settings: Settings, platform: str, rules: SearchRules, processes: int = 1
) -> tuple[list, list, list] | str:
    """(variants, optimizers, epoch options) the search tries, or why it does not run (why_not_searched)."""
    if processes > 1:
        return SEVERAL_PROCESSES
    if settings.search == "off":
        return "--search off"
    if settings.vectorizer != "tfidf":
        return "the search chooses tfidf settings only"
    skipped = too_few(labels, rules)
    if skipped:
        return skipped
    variants, optimizers, epoch_options = candidate_space(settings, platform, rules)
    if len(variants) == 1 and len(optimizers) == 1 and len(epoch_options) == 1 and settings.ensemble:
        return "every searched setting was set explicitly"
    return variants, optimizers, epoch_options


def searched_corpus(
    search: SearchContext, texts: Sequence[str], labels: list[str], weights: np.ndarray | None = None
) -> SearchCorpus:
    """The folds of these documents, and the documents they cover tokenised once into the widest view (every
    n-gram of the longest variant's, no stop words removed), each variant a column mask of it. weights: each
    document's weight in the loss (None: 1 each), kept for the searched documents at a mean of 1."""
    settings = search.settings
    classes = sorted(set(labels))
    y = np.searchsorted(np.array(classes), np.array(labels)).astype(np.int32)  # (documents,) class numbers
    # label sets: the networks learn each label's yes/no; the folds and the column selection see each set as a class
    names = label_names(labels, True) if settings.multi_label else None
    targets = None if names is None else indicator(labels, names)
    n_documents = len(texts)
    folds = search_folds(y, settings.seed, search.platform, search.rules)
    sample = folds_sample(folds, len(y))
    if sample is not None:
        # Only the sample is tokenised: counting all of news4's 9,650 posts cost the 2-core CPU several seconds
        # for documents no round would see. Its rows are renumbered 0..n-1.
        folds = [tuple(np.searchsorted(sample, part) for part in fold) for fold in folds]
        texts, y = [texts[i] for i in sample], y[sample]
        targets = None if targets is None else targets[sample]
        weights = None if weights is None else np.asarray(weights)[sample]
    widest_ngram = max(v.ngram_max for v in search.variants)
    terms, counts = count_terms(
        texts,
        widest_ngram,
        None,
        settings.min_df,
        search.pool,
        settings.start_token,
        unspaced_as_characters=settings.unspaced_as_characters,
    )
    masks = {
        key: np.flatnonzero(mask)
        for key, mask in term_masks(terms, {(v.stop_words, v.ngram_max) for v in search.variants}).items()
    }
    return SearchCorpus(
        list(texts),
        y,
        len(classes) if names is None else len(names),
        n_documents,
        folds,
        sample is not None,
        terms,
        counts,
        masks,
        targets,
        None if weights is None else mean_one(weights),
    )


def round_geometry(search: SearchContext, corpus: SearchCorpus, epoch_options: list[int]) -> RoundGeometry:
    """The rounds' shared shape (one compilation for every round)."""
    settings, rules, folds, counts = search.settings, search.rules, corpus.folds, corpus.counts
    epochs, epoch_options, patience = round_epochs(
        epoch_options, min(len(train) for train, _ in folds), settings, search.platform, rules
    )
    # The input width of every round: the widest variant's selected columns, rounded up to a power of two (the
    # W1 update, the cost of every step, scales with it: a corpus of short questions keeps ~10k columns, not 32k).
    features = min(settings.features, rules.round_features)
    width = min(features, next_power_of_two(max(min(features, len(m)) for m in corpus.masks.values())))
    cuts = [cut_order(settings.seed + fold, len(train))[0] for fold, (train, _) in enumerate(folds)]
    batch_sizes = {v.batch_size for v in search.variants}
    score_batch = settings.batch_size if search.platform == "cpu" else rules.gpu_score_batch
    buckets = buckets_for(search.platform)
    built: dict[tuple[int, Variant], tuple] = {}
    if search.platform == "cpu":
        # The widest view's nonzeros in each fold's cut: a bound for every variant, at no cost; a CPU's step
        # trims the padding of its batches (device_data.narrowed).
        shapes = {
            batch: batch_shape([counts[train] for train, _ in folds], batch, cuts, buckets) for batch in batch_sizes
        }
        val_shape = batch_shape([counts[val] for _, val in folds], score_batch, buckets=buckets)
    else:
        # A GPU's step works on every slot of a batch, padding included, and the widest view holds many more
        # nonzeros than a variant's columns; so the cap is that of the first rung's own rows (every variant on fold 0,
        # built here, ahead of their rounds), with rules.round_cap_headroom for the other folds' batches; a batch
        # wider still widens it (round_data: one more compilation).
        with ThreadPoolExecutor(min(8, len(search.variants))) as builders:
            matrices = builders.map(
                lambda v: fold_matrices(
                    counts, corpus.y, corpus.masks[v.stop_words, v.ngram_max], *folds[0], settings, features, width, v
                ),
                search.variants,
            )
            built = {(0, v): pair for v, pair in zip(search.variants, matrices)}
        # The headroom on the rows' own cap, then the platform's floor (buckets.cap): the floor is not doubled.
        most_train, most_val = max(len(train) for train, _ in folds), max(len(val) for _, val in folds)

        def fitted(matrices: list, batch: int, orders, steps: int) -> tuple[int, int]:
            steps, cap = with_headroom(rules, batch_shape(matrices, batch, orders), steps)
            return steps, buckets.cap(cap, batch)

        shapes = {
            batch: fitted(
                [train_x for train_x, _ in built.values()], batch, [cuts[0]] * len(built), -(-most_train // batch)
            )
            for batch in batch_sizes
        }
        val_shape = fitted([val_x for _, val_x in built.values()], score_batch, None, -(-most_val // score_batch))
    usable = [e for e in epoch_options if e <= epochs]
    return RoundGeometry(features, width, shapes, val_shape, score_batch, epochs, usable, patience, built)
