"""Fitting one Vectorizer across several processes, each counting its own share of the documents: the vocabulary,
the chi-squared statistics and the naive Bayes ratios agreed through the runtime (Exchange)."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from pipelines import word_counts
from pipelines.errors import CorpusError
from pipelines.vectorize.chunks import _chunks, _worker_count
from pipelines.vectorize.selection import _class_sums, _nb_ratios_from, _presence, _top_columns
from pipelines.vectorize.terms import (
    SMALL_CORPUS_DOCS,
    WordSettings,
    _count_chunk,
    _merge_counts,
    _without_start_token,
    hashing_counter,
    word_counter_params,
)
from pipelines.vectorize.vectorizer import Vectorizer, _transform_chunk
from pipelines.vectorize.weights import _weight
from pipelines.workers import WorkerPool

# --- Several processes, each holding its own share of the documents -----------------------------------------
# exchange(arrays) -> every process's arrays (a list in process order, this process's included): the caller's
# collective (textclf/training/parallel/processes.py runs it through JAX's distributed runtime). Only numbers and
# fixed-width strings travel; no process ever sees another's documents.
Exchange = Callable[[dict[str, np.ndarray]], list[dict[str, np.ndarray]]]


# Over 80 lines as formatted: each exchange the processes make together, in the order they must make it.
def fit_vectorizer_shared(
    texts: Sequence[str], labels: Sequence[str], settings: WordSettings, exchange: Exchange, pool: WorkerPool
) -> tuple[Vectorizer, sp.csr_matrix, list[str]]:
    """fit_vectorizer over the union of every process's documents, each process counting only its own:
    -> (the vectorizer, every process the same; this process's training matrix; the classes, sorted).
    The processes agree on the vocabulary (the union of their terms, document frequencies summed, min_df on
    the sums), the IDF, the chi-squared or frequency selection and the naive Bayes weights by exchanging
    per-term counts and per-class sums, never documents. Below `features` terms (no selection) the result is
    the one-process fit's exactly; a selection scores terms from float64 sums added in another order, so a
    tie at its cut could fall the other way. Decision: no FIT_DOCUMENTS sample here: every process already
    counts only its part."""
    labels = np.asarray(labels)
    common = word_counter_params(
        settings.ngram_max, settings.stop_words, settings.start_token, settings.unspaced_as_characters
    )
    chunks = _chunks(texts, _worker_count(len(texts), pool.processes))
    if settings.vectorizer == "hashing":
        hasher = hashing_counter(
            settings.features,
            settings.ngram_max,
            settings.stop_words,
            settings.start_token,
            settings.unspaced_as_characters,
        )
        counts = (
            word_counts.stack_rows(pool.map(_transform_chunk, chunks, hasher))
            if texts
            else sp.csr_matrix((0, settings.features), dtype=np.float32)
        )
        shared = exchange(
            {
                "df": np.bincount(counts.indices, minlength=settings.features).astype(np.int64),
                "documents": np.array([counts.shape[0]]),
                "classes": np.unique(labels).astype(str),
            }
        )
        n = sum(int(part["documents"][0]) for part in shared)
        df = np.sum([part["df"] for part in shared], axis=0)
        idf = (np.log((1.0 + n) / (1.0 + df)) + 1.0).astype(np.float32)
        vec = Vectorizer(
            "hashing",
            None,
            idf,
            settings.ngram_max,
            settings.stop_words,
            settings.sublinear_tf,
            settings.start_token,
            settings.unspaced_as_characters,
        )
        return vec, _weight(counts, idf, settings.sublinear_tf), _union_classes(shared)

    local_terms, counts = (
        _without_start_token(*_merge_counts(pool.map(_count_chunk, chunks, common), 1))
        if texts
        else (np.array([], dtype=object), sp.csr_matrix((0, 0), dtype=np.float32))
    )
    shared = exchange(
        {
            "terms": np.asarray(local_terms, dtype=str).reshape(-1),
            "df": np.bincount(counts.indices, minlength=counts.shape[1]).astype(np.int64),
            "documents": np.array([counts.shape[0]]),
            "classes": np.unique(labels).astype(str),
        }
    )
    classes = _union_classes(shared)
    n = sum(int(part["documents"][0]) for part in shared)
    union, where = np.unique(np.concatenate([part["terms"] for part in shared]), return_inverse=True)
    df = np.bincount(where, weights=np.concatenate([part["df"] for part in shared]), minlength=len(union))
    kept = np.flatnonzero(df >= (settings.min_df if n >= SMALL_CORPUS_DOCS else 1))
    if not len(kept):
        raise CorpusError(
            "no words to learn from: the documents hold only stop words or symbols; "
            "add real text or pass --stop-words none"
        )
    terms, df = union[kept], df[kept]
    column = np.full(len(union), -1, np.int64)
    column[kept] = np.arange(len(kept))
    mine = (
        column[np.searchsorted(union, np.asarray(local_terms, dtype=str))]
        if len(local_terms)
        else np.zeros(0, np.int64)
    )
    counts = word_counts.move_columns(counts, mine, len(terms))
    counts.sort_indices()
    idf = (np.log((1.0 + n) / (1.0 + df)) + 1.0).astype(np.float32)  # _idf over every process's documents
    if len(terms) > settings.features:
        if settings.feature_selection == "chi2":
            score = _shared_chi2(_weight(counts, idf, settings.sublinear_tf), labels, classes, exchange)
        else:
            score = df.astype(np.float64)
        keep = _top_columns(score, settings.features)
        terms, counts, idf = terms[keep], counts[:, keep], idf[keep]
    if settings.nb_weighting:
        in_class, everywhere = _presence(counts, labels, classes)
        shared = exchange({"in_class": in_class, "everywhere": everywhere})
        idf = idf * _nb_ratios_from(
            np.sum([p["in_class"] for p in shared], axis=0), np.sum([p["everywhere"] for p in shared], axis=0)
        )
    vec = Vectorizer(
        "tfidf",
        [str(t) for t in terms],
        idf,
        settings.ngram_max,
        settings.stop_words,
        settings.sublinear_tf,
        settings.start_token,
        settings.unspaced_as_characters,
    )
    return vec, _weight(counts, idf, settings.sublinear_tf), list(classes)


def _union_classes(shared: list[dict[str, np.ndarray]]) -> list[str]:
    return sorted(set().union(*(map(str, part["classes"]) for part in shared)))


def _shared_chi2(weighted: sp.csr_matrix, labels: np.ndarray, classes, exchange: Exchange) -> np.ndarray:
    """scikit-learn's chi2 statistic of every column over every process's rows, from per-class sums:
    observed[c] = the sum of class c's rows, expected[c] = P(c) x the sum of all rows (two classes included:
    scikit-learn appends the complement of its one binarized column, i.e. both classes' rows)."""
    classes = np.asarray(classes)
    codes = np.searchsorted(classes, labels)
    shared = exchange(
        {
            "observed": _class_sums(weighted, codes, len(classes)),
            "per_class": np.bincount(codes, minlength=len(classes)).astype(np.float64),
        }
    )
    observed = np.sum([part["observed"] for part in shared], axis=0)  # (C, V)
    per_class = np.sum([part["per_class"] for part in shared], axis=0)  # (C,)
    expected = np.outer(per_class / per_class.sum(), observed.sum(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        score = ((observed - expected) ** 2 / expected).sum(axis=0)
    return np.nan_to_num(score, nan=0.0)
