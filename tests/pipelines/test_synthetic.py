import json

import pytest
from sklearn.feature_extraction.text import CountVectorizer

from pipelines.corpus import read_corpus
from pipelines.synthetic import write_synthetic
from textclf.errors import CorpusError


def test_synthetic_corpus_has_the_sources_labels_and_words(corpus_dir, tmp_path):
    source = read_corpus(corpus_dir)
    path = write_synthetic(source.texts, source.labels, tmp_path / "syn.jsonl", 500, seed=0)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 500 and {r["label"] for r in rows} == set(source.labels)
    analyzer = CountVectorizer().build_analyzer()
    source_words = set(analyzer(" ".join(source.texts)))
    sample_words = set(" ".join(r["text"] for r in rows).split())
    assert len(sample_words) > 100 and sample_words <= source_words
    again = write_synthetic(source.texts, source.labels, tmp_path / "again.jsonl", 500, seed=0)
    assert again.read_text() == path.read_text()
    assert read_corpus(path).label_counts  # a corpus textclf reads


def test_synthetic_corpus_refuses_bad_requests(corpus_dir, tmp_path):
    source = read_corpus(corpus_dir)
    with pytest.raises(CorpusError, match="at least 1 document"):
        write_synthetic(source.texts, source.labels, tmp_path / "x.jsonl", 0)
    with pytest.raises(CorpusError, match="at least 2 labels"):
        write_synthetic(source.texts, ["one"] * len(source.texts), tmp_path / "x.jsonl", 10)
