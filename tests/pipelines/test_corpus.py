import json
import pickle

import numpy as np
import pytest

from pipelines.corpus import read_corpus
from textclf.errors import CorpusError


def test_folder_corpus_reads_every_label(corpus_dir):
    corpus = read_corpus(corpus_dir)
    assert corpus.label_counts == {"cooking": 12, "space": 12, "sports": 12}
    assert corpus.format == "folder"
    assert corpus.skipped == {}
    assert len(corpus.fingerprint) == 64


def test_fingerprint_tracks_content(corpus_dir):
    before = read_corpus(corpus_dir).fingerprint
    assert read_corpus(corpus_dir).fingerprint == before
    (corpus_dir / "space" / "01.txt").write_text("changed text about orbits")
    assert read_corpus(corpus_dir).fingerprint != before


def test_skips_are_counted(corpus_dir):
    (corpus_dir / "space" / ".hidden.txt").write_text("a hidden note about rockets")
    (corpus_dir / ".git").mkdir()
    (corpus_dir / "space" / "empty.txt").write_text("   \n")
    (corpus_dir / "space" / "image.bin").write_bytes(b"\x89PNG\x00\x01\x02")
    (corpus_dir / "sports" / "latin1.txt").write_bytes("Le gardien a arr\xeat\xe9 le penalty".encode("latin-1"))
    nested = corpus_dir / "sports" / "archive" / "2024"
    nested.mkdir(parents=True)
    (nested / "old.txt").write_text("the old match report from the archive")
    (corpus_dir / "urls.txt").write_text("a file beside the label folders: no label")
    corpus = read_corpus(corpus_dir)
    assert corpus.skipped == {"hidden": 2, "empty": 1, "binary": 1, "outside_label_folders": 1}
    assert corpus.non_utf8 == 1
    assert "Le gardien a arrêté le penalty" in corpus.texts
    assert corpus.label_counts["sports"] == 14  # 12 + latin-1 file + nested file


