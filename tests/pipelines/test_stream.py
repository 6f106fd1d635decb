"""Streaming hashing vectorization: the in-memory result, without holding the texts."""

import json
import tracemalloc

import numpy as np
import pytest

from pipelines.corpus import read_corpus
from pipelines.stream import hash_corpus, weigh
from pipelines.vectorize import fit_hashing_idf, fit_vectorizer
from textclf.settings import Settings
from textclf.errors import CorpusError


@pytest.mark.parametrize("workers, chunk_docs", [(1, 5), (2, 7), (None, 20_000)])
def test_streamed_matrix_equals_the_in_memory_one(corpus_dir, workers, chunk_docs):
    settings = Settings(vectorizer="hashing", features=1024)
    corpus = read_corpus(corpus_dir)
    vectorizer, in_memory = fit_vectorizer(corpus.texts, corpus.labels, settings, workers=1)
    streamed = hash_corpus(corpus_dir, settings, workers=workers, chunk_docs=chunk_docs)
    assert streamed.labels == corpus.labels and streamed.fingerprint == corpus.fingerprint
    assert streamed.format == "folder" and len(streamed) == len(corpus)
    streamed_vectorizer = fit_hashing_idf(streamed.counts, settings)
    np.testing.assert_array_equal(streamed_vectorizer.idf, vectorizer.idf)
    weighted = weigh(streamed.counts, streamed_vectorizer)
    assert weighted.shape == in_memory.shape and abs(weighted - in_memory).max() == 0


def test_streaming_refuses_what_reading_refuses(tmp_path):
    one_label = tmp_path / "one.jsonl"
    one_label.write_text("\n".join(json.dumps({"text": f"doc {i}", "label": "a"}) for i in range(3)))
    with pytest.raises(CorpusError, match="only one label"):
        hash_corpus(one_label, Settings(vectorizer="hashing"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine", "label": "a"}\nnot json\n')
    with pytest.raises(CorpusError, match="line 2 is not valid JSON"):
        hash_corpus(bad, Settings(vectorizer="hashing"))


def test_a_bad_line_late_in_a_parallel_stream_fails_the_read(tmp_path):
    """A reading error in a later chunk, while earlier chunks are in worker processes, still fails the whole
    read with the line named (the stream must not end quietly with the documents before it)."""
    lines = [json.dumps({"text": f"document number {i}", "label": "ab"[i % 2]}) for i in range(12)]
    lines[7] = "not json"
    path = tmp_path / "late.jsonl"
    path.write_text("\n".join(lines))
    with pytest.raises(CorpusError, match="line 8 is not valid JSON"):
        hash_corpus(path, Settings(vectorizer="hashing"), workers=2, chunk_docs=2)


def test_peak_memory_stays_far_below_the_corpus_text(tmp_path):
    """~20 MB of text in 3,000 long documents of few distinct words (so the matrix is small) streamed in
    chunks of 200: Python's peak traced memory stays under half the text and a third of what reading the
    corpus whole (as the tfidf path must) takes."""
    rng = np.random.default_rng(0)
    words = np.array([f"word{i:06d}" for i in range(12)])
    path = tmp_path / "big.jsonl"
    with path.open("w") as handle:
        for i in range(3_000):
            text = " ".join(rng.choice(words, 600))
            handle.write(json.dumps({"text": text, "label": "ab"[i % 2]}) + "\n")
    text_bytes = path.stat().st_size
    settings = Settings(vectorizer="hashing", features=4096, ngram_max=1, stop_words=None)

    def peak_of(fn):
        tracemalloc.start()
        try:
            result = fn()
            return result, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    streamed, peak = peak_of(lambda: hash_corpus(path, settings, workers=1, chunk_docs=200))
    _, read_peak = peak_of(lambda: read_corpus(path))
    assert len(streamed) == 3_000 and text_bytes > 19e6
    assert peak < text_bytes / 2 and peak < read_peak / 3, (
        f"peak {peak / 1e6:.1f} MB (reading whole: {read_peak / 1e6:.1f} MB) for {text_bytes / 1e6:.1f} MB of text"
    )
