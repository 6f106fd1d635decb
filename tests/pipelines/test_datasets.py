"""Dataset converters on the real corpora in ../shared/data (skipped when it is absent)."""

import json
from collections import Counter

from tests.conftest import shared_path
from pipelines.corpus import read_corpus
from pipelines.datasets import build_dataset


def _labels(path):
    return Counter(json.loads(line)["label"] for line in path.open(encoding="utf-8"))


def test_news4_split_sizes(tmp_path):
    paths = build_dataset("news4", shared_path("20news-bydate"), tmp_path)
    train, test = _labels(paths["train"]), _labels(paths["test"])
    assert sum(train.values()) == 9650 and sum(test.values()) == 6425
    assert sorted(train) == ["comp", "rec", "sci", "talk"]
    assert read_corpus(paths["train"]).label_counts == dict(sorted(train.items()))


def test_agnews7600_split(tmp_path):
    paths = build_dataset("agnews7600", shared_path("ag_news", "test.csv"), tmp_path)
    train, test = _labels(paths["train"]), _labels(paths["test"])
    assert sum(train.values()) == 6080 and sum(test.values()) == 1520
    assert sorted(train) == ["Business", "Sci/Tech", "Sports", "World"]


def test_20news_folder_reads_with_dotfile_skipped():
    corpus = read_corpus(shared_path("20news-bydate", "20news-bydate-test"))
    assert len(corpus) == 7532 and len(corpus.label_counts) == 20
    assert corpus.skipped == {"hidden": 1}  # the stray .DS_Store at the split root
