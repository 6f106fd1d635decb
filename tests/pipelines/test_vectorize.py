import numpy as np
import pytest
import scipy.sparse as sp

from pipelines.corpus import read_corpus
from pipelines.vectorize import Vectorizer, fit_vectorizer
from textclf.config import Settings


@pytest.fixture
def corpus(corpus_dir):
    return read_corpus(corpus_dir)


@pytest.mark.parametrize("kind", ["tfidf", "hashing"])
def test_rows_are_unit_length_and_reload_identically(corpus, kind):
    settings = Settings(vectorizer=kind, features=512)
    vectorizer, matrix = fit_vectorizer(corpus.texts, corpus.labels, settings)
    assert matrix.shape == (len(corpus), vectorizer.n_features) and matrix.dtype == np.float32
    np.testing.assert_allclose(sp.linalg.norm(matrix, axis=1), 1.0, rtol=1e-5)
    reloaded = Vectorizer.from_arrays(vectorizer.config(), vectorizer.to_arrays())
    assert abs(reloaded.transform(corpus.texts) - matrix).max() < 1e-6


def test_chi2_keeps_the_terms_tied_to_labels(corpus):
    vectorizer, _ = fit_vectorizer(corpus.texts, corpus.labels, Settings(features=30))
    assert len(vectorizer.terms) == 30
    # Frequent but label-free words lose to words of one label.
    assert "team" in vectorizer.terms or "oven" in vectorizer.terms
    frequency, _ = fit_vectorizer(corpus.texts, corpus.labels, Settings(features=30, feature_selection="frequency"))
    assert frequency.terms != vectorizer.terms


def test_selection_is_deterministic(corpus):
    a, _ = fit_vectorizer(corpus.texts, corpus.labels, Settings(features=50))
    b, _ = fit_vectorizer(corpus.texts, corpus.labels, Settings(features=50))
    assert a.terms == b.terms and np.array_equal(a.idf, b.idf)


def test_unknown_words_give_zero_rows(corpus):
    vectorizer, _ = fit_vectorizer(corpus.texts, corpus.labels, Settings())
    assert vectorizer.transform(["zzzqqq xxyyzz"]).nnz == 0
