import json
import os

import numpy as np
import pytest
import scipy.sparse as sp

from pipelines.corpus import read_corpus
from pipelines.vectorize import Vectorizer, fit_vectorizer
from textclf.settings import Settings


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


def test_the_start_token_marks_each_documents_first_word():
    texts = ["how many moons has mars", "how far is the moon", "who named the moon", "who was first on the moon"] * 60
    labels = ["number", "number", "person", "person"] * 60
    vectorizer, matrix = fit_vectorizer(texts, labels, Settings(stop_words=None, features=1000))
    assert {"__start__ how", "__start__ who"} <= set(vectorizer.terms)
    assert "__start__" not in vectorizer.terms  # alone it is in every document: no column
    row = vectorizer.transform(["moon how many"])
    assert "__start__ how" not in {vectorizer.terms[i] for i in row.indices}  # "how", not first here
    assert "__start__ moon" not in vectorizer.terms  # never the first word in training
    plain, _ = fit_vectorizer(texts, labels, Settings(stop_words=None, features=1000, start_token=False))
    assert not [t for t in plain.terms if "__start__" in t]
    assert set(vectorizer.terms) - set(plain.terms) == {"__start__ how", "__start__ who"}


def test_unknown_words_give_zero_rows(corpus):
    vectorizer, _ = fit_vectorizer(corpus.texts, corpus.labels, Settings())
    assert vectorizer.transform(["zzzqqq xxyyzz"]).nnz == 0


@pytest.mark.parametrize("kind", ["tfidf", "hashing"])
def test_counting_in_worker_processes_gives_the_one_process_matrix(corpus, kind, monkeypatch):
    """Chunks counted by separate CountVectorizers and merged: the same terms and the same matrix."""

    settings = Settings(vectorizer=kind, features=300, min_df=2)
    texts, labels = corpus.texts * 7, corpus.labels * 7  # 252 documents: min_df applies (>= 200)
    alone, alone_x = fit_vectorizer(texts, labels, settings, workers=1)
    monkeypatch.setattr("pipelines.vectorize.chunks.PARALLEL_MIN_DOCS", 0)
    monkeypatch.setattr("pipelines.vectorize.chunks.DOCS_PER_WORKER", 1)
    merged, merged_x = fit_vectorizer(texts, labels, settings, workers=3)
    assert merged.terms == alone.terms
    np.testing.assert_array_equal(merged.idf, alone.idf)
    assert abs(merged_x - alone_x).max() == 0
    assert abs(merged.transform(texts, workers=3) - alone_x).max() < 1e-6


def test_a_pooled_transform_in_many_chunks_is_the_one_process_transform(corpus, monkeypatch):
    from pipelines.workers import WorkerPool

    vec, matrix = fit_vectorizer(corpus.texts, corpus.labels, Settings(features=300), workers=1)
    monkeypatch.setattr("pipelines.vectorize.chunks.PARALLEL_MIN_DOCS", 0)
    monkeypatch.setattr("pipelines.vectorize.chunks.DOCS_PER_WORKER", 1)
    monkeypatch.setattr("pipelines.vectorize.chunks.CHUNK_CHARACTERS", 500)  # a chunk of a few documents
    progress = []
    with WorkerPool(2) as pool:
        chunked = vec.transform(corpus.texts, pool=pool, on_progress=lambda done, total: progress.append(done))
        empty = vec.transform([], pool=pool)
    assert abs(chunked - matrix).max() < 1e-6
    assert len(progress) > 4 and progress == sorted(progress) and progress[-1] == len(corpus.texts)
    assert len(progress) % 2 == 0  # a multiple of the workers' count of chunks
    assert empty.shape == (0, matrix.shape[1])


