"""A training file's word view as the model search's rounds see it, for the benchmarks that cross-validate networks
on it by hand (char_view, ensembles, start_token): the labels as numbers, the widest view's counts, the given
variant's columns of it, and a round's batches. Reads no test file."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class WordView(NamedTuple):
    y: np.ndarray  # (documents,) class numbers
    classes: list[str]
    settings: object  # textclf.settings.Settings: the variant's stop words and n-grams, the rest the defaults
    variant: object  # textclf.training.search.Variant
    counts: object  # (documents, terms) CSR: the widest view (no stop words removed), as the search counts it
    mask: np.ndarray  # the variant's columns of `counts` (term_mask)
    width: int  # the rounds' input width: the variant's columns up to SearchRules.round_features, a power of two


def class_numbers(labels: list[str]) -> tuple[list[str], np.ndarray]:
    """-> (the sorted classes, (documents,) each label's number among them)."""
    classes = sorted(set(labels))
    return classes, np.searchsorted(np.array(classes), np.array(labels)).astype(np.int32)


def word_view(
    texts, labels: list[str], stop_words: str, ngrams: int, pool, start_token: bool | None = None
) -> WordView:
    """The search's widest view of these texts (counted on `pool`) and the variant of `stop_words` ("english" or
    "none") and `ngrams`, NB weights and sublinear tf as the defaults; start_token: the default where None."""
    from pipelines.vectorize import count_terms, term_mask
    from textclf.settings import Settings
    from textclf.training.search.folds import Variant
    from textclf.training.search.rules import SearchRules

    classes, y = class_numbers(labels)
    settings = Settings(
        stop_words=None if stop_words == "none" else "english",
        ngram_max=ngrams,
        **({} if start_token is None else {"start_token": start_token}),
    )
    variant = Variant(settings.stop_words, settings.ngram_max, settings.nb_weighting, True, settings.batch_size)
    terms, counts = count_terms(
        texts,
        settings.ngram_max,
        None,
        settings.min_df,
        pool,
        settings.start_token,
        unspaced_as_characters=settings.unspaced_as_characters,
    )
    mask = np.flatnonzero(term_mask(terms, settings.ngram_max, settings.stop_words))
    features = SearchRules().round_features
    width = min(features, 1 << int(np.ceil(np.log2(min(features, len(mask))))))
    return WordView(y, classes, settings, variant, counts, mask, width)


def add_setting_arguments(parser, epochs: int) -> None:
    """The options of a benchmark that trains one word variant with given settings: --stop-words, --ngrams, --lr,
    --weight-decay, --epochs (default `epochs`) and --seeds."""
    parser.add_argument("--stop-words", default="none", choices=("english", "none"))
    parser.add_argument("--ngrams", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--seeds", default="0,1")


def file_view(path: str, stop_words: str, ngrams: int) -> WordView:
    """word_view of a training file's documents, counted on all cores."""
    from pipelines.corpus import read_corpus
    from pipelines.vectorize import vectorize_pool

    corpus = read_corpus(path)
    with vectorize_pool(len(corpus.texts)) as pool:
        return word_view(corpus.texts, corpus.labels, stop_words, ngrams, pool)


def fold_matrices(view: WordView, train: np.ndarray, val: np.ndarray):
    """The variant's (training, validation) matrices of one fold, selected and weighted on its training rows as
    the search's rounds build them."""
    from textclf.training.search.folds import fold_matrices as _fold_matrices
    from textclf.training.search.rules import SearchRules

    return _fold_matrices(
        view.counts,
        view.y,
        view.mask,
        train,
        val,
        view.settings,
        SearchRules().round_features,
        view.width,
        view.variant,
    )


def round_of(train_x, train_y: np.ndarray, val_x, val_y: np.ndarray, batch_size: int, seed: int):
    """A round's batches (candidates.round_data) of these matrices, cut and shuffled with `seed`, validation
    scored 1,024 rows a batch."""
    from pipelines.batches import batch_shape, cut_order
    from textclf.training.search.rounds import round_data

    cut, _ = cut_order(seed, train_x.shape[0])
    return round_data(
        train_x,
        train_y,
        val_x,
        val_y,
        batch_size,
        seed,
        batch_shape([train_x], batch_size, [cut]),
        batch_shape([val_x], 1024),
        1024,
    )
