"""The record contract (pipelines/formats/records.py), proven by generated inputs: one logical corpus written in
every format reads as the same documents; a bad value in a typed format (JSONL, Parquet) is refused in the same
words by both; a label is one class however its characters are composed."""

import json
import unicodedata
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pipelines.corpus import read_corpus
from pipelines.errors import CorpusError
from pipelines.formats.records import class_name, label_value, text_value

# Words a document may hold in every format: no separator of a format (fastText's spaces inside a label, CSV's and
# TSV's own delimiters are quoted or kept out), letters of several scripts, digits and punctuation.
WORD = st.text(
    st.characters(whitelist_categories=("Ll", "Lu", "Lo", "Nd"), whitelist_characters="-'!?."), min_size=1, max_size=8
)
TEXT = st.lists(WORD, min_size=1, max_size=6).map(" ".join)
# Labels: accented letters typed composed or decomposed ("é" or "e" + a combining accent) must be one class.
LABEL = st.sampled_from(["sport", "café", "cafe\u0301", "naïve", "Ünïcode", "7", "a-b"])
CORPUS = st.lists(st.tuples(TEXT, LABEL), min_size=4, max_size=12).filter(
    lambda docs: len({unicodedata.normalize("NFC", label) for _, label in docs}) >= 2
)


def _write(folder: Path, docs: list[tuple[str, str]]) -> dict[str, Path]:
    """The same documents as a JSONL, CSV, TSV, Parquet and fastText file (labels first, and last) and a folder
    corpus."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {kind: folder / f"corpus.{kind}" for kind in ("jsonl", "csv", "tsv", "parquet")}
    paths["jsonl"].write_text("".join(json.dumps({"text": t, "label": label}) + "\n" for t, label in docs))
    paths["csv"].write_text("label,text\n" + "".join(f'"{label}","{t}"\n' for t, label in docs))
    paths["tsv"].write_text("label\ttext\n" + "".join(f"{label}\t{t}\n" for t, label in docs))
    pq.write_table(pa.table({"text": [t for t, _ in docs], "label": [label for _, label in docs]}), paths["parquet"])
    paths["fasttext"] = folder / "corpus.txt"
    paths["fasttext"].write_text("".join(f"__label__{label} {t}\n" for t, label in docs))
    paths["fasttext, labels last"] = folder / "corpus_end.txt"  # as fastText reads them too
    paths["fasttext, labels last"].write_text("".join(f"{t} __label__{label}\n" for t, label in docs))
    paths["folder"] = folder / "tree"
    for number, (t, label) in enumerate(docs):
        (paths["folder"] / label).mkdir(parents=True, exist_ok=True)
        (paths["folder"] / label / f"{number}.txt").write_text(t)
    return paths


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(CORPUS)
def test_one_corpus_in_every_format_reads_as_the_same_documents(tmp_path_factory, docs):
    paths = _write(tmp_path_factory.mktemp("formats"), docs)
    expected = sorted((unicodedata.normalize("NFC", label), t) for t, label in docs)
    for kind, path in paths.items():
        corpus = read_corpus(path)
        assert sorted(zip(corpus.labels, corpus.texts)) == expected, kind
        assert corpus.skipped == {}, kind


BAD_LABELS = st.sampled_from([True, False, {"a": 1}, [["x"]], float("nan"), float("inf"), "a\u001fb", "a\u0007"])
BAD_TEXTS = st.sampled_from([3, 2.5, True, ["a", "b"], {"t": "x"}])


def _refusal(path: Path) -> str:
    with pytest.raises(CorpusError) as refused:
        read_corpus(path)
    message = str(refused.value)
    assert "\n" not in message
    return message.split(" row 1 " if " row 1 " in message else " line 1 ", 1)[1]  # the words after the place


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.tuples(st.just("label"), BAD_LABELS), st.tuples(st.just("text"), BAD_TEXTS)))
def test_a_bad_value_is_refused_in_the_same_words_by_every_typed_format(tmp_path_factory, bad):
    field, value = bad  # every row's value of the field (a Parquet column holds one type)
    other = "label" if field == "text" else "text"
    rows = [
        {other: fine, field: value}
        for fine in (("sport", "weather", "sport") if other == "label" else ("a fine match", "rain again", "goal"))
    ]
    folder = tmp_path_factory.mktemp("bad")
    jsonl = folder / "c.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in rows))
    parquet = folder / "c.parquet"
    pq.write_table(
        pa.table({field: pa.array([row[field] for row in rows]), other: [row[other] for row in rows]}), parquet
    )
    assert _refusal(jsonl) == _refusal(parquet)


def test_the_contract_on_its_own():
    assert class_name("  cafe\u0301 ", "x", 1) == "café"
    assert label_value(["b", " a", "", None], "x", 1) == "\x1fa\x1fb"  # a set of two labels, the empty ones none
    assert label_value(None, "x", 1) == "" and text_value(None, "x", 1) == ""
    assert label_value(10**40, "x", 1) == str(10**40) and label_value(2.0, "x", 1) == "2"
    with pytest.raises(CorpusError, match=r"^x 4 has a \"text\" that is a list, not a string: write"):
        text_value(["a"], "x", 4)
    with pytest.raises(CorpusError, match="holding the control character"):
        class_name("tab\there", "x", 1)
