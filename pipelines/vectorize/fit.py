"""Fitting a Vectorizer on training documents: in this process, by chunks in the workers (their vocabularies merged),
or on a sample of a large corpus (fit_rows), with the character view where the settings ask."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from pipelines import word_counts
from pipelines.errors import CorpusError
from pipelines.vectorize.chunks import _chunks, _map_chunks, _worker_count, vectorize_pool
from pipelines.vectorize.selection import _select, _top_columns, most_tied_columns, nb_ratios
from pipelines.vectorize.terms import (
    CHAR_ANALYZER,
    CHAR_NGRAM_RANGE,
    SMALL_CORPUS_DOCS,
    START_TOKEN,
    WordSettings,
    _count_word_chunk,
    _stop_word_set,
    count_chars,
    count_terms,
    hashing_counter,
)
from pipelines.vectorize.vectorizer import Vectorizer, _transform_chunk, fit_hashing_idf
from pipelines.vectorize.weights import _weight
from pipelines.workers import WorkerPool

# "tfidf" learns its vocabulary, chi-squared selection, IDF and naive Bayes weights from at most this many
# training documents (a random sample of a larger corpus), then transforms all of them with the fixed
# vocabulary: counting every distinct n-gram of a million documents held tens of GB (the bigrams that min_df
# drops later). The sample's chi-squared choice converges on the whole corpus's as it grows: on 90,000 synthetic
# documents, fits on 45,000 / 60,000 shared 75% / 82% of the selected terms and lost 0.09 / 0.00 points of
# validation accuracy (benchmarks/accuracy/fit_sample.py, BENCHMARKS.md "Big corpora with no flags"); 200,000 is
# larger than both, and a million documents trained this way beat fastText there.
FIT_DOCUMENTS = 200_000


def fit_rows(n_texts: int, settings: WordSettings, fit_documents: int | None = None) -> np.ndarray | None:
    """The rows of n_texts training texts that fit_vectorizer fits on (sorted): for "tfidf", a random sample of
    fit_documents (None: FIT_DOCUMENTS) of a larger corpus; None: all of them."""
    fit_documents = FIT_DOCUMENTS if fit_documents is None else fit_documents
    if settings.vectorizer == "tfidf" and n_texts > fit_documents:
        return np.sort(np.random.default_rng(0).choice(n_texts, fit_documents, replace=False))
    return None


def fit_vectorizer(
    texts: Sequence[str],
    labels: Sequence[str],
    settings: WordSettings,
    workers: int | None = None,
    pool: WorkerPool | None = None,
    fit_documents: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    matrix: bool = True,
) -> tuple[Vectorizer, sp.csr_matrix | None]:
    """Fit on the training texts; return the vectorizer and the training matrix it produces.
    workers: processes for counting (None = all cores; one below PARALLEL_MIN_DOCS documents); pool: use these.
    fit_documents: "tfidf" fits its vocabulary, selection and weights on a random sample of at most this many of
    the texts (fit_rows; None: FIT_DOCUMENTS, which says why), then transforms all of them. on_progress(documents
    done, of total) as the word counting's chunks finish (of the sample's, then of the transform's for a larger
    corpus; a corpus of one chunk a worker tells its end only). matrix=False: the caller transforms the texts
    itself (a file left in place, share by share): (the vectorizer, None), the matrix neither weighed nor built."""
    if pool is None:
        with vectorize_pool(len(texts), workers) as own:
            return fit_vectorizer(
                texts, labels, settings, pool=own, fit_documents=fit_documents, on_progress=on_progress, matrix=matrix
            )
    rows = fit_rows(len(texts), settings, fit_documents)
    if rows is not None:
        vec, _ = fit_vectorizer(
            [texts[i] for i in rows],
            [labels[i] for i in rows],
            settings,
            pool=pool,
            fit_documents=fit_documents,
            on_progress=on_progress,
            matrix=False,
        )
        return vec, vec.transform(texts, pool=pool, on_progress=on_progress) if matrix else None
    if settings.vectorizer == "hashing":
        hasher = hashing_counter(
            settings.features,
            settings.ngram_max,
            settings.stop_words,
            settings.start_token,
            settings.unspaced_as_characters,
        )
        chunks = _chunks(texts, _worker_count(len(texts), pool.processes))
        counts = word_counts.stack_rows(pool.map(_transform_chunk, chunks, hasher))
        vec = fit_hashing_idf(counts, settings)
        return vec, _weight(counts, vec.idf, settings.sublinear_tf) if matrix else None

    if word_counts.supports(settings.ngram_max):
        vec, words = _fit_by_chunks(texts, labels, settings, pool, on_progress, matrix)
    else:
        terms, counts = count_terms(
            texts,
            settings.ngram_max,
            settings.stop_words,
            settings.min_df,
            pool,
            settings.start_token,
            on_progress,
            unspaced_as_characters=settings.unspaced_as_characters,
        )
        vec, words = _fitted_view(
            terms,
            counts,
            labels,
            settings,
            matrix,
            settings.ngram_max,
            settings.stop_words,
            settings.start_token,
            settings.unspaced_as_characters,
        )
        del counts
    if not settings.char_ngrams:
        return vec, words
    terms, counts = count_chars(texts, settings.min_df, pool)
    vec.chars, chars = _fitted_view(
        terms, counts, labels, settings, matrix, CHAR_NGRAM_RANGE[1], None, False, False, CHAR_ANALYZER
    )
    return vec, sp.hstack([words, chars], format="csr") if matrix else None


# Ten arguments: the view's counts, labels and the word settings it was handed, each a step of the fit before it.
def _fitted_view(
    terms: np.ndarray,
    counts: sp.csr_matrix,
    labels,
    settings: WordSettings,
    matrix: bool,
    ngram_max: int,
    stop_words: str | None,
    start_token: bool,
    unspaced_as_characters: bool,
    analyzer: str = "word",
) -> tuple[Vectorizer, sp.csr_matrix | None]:
    """One view of fit_vectorizer from its full vocabulary's counts: `features` columns selected, IDF (and NB
    weights) over them -> (the view's Vectorizer, its weighted rows, or None without `matrix`)."""
    keep, idf = _select(counts, labels, settings.features, settings)
    # The kept columns' NB weights (saved in the column weights: predict applies them too), computed without
    # copying those columns out, and their counts only if the matrix is wanted (28M nonzeros of a million
    # documents' 200,000-document sample: ~1 s a copy).
    nb_weights = nb_ratios(counts, np.asarray(labels), columns=keep) if settings.nb_weighting else None
    if keep is not None:
        terms, idf = terms[keep], idf[keep]
        counts = counts[:, keep] if matrix else None
    if nb_weights is not None:
        idf = idf * nb_weights
    vec = Vectorizer(
        "tfidf",
        [str(t) for t in terms],
        idf,
        ngram_max,
        stop_words,
        settings.sublinear_tf,
        start_token,
        unspaced_as_characters,
        analyzer=analyzer,
    )
    return vec, _weight(counts, idf, settings.sublinear_tf) if matrix else None


def _fit_by_chunks(
    texts: Sequence[str],
    labels: Sequence[str],
    settings: WordSettings,
    pool: WorkerPool,
    on_progress: Callable[[int, int], None] | None,
    matrix: bool,
) -> tuple[Vectorizer, sp.csr_matrix | None]:
    """fit_vectorizer's word view for n-grams up to word_counts.MAX_NGRAM: the chunks the workers counted are not merged
    into one matrix of counts. Their terms are (word_counts.merge_terms), and where the rows are needed (a
    chi-squared selection, NB weights, the matrix) each chunk's are moved to the shared columns and weighted on a
    thread of their own (_view_from_chunks). The same vectorizer and matrix as the whole matrix's, bit for bit.
    Why: merging the chunks (every entry moved, each row sorted, the counts stacked), then weighting the whole
    sample, ran in this process while the workers waited, one step after another. A million synthetic documents'
    200,000-document sample (16 cores), without its rows, is now fitted in 1.89-1.98 s where that took 2.30-2.31 s
    with unigrams, in 4.06 s where it took 7.19 s with bigrams, and the fit's peak memory holds no stacked counts
    beside their weighted copy (docs/decisions.md, "The vocabulary's fit by chunks"). Its rows (`matrix`) cost
    0.2-0.4 s more, and spare the transform of a large file those documents (Vectorizer.transform_file_parts'
    `known`: 0.7-0.9 s less there)."""
    parts = _map_chunks(
        pool,
        _count_word_chunk,
        texts,
        on_progress,
        settings.ngram_max,
        _stop_word_set(settings.stop_words),
        START_TOKEN if settings.start_token else None,
        settings.unspaced_as_characters,
    )
    merged = word_counts.merge_terms(
        parts, settings.min_df if len(texts) >= SMALL_CORPUS_DOCS else 1, START_TOKEN if settings.start_token else None
    )
    if not len(merged.terms):
        raise CorpusError(
            "no words to learn from: the documents hold only stop words or symbols; "
            "add real text or pass --stop-words none"
        )
    return _view_from_chunks(merged, parts, np.asarray(labels), settings, matrix)


# Over 80 lines as formatted: the chunks' counts made into the one-pass fit's view bit for bit, step by step.
def _view_from_chunks(
    merged: word_counts.MergedTerms,
    parts: list[word_counts.ChunkCounts],
    labels: np.ndarray,
    settings: WordSettings,
    matrix: bool,
) -> tuple[Vectorizer, sp.csr_matrix | None]:
    """The word view's _fitted_view from the chunks' own counts and merge_terms' columns (_fit_by_chunks says why), bit
    for bit:
    the IDF from the merged document frequencies; where a chi-squared selection or NB weights need the rows, each
    chunk's rows moved to the shared columns and weighted on a thread of their own, then stacked (the counts
    themselves never are); `matrix`: each chunk's rows then moved to the kept columns and weighted as the
    vectorizer's transform weighs them. Consumes `parts`."""
    n = sum(part.counts.shape[0] for part in parts)
    idf = (np.log((1.0 + n) / (1.0 + merged.df)) + 1.0).astype(np.float32)  # _idf, from the merged frequencies
    width = len(merged.terms)
    chi2 = width > settings.features and settings.feature_selection == "chi2"
    weighted = None  # the rows weighted in the shared columns, where the selection or the NB weights need them
    in_shared_columns: list[sp.csr_matrix | None] = [None] * len(parts)  # with `matrix`: each chunk's counts so
    if chi2 or settings.nb_weighting:

        def weighted_rows(index: int) -> sp.csr_matrix:
            """Chunk `index`'s rows in the shared columns, weighted as _weight weighs the whole matrix's (each row
            on its own: the same bits); the chunk's counts let go, or with `matrix` kept in the shared columns,
            each row's in order (the kept columns are in that order too, so they need no second sort)."""
            moved = word_counts.move_columns(parts[index].counts, merged.columns[index], width)
            moved.sort_indices()
            parts[index] = None
            if matrix:
                in_shared_columns[index] = moved
            return _weight(moved, idf, settings.sublinear_tf, copy=matrix)

        with ThreadPoolExecutor(min(len(parts), os.cpu_count() or 1)) as threads:
            weighted = word_counts.stack_rows(list(threads.map(weighted_rows, range(len(parts)))))
    keep = None
    if width > settings.features:
        keep = (
            most_tied_columns(weighted, labels, settings.features)
            if chi2
            else _top_columns(merged.df.astype(np.float64), settings.features)
        )
    terms, idf = (merged.terms, idf) if keep is None else (merged.terms.take(pa.array(keep)), idf[keep])
    if settings.nb_weighting:  # (presence counts stored entries, and the weighted rows hold the counts' entries)
        idf = idf * nb_ratios(weighted, labels, columns=keep)
    rows_weighted = weighted is not None  # (then in_shared_columns holds what the matrix needs)
    del weighted
    vec = Vectorizer(
        "tfidf",
        terms.to_pylist(),
        idf,
        settings.ngram_max,
        settings.stop_words,
        settings.sublinear_tf,
        settings.start_token,
        settings.unspaced_as_characters,
    )
    if not matrix:
        parts.clear()
        return vec, None
    kept_column = np.arange(width) if keep is None else np.full(width, -1, np.int64)  # merged column -> kept one
    if keep is not None:
        kept_column[keep] = np.arange(len(keep))

    def kept_rows(index: int) -> sp.csr_matrix:
        """Chunk `index`'s rows in the vectorizer's columns, weighted as its transform weighs them; the chunk let
        go."""
        if rows_weighted:  # its counts in the shared columns, each row's in order
            counts, new_column = in_shared_columns[index], kept_column
            in_shared_columns[index] = None
        else:
            counts, columns = parts[index].counts, merged.columns[index]
            parts[index] = None
            new_column = np.where(columns >= 0, kept_column[columns], -1)
        moved = word_counts.move_columns(counts, new_column, len(terms))
        del counts
        return _weight(moved, idf, settings.sublinear_tf, copy=False)

    with ThreadPoolExecutor(min(len(parts), os.cpu_count() or 1)) as threads:
        rows = word_counts.stack_rows(list(threads.map(kept_rows, range(len(parts)))))
    parts.clear()
    return vec, rows