def test_oversized_file_is_skipped(corpus_dir):
    (corpus_dir / "space" / "huge.txt").write_bytes(b"word " * (3 * 1024 * 1024 // 5 + 1))
    corpus = read_corpus(corpus_dir, max_file_mb=1)
    assert corpus.skipped == {"too_large": 1}


def test_csv_without_header_is_ag_news_style(tmp_path):
    path = tmp_path / "news.csv"
    path.write_text('"3","Stocks fall","Markets slid\\on Monday"\n"2","Team wins","Late goal"\n"3","x","y"\n')
    corpus = read_corpus(path)
    assert corpus.labels == ["3", "2", "3"]
    assert corpus.texts[0] == "Stocks fall Markets slid on Monday"


def test_csv_line_breaks_written_as_backslash_n_or_a_backslash_become_spaces(tmp_path):
    yelp = tmp_path / "yelp.csv"  # Zhang et al.'s corpora: "\\n" is a line break
    yelp.write_text(
        "".join(f'"{1 + i % 2}","Great food.\\n\\nThe service was slow\\nbut kind {i}."\n' for i in range(6))
    )
    assert read_corpus(yelp).texts[0] == "Great food.  The service was slow but kind 0."
    ag = tmp_path / "ag.csv"  # AG News: a backslash alone, and a word after it may start with an n
    ag.write_text(
        "".join(
            f'"{1 + i % 2}","Title {i}","Wall Street\'s dwindling\\band of ultra-cynics\\news of it"\n'
            for i in range(6)
        )
    )
    assert read_corpus(ag).texts[0] == "Title 0 Wall Street's dwindling band of ultra-cynics news of it"


def test_csv_with_header_uses_label_column(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("text,label\nsome text,a\nother text,b\n")
    corpus = read_corpus(path)
    assert corpus.labels == ["a", "b"] and corpus.texts == ["some text", "other text"]


def test_csv_header_names_its_label_and_text_columns(tmp_path):
    # Kaggle's IMDB reviews: the text first, the label named "sentiment"; an id column that is not text
    path = tmp_path / "reviews.csv"
    path.write_text('id,review,sentiment\n1,"a fine, moving film",positive\n2,dull and long,negative\n')
    corpus = read_corpus(path)
    assert corpus.labels == ["positive", "negative"]
    assert corpus.texts == ["a fine, moving film", "dull and long"]  # the id is not read as text
    both = tmp_path / "both.csv"  # two label names: the first of LABEL_COLUMNS is the label, no text named
    both.write_text("category,label,notes\nx,a,first note\ny,b,second note\n")
    corpus = read_corpus(both)
    assert corpus.labels == ["a", "b"] and corpus.texts == ["x first note", "y second note"]


def test_tsv_is_read_unquoted_with_glue_headers(tmp_path):
    path = tmp_path / "sst2.tsv"
    # GLUE's SST-2: "sentence<TAB>label", quote marks that are text, not quoting
    path.write_text('sentence\tlabel\n"hide new secretions\t0\nit \'s a charming , often "affecting" journey\t1\n')
    corpus = read_corpus(path)
    assert corpus.format == "tsv"
    assert corpus.labels == ["0", "1"]
    assert corpus.texts == ['"hide new secretions', 'it \'s a charming , often "affecting" journey']
    headless = tmp_path / "spam.tsv"  # the SMS spam collection: label first, no header
    headless.write_text("ham\tsee you at 5\nspam\tWIN a prize now\n")
    assert read_corpus(headless).labels == ["ham", "spam"]


def test_a_table_of_one_column_a_row_is_refused_naming_the_separator(tmp_path):
    path = tmp_path / "spreadsheet.csv"  # a spreadsheet's export with semicolons
    path.write_text("label;text\npos;good film\nneg;bad film\n")
    with pytest.raises(
        CorpusError,
        match=r"one column in each of its 3 rows: .* separated by commas \(or, "
        r"tab-separated, as a \.tsv file\); save it so$",
    ):
        read_corpus(path)


def test_a_table_whose_labels_look_like_texts_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "reviews.csv"  # a header the reader does not know: column 1, the text, read as the label
    path.write_text("review,stars\n" + "".join(f"review number {i} of this film,{i % 2}\n" for i in range(60)))
    with pytest.raises(CorpusError, match=r"61 distinct labels among 61 documents.*header row names the label"):
        read_corpus(path)
    # many classes, each shared by several documents, are labels
    fine = tmp_path / "intents.csv"
    fine.write_text("".join(f"intent{i % 30},how do I do thing {i}\n" for i in range(60)))
    assert len(set(read_corpus(fine).labels)) == 30


def test_jsonl_keys_named_as_a_table_names_its_columns_are_read_so(tmp_path):
    glue = tmp_path / "sst2.jsonl"  # GLUE's SST-2 as Hugging Face writes it: an index that is not text
    glue.write_text(
        "".join(
            json.dumps({"idx": i, "sentence": f"a charming journey {i}", "Category": i % 2}) + "\n" for i in range(4)
        )
    )
    corpus = read_corpus(glue)
    assert corpus.labels == ["0", "1", "0", "1"] and corpus.texts[1] == "a charming journey 1"
    dbpedia = tmp_path / "dbpedia.jsonl"  # several text keys: joined in the record's order
    dbpedia.write_text(
        json.dumps({"label": 3, "title": "Leipzig", "content": "a city in Saxony"})
        + "\n"
        + json.dumps({"label": 5, "title": "Elbe", "content": None})
        + "\n"
    )
    corpus = read_corpus(dbpedia)
    assert corpus.texts == ["Leipzig a city in Saxony", "Elbe"] and corpus.labels == ["3", "5"]
    later = tmp_path / "later.jsonl"  # every record holds the first record's keys
    later.write_text(json.dumps({"sentence": "x", "label": 1}) + "\n" + json.dumps({"text": "y", "label": 0}) + "\n")
    with pytest.raises(
        CorpusError,
        match=r'line 2 lacks a "sentence" or "label" key: write one '
        r'\{"sentence": \.\.\., "label": \.\.\.\} object per line '
        r'\(its keys: "text", "label"\)$',
    ):
        read_corpus(later)


def test_jsonl_keys_no_table_names_get_the_renames_in_the_error(tmp_path):
    path = tmp_path / "mixed.jsonl"  # a first record of "text" and "label", then one named otherwise
    path.write_text(
        json.dumps({"text": "a", "label": 1})
        + "\n"
        + json.dumps({"idx": 0, "sentence": "a charming journey", "category": 1})
        + "\n"
    )
    with pytest.raises(
        CorpusError,
        match=r'line 2 lacks a "text" or "label" key: .* \(rename "sentence" to "text" '
        r'and "category" to "label"\)$',
    ):
        read_corpus(path)
    path.write_text(json.dumps({"text": "a charming journey", "stars": 1}) + "\n")  # no rename: its keys said
    with pytest.raises(CorpusError, match=r'object per line \(its keys: "text", "stars"\)$'):
        read_corpus(path)


def test_fasttext_format_reads_its_labels_as_fasttext_does(tmp_path):
    path = tmp_path / "cooking.train"  # fastText's own files: any name, recognised by the first line
    path.write_text(
        "__label__baking How long to bake bread?\n"
        "__label__knives\tWhich steel keeps an edge ?\n"
        "\n"
        "a line without a label\n"
        "why does toast burn __label__baking\n"  # a label anywhere in the line, as fastText reads it
        "__label__knives\n"
        "the prefix inside foo__label__bar a word is text __label__baking\n"
    )
    corpus = read_corpus(path)
    assert corpus.format == "fasttext"
    assert corpus.labels == ["baking", "knives", "baking", "baking"]
    assert corpus.texts == [
        "How long to bake bread?",
        "Which steel keeps an edge ?",
        "why does toast burn",
        "the prefix inside foo__label__bar a word is text",
    ]
    assert corpus.skipped == {"no_label": 1, "empty": 1}


def test_a_fasttext_file_whose_labels_end_its_lines_is_read_as_fasttext_reads_it(tmp_path):
    path = tmp_path / "reviews.txt"
    path.write_text("a quiet charming film __label__pos\n\ndull and long __label__neg\n")
    corpus = read_corpus(path)
    assert corpus.format == "fasttext"
    assert (corpus.texts, corpus.labels) == (["a quiet charming film", "dull and long"], ["pos", "neg"])
    path.write_text("a title line\nsome text __label__pos\n")  # the prefix below a first line without it
    with pytest.raises(CorpusError, match="reads as fastText's format but its first line holds no"):
        read_corpus(path)


def test_fasttext_lines_with_several_labels_are_label_sets(tmp_path):
    """Several __label__s at the start or at the end of a line, as fastText reads them: one document of several
    labels (pipelines/labels.py), the corpus multi-label."""
    from pipelines.labels import is_multi_label, label_set

    path = tmp_path / "cooking.stackexchange.txt"
    path.write_text(
        "__label__baking bread\n__label__sauce __label__cheese mac and cheese\n"
        "what oven for pizza __label__oven __label__pizza\n"
    )
    corpus = read_corpus(path)
    assert [label_set(label) for label in corpus.labels] == [["baking"], ["cheese", "sauce"], ["oven", "pizza"]]
    assert corpus.texts == ["bread", "mac and cheese", "what oven for pizza"] and is_multi_label(corpus.labels)


def test_label_lists_in_jsonl_csv_and_parquet_are_label_sets(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipelines.labels import label_set

    rows = [("grain and wheat", ["grain", "wheat"]), ("nothing to see", []), ("trade talk", ["trade"])]
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t, "labels": l}) + "\n" for t, l in rows))
    under_label = tmp_path / "label.jsonl"
    under_label.write_text(
        json.dumps({"text": "a list under label", "label": ["b", "a", "b"]})
        + "\n"
        + json.dumps({"text": "one", "label": "a"})
        + "\n"
    )
    table = tmp_path / "c.csv"
    table.write_text("text,labels\n" + "".join(f'"{t}","{",".join(l)}"\n' for t, l in rows))
    parquet = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": [t for t, _ in rows], "labels": [l for _, l in rows]}), parquet)
    expected = [["grain", "wheat"], [], ["trade"]]
    assert [label_set(label) for label in read_corpus(under_label).labels] == [["a", "b"], ["a"]]
    for path in (jsonl, table, parquet):
        assert [label_set(label) for label in read_corpus(path).labels] == expected, path


