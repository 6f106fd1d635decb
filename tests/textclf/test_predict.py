from textclf.inference.predict import read_documents


def test_table_inputs_give_their_text_columns_one_document_a_row(tmp_path):
    labelled = tmp_path / "test.csv"  # a test file as training reads it: the label column is not text
    labelled.write_text("review,sentiment\n\"a fine, moving film\",positive\ndull and long,negative\n")
    assert read_documents(str(labelled), 1.0) == [(f"{labelled}:2", "a fine, moving film"),
                                                   (f"{labelled}:3", "dull and long")]
    texts_only = tmp_path / "docs.tsv"  # a header naming a text column alone; quote marks are text in a TSV
    texts_only.write_text('sentence\n"hide new secretions\nit \'s "charming"\n')
    assert [text for _, text in read_documents(str(texts_only), 1.0)] == ['"hide new secretions',
                                                                         "it 's \"charming\""]
    plain = tmp_path / "plain.tsv"  # no header: every cell of a row, joined
    plain.write_text("the striker\tscored twice\n\nthe oven is hot\n")
    assert read_documents(str(plain), 1.0) == [(f"{plain}:1", "the striker scored twice"),
                                               (f"{plain}:3", "the oven is hot")]
