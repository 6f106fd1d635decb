"""A corpus's format decided once (pipelines/formats/detect.py): the class each path gets, what it decided from the
file, and that the decision, handed to a worker as it is, reads what this process reads."""

import json
import pickle
from dataclasses import FrozenInstanceError

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.errors import CorpusError
from pipelines.formats.base import ReadStats
from pipelines.formats.detect import corpus_format
from pipelines.formats.fasttext import FastTextFormat
from pipelines.formats.folder import FolderFormat
from pipelines.formats.jsonl import JsonlFormat
from pipelines.formats.parquet import ParquetFormat
from pipelines.formats.table import TableFormat


def _corpora(root):
    """One small corpus of each format under root -> {name: path}."""
    for label in ("cats", "dogs"):
        (root / "folder" / label).mkdir(parents=True)
        (root / "folder" / label / "a.txt").write_text(f"a text about {label}")
    (root / "c.csv").write_text("category,review\ncats,soft fur\ndogs,loud bark\n")
    (root / "c.tsv").write_text("cats\tsoft fur\ndogs\tloud bark\n")
    (root / "c.jsonl").write_text(
        "".join(json.dumps({"sentence": t, "label": l}) + "\n" for t, l in (("soft fur", "cats"), ("bark", "dogs")))
    )
    (root / "c.txt").write_text("__label__cats soft fur\n__label__dogs loud bark\n")
    pq.write_table(pa.table({"label": ["cats", "dogs"], "text": ["soft fur", "loud bark"]}), root / "c.parquet")
    return {
        "folder": root / "folder",
        "csv": root / "c.csv",
        "tsv": root / "c.tsv",
        "jsonl": root / "c.jsonl",
        "fasttext": root / "c.txt",
        "parquet": root / "c.parquet",
    }


def test_each_path_gets_its_formats_class_with_what_the_file_decided(tmp_path):
    paths = _corpora(tmp_path)
    kinds = {name: corpus_format(path) for name, path in paths.items()}
    assert {name: fmt.kind for name, fmt in kinds.items()} == {name: name for name in paths}
    assert isinstance(kinds["folder"], FolderFormat) and isinstance(kinds["fasttext"], FastTextFormat)
    assert isinstance(kinds["csv"], TableFormat) and (kinds["csv"].label_column, kinds["csv"].text_columns) == (0, (1,))
    assert kinds["csv"].header_width == 2 and kinds["tsv"].header_width == 0  # a header row names its columns
    assert isinstance(kinds["jsonl"], JsonlFormat) and kinds["jsonl"].text_keys == ("sentence",)
    assert isinstance(kinds["parquet"], ParquetFormat) and kinds["parquet"].text_columns == (1,)
    with pytest.raises(FrozenInstanceError):
        kinds["csv"].label_column = 1  # a decision, not a state


@pytest.mark.parametrize("name", ["csv", "tsv", "jsonl", "fasttext", "parquet"])
def test_a_worker_handed_the_decision_reads_what_this_process_reads(tmp_path, name):
    """The format is pickled to the workers as it is: their share of the file gives this process's documents, and
    the texts read back from the documents' places are theirs."""
    path = _corpora(tmp_path)[name]
    fmt = corpus_format(path)
    here = list(fmt.documents(path, 1 << 20, ReadStats(), (0, 1)))
    sent = pickle.loads(pickle.dumps(fmt))
    placed = list(sent.share_documents(path, ReadStats(), 0, 1))
    assert [(label, text) for _, label, text in placed] == here
    places = [place for place, _, _ in placed]
    assert list(sent.texts_at(path, places)) == [text for _, text in here]


@pytest.mark.parametrize(
    "name, content, words",
    [
        ("x.txt", "not a corpus", "unknown type '.txt'"),
        ("x", "no suffix", "no known type"),
        ("x.txt", "a header\n__label__cats soft fur\n", "reads as fastText's format but its first line holds no"),
        ("x.txt", "cats\tsoft fur\n", "its lines hold tabs"),
    ],
)
def test_a_file_of_no_known_format_is_refused_with_the_fix(tmp_path, name, content, words):
    (tmp_path / name).write_text(content)
    with pytest.raises(CorpusError, match=words):
        corpus_format(tmp_path / name)


def test_a_path_that_is_no_corpus_is_refused_before_any_format(tmp_path):
    with pytest.raises(CorpusError, match="does not exist"):
        corpus_format(tmp_path / "missing.csv")