def test_a_csv_label_column_of_one_label_is_never_split(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text('label,text\n"a,b",first\nc,second\n')
    assert read_corpus(path).labels == ["a,b", "c"]


def test_fasttext_and_parquet_shares_add_up_to_the_corpus(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipelines.corpus import open_documents

    lines = [f"__label__{'ab'[i % 2]} document number {i}" for i in range(23)]
    fasttext = tmp_path / "data.txt"
    fasttext.write_text("\n".join(lines) + "\n")
    parquet = tmp_path / "data.parquet"
    pq.write_table(
        pa.table({"text": [f"document number {i}" for i in range(23)], "label": ["ab"[i % 2] for i in range(23)]}),
        parquet,
        row_group_size=5,
    )
    for path in (fasttext, parquet):
        whole = list(open_documents(path)[2])
        assert len(whole) == 23
        for count in (2, 3, 7):
            assert [doc for i in range(count) for doc in open_documents(path, share=(i, count))[2]] == whole


def _hugging_face_parquet(path, columns: dict, names: list[str]):
    import pyarrow as pa
    import pyarrow.parquet as pq

    features = {"label": {"names": names, "_type": "ClassLabel"}, "text": {"dtype": "string", "_type": "Value"}}
    table = pa.table(columns)
    pq.write_table(table.replace_schema_metadata({b"huggingface": json.dumps({"info": {"features": features}})}), path)
    return path


def test_parquet_of_a_hugging_face_dataset_takes_its_class_names(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    imdb = _hugging_face_parquet(
        tmp_path / "train-00000-of-00001.parquet",
        {"text": ["a fine film", "dull and long", None, "moving"], "label": [1, 0, 1, 1]},
        ["neg", "pos"],
    )
    corpus = read_corpus(imdb)
    assert corpus.format == "parquet"
    assert corpus.labels == ["pos", "neg", "pos"] and corpus.texts == ["a fine film", "dull and long", "moving"]
    assert corpus.skipped == {"empty": 1}
    glue = tmp_path / "sst2.parquet"  # GLUE's columns: an integer idx that is not text, labels without names
    pq.write_table(pa.table({"idx": [0, 1], "sentence": ["a charming journey", "hide"], "label": [1, 0]}), glue)
    corpus = read_corpus(glue)
    assert corpus.labels == ["1", "0"] and corpus.texts == ["a charming journey", "hide"]
    unnamed = tmp_path / "unnamed.parquet"  # no text column named: the other string columns, not the numbers
    pq.write_table(
        pa.table(
            {
                "id": [7, 8],
                "headline": ["rates rise", "team wins"],
                "lede": ["banks", "late goal"],
                "category": ["business", "sport"],
            }
        ),
        unnamed,
    )
    assert read_corpus(unnamed).texts == ["rates rise banks", "team wins late goal"]


@pytest.mark.parametrize(
    "columns, message",
    [
        (
            {"body": ["a", "b"], "stars": [1, 2]},
            r"names no label column \(its columns: body, stars\): name the label "
            r"column one of label, labels, class",
        ),
        ({"label": ["a", "b"], "score": [1.0, 2.0]}, r"has no text column \(its columns: label, score\)"),
    ],
)
def test_parquet_without_a_label_or_text_column_is_refused_naming_its_columns(tmp_path, columns, message):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "data.parquet"
    pq.write_table(pa.table(columns), path)
    with pytest.raises(CorpusError, match=message):
        read_corpus(path)


def test_parquet_that_is_not_parquet_or_whose_label_has_no_name_is_refused(tmp_path):
    fake = tmp_path / "data.parquet"
    fake.write_text("text,label\nhello,a\n")
    with pytest.raises(CorpusError, match=r"cannot be read as Parquet \(.*\): pass a \.parquet file"):
        read_corpus(fake)
    outside = _hugging_face_parquet(tmp_path / "outside.parquet", {"text": ["x", "y"], "label": [0, 2]}, ["a", "b"])
    with pytest.raises(CorpusError, match=r"row 2 has label 2, outside its 2 class names"):
        read_corpus(outside)


def test_a_folder_of_unlabelled_documents_is_skipped_and_counted(corpus_dir):
    unsup = corpus_dir / "unsup"  # aclImdb's train/unsup beside pos/ and neg/
    unsup.mkdir()
    for i in range(5):
        (unsup / f"{i}_0.txt").write_text(f"an unlabelled review number {i}")
    corpus = read_corpus(corpus_dir)
    assert corpus.label_counts == {"cooking": 12, "space": 12, "sports": 12}
    assert corpus.skipped == {"unlabelled": 5}


def test_jsonl(tmp_path):
    path = tmp_path / "data.jsonl"
    rows = [{"text": "good", "label": "pos"}, {"text": "bad", "label": "neg"}, {"text": " ", "label": "neg"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    corpus = read_corpus(path)
    assert corpus.labels == ["pos", "neg"] and corpus.skipped == {"empty": 1}


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: d / "missing", "does not exist"),
        (lambda d: _mkdir(d / "empty"), "has no label folders"),
        (lambda d: _files(d / "one", {"a/1.txt": "text"}), "only one label"),
        (
            lambda d: (
                _files(d, {"none.jsonl": '{"text": "x", "labels": []}\n{"text": "y", "labels": []}\n'}) / "none.jsonl"
            ),
            r"has no label on any document: a classifier needs at least 2 labels$",
        ),
        (
            lambda d: (
                _files(d, {"same.jsonl": '{"text": "x", "labels": ["a", "b"]}\n{"text": "y", "labels": ["b", "a"]}\n'})
                / "same.jsonl"
            ),
            r"has the same labels on every document \(a, b\)",
        ),
        (lambda d: _files(d / "hollow", {"a/1.txt": "text", "b/1.txt": ""}), "label 'b'"),
        (lambda d: _files(d / "allbad", {"a/1.txt": "", "b/1.bin": b"\x00\x01"}), "has no usable document"),
        (lambda d: _files(d, {"x.txt": "not a corpus"}) / "x.txt", "unknown type"),
        (
            lambda d: (
                _files(d, {"r8-train-all-terms.txt": "earn\tprofit up\nacq\tmerger\n"}) / "r8-train-all-terms.txt"
            ),
            r"unknown type '.txt': its lines hold tabs; if each is a label, a tab and its text, name the file .tsv "
            r"\(e.g. 'r8-train-all-terms.tsv'\)",
        ),
        (lambda d: _files(d, {"notes": "not a corpus"}) / "notes", r"no known type \(no suffix, no \"__label__\""),
        (lambda d: _files(d, {"bad.jsonl": "{not json"}) / "bad.jsonl", "line 1 is not valid JSON"),
        (lambda d: _files(d, {"keys.jsonl": '{"body": "x"}'}) / "keys.jsonl", 'lacks a "body" or "label"'),
        (lambda d: _files(d, {"keys.jsonl": '{"stars": "x"}'}) / "keys.jsonl", 'lacks a "text" or "label"'),
        (
            lambda d: _files(d, {"ws.jsonl": '{"category": "pos", "texts": "x"}'}) / "ws.jsonl",
            r'lacks a "text" or "category" key: .* \(its keys: "category", "texts"\)',
        ),
        (lambda d: _files(d, {"e.csv": ""}) / "e.csv", "is empty"),
        (
            lambda d: _files(d, {"two.csv": "label,text,Label\na,x,b\nb,y,a\n"}) / "two.csv",
            r"the header of corpus '.*two.csv' names the label column 'label' twice \(columns 1 and 3\): rename",
        ),
        (
            lambda d: _files(d, {"two.tsv": "text\tlabel\tlabel\nx\ta\tb\ny\tb\ta\n"}) / "two.tsv",
            r"names the label column 'label' twice \(columns 2 and 3\)",
        ),
    ],
)
def test_unusable_corpora_are_refused(tmp_path, make, message):
    with pytest.raises(CorpusError, match=message):
        read_corpus(make(tmp_path))


def _mkdir(path):
    path.mkdir()
    return path


def _files(root, files):
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    return root


def test_a_folder_of_train_and_test_splits_is_refused_with_the_paths_to_pass(tmp_path):
    import pytest

    from pipelines.corpus import read_corpus
    from pipelines.errors import CorpusError

    for split in ("train", "test"):
        for label in ("sports", "space"):
            folder = tmp_path / "corpus" / split / label
            folder.mkdir(parents=True)
            (folder / "a.txt").write_text(f"{label} text")
    with pytest.raises(CorpusError, match="holds the splits test, train, not labels: pass .*train' as the corpus"):
        read_corpus(tmp_path / "corpus")
    assert read_corpus(tmp_path / "corpus" / "train").labels == ["space", "sports"]  # the split itself reads


def test_jsonl_labels_of_one_value_in_several_types_are_one_class(tmp_path):
    import json

    from pipelines.corpus import read_corpus

    path = tmp_path / "c.jsonl"
    rows = [
        {"text": "a", "label": 1},
        {"text": "b", "label": "1"},
        {"text": "c", "label": 1.0},
        {"text": "d", "label": " 2 "},
        {"text": "e", "label": 2.5},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_corpus(path).labels == ["1", "1", "1", "2", "2.5"]
    huge = 10**400  # beyond a float: kept exact, never converted
    path.write_text("".join(json.dumps({"text": t, "label": label}) + "\n" for t, label in (("a", huge), ("b", 1))))
    assert read_corpus(path).labels == [str(huge), "1"]


@pytest.mark.parametrize(
    "record, message",
    [
        ({"text": "a", "label": True}, 'line 2 has a "label" that is a bool'),
        ({"text": "a", "label": [{"x": 1}]}, 'line 2 has a "label" that is a dict'),
        ({"text": "a", "label": float("nan")}, 'line 2 has a "label" of nan, not a finite number'),
        ({"text": "a", "label": float("inf")}, 'line 2 has a "label" of inf, not a finite number'),
        ({"text": "a", "label": [["x"], "y"]}, 'line 2 has a "label" list that holds a list'),
        ({"text": 5, "label": "x"}, 'line 2 has a "text" that is an int, not a string'),
        ({"text": ["a"], "label": "x"}, 'line 2 has a "text" that is a list, not a string'),
        ({"text": "a", "label": "x\u001fy"}, 'line 2 has a "label" holding the control character'),
    ],
)
def test_jsonl_null_or_odd_values_are_refused_with_the_line(tmp_path, record, message):
    import json

    from pipelines.corpus import read_corpus
    from pipelines.errors import CorpusError

    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"text": "fine", "label": "x"}) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(CorpusError, match=message.replace("[", r"\[")):
        read_corpus(path)


def test_each_real_folder_is_read_once_and_links_that_lead_nowhere_are_counted(corpus_dir):
    (corpus_dir / "space" / "loop").symlink_to("..")  # back to the corpus: every label again, forever
    (corpus_dir / "sports" / "cooking-too").symlink_to(corpus_dir / "cooking")  # another label's folder
    (corpus_dir / "cooking" / "self").symlink_to(corpus_dir / "cooking" / "self")  # a link to itself
    (corpus_dir / "cooking" / "gone.txt").symlink_to(corpus_dir / "nowhere.txt")  # dangling
    corpus = read_corpus(corpus_dir)
    assert corpus.label_counts == {"cooking": 12, "space": 12, "sports": 12}
    assert corpus.skipped == {"linked folder already read (symlink loop)": 2, "broken symlink": 2}


def _shares_joined(path, count: int):
    parts = [read_corpus(path, share=(index, count)) for index in range(count)]
    return parts, [t for p in parts for t in p.texts], [label for p in parts for label in p.labels]


@pytest.mark.parametrize("count", [2, 3, 7])
def test_shares_laid_end_to_end_are_the_corpus(tmp_path, corpus_dir, count):
    """Each format's shares are contiguous runs of the corpus in reading order: joined they are one reader's
    documents, each document in exactly one share (JSONL lines of very different lengths, so that share
    boundaries fall inside lines, on line starts and on blank lines)."""
    lines = [json.dumps({"text": "word " * (1 + (i * 37) % 90) + str(i), "label": f"l{i % 3}"}) for i in range(50)]
    lines[10] = ""
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("\n".join(lines) + "\n")
    csv_path = tmp_path / "c.csv"
    csv_path.write_text("".join(f'{i % 2},"row {i}\nspans two lines"\n' for i in range(20)))
    (corpus_dir / "space" / ".hidden.txt").write_text("a hidden note")
    for path in (jsonl, csv_path, corpus_dir):
        whole = read_corpus(path)
        parts, texts, labels = _shares_joined(path, count)
        assert texts == whole.texts and labels == whole.labels, path
        assert sum(len(p.texts) for p in parts) == len(whole.texts)
        if path == corpus_dir:  # what the walk skipped is counted once over the shares
            assert sum(p.skipped.get("hidden", 0) for p in parts) == whole.skipped["hidden"] == 1


def test_a_share_may_lack_a_label_and_is_not_refused(corpus_dir):
    """A share holding one label's files is read (the caller checks the union); its other label folders are
    listed as empty in it."""
    first = read_corpus(corpus_dir, share=(0, 3))  # the cooking files only
    assert set(first.labels) == {"cooking"} and len(first.labels) == 12
    assert set(first.empty_labels) == {"space", "sports"}


def test_a_large_jsonl_file_parsed_in_workers_is_the_corpus_one_reader_sees(tmp_path, monkeypatch):
    from pipelines import corpus as corpus_module
    from pipelines.workers import WorkerPool

    lines = []
    for i in range(900):
        if i % 97 == 0:
            lines.append(b"\n")  # blank lines are passed over
        elif i % 89 == 0:
            lines.append(json.dumps({"text": "  ", "label": "a"}).encode() + b"\n")  # empty: counted, left out
        elif i % 83 == 0:
            lines.append('{"text": "caf\u00e9 latin-1", "label": "b"}\n'.encode("latin-1"))  # decoded by fallback
        else:
            lines.append(
                json.dumps({"text": f"document {i} " + "word " * (i % 13), "label": "ab"[i % 2]}).encode() + b"\n"
            )
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"".join(lines))
    alone = read_corpus(path)
    monkeypatch.setattr(corpus_module, "PARALLEL_READ_BYTES", 1000)
    seen = []
    with WorkerPool(2) as pool:
        parallel = read_corpus(
            path,
            pool=pool,
            on_progress=lambda documents, stats: seen.append((documents, stats.bytes_read, stats.bytes_total)),
        )
    assert (parallel.texts, parallel.labels, parallel.fingerprint) == (alone.texts, alone.labels, alone.fingerprint)
    assert parallel.skipped == alone.skipped == {"empty": 10} and parallel.non_utf8 == alone.non_utf8 > 0
    assert len(seen) == 4 and seen[-1] == (len(alone), path.stat().st_size, path.stat().st_size)  # 2 shares a worker
    assert [documents for documents, _, _ in seen] == sorted(documents for documents, _, _ in seen)


