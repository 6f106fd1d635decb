"""pipelines/word_counts.py gives what scikit-learn's CountVectorizer gives: the same terms, in the same order, and
the same counts, fitted over chunks and transformed with a fixed vocabulary."""

import csv
import json
import random

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp
from hypothesis import given, settings as hypothesis_settings, strategies as st
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

from pipelines import word_counts
from pipelines.vectorize import START_TOKEN, StartMarkedWords
from tests.conftest import shared_path

TEXTS = [
    "The cat sat on the mat. The cat!",
    "Don't stop: x_y 42 a b 7z über Straße ΟΔΟΣ ΟΔΟΣ",
    "",
    "!!! ...",
    "naïve café — e\u0301te\u0301 (combining accents) İstanbul",
    "漢字 かな カナ 한국어 ١٢٣ numbers: 3.14 1,000",
    "what is the cat? who sat where? how many cats",
    "\ttabs\nand\r\nnewlines  between\u00a0words\u2003em space",
    "iPhone手机很好用，价格是1000元。カタカナ・ひらがなー 人々 ｶﾀｶﾅ 𠀀𠀁 a中b",
    "สวัสดีครับ ไม่ชอบเลย 555 ๏ ພາສາລາວ ភាសាខ្មែរ မြန်မာ",
]


@pytest.fixture(params=["python", "arrow"])
def tokeniser(request, monkeypatch):
    """Both ways of splitting: Python's re (small inputs) and pyarrow's (the rest), whatever the input's size."""
    monkeypatch.setattr(word_counts, "SMALL_INPUT_CHARACTERS", 10**12 if request.param == "python" else 0)
    return request.param


def _sklearn(ngram_max: int, stop_words, start: bool, unspaced: bool = False, **extra) -> CountVectorizer:
    """scikit-learn's counting; unspaced: with the token pattern that makes each character of a script written without
    spaces a word."""
    if start:
        return CountVectorizer(analyzer=StartMarkedWords(ngram_max, stop_words, unspaced), dtype=np.float32, **extra)
    return CountVectorizer(
        ngram_range=(1, ngram_max),
        stop_words=stop_words,
        dtype=np.float32,
        token_pattern=word_counts.token_pattern(unspaced),
        **extra,
    )


def _fit(texts, ngram_max, stop_words, start, chunks: int, min_df: int = 1, unspaced: bool = False):
    bounds = np.linspace(0, len(texts), chunks + 1).astype(int)
    parts = [
        word_counts.count_chunk(
            texts[a:b], ngram_max, ENGLISH_STOP_WORDS if stop_words else None, START_TOKEN if start else None, unspaced
        )
        for a, b in zip(bounds[:-1], bounds[1:])
    ]
    return word_counts.merge(parts, min_df)


def _assert_same(texts, ngram_max, stop_words, start, chunks=1, min_df=1, unspaced=False):
    expected = _sklearn(ngram_max, stop_words, start, unspaced, min_df=min_df)
    expected_counts = expected.fit_transform(texts)
    terms, counts = _fit(texts, ngram_max, stop_words, start, chunks, min_df, unspaced)
    assert list(terms) == list(expected.get_feature_names_out())
    assert counts.dtype == np.float32 and counts.shape == expected_counts.shape
    assert (counts != expected_counts).nnz == 0
    assert counts.has_sorted_indices


@pytest.mark.parametrize("ngram_max", [1, 2])
@pytest.mark.parametrize("stop_words", [None, "english"])
@pytest.mark.parametrize("start", [False, True])
@pytest.mark.parametrize("chunks", [1, 3])
@pytest.mark.parametrize("unspaced", [False, True])
def test_fitted_terms_and_counts_are_countvectorizers(ngram_max, stop_words, start, chunks, unspaced, tokeniser):
    _assert_same(TEXTS, ngram_max, stop_words, start, chunks, unspaced=unspaced)


def test_characters_of_unspaced_scripts_are_words_of_their_own(tokeniser):
    """Each ideograph, kana and Thai character (marks and punctuation of those blocks too) a word; other runs of word
    characters cut where one stands; Hangul and other scripts' non-word characters as before."""
    found = word_counts.tokens(["iPhone手机很好用，カナ・ひらがなー 한국어 人々 a中b ไม่ดี"], None, unspaced=True)
    words = found.words.to_pylist()
    assert [words[i] for i in found.ids] == [
        "iphone",
        "手",
        "机",
        "很",
        "好",
        "用",
        "カ",
        "ナ",
        "・",
        "ひ",
        "ら",
        "が",
        "な",
        "ー",
        "한국어",
        "人",
        "々",
        "中",
        "ไ",
        "ม",
        "\u0e48",
        "ด",
        "\u0e35",
    ]
    found = word_counts.tokens(["iPhone手机很好用"], None)
    assert found.words.to_pylist() == ["iphone手机很好用"]


