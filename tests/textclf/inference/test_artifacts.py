import json
import zipfile

import numpy as np
import pytest

from pipelines.corpus import read_corpus
from textclf.inference import artifacts
from textclf.inference.artifacts import load_model, read_header, save_model
from textclf.estimator import TextClassifier
from textclf.errors import ArtifactError


@pytest.fixture
def model(corpus_dir, fast_settings):
    corpus = read_corpus(corpus_dir)
    return TextClassifier.from_settings(fast_settings).fit(corpus.texts, corpus.labels).model_


def test_round_trip(model, tmp_path):
    path = save_model(model, tmp_path / "m.npz")
    loaded = load_model(path)
    texts = ["the comet passed the sun", "knead the dough"]
    np.testing.assert_array_equal(loaded.predict_proba(texts), model.predict_proba(texts))
    assert loaded.labels == model.labels and loaded.settings == model.settings
    assert read_header(path)["format_version"] == 3  # the start token: older versions would leave it out


def test_a_model_without_the_start_token_stays_readable_by_older_versions(corpus_dir, fast_settings, tmp_path):
    corpus = read_corpus(corpus_dir)
    plain = TextClassifier.from_settings(fast_settings.replace(start_token=False)).fit(corpus.texts, corpus.labels)
    path = save_model(plain.model_, tmp_path / "m.npz")
    assert read_header(path)["format_version"] == 1
    assert "start_token" not in read_header(path)["vectorizer"]
    np.testing.assert_array_equal(
        load_model(path).predict_proba(["knead the dough"]), plain.model_.predict_proba(["knead the dough"])
    )


def test_a_model_with_chinese_terms_is_a_version_older_textclf_refuses(fast_settings, tmp_path):
    """Words split at each Chinese character: format 4 where the vocabulary holds such a character (an older
    textclf would not find them in what it scores); the characters' model predicts alike once loaded."""
    texts = ["这个酒店很好", "房间很干净", "服务很好", "酒店太差了", "房间很脏", "服务太差"] * 10
    labels = ["pos", "pos", "pos", "neg", "neg", "neg"] * 10
    fitted = TextClassifier.from_settings(fast_settings).fit(texts, labels)
    assert "很" in fitted.model_.vectorizer.terms and "酒店" not in fitted.model_.vectorizer.terms
    path = save_model(fitted.model_, tmp_path / "m.npz")
    assert (
        read_header(path)["format_version"] == 4 and read_header(path)["vectorizer"]["unspaced_as_characters"] is True
    )
    np.testing.assert_array_equal(
        load_model(path).predict_proba(["酒店很干净"]), fitted.model_.predict_proba(["酒店很干净"])
    )
    hashed = TextClassifier.from_settings(fast_settings.replace(vectorizer="hashing", features=4096)).fit(texts, labels)
    path = save_model(hashed.model_, tmp_path / "hashed.npz")  # no vocabulary to tell: the newer version
    assert read_header(path)["format_version"] == 4
    hasher = hashed.model_.vectorizer._counter()
    assert hasher.build_analyzer()("酒店很干净")[:6] == ["__start__", "酒", "店", "很", "干", "净"]
    np.testing.assert_array_equal(
        load_model(path).predict_proba(["酒店很干净"]), hashed.model_.predict_proba(["酒店很干净"])
    )
    whole = TextClassifier.from_settings(fast_settings.replace(unspaced_as_characters=False)).fit(texts, labels)
    assert "这个酒店很好" in whole.model_.vectorizer.terms
    path = save_model(whole.model_, tmp_path / "whole.npz")
    assert read_header(path)["format_version"] == 3 and "unspaced_as_characters" not in read_header(path)["vectorizer"]


def test_interrupted_write_keeps_the_old_model(model, tmp_path, monkeypatch):
    path = save_model(model, tmp_path / "models" / "m.npz")
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise KeyboardInterrupt  # as if the user pressed Ctrl-C mid-write

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        save_model(model, path)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == ["m.npz"]  # no temporary file left behind
    load_model(path)


def _rewrite_header(path, change):
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    header = json.loads(str(arrays["header"]))
    change(header)
    arrays["header"] = np.array(json.dumps(header))
    np.savez(path, **arrays)


@pytest.mark.parametrize(
    "labels, fragment",
    [
        (["sports", "sports", "space"], "the label 'sports' is there twice"),
        ("abc", "its labels are not a list of class names"),
        ([], "its labels are not a list of class names"),
        (["sports", 2, "space"], "its labels are not a list of class names"),
        (["sports", "", "space"], "its labels are not a list of class names"),
    ],
)
def test_a_header_whose_labels_are_not_distinct_names_is_refused(model, tmp_path, labels, fragment):
    path = save_model(model, tmp_path / "m.npz")
    _rewrite_header(path, lambda h: h.update(labels=labels))
    with pytest.raises(ArtifactError, match=f"is damaged \\({fragment}\\): retrain it"):
        load_model(path)


