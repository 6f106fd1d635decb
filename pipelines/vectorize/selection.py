"""Choosing a view's columns: a chi-squared test of each term against the labels (or the most frequent terms), and
naive Bayes log-count ratios as column weights."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

import pipelines.vectorize.weights as weighting
from pipelines.vectorize.terms import WordSettings
from pipelines.vectorize.weights import _idf, _in_threads, _weight

# The class sums (_class_sums) on at most this many threads, a trade of memory for time: each thread holds a mask of
# all the entries and its class's entries in float64, ~1 + 16 / classes bytes an entry (docs/decisions.md, "Class
# sums on four threads").
CLASS_SUM_THREADS = 4


def _select(counts: sp.csr_matrix, labels, budget: int, settings: WordSettings) -> tuple[np.ndarray | None, np.ndarray]:
    """Keep at most `budget` columns: those a chi-squared test ties most to the labels, or the most frequent.
    -> (the kept columns, ascending, or None where all are kept; the IDF of every column)."""
    idf = _idf(counts)
    if counts.shape[1] <= budget:
        return None, idf
    if settings.feature_selection == "chi2":
        return most_tied_columns(_weight(counts, idf, settings.sublinear_tf), labels, budget), idf
    return _top_columns(np.bincount(counts.indices, minlength=counts.shape[1]).astype(np.float64), budget), idf


def most_tied_columns(weighted: sp.csr_matrix, labels, budget: int) -> np.ndarray:
    """The `budget` columns of a non-negative (weighted) matrix that a chi-squared test ties most to the labels,
    ascending (chi2_scores; a column no document uses scores 0)."""
    return _top_columns(np.nan_to_num(chi2_scores(weighted, np.asarray(labels)), nan=0.0), budget)


def _top_columns(score: np.ndarray, budget: int) -> np.ndarray:
    """The `budget` highest-scoring columns, ascending; ties broken by column (alphabetical) order so the choice
    is deterministic."""
    return np.sort(np.argsort(-score, kind="stable")[:budget])


def chi2_scores(weighted: sp.csr_matrix, labels: np.ndarray) -> np.ndarray:
    """(features,) float64: sklearn.feature_selection.chi2's statistic of each column of a non-negative CSR
    matrix, bit for bit (its p-values are not computed). Its class-by-column sums (Y^T X) come from one bincount a
    class over the entries of that class's rows, accumulated in float64 in document order as scikit-learn's sparse
    product accumulates them, where its product converted the matrix's transpose and multiplied sparse by sparse:
    1.5 of its 1.7 s on 200,000 documents of 32M nonzeros (2-core CPU). The rest is scikit-learn's arithmetic."""
    from sklearn.preprocessing import LabelBinarizer

    binarized = LabelBinarizer(sparse_output=True).fit_transform(labels)  # as chi2 forms it, for the class means
    if binarized.shape[1] == 1:
        binarized = binarized.toarray()
        binarized = np.append(1 - binarized, binarized, axis=1)
    codes = np.unique(labels, return_inverse=True)[1].reshape(-1)  # the binarizer's sorted classes
    # Column-major, as scikit-learn's product leaves it: numpy then sums the classes of a column pairwise, which
    # gives other last bits than a row-by-row sum from 8 classes on.
    observed = np.asfortranarray(_class_sums(weighted, codes, binarized.shape[1]))
    feature_count = weighted.sum(axis=0).reshape(1, -1)
    class_prob = binarized.mean(axis=0).reshape(1, -1)
    expected = np.dot(class_prob.T, feature_count)
    observed -= expected
    observed **= 2
    with np.errstate(invalid="ignore"):
        observed /= expected
    return np.asarray(observed.sum(axis=0)).reshape(-1)


def _class_sums(matrix: sp.csr_matrix, codes: np.ndarray, classes: int, weights: bool = True) -> np.ndarray:
    """(classes, columns) float64: the sum of each class's rows (codes: (rows,) each row's class), each sum
    accumulated in row order; weights=False: each class's stored entries counted instead (of counts: the class's
    documents that hold each column)."""
    entry_class = np.repeat(codes.astype(np.min_scalar_type(classes)), np.diff(matrix.indptr))  # (nonzeros,)
    sums = np.empty((classes, matrix.shape[1]))

    def class_sum(code: int) -> None:
        mine = entry_class == code
        sums[code] = np.bincount(
            matrix.indices[mine], weights=matrix.data[mine] if weights else None, minlength=matrix.shape[1]
        )

    _in_threads(class_sum, range(classes), threaded=matrix.nnz >= weighting.THREADED_ENTRIES, at_most=CLASS_SUM_THREADS)
    return sums


def select_and_weigh(
    counts: sp.csr_matrix, labels: np.ndarray, columns: np.ndarray, budget: int, feature_selection: str, sublinear: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Feature selection as fit_vectorizer does it, on these rows only (one fold's training documents): of the
    candidate `columns` of `counts`, keep at most `budget` -> (kept columns of `counts`, their IDF over these
    rows). Weigh any rows with `weigh_counts(counts[rows][:, kept], idf, sublinear)`."""
    keep, idf = _select(counts[:, columns], labels, budget, _Selection(feature_selection, sublinear))
    return (columns, idf) if keep is None else (columns[keep], idf[keep])


@dataclass(frozen=True)
class _Selection:
    feature_selection: str
    sublinear_tf: bool


def weigh_counts(counts: sp.csr_matrix, idf: np.ndarray, sublinear: bool) -> sp.csr_matrix:
    """Raw counts -> TF-IDF rows of unit length, the weighting of every vectorizer here."""
    return _weight(counts, idf, sublinear)


def nb_ratios(
    counts: sp.csr_matrix, labels: np.ndarray, alpha: float = 1.0, columns: np.ndarray | None = None
) -> np.ndarray:
    """(documents, terms) counts and their labels -> (terms,) float32 column weights: the naive Bayes log-count
    ratio of Wang & Manning's NBSVM (2012), log((p_c / |p_c|) / (q_c / |q_c|)) with p_c (q_c) the smoothed
    presence counts of the term in class c's documents (in the others'), as its largest magnitude over the
    classes. Terms that tell the classes apart weigh more; terms spread evenly weigh ~0.
    columns: the ratios of these columns only, as of counts[:, columns], without copying those columns out."""
    in_class, everywhere = _presence(counts, labels, np.unique(np.asarray(labels)))
    if columns is not None:
        in_class, everywhere = in_class[:, columns], everywhere[:, columns]
    return _nb_ratios_from(in_class, everywhere, alpha)


def _presence(counts: sp.csr_matrix, labels, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """-> ((C, terms) documents of each class holding each term, (1, terms) documents holding it), float64 (whole
    numbers: exact in any order). One bincount a class over that class's stored entries (_class_sums): the
    one-hot sparse product over a copy of the counts took 0.63 s where this takes 0.30 s, on 200,000 documents
    of 32M nonzeros (2-core CPU)."""
    in_class = _class_sums(counts.tocsr(), np.searchsorted(classes, np.asarray(labels)), len(classes), weights=False)
    return in_class, in_class.sum(axis=0, keepdims=True)


def _nb_ratios_from(in_class: np.ndarray, everywhere: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    p, q = in_class + alpha, everywhere - in_class + alpha
    ratio = np.log(p / p.sum(axis=1, keepdims=True)) - np.log(q / q.sum(axis=1, keepdims=True))
    return np.abs(ratio).max(axis=0).astype(np.float32)
