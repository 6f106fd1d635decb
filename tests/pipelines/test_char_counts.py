"""pipelines/char_counts.py gives what scikit-learn's CountVectorizer(analyzer="char_wb") gives: the same terms, in the
same order, and the same counts, fitted over chunks (merged by word_counts.merge) and transformed with a fixed
vocabulary."""

import numpy as np
import pytest
from hypothesis import given, settings as hypothesis_settings, strategies as st
from sklearn.feature_extraction.text import CountVectorizer

from pipelines import char_counts, word_counts
from tests.pipelines.test_word_counts import ALPHABET, TEXTS

SPACES = " \t\n\r\x0b\x0c\x1c\x85\u00a0\u1680\u2003\u2028\u3000"


def _sklearn(ngram_range, **extra) -> CountVectorizer:
    return CountVectorizer(analyzer="char_wb", ngram_range=ngram_range, dtype=np.float32, **extra)


def _assert_same(texts, ngram_range=(2, 5), chunks=1, min_df=1):
    bounds = np.linspace(0, len(texts), chunks + 1).astype(int)
    parts = [char_counts.count_chunk(texts[a:b], ngram_range) for a, b in zip(bounds[:-1], bounds[1:])]
    terms, counts = word_counts.merge(parts, min_df)
    expected = _sklearn(ngram_range, min_df=min_df)
    if not "".join(texts).split():  # scikit-learn refuses an empty vocabulary
        assert len(terms) == 0 and counts.shape == (len(texts), 0)
        return
    want = expected.fit_transform(texts)
    assert list(terms) == list(expected.get_feature_names_out())
    assert counts.dtype == np.float32 and counts.shape == want.shape and (counts != want).nnz == 0
    assert counts.has_sorted_indices


@pytest.mark.parametrize("ngram_range", [(2, 5), (1, 3), (3, 4), (1, 1)])
@pytest.mark.parametrize("chunks", [1, 3])
def test_fitted_terms_and_counts_are_countvectorizers(ngram_range, chunks):
    _assert_same(TEXTS, ngram_range, chunks)


def test_min_df_counts_documents_over_every_chunk():
    _assert_same(["apple pear", "apple", "pear kiwi", "kiwi fig", "fig apple pear", "plum"], chunks=3, min_df=2)


def test_texts_without_words_give_empty_rows():
    for texts in ([""], ["", SPACES], [SPACES, "a", ""]):
        _assert_same(texts, chunks=len(texts))
    found = char_counts.count_chunk(["", SPACES], (2, 5))
    assert len(found.words) == 0 and found.counts.shape == (2, 0)


def test_a_word_ends_with_its_document():
    """Documents are joined with nothing between them: the last word of one and the first of the next stay apart."""
    found = char_counts.count_chunk(["ab", "cd"], (2, 5))
    assert "bc" not in found.words.to_pylist() and " ab " in found.words.to_pylist()


def test_a_first_n_of_four_or_more_is_refused():
    with pytest.raises(ValueError, match="character n-gram range"):
        char_counts.count_chunk(["text"], (4, 5))


@hypothesis_settings(max_examples=150, deadline=None)
@given(
    st.lists(st.text(alphabet=ALPHABET + SPACES, max_size=40), min_size=1, max_size=6),
    st.integers(min_value=1, max_value=3),
)
def test_random_unicode_counts_as_scikit_learn_does(texts, chunks):
    _assert_same(texts, chunks=min(chunks, len(texts)))


@pytest.mark.parametrize("small", [False, True])
def test_transform_counts_only_the_vocabulary(small, monkeypatch):
    monkeypatch.setattr(char_counts, "SMALL_INPUT_CHARACTERS", 10**9 if small else 0)
    vocabulary = [" th", "the", "cat", "at ", " ca", "手机", " 手机很好用，价", "zz", "é", " a "]
    counter = char_counts.CharCounter(vocabulary, (2, 5))
    counts = counter.transform(TEXTS)
    want = _sklearn((2, 5), vocabulary=vocabulary).transform(TEXTS)
    assert counts.shape == (len(TEXTS), len(vocabulary)) and counts.dtype == np.float32
    assert (counts != want).nnz == 0 and counts.nnz > 0 and counts.has_sorted_indices
    assert counter.transform([]).shape == (0, len(vocabulary))