@pytest.mark.parametrize("chunks", [1, 3])
def test_a_word_left_out_of_the_merge_loses_its_unigram_only(chunks, tokeniser):
    """leave_out=START_TOKEN: CountVectorizer's terms and counts with the start token's own column removed, its
    bigrams kept (what vectorize.terms._without_start_token did by copying the merged matrix)."""
    expected = _sklearn(2, None, True)
    expected_counts = expected.fit_transform(TEXTS).tocsc()
    names = list(expected.get_feature_names_out())
    bounds = np.linspace(0, len(TEXTS), chunks + 1).astype(int)
    parts = [word_counts.count_chunk(TEXTS[a:b], 2, None, START_TOKEN) for a, b in zip(bounds[:-1], bounds[1:])]
    terms, counts = word_counts.merge(parts, 1, leave_out=START_TOKEN)
    kept = [i for i, name in enumerate(names) if name != START_TOKEN]
    assert len(kept) == len(names) - 1 and any(name.startswith(START_TOKEN + " ") for name in terms)
    assert list(terms) == [names[i] for i in kept]
    assert (counts != expected_counts[:, kept].tocsr()).nnz == 0 and counts.has_sorted_indices
    parts = [word_counts.count_chunk(TEXTS, 2, None)]  # no document holds the word: nothing left out
    assert len(word_counts.merge(parts, 1, leave_out=START_TOKEN)[0]) == len(
        _sklearn(2, None, False).fit(TEXTS).get_feature_names_out()
    )


@pytest.mark.parametrize("chunks", [1, 2, 4])
def test_min_df_counts_documents_over_every_chunk(chunks, tokeniser):
    texts = ["apple pear", "apple", "pear kiwi", "kiwi fig", "fig apple pear", "plum"]
    _assert_same(texts, 2, None, False, chunks, min_df=2)


@pytest.mark.parametrize("ngram_max", [1, 2])
@pytest.mark.parametrize("stop_words", [None, "english"])
@pytest.mark.parametrize("unspaced", [False, True])
def test_transform_counts_only_the_vocabulary(ngram_max, stop_words, unspaced, tokeniser):
    vocabulary = [
        "cat",
        "the cat",
        "sat",
        "cat sat",
        "zebra",
        "how many",
        "many cats",
        "straße",
        "οδος",
        "__start__ the",
        "手",
        "手 机",
        "iphone",
        "iphone 手",
        "カ ナ",
        "漢字",
        "漢",
    ]
    vocabulary = [t for t in vocabulary if len(t.split(" ")) <= ngram_max]
    start = True
    ours = word_counts.WordCounter(
        vocabulary, ngram_max, ENGLISH_STOP_WORDS if stop_words else None, START_TOKEN, unspaced
    )
    expected = _sklearn(ngram_max, stop_words, start, unspaced, vocabulary=vocabulary).transform(TEXTS)
    counts = ours.transform(TEXTS)
    assert counts.shape == (len(TEXTS), len(vocabulary)) and counts.dtype == np.float32
    assert (counts != expected).nnz == 0
    assert ours.transform([]).shape == (0, len(vocabulary))


@pytest.mark.parametrize("ngram_max", [1, 2])
@pytest.mark.parametrize("stop_words", [None, "english"])
@pytest.mark.parametrize("start", [False, True])
@pytest.mark.parametrize("unspaced", [False, True])
def test_texts_as_a_pyarrow_array_count_as_the_list_does(ngram_max, stop_words, start, unspaced, tokeniser):
    """A JSONL share parsed by pyarrow comes as a large_string array (pipelines/shares.py): fitted and transformed
    as the same texts in a list, a slice of an array too (its buffers start before its first text)."""
    stop, prefix = ENGLISH_STOP_WORDS if stop_words else None, START_TOKEN if start else None
    texts = TEXTS * 3
    as_array = pa.array(["padding"] + texts + ["more padding"], pa.large_string()).slice(1, len(texts))
    for as_given in (as_array, pa.array(texts, pa.string())):
        listed, arrayed = (
            word_counts.count_chunk(texts, ngram_max, stop, prefix, unspaced),
            word_counts.count_chunk(as_given, ngram_max, stop, prefix, unspaced),
        )
        assert listed.words.to_pylist() == arrayed.words.to_pylist()
        assert np.array_equal(listed.keys, arrayed.keys) and (listed.counts != arrayed.counts).nnz == 0
    terms, _ = _fit(texts, ngram_max, stop_words, start, chunks=1, unspaced=unspaced)
    counter = word_counts.WordCounter(list(terms), ngram_max, stop, prefix, unspaced)
    expected = counter.transform(texts)
    assert expected.nnz > 0 and (counter.transform(as_array) != expected).nnz == 0
    assert counter.transform(as_array.slice(0, 0)).shape == (0, len(terms))