def _line_files(folder, rows: list[tuple[str, str]]) -> dict:
    """The same documents as a fastText file, a headerless CSV (Yelp's: "\\n" line breaks), a CSV with a header
    naming its columns, and a TSV, with blank lines, skipped rows and a line that is not UTF-8 among them."""
    import csv
    import io

    files = {}
    fasttext = "".join(
        f"__label__{label} {text}\n" if i % 50 else f"__label__{label}  \n" for i, (label, text) in enumerate(rows)
    )
    files["fasttext"] = folder / "big.train"
    files["fasttext"].write_bytes(fasttext.encode() + "__label__b caf\u00e9 latin\n".encode("latin-1") + b"\n\n")
    for name, header in (("yelp.csv", None), ("named.csv", ["id", "text", "label"])):
        out = io.StringIO()
        writer = csv.writer(out, quoting=csv.QUOTE_ALL if header is None else csv.QUOTE_MINIMAL)
        if header:
            writer.writerow(header)
        for i, (label, text) in enumerate(rows):
            text = text.replace(" word", "\\nword", 1) if header is None else text
            writer.writerow([label, text] if header is None else [i, f'{text} "quoted", too', label])
        files[name] = folder / name
        files[name].write_text(out.getvalue() + ("\n" if header is None else "only-one-column\n"))
    files["sentence.jsonl"] = folder / "sentence.jsonl"  # a text key named otherwise: pyarrow's parse by its name
    files["sentence.jsonl"].write_text(
        "".join(json.dumps({"idx": i, "sentence": text, "label": label}) + "\n" for i, (label, text) in enumerate(rows))
    )
    files["dbpedia.jsonl"] = folder / "dbpedia.jsonl"  # two text keys: joined a line at a time
    files["dbpedia.jsonl"].write_text(
        "".join(
            json.dumps({"label": label, "title": f"t{i}", "content": text}) + "\n"
            for i, (label, text) in enumerate(rows)
        )
    )
    files["tsv"] = folder / "big.tsv"
    files["tsv"].write_text(
        "sentence\tlabel\n" + "".join(f'"{text}\t{label}\n' for label, text in rows) + "a line of one column\n"
    )  # a quote mark is text in a TSV
    return files


