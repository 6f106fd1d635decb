"""Input surfaces fuzzed (hypothesis): corpus readers, the documents `predict` reads, settings from JSON, the
model loader. Whatever the bytes, the answer is a result or one of textclf.errors.USER_ERRORS (a one-line
message naming the thing and the fix), never another exception."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

pytest.importorskip("hypothesis", reason="hypothesis (a dev dependency: make setup) is not installed")
from hypothesis import HealthCheck, example, given, settings as hypothesis_settings, strategies as st

from pipelines.corpus import read_corpus
from textclf.errors import USER_ERRORS
from textclf.inference.artifacts import load_model, save_model
from textclf.inference.predict import read_documents
from textclf.settings import Settings

# The suite runs a fixed set of 60 examples per test (derandomize), so a check passes or fails the same way on
# every machine (tests/conftest.py); `HYPOTHESIS_PROFILE=deep pytest tests/test_fuzz.py` searches fresh inputs.
FUZZ = hypothesis_settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                        max_size=3), max_leaves=8)
LINES = st.lists(st.one_of(
    st.binary(max_size=60),  # anything at all
    st.builds(lambda text, label: json.dumps({"text": text, "label": label}).encode(), JSON_VALUES, JSON_VALUES),
    st.builds(lambda record: json.dumps(record).encode(), st.dictionaries(st.sampled_from(["text", "label", "x"]),
                                                                          JSON_VALUES, max_size=3)),
), max_size=12)


def _either_result_or_user_error(fn):
    try:
        return fn()
    except USER_ERRORS as exc:
        message = str(exc)
        assert message and "\n" not in message, message  # one line, never empty
        return None


@FUZZ
@given(lines=LINES, suffix=st.sampled_from([".jsonl", ".csv"]))
@example(lines=[b"\r\x01"], suffix=".csv")  # a bare carriage return inside an unquoted CSV field
@example(lines=[b'"\x01', b'\x01",\x01'], suffix=".csv")  # one label, and it holds a line break
def test_corpus_files_give_a_corpus_or_a_one_line_error(tmp_path, lines, suffix):
    path = tmp_path / f"corpus{suffix}"
    path.write_bytes(b"\n".join(lines))
    corpus = _either_result_or_user_error(lambda: read_corpus(path))
    if corpus is not None:
        assert len(corpus.texts) == len(corpus.labels) and len(set(corpus.labels)) >= 2
        assert all(isinstance(t, str) and isinstance(l, str) for t, l in zip(corpus.texts, corpus.labels))


@FUZZ
@given(lines=LINES, suffix=st.sampled_from([".jsonl", ".csv", ".txt", "-"]))
def test_documents_to_predict_give_documents_or_a_one_line_error(tmp_path, lines, suffix):
    data = b"\n".join(lines)
    if suffix == "-":
        documents = _either_result_or_user_error(lambda: read_documents("-", 1.0, data))
    else:
        path = tmp_path / f"docs{suffix}"
        path.write_bytes(data)
        documents = _either_result_or_user_error(lambda: read_documents(str(path), 1.0))
    if documents is not None:
        assert all(isinstance(source, str) and isinstance(text, str) for source, text in documents)


@FUZZ
@given(data=st.dictionaries(st.sampled_from(["epochs", "learning_rate", "stop_words", "batch_size", "search",
                                             "nb_weighting", "features", "epochz", "pinned", "devices"]),
                            JSON_VALUES, max_size=4))
def test_settings_from_json_give_settings_or_a_one_line_error(data):
    settings = _either_result_or_user_error(lambda: Settings.from_user(data))
    if settings is not None:
        assert set(settings.pinned) <= set(data)


@pytest.fixture(scope="module")
def model_bytes(tmp_path_factory):
    from textclf.estimator import TextClassifier

    texts = ["fry the onions", "bake the bread", "the rocket launched", "the probe landed"] * 3
    labels = ["cooking", "cooking", "space", "space"] * 3
    model = TextClassifier(search="off", epochs=2, hidden=4, features=64).fit(texts, labels).model_
    path = save_model(model, tmp_path_factory.mktemp("model") / "m.npz")
    return path.read_bytes()


@FUZZ
@given(position=st.integers(min_value=0), flips=st.binary(min_size=1, max_size=8), cut=st.booleans())
def test_damaged_model_files_load_or_give_a_one_line_error(tmp_path, model_bytes, position, flips, cut):
    data = bytearray(model_bytes)
    at = position % len(data)
    if cut:
        data = data[:at]
    else:
        data[at:at + len(flips)] = flips
    path = tmp_path / "damaged.npz"
    path.write_bytes(bytes(data))
    model = _either_result_or_user_error(lambda: load_model(path))
    if model is not None:  # a flip that left it loadable still gives probabilities of the right shape
        assert model.predict_proba(["the rocket"]).shape == (1, 2)


@FUZZ
@given(members=st.dictionaries(st.sampled_from(["header.npy", "w1.npy", "b1.npy", "w2.npy", "b2.npy", "x.npy"]),
                               st.binary(max_size=200), max_size=5))
def test_foreign_archives_give_a_one_line_error(tmp_path, members):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    path = tmp_path / "foreign.npz"
    path.write_bytes(buffer.getvalue())
    assert _either_result_or_user_error(lambda: load_model(path)) is None