def test_the_fit_tells_its_counting_progress_then_the_transforms(corpus, monkeypatch):
    from pipelines.workers import WorkerPool

    monkeypatch.setattr("pipelines.vectorize.chunks.PARALLEL_MIN_DOCS", 0)
    monkeypatch.setattr("pipelines.vectorize.chunks.DOCS_PER_WORKER", 1)
    monkeypatch.setattr("pipelines.vectorize.chunks.CHUNK_CHARACTERS", 500)
    texts, labels = corpus.texts * 2, corpus.labels * 2
    progress = []
    with WorkerPool(2) as pool:
        fit_vectorizer(
            texts,
            labels,
            Settings(features=300),
            pool=pool,
            on_progress=lambda done, total: progress.append((done, total)),
        )
        assert len(progress) > 2 and [t for _, t in progress] == [len(texts)] * len(progress)
        assert [d for d, _ in progress] == sorted(d for d, _ in progress) and progress[-1][0] == len(texts)
        progress.clear()  # a corpus larger than the fit's sample: the sample's counting, then all transformed
        fit_vectorizer(
            texts,
            labels,
            Settings(features=300),
            pool=pool,
            fit_documents=40,
            on_progress=lambda done, total: progress.append((done, total)),
        )
    totals = [t for _, t in progress]
    assert totals[0] == 40 and totals[-1] == len(texts) and totals == sorted(totals)
    assert progress[-1][0] == len(texts) and (40, 40) in progress


def test_a_file_transformed_share_by_share_is_the_matrix_of_its_texts(corpus_dir, tmp_path, monkeypatch):
    import json

    from pipelines import corpus as corpus_module
    from pipelines.workers import WorkerPool

    corpus = read_corpus(corpus_dir)
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in zip(corpus.texts, corpus.labels)))
    monkeypatch.setattr(corpus_module, "PARALLEL_READ_BYTES", 1000)
    monkeypatch.setattr(corpus_module, "SHARE_BYTES", 3000)
    vec, _ = fit_vectorizer(corpus.texts, corpus.labels, Settings(features=300, char_ngrams=True), workers=1)
    progress = []
    with WorkerPool(2) as pool:
        left = read_corpus(path, pool=pool, keep_texts=False)
        matrix = vec.transform_file(left.texts, pool, lambda done, total: progress.append((done, total)))
    assert left.texts.shares > 2 and len(progress) == left.texts.shares and progress[-1] == (len(corpus),) * 2
    expected = vec.transform(corpus.texts)  # both views, the words' and the characters'
    assert matrix.shape == expected.shape and matrix.dtype == expected.dtype
    np.testing.assert_array_equal(matrix.toarray(), expected.toarray())


@pytest.mark.parametrize("known_rows", ["some", "none", "all", "a whole share", "out of order"])
def test_a_file_transformed_around_known_rows_is_the_matrix_of_its_texts(corpus_dir, tmp_path, monkeypatch, known_rows):
    """transform_file_parts with known rows (the fit's sample): the workers skip them and each share's rows come
    back in their places, the known ones as given: the same rows as the whole transform, in order."""
    import json

    from pipelines import corpus as corpus_module
    from pipelines.workers import WorkerPool

    corpus = read_corpus(corpus_dir)
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in zip(corpus.texts, corpus.labels)))
    monkeypatch.setattr(corpus_module, "PARALLEL_READ_BYTES", 1000)
    monkeypatch.setattr(corpus_module, "SHARE_BYTES", 3000)
    vec, _ = fit_vectorizer(corpus.texts, corpus.labels, Settings(features=300), workers=1)
    expected = vec.transform(corpus.texts)
    with WorkerPool(2) as pool:
        left = read_corpus(path, pool=pool, keep_texts=False)
        first = left.texts.first_rows
        rows = {
            "some": np.array([0, 3, 4, 17, len(corpus) - 1]),
            "none": np.zeros(0, np.int64),
            "all": np.arange(len(corpus)),
            "a whole share": np.arange(first[1], first[2]),
            "out of order": np.array([17, 3, len(corpus) - 1, 0]),
        }[known_rows]
        # The known rows as given, marked, so that a transformed row in their place would show.
        known = expected[rows].copy()
        known.data[:] = 7.0
        parts = list(vec.transform_file_parts(left.texts, pool, known=(rows, known)))
    assert left.texts.shares > 2 and len(parts) == left.texts.shares
    matrix = sp.vstack(parts, format="csr")
    marked = expected.copy()
    marked[rows] = known  # (the rows of `expected` replaced: their entries are where `known` has them)
    assert matrix.shape == expected.shape and matrix.dtype == expected.dtype
    np.testing.assert_array_equal(matrix.toarray(), marked.toarray())