@pytest.mark.parametrize("name", ["fasttext", "yelp.csv", "named.csv", "tsv", "sentence.jsonl", "dbpedia.jsonl"])
def test_fasttext_csv_and_tsv_files_read_in_workers_are_the_corpus_one_reader_sees(tmp_path, monkeypatch, name):
    from pipelines import corpus as corpus_module
    from pipelines.corpus import parallel_read
    from pipelines.formats.detect import corpus_format
    from pipelines.shares import FileTexts
    from pipelines.workers import WorkerPool

    rows = [("ab"[i % 2], f"document {i} " + "word " * (i % 13 + 1)) for i in range(900)]
    path = _line_files(tmp_path, rows)[name]
    alone = read_corpus(path)
    assert len(alone) > 800 and (name != "yelp.csv" or "nword" not in " ".join(alone.texts))
    monkeypatch.setattr(corpus_module, "PARALLEL_READ_BYTES", 1000)
    monkeypatch.setattr(corpus_module, "SHARE_BYTES", 2000)  # many shares of this small file
    assert parallel_read(path, corpus_format(path))
    with WorkerPool(2) as pool:
        parallel = read_corpus(path, pool=pool)
        assert (
            parallel.texts,
            parallel.labels,
            parallel.fingerprint,
            parallel.skipped,
            parallel.non_utf8,
            parallel.format,
        ) == (alone.texts, alone.labels, alone.fingerprint, alone.skipped, alone.non_utf8, alone.format)
        left = read_corpus(path, pool=pool, keep_texts=False)
        assert isinstance(left.texts, FileTexts) and left.texts.shares > 4
        assert (left.labels, left.fingerprint) == (alone.labels, alone.fingerprint)
        rows_wanted = np.random.default_rng(0).choice(len(alone), 60, replace=False)
        fetched = left.texts.fetch(rows_wanted, pool)
        assert [fetched[i] for i in rows_wanted] == [alone.texts[i] for i in rows_wanted]
        assert list(left.texts.lines(rows_wanted)) == [alone.texts[i] for i in rows_wanted]
        shares = left.texts.map_shares(pool, _kind_and_texts, arrow=True)  # an array for one text key's JSONL
        assert [text for _, share in shares for text in share] == alone.texts