def test_the_rank_path_for_keys_too_large_to_pack_counts_alike():
    rng = np.random.default_rng(0)
    keys = rng.integers(2**60, 2**61, 50)[rng.integers(0, 50, 400)]  # 400 occurrences of <= 50 distinct keys
    docs = np.sort(rng.integers(0, 30, 400))
    distinct, counts = word_counts.count_keys(keys, docs, 31)
    dense = np.zeros((31, len(distinct)))
    np.add.at(dense, (docs, np.searchsorted(distinct, keys)), 1)
    assert np.array_equal(distinct, np.unique(keys)) and np.array_equal(counts.toarray(), dense)
    small_distinct, small_counts = word_counts.count_keys(np.searchsorted(distinct, keys), docs, 31)
    assert (small_counts != counts).nnz == 0 and np.array_equal(small_distinct, np.arange(len(distinct)))


# Letters, marks, numbers, punctuation, separators and symbols of many scripts, and the characters whose
# lowercase is special (İ, final sigma).
ALPHABET = (
    "aZ_09 .,;'-!?\t\n\u00a0\u2003éÉßİıΣσςΟΔ\u0301\u0308漢かカ한١٢٣ⅫΩ½²€™🙂"
    "\u200d字ー・々\u3099ｶ𠀀。ก\u0e48\u0e31า๏\u0e3bລ"
)


@hypothesis_settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, max_size=40), min_size=1, max_size=6))
def test_random_unicode_is_tokenised_as_scikit_learn_does(texts):
    lowered = [text.lower() for text in texts]
    assert word_counts._lowered(pa.array(texts), None).to_pylist() == lowered  # Python's lowercasing, as an array
    assert word_counts._lowered(pa.array(texts), "Σa").to_pylist() == word_counts._lowered(texts, "Σa")
    for unspaced in (False, True):
        analyze = CountVectorizer(
            ngram_range=(1, 2), token_pattern=word_counts.token_pattern(unspaced)
        ).build_analyzer()
        expected = [[t for t in analyze(text) if " " not in t] for text in texts]
        for split in (word_counts._python_tokens, word_counts._arrow_tokens):
            found = split(lowered, None, unspaced)
            words = found.words.to_pylist()
            by_document = [[] for _ in texts]
            for word, doc in zip(found.ids.tolist(), found.docs.tolist()):
                by_document[doc].append(words[word])
            assert by_document == expected, (split.__name__, unspaced)


def _shared_texts(name: str) -> list[str]:
    if name in ("trec", "mr"):
        return [json.loads(line)["text"] for line in shared_path(name, "train.jsonl").open()]
    if name == "ag_news":
        with shared_path("ag_news", "test.csv").open(newline="", encoding="utf-8") as rows:
            return [" ".join(row[1:]) for row in csv.reader(rows)]
    # 20 Newsgroups posts as they are (headers, quotes, signatures), three groups of the training half
    folder = shared_path("20news-bydate", "20news-bydate-train")
    return [
        path.read_text(encoding="latin-1")
        for group in ("comp.graphics", "rec.autos", "sci.space")
        for path in sorted((folder / group).iterdir())
    ]


@pytest.mark.parametrize("name", ["trec", "mr", "ag_news", "20news"])
def test_real_corpora_count_as_scikit_learn_does(name):
    texts = _shared_texts(name)
    random.Random(0).shuffle(texts)
    _assert_same(texts[:3000], 2, None, True, chunks=3, min_df=2)
    _assert_same(texts[:3000], 2, "english", False, chunks=2, min_df=2)