def test_merging_keeps_terms_only_when_they_reach_min_df_over_all_chunks():
    from pipelines.vectorize.terms import _count_chunk, _merge_counts

    params = dict(ngram_range=(1, 1), stop_words=None, dtype=np.float32)
    parts = [_count_chunk(["apple pear", "apple"], params), _count_chunk(["pear kiwi", "the"], params)]
    terms, counts = _merge_counts(parts, min_df=2)
    assert list(terms) == ["apple", "pear"]  # kiwi and the: one document each
    np.testing.assert_array_equal(counts.toarray(), [[1, 1], [1, 0], [0, 1], [0, 0]])


@pytest.mark.parametrize("min_df", [1, 2])
@pytest.mark.parametrize("n_chunks", [1, 3])
def test_chunk_counting_and_merge_give_countvectorizers_matrix(corpus, min_df, n_chunks):
    from sklearn.feature_extraction.text import CountVectorizer

    from pipelines.vectorize.chunks import _chunks
    from pipelines.vectorize.terms import _count_chunk, _merge_counts

    params = dict(ngram_range=(1, 2), stop_words="english", dtype=np.float32)
    texts = corpus.texts * 2
    terms, counts = _merge_counts([_count_chunk(chunk, params) for chunk in _chunks(texts, n_chunks)], min_df)
    reference = CountVectorizer(min_df=min_df, **params)
    expected = reference.fit_transform(texts)
    assert list(terms) == list(reference.get_feature_names_out())
    assert counts.shape == expected.shape and (counts != expected).nnz == 0
    assert counts.has_sorted_indices


def test_colliding_term_hashes_change_nothing():
    """The merge drops once-seen terms by hash; a collision may only make it look at a term's text."""
    from pipelines.vectorize.terms import _count_chunk, _merge_counts

    params = dict(ngram_range=(1, 1), stop_words=None, dtype=np.float32)
    texts = [["apple pear", "apple fig"], ["pear kiwi", "plum"], ["fig kiwi", "date"]]
    parts = [_count_chunk(chunk, params) for chunk in texts]
    expected_terms, expected = _merge_counts(parts, min_df=2)
    assert list(expected_terms) == ["apple", "fig", "kiwi", "pear"]  # plum, date: one document each
    colliding = [(terms, counts, np.zeros_like(hashes)) for terms, counts, hashes in parts]  # every hash equal
    terms, counts = _merge_counts(colliding, min_df=2)
    assert list(terms) == list(expected_terms) and (counts != expected).nnz == 0


def test_a_term_rare_in_one_chunk_keeps_its_counts_there_when_kept_elsewhere():
    from pipelines.vectorize.terms import _count_chunk, _merge_counts

    params = dict(ngram_range=(1, 1), stop_words=None, dtype=np.float32)
    parts = [_count_chunk(["fig", "plum"], params), _count_chunk(["fig kiwi", "fig"], params)]
    terms, counts = _merge_counts(parts, min_df=2)
    assert list(terms) == ["fig"]
    np.testing.assert_array_equal(counts.toarray(), [[1], [0], [1], [1]])  # fig's one document in chunk 1 too


def test_terms_once_in_each_of_two_chunks_are_kept_when_counted_by_separate_workers(monkeypatch):
    """Each word is in one document of each half: only the two chunks' term hashes together show df 2, so the
    workers' hash() must agree (fresh loky workers here: one hash seed set for the pool)."""
    from pipelines import workers

    monkeypatch.setattr(
        workers, "fork_refusal", lambda: "refused here"
    )  # forked workers share this process's seed anyway
    texts = [f"word{i % 150} filler{i % 7} common" for i in range(300)]
    labels = [str(i % 3) for i in range(300)]
    settings = Settings(features=1000, min_df=2, ngram_max=1, stop_words=None)
    alone, alone_x = fit_vectorizer(texts, labels, settings, workers=1)
    monkeypatch.setattr("pipelines.vectorize.chunks.PARALLEL_MIN_DOCS", 0)
    monkeypatch.setattr("pipelines.vectorize.chunks.DOCS_PER_WORKER", 1)
    merged, merged_x = fit_vectorizer(texts, labels, settings, workers=2)
    assert "word149" in alone.terms and merged.terms == alone.terms
    assert abs(merged_x - alone_x).max() == 0