def test_a_parquet_file_read_in_workers_is_the_corpus_one_reader_sees(tmp_path, monkeypatch):
    from pipelines import corpus as corpus_module
    from pipelines.shares import FileTexts
    from pipelines.workers import WorkerPool

    texts = [None if i % 97 == 5 else f"document {i} " + "word " * (i % 13) for i in range(900)]
    path = _hugging_face_parquet(
        tmp_path / "train-00000-of-00001.parquet",
        {"text": texts, "label": [i % 3 for i in range(900)]},
        ["neg", "neutral", "pos"],
    )
    import pyarrow.parquet as pq

    pq.write_table(pq.read_table(path), path, row_group_size=64)  # many row groups (the metadata kept)
    alone = read_corpus(path)
    assert alone.skipped == {"empty": 10} and set(alone.labels) == {"neg", "neutral", "pos"}
    monkeypatch.setattr(corpus_module, "PARALLEL_READ_BYTES", 1000)
    monkeypatch.setattr(corpus_module, "SHARE_BYTES", 1000)
    from pipelines.corpus import parallel_read
    from pipelines.formats.detect import corpus_format

    assert parallel_read(path, corpus_format(path))
    one_group = tmp_path / "one-group.parquet"
    pq.write_table(pq.read_table(path), one_group)
    assert not parallel_read(one_group, corpus_format(one_group))  # its one row group is read by one reader
    with WorkerPool(2) as pool:
        parallel = read_corpus(path, pool=pool)
        assert (parallel.texts, parallel.labels, parallel.fingerprint, parallel.skipped, parallel.format) == (
            alone.texts,
            alone.labels,
            alone.fingerprint,
            alone.skipped,
            "parquet",
        )
        left = read_corpus(path, pool=pool, keep_texts=False)  # the texts left in the file, by their rows
        assert isinstance(left.texts, FileTexts) and left.texts.shares > 4
        assert (left.labels, left.fingerprint) == (alone.labels, alone.fingerprint)
        wanted = np.random.default_rng(0).choice(len(alone), 80, replace=False)  # from every row group, unsorted
        fetched = left.texts.fetch(wanted, pool)
        assert [fetched[i] for i in wanted] == [alone.texts[i] for i in wanted]
        lines = left.texts.lines(wanted)
        assert list(lines) == [alone.texts[i] for i in wanted] and lines[7] == alone.texts[wanted[7]]
        assert list(pickle.loads(pickle.dumps(lines[10:20]))) == [alone.texts[i] for i in wanted[10:20]]
        assert 0 < lines.characters()
        shares = left.texts.map_shares(pool, _kind_and_texts, arrow=True)  # an array for one text key's JSONL
        assert [text for _, share in shares for text in share] == alone.texts


def test_a_csv_whose_quoted_field_holds_a_line_break_is_read_from_the_top(tmp_path, monkeypatch):
    import csv

    from pipelines import corpus as corpus_module
    from pipelines.workers import WorkerPool

    path = tmp_path / "multiline.csv"
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        for i in range(400):
            writer.writerow(["ab"[i % 2], f"line one of {i}\nline two" if i % 100 == 7 else f"document {i}"])
    alone = read_corpus(path)
    assert "line one of 7\nline two" in alone.texts
    monkeypatch.setattr(corpus_module, "PARALLEL_READ_BYTES", 1000)
    monkeypatch.setattr(corpus_module, "SHARE_BYTES", 1000)
    with WorkerPool(2) as pool:
        parallel = read_corpus(path, pool=pool, keep_texts=False)
    assert (parallel.texts, parallel.labels, parallel.fingerprint) == (alone.texts, alone.labels, alone.fingerprint)


def _kind_and_texts(texts) -> tuple[str, list[str]]:
    """A share's texts as map_shares(..., arrow=True) handed them: ("array" or "list", the texts as str)."""
    import pyarrow as pa

    return ("array", texts.to_pylist()) if isinstance(texts, pa.Array) else ("list", list(texts))


