import pytest

from textclf.inference.predict import read_documents


def test_table_inputs_give_their_text_columns_one_document_a_row(tmp_path):
    labelled = tmp_path / "test.csv"  # a test file as training reads it: the label column is not text
    labelled.write_text("review,sentiment\n\"a fine, moving film\",positive\ndull and long,negative\n")
    assert read_documents(str(labelled), 1.0) == [
        (f"{labelled}:2", "a fine, moving film"),
        (f"{labelled}:3", "dull and long"),
    ]
    texts_only = tmp_path / "docs.tsv"  # a header naming a text column alone; quote marks are text in a TSV
    texts_only.write_text('sentence\n"hide new secretions\nit \'s "charming"\n')
    assert [text for _, text in read_documents(str(texts_only), 1.0)] == ['"hide new secretions', "it 's \"charming\""]
    plain = tmp_path / "plain.tsv"  # no header: every cell of a row, joined; a blank row a document with no text
    plain.write_text("the striker\tscored twice\n\nthe oven is hot\n")
    assert read_documents(str(plain), 1.0) == [
        (f"{plain}:1", "the striker scored twice"),
        (f"{plain}:2", ""),
        (f"{plain}:3", "the oven is hot"),
    ]


def test_fasttext_and_parquet_inputs_give_one_document_a_line_or_row_without_labels(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    fasttext = tmp_path / "cooking.valid"
    fasttext.write_text("__label__baking How long to bake bread?\n\n__label__knives Which steel ?\n__label__x\n")
    assert read_documents(str(fasttext), 1.0) == [
        (f"{fasttext}:1", "How long to bake bread?"),
        (f"{fasttext}:2", ""),
        (f"{fasttext}:3", "Which steel ?"),
        (f"{fasttext}:4", ""),
    ]
    parquet = tmp_path / "test.parquet"  # the label column is left out, as training reads the file
    pq.write_table(pa.table({"label": [0, 1, 1], "text": ["a fine film", None, "dull"]}), parquet)
    assert read_documents(str(parquet), 1.0) == [
        (f"{parquet}:1", "a fine film"),
        (f"{parquet}:2", ""),
        (f"{parquet}:3", "dull"),
    ]
    unlabelled = tmp_path / "docs.parquet"  # no column named: its string columns
    pq.write_table(pa.table({"id": [1], "headline": ["rates rise"]}), unlabelled)
    assert read_documents(str(unlabelled), 1.0) == [(f"{unlabelled}:1", "rates rise")]
    plain = tmp_path / "notes.txt"  # any other text file is one document
    plain.write_text("a label__label__ is not a fastText label\nsecond line\n")
    assert read_documents(str(plain), 1.0) == [(str(plain), plain.read_text())]


def test_a_parquet_input_that_cannot_be_read_is_one_input_error(tmp_path):
    from textclf.errors import InputError

    fake = tmp_path / "x.parquet"
    fake.write_text("not parquet")
    with pytest.raises(InputError, match=r"input 'x\.parquet'|cannot be read as Parquet"):
        read_documents(str(fake), 1.0)
    with pytest.raises(InputError, match=r"does not exist"):
        read_documents(str(tmp_path / "missing.parquet"), 1.0)


def test_table_inputs_read_their_line_breaks_as_training_does(tmp_path):
    yelp = tmp_path / "reviews.csv"
    yelp.write_text("".join(f'"Great food.\\nThe service {i}"\n' for i in range(12)))
    assert read_documents(str(yelp), 1.0)[0] == (f"{yelp}:1", "Great food. The service 0")


def test_jsonl_inputs_take_their_text_as_training_does(tmp_path):
    import json

    path = tmp_path / "docs.jsonl"
    path.write_text(
        json.dumps({"idx": 0, "sentence": "a charming journey", "label": 1})
        + "\n"
        + json.dumps({"title": "Leipzig", "content": "a city in Saxony"})
        + "\n"
        + json.dumps("a plain string")
        + "\n"
    )
    assert [text for _, text in read_documents(str(path), 1.0)] == [
        "a charming journey",
        "Leipzig a city in Saxony",
        "a plain string",
    ]


def test_every_input_line_gets_one_prediction_a_blank_one_empty(tmp_path):
    """The output contract: one prediction an input line or row, in order; one with no text an empty prediction
    (no label, no probabilities) that the model never scored."""
    from textclf.inference.predict import rank

    class Model:  # any model: rank reads its labels, multi_label and predict_proba
        labels, multi_label = ["a", "b"], False

        def __init__(self):
            self.scored = []

        def predict_proba(self, texts):
            import numpy as np

            self.scored += texts
            return np.tile([0.25, 0.75], (len(texts), 1))

    model = Model()
    predictions = rank(model, ["x y", "", "  ", "z"], ["1", "2", "3", "4"], 1)
    assert [(p.source, p.label, p.top) for p in predictions] == [
        ("1", "b", [("b", 0.75)]),
        ("2", None, []),
        ("3", None, []),
        ("4", "b", [("b", 0.75)]),
    ]
    assert model.scored == ["x y", "z"]
    assert [p.label for p in rank(model, ["", ""], ["1", "2"], 1)] == [None, None]


def test_an_input_whose_header_names_its_label_column_twice_is_refused(tmp_path):
    from textclf.errors import InputError

    path = tmp_path / "docs.csv"
    path.write_text("label,text,label\na,hello,b\n")
    with pytest.raises(InputError, match=r"the header of input '.*docs.csv' names the label column 'label' twice"):
        read_documents(str(path), 1.0)