def test_nb_ratios_weigh_the_terms_that_tell_the_classes_apart():
    import numpy as np
    import scipy.sparse as sp

    from pipelines.vectorize import nb_ratios

    # columns: "good" only in class a, "bad" only in class b, "the" in every document
    counts = sp.csr_matrix(np.array([[1, 0, 1], [2, 0, 1], [0, 1, 1], [0, 3, 1]], np.float32))
    ratios = nb_ratios(counts, np.array(["a", "a", "b", "b"]))
    assert ratios.shape == (3,) and ratios[2] < 1e-6 < ratios[0]
    np.testing.assert_allclose(ratios[0], ratios[1])
    np.testing.assert_allclose(ratios[0], np.log(3 / 7) - np.log(1 / 7), rtol=1e-6)  # (2+1)/(4+3) vs (0+1)/(4+3)


@pytest.mark.parametrize("classes", [2, 5])
def test_nb_ratios_of_some_columns_are_those_of_the_columns_copied_out(classes):
    """columns= spares the copy of the kept columns; the ratios must be the copy's, bit for bit, and the presence
    counts those of a dense count of each class's documents."""
    from pipelines.vectorize import nb_ratios
    from pipelines.vectorize.selection import _presence

    rng = np.random.default_rng(classes)
    dense = rng.integers(0, 4, size=(300, 60)).astype(np.float32) * (rng.random((300, 60)) < 0.2)
    counts = sp.csr_matrix(dense)
    labels = np.array([f"c{i}" for i in rng.integers(0, classes, 300)])
    columns = np.sort(rng.choice(60, 25, replace=False))
    assert np.array_equal(nb_ratios(counts, labels, columns=columns), nb_ratios(counts[:, columns], labels))
    in_class, everywhere = _presence(counts, labels, np.unique(labels))
    expected = np.array([(dense[labels == c] > 0).sum(axis=0) for c in np.unique(labels)])
    assert np.array_equal(in_class, expected) and np.array_equal(everywhere, (dense > 0).sum(axis=0)[None])


@pytest.mark.parametrize("sublinear", [True, False])
def test_weighting_on_threads_gives_the_bits_of_one_thread(sublinear, monkeypatch):
    """Weights and IDF over spans of entries on threads (large matrices), against the same in one span, and the
    product with diag(idf) and scikit-learn's normalize that the weighting stands for."""
    from sklearn.preprocessing import normalize

    from pipelines import vectorize

    rng = np.random.default_rng(7)
    dense = rng.integers(0, 5, size=(500, 80)).astype(np.float32) * (rng.random((500, 80)) < 0.2)
    counts = sp.csr_matrix(dense)
    done = {}
    for threaded_from in (1, 10**12):
        monkeypatch.setattr("pipelines.vectorize.weights.THREADED_ENTRIES", threaded_from)
        idf = vectorize.weights._idf(counts)
        done[threaded_from] = idf, vectorize.weights._weight(counts, idf, sublinear)
        assert len(vectorize.weights._entry_spans(counts.nnz)) == (os.cpu_count() if threaded_from == 1 else 1)
    (idf, threaded), (idf_one, one) = done[1], done[10**12]
    assert np.array_equal(idf, idf_one) and np.array_equal(threaded.data, one.data)
    tf = counts.copy()
    if sublinear:
        tf.data = np.log(tf.data) + np.float32(1.0)
    expected = normalize(sp.csr_matrix(tf.multiply(idf[None, :]), dtype=np.float32))
    np.testing.assert_allclose(threaded.toarray(), expected.toarray(), rtol=1e-6)


def test_nb_weighting_is_saved_in_the_vectorizer_and_applied_at_prediction():
    from pipelines.vectorize import fit_vectorizer
    from textclf.settings import Settings

    texts = ["good film good", "great good", "bad film", "awful bad bad"] * 60
    labels = ["pos", "pos", "neg", "neg"] * 60
    plain, x_plain = fit_vectorizer(texts, labels, Settings(stop_words=None, nb_weighting=False), workers=1)
    nb, x_nb = fit_vectorizer(texts, labels, Settings(stop_words=None, nb_weighting=True), workers=1)
    assert plain.terms == nb.terms and not np.allclose(plain.idf, nb.idf)
    np.testing.assert_allclose(nb.transform(texts[:4], workers=1).toarray(), x_nb[:4].toarray(), rtol=1e-5)