@pytest.mark.parametrize(
    "case, lines",
    [
        ("plain", [b'{"text": "a b", "label": "x"}', b'{"label": 1, "text": "c", "more": {"k": [1]}}']),
        (
            "blank lines, CRLF, spaces",
            [b'{"text": "a", "label": "x"}\r', b"", b"   ", b' {"text": "c\\n\\u00e9", "label": "y"} '],
        ),
        ("escaped pair", [b'{"text": "a\\ud83d\\ude00b", "label": "x"}']),
        ("UTF-8", ['{"text": "caf\u00e9 \u2028 \u03a3", "label": "x"}'.encode()]),
        ("a key twice", [b'{"text": "a", "text": "b", "label": "x"}']),
        ("unpaired surrogate", [b'{"text": "a\\ud800b", "label": "x"}']),
        ("not UTF-8", [b'{"text": "caf\xe9", "label": "x"}']),
        ("an empty text, skipped", [b'{"text": " ", "label": "x"}', b'{"text": "b", "label": "y"}']),
    ],
)
def test_share_texts_arrow_gives_what_reading_found_or_none(tmp_path, case, lines):
    """pyarrow's parse of a share is the texts reading found, in order, or None (then the share is read line by
    line): never other texts."""
    import pyarrow as pa

    from pipelines.shares import share_texts_arrow

    path = tmp_path / "share.jsonl"
    head = b'{"text": "first", "label": "h"}\n'  # a line that starts before the share
    path.write_bytes(head + b"\n".join(lines) + b"\n")
    found = read_corpus(path)
    texts = share_texts_arrow(str(path), 1, path.stat().st_size, len(found) - 1)
    expected_none = case in ("a key twice", "unpaired surrogate", "not UTF-8", "an empty text, skipped")
    assert (texts is None) == expected_none
    if texts is not None:
        assert isinstance(texts, pa.Array) and texts.to_pylist() == found.texts[1:]
    assert share_texts_arrow(str(path), 0, len(head), 1).to_pylist() == ["first"]  # the line that starts in it
    assert share_texts_arrow(str(path), 1, len(head), 0) is None  # no line starts in it


PARSED_BY_ARROW = {  # lines (after a first line that starts before the share) -> whether pyarrow must read them
    "plain": ([b'{"text": "a b", "label": "x"}', b'{"label": " y ", "text": "c", "more": {"k": [1]}}'], True),
    "blank lines, CRLF": (
        [b'{"text": "a", "label": "x"}\r', b"", b" \t ", b'{"text": "c\\u00e9", "label": "y"}'],
        True,
    ),
    "skipped documents": (
        [
            b'{"text": " \\t ", "label": "x"}',
            b'{"text": "\\u001c", "label": "x"}',
            b'{"text": "\\u00a0\\u2003", "label": "x"}',
            b'{"text": "", "label": "x"}',
            b'{"text": "kept", "label": "  "}',
            b'{"text": " \\u00e9 ", "label": "y"}',
            b'{"text": "\\u001ckept", "label": "y"}',
        ],
        True,
    ),
    "UTF-8": (['{"text": "caf\u00e9 \u03a3", "label": "\u00e9t\u00e9"}'.encode()], True),
    "no newline at the end": ([b'{"text": "a", "label": "x"}', b'{"text": "b", "label": "y"}  '], True),
    "integers as labels": (
        [b'{"text": "a", "label": 1}', b'{"text": "b", "label": -20}', b'{"text": "c", "label": 0}'],
        True,
    ),
    "a fraction as a label": ([b'{"text": "a", "label": 1}', b'{"text": "b", "label": 2.5}'], False),
    "an integer among string labels": ([b'{"text": "a", "label": "x"}', b'{"text": "b", "label": 2}'], False),
    "a boolean as a label": ([b'{"text": "a", "label": true}'], False),
    "a null label": ([b'{"text": "a", "label": null}'], False),
    "no label": ([b'{"text": "a"}'], False),
    "a key twice": ([b'{"text": "a", "text": "b", "label": "x"}'], False),
    "not UTF-8": ([b'{"text": "caf\xe9", "label": "x"}'], False),
    "a form feed line": ([b'{"text": "a", "label": "x"}', b"\x0c", b'{"text": "b", "label": "y"}'], None),
    "two objects on a line": ([b'{"text": "a", "label": "x"} {"text": "b", "label": "y"}', b"", b"  "], False),
}


@pytest.mark.parametrize("case", PARSED_BY_ARROW)
@pytest.mark.parametrize("keep_texts", [True, False])
def test_a_share_parsed_by_pyarrow_reads_as_a_line_at_a_time(tmp_path, case, keep_texts):
    """A large file's share read by pyarrow (_read_share_arrow) gives what reading it a line at a time gives:
    labels, texts or line offsets, digests, skips and bytes; where it cannot be sure it gives None, and the line
    reader reads the share (None expected: never parsed by pyarrow; True: always; None in the table: either)."""
    from pipelines import shares as shares_module
    from pipelines.formats.jsonl import JsonlFormat

    lines, by_arrow = PARSED_BY_ARROW[case]
    path = tmp_path / "share.jsonl"
    head = b'\xef\xbb\xbf{"text": "first", "label": "h"}\n'  # a BOM, and a line that starts before the share
    body = b"\n".join(lines) + (b"" if case == "no newline at the end" else b"\n")
    path.write_bytes(head + body)
    parsed = shares_module._read_share_arrow(str(path), 5, path.stat().st_size, keep_texts)
    if by_arrow is not None:
        assert (parsed is not None) == by_arrow
    if parsed is not None:
        stats = shares_module.ReadStats()
        lines = JsonlFormat().placed_documents(path, stats, 5, path.stat().st_size)
        expected = shares_module._collected_share(lines, keep_texts, stats)
        assert parsed[0] == expected[0] and parsed[2:] == expected[2:]
        assert parsed[1] == expected[1] if keep_texts else np.array_equal(parsed[1], expected[1])
    whole = shares_module._read_share_arrow(str(path), 0, path.stat().st_size, False)  # the BOM's line too
    if case == "plain":
        assert whole is not None  # (with the other cases the head's string label may meet integers)
    if whole is not None:
        assert whole[0][0] == "h" and whole[1][0] == 0
    if case == "skipped documents":
        assert parsed[0] == ["y", "y"] and parsed[3] == {"empty": 4, "no_label": 1}