@pytest.mark.parametrize(
    "field, value, fragment",
    [
        ("format_version", True, "its format version True is not one from 1 to"),
        ("format_version", 0, "its format version 0 is not one from 1 to"),
        ("format_version", "3", "its format version '3' is not one from 1 to"),
        ("metadata", ["a"], "its header's metadata is list, not dict"),
        ("settings", "fast", "its header's settings is str, not dict"),
        ("kind", 3, "its header's kind is int, not str"),
        ("vectorizer", [], "its header's vectorizer is list, not dict"),
    ],
)
def test_every_header_field_is_type_checked_in_one_place(model, tmp_path, field, value, fragment):
    path = save_model(model, tmp_path / "m.npz")
    _rewrite_header(path, lambda h: h.update({field: value}))
    for read in (load_model, read_header):
        with pytest.raises(ArtifactError, match=f"is damaged \\({fragment}"):
            read(path)


def test_thresholds_that_are_not_probabilities_are_refused(model, tmp_path):
    path = save_model(model, tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    np.savez(path, **arrays, thresholds=np.array([0.5, 1.5], np.float32))
    with pytest.raises(ArtifactError, match="its thresholds are not probabilities from 0 to 1"):
        load_model(path)


def test_newer_format_is_refused(model, tmp_path):
    path = save_model(model, tmp_path / "m.npz")
    _rewrite_header(path, lambda h: h.update(format_version=artifacts.FORMAT_VERSION + 1))
    newest = artifacts.FORMAT_VERSION
    with pytest.raises(ArtifactError, match=f"newer than the {newest} this textclf reads: upgrade textclf"):
        load_model(path)


def test_foreign_npz_is_refused(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, weights=np.zeros(3))
    with pytest.raises(ArtifactError, match="corrupt or not a textclf model"):
        load_model(path)
    _path = tmp_path / "other2.npz"
    np.savez(_path, header=np.array(json.dumps({"format": "something-else"})))
    with pytest.raises(ArtifactError, match="not a textclf model"):
        load_model(_path)


def test_corrupt_and_missing_files_are_refused(model, tmp_path):
    path = save_model(model, tmp_path / "m.npz")
    path.write_bytes(path.read_bytes()[:1000])  # truncated, as by a full disk
    with pytest.raises(ArtifactError, match="corrupt or not a textclf model"):
        load_model(path)
    with pytest.raises(ArtifactError, match="does not exist"):
        load_model(tmp_path / "nope.npz")
    pickled = tmp_path / "evil.npz"
    with zipfile.ZipFile(pickled, "w") as z:
        z.writestr(
            "header.npy",
            b"\x93NUMPY\x01\x00v\x00{'descr': '|O', 'fortran_order': False, 'shape': (), }" + b" " * 60 + b"\n",
        )
    with pytest.raises(ArtifactError, match="corrupt or not a textclf model"):
        load_model(pickled)  # object arrays would need pickle: refused, never unpickled


@pytest.mark.parametrize("name, shape", [("b1", (5,)), ("b2", (2, 2)), ("w2", (3,))])
def test_weights_of_the_wrong_shape_are_refused_by_name(model, tmp_path, name, shape):
    path = save_model(model, tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as stored:
        arrays = {key: stored[key] for key in stored.files}
    arrays[name] = np.zeros(shape, np.float32)
    np.savez(path, **arrays)
    with pytest.raises(ArtifactError, match=f"inconsistent .*{name} \\({', '.join(map(str, shape))}"):
        load_model(path)


def test_an_unknown_compression_method_is_a_corrupt_file(model, tmp_path):
    path = save_model(model, tmp_path / "m.npz")
    data = bytearray(path.read_bytes())
    entry = data.index(b"PK\x01\x02")  # the first member's central directory entry: its compression method
    data[entry + 10 : entry + 12] = (99).to_bytes(2, "little")  # is one that zipfile does not know
    path.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="corrupt or not a textclf model"):
        load_model(path)


@pytest.mark.parametrize("damage", ["drop terms", "duplicate term", "kind", "ngram_max"])
def test_a_damaged_vectorizer_is_refused_at_load_not_at_predict(model, tmp_path, damage):
    path = save_model(model, tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as stored:
        arrays = {key: stored[key] for key in stored.files}
    header = json.loads(str(arrays["header"]))
    if damage == "drop terms":
        del arrays["vectorizer.terms"]
    elif damage == "duplicate term":
        terms = arrays["vectorizer.terms"].copy()
        terms[1] = terms[0]
        arrays["vectorizer.terms"] = terms
    elif damage == "kind":
        header["vectorizer"]["kind"] = "tfidd"
    else:
        header["vectorizer"]["ngram_max"] = 0
    arrays["header"] = np.array(json.dumps(header))
    np.savez(path, **arrays)
    with pytest.raises(ArtifactError, match="is incomplete or damaged .*: retrain it"):
        load_model(path)