def test_a_large_corpus_is_fitted_on_a_sample_and_transformed_whole(corpus):
    """Above fit_documents the vocabulary, selection and weights come from a random sample; every document is
    still transformed, with that fitted vocabulary."""
    settings = Settings(features=50)
    vec, matrix = fit_vectorizer(corpus.texts, corpus.labels, settings, workers=1, fit_documents=20)
    rows = np.sort(np.random.default_rng(0).choice(len(corpus.texts), 20, replace=False))
    on_sample, _ = fit_vectorizer(
        [corpus.texts[i] for i in rows], [corpus.labels[i] for i in rows], settings, workers=1
    )
    assert vec.terms == on_sample.terms and np.array_equal(vec.idf, on_sample.idf)
    assert matrix.shape[0] == len(corpus.texts)
    assert (matrix != vec.transform(corpus.texts)).nnz == 0
    whole, _ = fit_vectorizer(corpus.texts, corpus.labels, settings, workers=1)
    assert whole.terms != vec.terms  # the default fits this small corpus whole


@pytest.mark.parametrize(
    "nb_weighting,char_ngrams,features",
    [(True, False, 50), (False, False, 50), (False, True, 40), (False, False, 100_000)],
)
def test_a_fit_without_its_matrix_gives_the_same_vectorizer(corpus, nb_weighting, char_ngrams, features):
    """matrix=False (a file transformed share by share afterwards) skips the weighting and, without NB weights, the
    kept columns' copy: the same terms and weights of every view (100,000 features: nothing selected)."""
    settings = Settings(features=features, nb_weighting=nb_weighting, char_ngrams=char_ngrams)
    full, matrix = fit_vectorizer(corpus.texts, corpus.labels, settings, workers=1)
    alone, none = fit_vectorizer(corpus.texts, corpus.labels, settings, workers=1, matrix=False)
    assert none is None and matrix is not None
    assert alone.config() == full.config() and alone.terms == full.terms
    assert {k: v.tolist() for k, v in alone.to_arrays().items()} == {k: v.tolist() for k, v in full.to_arrays().items()}
    assert (alone.transform(corpus.texts) != matrix).nnz == 0
    sampled, none = fit_vectorizer(corpus.texts, corpus.labels, settings, workers=1, fit_documents=20, matrix=False)
    on_sample, _ = fit_vectorizer(corpus.texts, corpus.labels, settings, workers=1, fit_documents=20)
    assert none is None and sampled.terms == on_sample.terms and np.array_equal(sampled.idf, on_sample.idf)


def _fit_in_chunks(monkeypatch, texts, labels, settings, chunk_characters, matrix):
    """fit_vectorizer with chunks of ~chunk_characters, and how many chunks merge_terms joined."""
    from pipelines import word_counts

    joined = []
    merge_terms = word_counts.merge_terms
    monkeypatch.setattr("pipelines.vectorize.chunks.CHUNK_CHARACTERS", chunk_characters)
    monkeypatch.setattr(
        word_counts, "merge_terms", lambda parts, *a, **k: joined.append(len(parts)) or merge_terms(parts, *a, **k)
    )
    vec, rows = fit_vectorizer(texts, labels, settings, workers=1, matrix=matrix)
    assert (rows is None) != matrix
    return vec, rows, joined


def _whole_matrix_fit(texts, labels, settings):
    """The fit from one matrix of every chunk's counts (count_terms, which the model search's widest view uses)
    -> (the vectorizer, the texts' weighted rows)."""
    from pipelines import vectorize
    from pipelines.workers import WorkerPool

    with WorkerPool(1) as pool:
        terms, counts = vectorize.count_terms(
            texts,
            settings.ngram_max,
            settings.stop_words,
            settings.min_df,
            pool,
            settings.start_token,
            unspaced_as_characters=settings.unspaced_as_characters,
        )
    return vectorize.fit._fitted_view(
        terms,
        counts,
        labels,
        settings,
        True,
        settings.ngram_max,
        settings.stop_words,
        settings.start_token,
        settings.unspaced_as_characters,
    )