def test_an_empty_chunk_and_documents_without_words_give_empty_rows(tokeniser):
    terms, counts = _fit(["", "!!", "a b c"], 2, None, False, chunks=3)
    assert len(terms) == 0 and counts.shape == (3, 0)
    assert sp.issparse(counts)
    terms, counts = word_counts.merge([], 2)  # no chunks at all
    assert len(terms) == 0 and counts.shape == (0, 0)


@hypothesis_settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(max_codepoint=127), max_size=60), min_size=1, max_size=6))
def test_ascii_documents_split_as_the_regular_expression_splits_them(texts):
    """The byte-table split of ASCII documents gives RE2's tokens, documents and order, on every ASCII
    character: controls, punctuation, whitespace of each kind, digits and the underscore."""
    lowered = [text.lower() for text in texts]
    tokens, docs = word_counts._ascii_split(lowered)
    want_tokens, want_docs = word_counts._regex_split(lowered)
    assert tokens.to_pylist() == want_tokens.to_pylist() and docs.tolist() == want_docs.tolist()


def test_keys_too_wide_to_pack_with_their_documents_are_ranked_first():
    """A chunk of so many distinct words that key x documents passes 2**62 counts through the keys' ranks:
    the same distinct keys and counts as narrow keys give."""
    wide = np.array([5 * 10**12, 3, 5 * 10**12, 7, 3], np.int64)
    docs = np.array([0, 0, 1, 1, 1], np.int64)
    n_docs = 2**22
    distinct, counts = word_counts.count_keys(wide, docs, n_docs)
    assert distinct.tolist() == [3, 7, 5 * 10**12]
    narrow_distinct, narrow_counts = word_counts.count_keys(np.array([2, 0, 2, 1, 0], np.int64), docs, n_docs)
    assert narrow_distinct.tolist() == [0, 1, 2]
    assert (counts != narrow_counts).nnz == 0 and counts[:2].toarray().tolist() == [[1, 0, 1], [1, 1, 1]]


@pytest.mark.parametrize("workers", [1, 3, 8])
def test_runs_ranked_a_range_a_thread_are_ranked_as_one_sort_ranks_them(workers):
    """_ranks_of_runs (merge_terms' ranking) cuts the keys into ranges (from 10,000 keys of the longest run on) and
    ranks each on its own thread: the distinct keys, each run's ranks and the summed weights of one np.unique over
    all the runs, with keys shared by several runs, runs of other lengths, an empty one, and a key at a cut."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(workers)
    shared = rng.choice(10**9, 30_000, replace=False)
    runs = []
    for size in (60_000, 25_000, 0, 41_000, 3):
        keys = np.unique(np.concatenate([rng.choice(shared, size // 2), rng.integers(0, 10**9, size - size // 2)]))
        runs.append((keys.astype(np.int64), rng.integers(1, 50, len(keys))))
    at_cuts = np.unique(np.concatenate([runs[1][0], runs[0][0][::4]]))  # keys at the longest run's cuts too
    runs[1] = (at_cuts, rng.integers(1, 50, len(at_cuts)))
    with ThreadPoolExecutor(workers) as threads:
        distinct, ranks, totals = word_counts._ranks_of_runs(runs, threads, workers)
    every = np.concatenate([keys for keys, _ in runs])
    expected, inverse = np.unique(every, return_inverse=True)
    assert distinct.tolist() == expected.tolist()
    assert np.concatenate(ranks).tolist() == inverse.tolist()
    assert totals.dtype == np.int64
    assert totals.tolist() == np.bincount(inverse, weights=np.concatenate([w for _, w in runs])).astype(int).tolist()


@hypothesis_settings(deadline=None, max_examples=60)
@given(pairs=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 40)), max_size=200), extra=st.integers(0, 3))
def test_row_counts_of_a_few_occurrences_is_the_matrix_of_many(pairs, extra):
    """The small path (one sort of packed pairs) and the conversions through CSC give the same matrix: columns
    sorted within rows, repeats added, empty rows kept, the same index types."""
    pairs.sort(key=lambda pair: pair[0])  # the tokens come grouped by document
    docs = np.array([d for d, _ in pairs], np.int64)
    columns = np.array([c for _, c in pairs], np.int32)
    small = word_counts.row_counts(docs, columns, 6 + extra, 41)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(word_counts, "SMALL_OCCURRENCES", -1)
        large = word_counts.row_counts(docs, columns, 6 + extra, 41)
    for a, b in ((small.indptr, large.indptr), (small.indices, large.indices), (small.data, large.data)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert small.shape == large.shape and small.has_sorted_indices