def test_texts_left_in_a_large_file_are_fetched_and_mapped_by_share_as_one_reader_sees_them(tmp_path, monkeypatch):
    """keep_texts=False: the same labels, fingerprint and documents' count, no texts held; fetch returns the texts of
    any rows (numbered as one reader numbers them, skipped lines not counted), map_shares every share's in order."""
    from pipelines import corpus as corpus_module
    from pipelines.shares import FileTexts
    from pipelines.workers import WorkerPool

    lines = [json.dumps({"text": f"document {i} " + "word " * (i % 7), "label": "ab"[i % 2]}) for i in range(700)]
    lines[5] = json.dumps({"text": " ", "label": "a"})  # empty: skipped, so row 5 is document 6
    lines[9] = json.dumps({"text": "caf\u00e9 \u00fcber", "label": "a"}, ensure_ascii=False)
    path = tmp_path / "big.jsonl"
    raw = [line.encode("latin-1" if i == 9 else "utf-8") for i, line in enumerate(lines)]  # one not UTF-8
    path.write_bytes(b"\n".join(raw[:300]) + b"\r\n" + b"\n".join(raw[300:]) + b"\n")  # and one CRLF
    alone = read_corpus(path)
    assert alone.non_utf8 == 1 and "caf\u00e9 \u00fcber" in alone.texts
    monkeypatch.setattr(corpus_module, "PARALLEL_READ_BYTES", 1000)
    monkeypatch.setattr(corpus_module, "SHARE_BYTES", 2000)  # many shares of this small file
    with WorkerPool(2) as pool:
        left = read_corpus(path, pool=pool, keep_texts=False)
        assert isinstance(left.texts, FileTexts) and left.texts.shares > 4
        assert (len(left), left.labels, left.fingerprint, left.skipped) == (
            len(alone),
            alone.labels,
            alone.fingerprint,
            alone.skipped,
        )
        rows = np.append(np.random.default_rng(0).choice(len(alone), 50, replace=False), [8, 298, 299])
        fetched = left.texts.fetch(rows, pool)
        assert len(fetched) == len(alone) and [fetched[i] for i in rows] == [alone.texts[i] for i in rows]
        with pytest.raises(KeyError):
            fetched[int(np.setdiff1d(np.arange(len(alone)), rows)[0])]
        lines = left.texts.lines(rows)  # read where iterated; a slice pickles as offsets, not texts
        assert list(lines) == [alone.texts[i] for i in rows] and lines[3] == alone.texts[rows[3]]
        part = pickle.loads(pickle.dumps(lines[10:20]))
        assert (
            list(part) == [alone.texts[i] for i in rows[10:20]]
            and len(pickle.dumps(part)) - len(pickle.dumps(part.format)) < 600
        )
        assert pool.map(list, [lines[:5], lines[5:]]) == [
            [alone.texts[i] for i in rows[:5]],
            [alone.texts[i] for i in rows[5:]],
        ]
        assert 0 < sum(map(len, lines)) <= lines.characters()
        assert left.texts.lines(np.arange(20, 60)).arrow().to_pylist() == alone.texts[20:60]  # parsed at once
        assert left.texts.lines(np.array([4])).arrow() is None  # its bytes run over the skipped line after it
        assert left.texts.lines(np.array([8])).arrow() is None  # latin-1: read line by line, as reading decoded it
        shares = left.texts.map_shares(pool, list)
        assert len(shares) == left.texts.shares and sum(shares, []) == alone.texts
        handed = left.texts.map_shares(pool, _kind_and_texts, arrow=True)  # arrays where pyarrow parsed the share
        assert sum((texts for _, texts in handed), []) == alone.texts
        kinds = [kind for kind, _ in handed]
        assert kinds[0] == "list" and set(kinds[1:]) == {"array"}  # the first holds the skipped and latin-1 lines
        path.write_text("\n".join(lines[1:]) + "\n")  # rewritten: its rows name other documents now
        with pytest.raises(CorpusError, match="big.jsonl' changed while it was being read for training"):
            left.texts.fetch(rows, pool)


def test_a_bad_line_read_in_workers_is_named_from_the_top_of_the_file(tmp_path, monkeypatch):
    from pipelines import corpus as corpus_module
    from pipelines.workers import WorkerPool

    lines = [json.dumps({"text": f"document {i}", "label": "ab"[i % 2]}) for i in range(400)]
    lines[321] = "{not json"
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(corpus_module, "PARALLEL_READ_BYTES", 1000)
    with WorkerPool(2) as pool, pytest.raises(CorpusError, match=r"big.jsonl' line 322 is not valid JSON"):
        read_corpus(path, pool=pool)


def test_a_missing_text_or_label_is_skipped_and_counted_by_reason_in_every_typed_format(tmp_path):
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipelines.corpus import read_corpus

    rows = [("kept", "x"), (None, "x"), ("", "y"), ("no label", None), ("blank label", " "), ("kept too", "y")]
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("".join(json.dumps({"text": text, "label": label}) + "\n" for text, label in rows))
    parquet = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": [t for t, _ in rows], "label": [label for _, label in rows]}), parquet)
    csv = tmp_path / "c.csv"
    csv.write_text("label,text\n" + "".join(f"{label or ''},{text or ''}\n" for text, label in rows))
    for path in (jsonl, parquet, csv):
        corpus = read_corpus(path)
        assert (corpus.texts, corpus.labels) == (["kept", "kept too"], ["x", "y"]), path
        assert corpus.skipped == {"empty": 2, "no_label": 2}, path


@pytest.mark.parametrize(
    "suffix, row", [(".tsv", "sport\tgoal\textra cell\tanother"), (".csv", "sport,goal,extra cell,another")]
)
def test_a_rows_cells_past_its_tables_header_are_counted_by_both_readers(tmp_path, suffix, row):
    from pipelines.corpus import read_corpus
    from pipelines.formats.base import ReadStats
    from pipelines.formats.detect import corpus_format

    separator = "\t" if suffix == ".tsv" else ","
    path = tmp_path / f"c{suffix}"
    path.write_text(f"label{separator}text\n{row}\nweather{separator}rain\n")
    corpus = read_corpus(path)  # one reader from the top
    assert corpus.texts == ["goal", "rain"] and corpus.skipped == {"cells_beyond_header": 2}
    stats = ReadStats()  # the line reader a share of a large file takes
    documents = list(corpus_format(path).placed_documents(path, stats))
    assert [text for _, _, text in documents] == ["goal", "rain"] and stats.skipped == {"cells_beyond_header": 2}