def _same_fit(chunked, rows, whole, whole_rows):
    """The same terms, column weights (IDF, times the NB weights if any) and rows, bit for bit."""
    assert chunked.config() == whole.config() and chunked.terms == whole.terms
    assert chunked.idf.tolist() == whole.idf.tolist()
    assert chunked.idf.dtype == whole.idf.dtype == np.float32
    if rows is not None:
        assert rows.dtype == whole_rows.dtype == np.float32
        for part in ("indptr", "indices", "data"):
            assert getattr(rows, part).tolist() == getattr(whole_rows, part).tolist()


@pytest.mark.parametrize("matrix", [False, True])
@pytest.mark.parametrize(
    "nb_weighting,features,ngram_max,stop_words,sublinear",
    [
        (True, 50, 2, "english", True),
        (False, 50, 1, None, False),
        (True, 100_000, 2, None, True),
        (False, 30, 2, "english", True),
    ],
)
def test_a_fit_in_chunks_is_the_whole_matrixs_fit(
    corpus, monkeypatch, matrix, nb_weighting, features, ngram_max, stop_words, sublinear
):
    """fit_vectorizer over several chunks merges their terms alone and weighs each chunk's rows on its own
    (_fit_by_chunks): the vectorizer and rows of the fit over one matrix of all the counts (100,000 features:
    nothing selected)."""
    settings = Settings(
        features=features, nb_weighting=nb_weighting, ngram_max=ngram_max, stop_words=stop_words, sublinear_tf=sublinear
    )
    chunked, rows, joined = _fit_in_chunks(monkeypatch, corpus.texts, corpus.labels, settings, 300, matrix)
    assert joined and joined[0] >= 3  # several chunks, merged by their terms only
    _same_fit(chunked, rows, *_whole_matrix_fit(corpus.texts, corpus.labels, settings))


@pytest.mark.parametrize("features,nb_weighting,matrix", [(2_000, True, True), (20_000, False, False)])
def test_a_fit_in_chunks_of_real_questions_is_the_whole_matrixs_fit(monkeypatch, features, nb_weighting, matrix):
    """On TREC's 5,452 training questions in ~16 chunks (bigrams and the start token, as the search fits
    trec): the chi-squared selection, NB weights and rows of the whole matrix's fit, bit for bit."""
    from tests.conftest import shared_path

    rows = [json.loads(line) for line in shared_path("trec", "train.jsonl").open()]
    texts, labels = [row["text"] for row in rows], [row["label"] for row in rows]
    settings = Settings(features=features, nb_weighting=nb_weighting, start_token=True)
    chunked, matrix_rows, joined = _fit_in_chunks(
        monkeypatch, texts, labels, settings, sum(map(len, texts)) // 16, matrix
    )
    assert joined and joined[0] >= 8
    _same_fit(chunked, matrix_rows, *_whole_matrix_fit(texts, labels, settings))


def test_the_stop_word_copy_is_scikit_learns_list():
    """pipelines/stop_words.py copies the list so that a prediction need not import scikit-learn."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from pipelines.stop_words import ENGLISH

    assert ENGLISH == ENGLISH_STOP_WORDS


@pytest.mark.parametrize("char_ngrams", [False, True])
def test_predicting_with_a_fitted_word_model_imports_no_scikit_learn(corpus_dir, tmp_path, char_ngrams):
    """Importing scikit-learn cost a `textclf predict` process 1.5-2.3 s of ~3.4: a model of word n-grams (English
    stop words, the start token), with or without the character view, loads and transforms without it."""
    import subprocess
    import sys

    corpus = read_corpus(corpus_dir)
    vectorizer, _ = fit_vectorizer(
        corpus.texts, corpus.labels, Settings(features=64, stop_words="english", char_ngrams=char_ngrams)
    )
    assert (vectorizer.chars is not None) == char_ngrams
    np.savez(tmp_path / "vec.npz", **vectorizer.to_arrays())
    code = (
        "import json, sys, numpy as np; from pipelines.vectorize import Vectorizer; "
        f"arrays = dict(np.load({str(tmp_path / 'vec.npz')!r})); "
        f"v = Vectorizer.from_arrays(json.loads({json.dumps(vectorizer.config())!r}), arrays); "
        "m = v.transform(['the oven was hot', 'a goal in the last minute']); "
        "print(m.nnz > 0, any(name.startswith('sklearn') for name in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False"]


@pytest.mark.parametrize("threaded_from", [1, 10**12])  # the class sums on threads, then in one
@pytest.mark.parametrize("classes", [2, 3, 20])
def test_chi2_scores_are_scikit_learns_bit_for_bit(classes, threaded_from, monkeypatch):
    """Selection ties turn on the last bit: the statistic must be chi2's exactly, a zero column's NaN included."""
    from sklearn.feature_selection import chi2

    from pipelines.vectorize import chi2_scores

    monkeypatch.setattr("pipelines.vectorize.weights.THREADED_ENTRIES", threaded_from)

    rng = np.random.default_rng(classes)
    dense = rng.uniform(0.01, 3, size=(400, 90)).astype(np.float32) * (rng.random((400, 90)) < 0.15)
    dense[:, 7] = 0.0  # a column no row holds
    matrix = sp.csr_matrix(dense)
    labels = np.array([f"class-{i}" for i in rng.integers(0, classes, 400)])
    ours, theirs = chi2_scores(matrix, labels), chi2(matrix, labels)[0]
    assert ours.shape == theirs.shape and np.isnan(ours[7]) and np.isnan(theirs[7])
    assert np.array_equal(ours, theirs, equal_nan=True)


@pytest.mark.parametrize("compiled_from", [0, 10**12])  # scikit-learn's compiled loop, then numpy's formulation
def test_row_normalisation_is_scikit_learns_bit_for_bit(compiled_from, monkeypatch):
    from sklearn.preprocessing import normalize

    from pipelines.vectorize.weights import _normalize_rows

    monkeypatch.setattr("pipelines.vectorize.weights.NORMALIZE_COMPILED_NONZEROS", compiled_from)

    rng = np.random.default_rng(0)
    dense = rng.uniform(0.01, 100, size=(60, 80)).astype(np.float32) * (rng.random((60, 80)) < 0.1)
    dense[[3, 17]] = 0.0  # all-zero rows stay zero
    matrix = sp.csr_matrix(dense)
    ours = matrix.copy()
    _normalize_rows(ours)
    theirs = normalize(matrix, copy=True)
    assert ours.dtype == np.float32 and np.array_equal(ours.indptr, theirs.indptr)
    assert np.array_equal(ours.data, theirs.data)


def _threads_exchange(parts: int):
    """An exchange for `parts` threads standing in for processes: each hands in its arrays and gets everyone's
    in thread (process) order once all have."""
    import threading

    barrier, slots = threading.Barrier(parts), [None] * parts

    def make(index):
        def exchange(arrays):
            barrier.wait()  # the previous round is read by everyone
            slots[index] = {k: np.array(v) for k, v in arrays.items()}
            barrier.wait()
            return list(slots)

        return exchange

    return make


@pytest.mark.parametrize(
    "kind,features,parts", [("tfidf", 32754, 2), ("tfidf", 32754, 3), ("tfidf", 60, 2), ("hashing", 512, 3)]
)
def test_shared_fit_is_the_one_process_fit(corpus, kind, features, parts):
    """Each share counts only its documents, the shares exchange counts and sums, and they agree on the
    one-process vectorizer: the same terms, IDF and NB weights, and their matrices stacked are its matrix
    (with a chi-squared selection of 60 columns too: no tie at this corpus's cut)."""
    from concurrent.futures import ThreadPoolExecutor

    from pipelines.vectorize import fit_vectorizer_shared
    from pipelines.workers import WorkerPool

    settings = Settings(vectorizer=kind, features=features)
    whole_vec, whole_x = fit_vectorizer(corpus.texts, corpus.labels, settings, workers=1)
    bounds = np.linspace(0, len(corpus.texts), parts + 1).astype(int)
    exchange = _threads_exchange(parts)
    with WorkerPool(1) as pool, ThreadPoolExecutor(parts) as threads:
        results = list(
            threads.map(
                lambda i: fit_vectorizer_shared(
                    corpus.texts[bounds[i] : bounds[i + 1]],
                    corpus.labels[bounds[i] : bounds[i + 1]],
                    settings,
                    exchange(i),
                    pool,
                ),
                range(parts),
            )
        )
    for vec, _, classes in results:
        assert vec.terms == whole_vec.terms
        np.testing.assert_allclose(vec.idf, whole_vec.idf, rtol=1e-6)
        assert classes == sorted(set(corpus.labels))
    stacked = sp.vstack([x for _, x, _ in results], format="csr")
    assert abs(stacked - whole_x).max() < 1e-6


def test_stacking_rows_part_by_part_is_vstack():
    from pipelines.word_counts import stack_rows

    parts = [sp.random(n, 30, density=0.2, format="csr", random_state=n, dtype=np.float32) for n in (5, 0, 7, 1)]
    want = sp.vstack(parts, format="csr")
    got = stack_rows(list(parts))
    assert got.shape == want.shape and got.dtype == want.dtype
    assert (got != want).nnz == 0 and np.array_equal(got.indptr, want.indptr)
    single = [parts[0]]
    assert stack_rows(single) is parts[0] and single == []


def test_the_character_view_follows_the_words_and_reloads(corpus):
    """char_ngrams: the words' columns as without it, then the character 2-5-grams' (each view's rows of unit
    length), saved and loaded with the model's arrays; a word never seen in training still reaches the
    character columns through its n-grams."""
    from pipelines.vectorize import CHAR_NGRAM_RANGE

    words, x_words = fit_vectorizer(corpus.texts, corpus.labels, Settings(features=200), workers=1)
    both, x_both = fit_vectorizer(corpus.texts, corpus.labels, Settings(features=200, char_ngrams=True), workers=1)
    n_words, n_chars = both.view_widths
    assert (n_words, n_chars) == (words.n_features, 200) and len(both.chars.terms) == 200
    assert both.n_features == x_both.shape[1] == n_words + n_chars
    np.testing.assert_array_equal(x_both[:, :n_words].toarray(), x_words.toarray())
    assert all(CHAR_NGRAM_RANGE[0] <= len(term) <= CHAR_NGRAM_RANGE[1] for term in both.chars.terms)
    for part in (x_both[:, :n_words], x_both[:, n_words:]):
        lengths = np.sqrt(np.asarray(part.multiply(part).sum(axis=1)).ravel())
        np.testing.assert_allclose(lengths[lengths > 0], 1.0, rtol=1e-5)
    again = Vectorizer.from_arrays(both.config(), both.to_arrays())
    np.testing.assert_allclose(again.transform(corpus.texts[:5]).toarray(), x_both[:5].toarray(), rtol=1e-6)
    known = max((w for w in both.terms if " " not in w), key=len)  # a word whose n-grams were kept, spelt anew
    unseen = again.transform([known + "zzqx"])
    assert unseen[:, :n_words].nnz == 0 and unseen[:, n_words:].nnz > 0
    with pytest.raises(ValueError):
        Vectorizer.from_arrays(
            {**both.config(), "chars": {"analyzer": "char", "ngram_range": [1, 9]}}, both.to_arrays()
        )


def test_term_mask_keeps_short_enough_terms_without_a_stop_word():
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from pipelines.vectorize import term_mask

    rng = np.random.default_rng(0)
    vocabulary = ["what", "is", "the", "cat", "sat", "__start__", "mat", "who", "zebra", "x"]
    terms = np.array([" ".join(rng.choice(vocabulary, rng.integers(1, 4))) for _ in range(500)], dtype=object)
    for ngram_max in (1, 2, 3):
        expected = [
            len(t.split(" ")) <= ngram_max and not any(w in ENGLISH_STOP_WORDS for w in t.split(" ")) for t in terms
        ]
        assert term_mask(terms, ngram_max, "english").tolist() == expected
        assert term_mask(terms, ngram_max, None).tolist() == [len(t.split(" ")) <= ngram_max for t in terms]
    assert term_mask(np.array(["the cat", "cat sat"], dtype=object), 2, "english").tolist() == [False, True]
    with pytest.raises(ValueError, match="stop_words"):
        term_mask(terms, 2, "french")
