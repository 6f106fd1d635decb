"""Input surfaces fuzzed (hypothesis): corpus readers, the documents `predict` reads, settings from JSON, the
model loader. Whatever the bytes, the answer is a result or one of textclf.errors.USER_ERRORS (a one-line
message naming the thing and the fix), never another exception."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
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
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
LINES = st.lists(
    st.one_of(
        st.binary(max_size=60),  # anything at all
        st.builds(lambda text, label: json.dumps({"text": text, "label": label}).encode(), JSON_VALUES, JSON_VALUES),
        st.builds(
            lambda record: json.dumps(record).encode(),
            st.dictionaries(st.sampled_from(["text", "label", "x"]), JSON_VALUES, max_size=3),
        ),
        st.builds(
            lambda labels, text: b" ".join(b"__label__" + label for label in labels) + b" " + text,  # fastText's
            st.lists(st.binary(max_size=6), max_size=3),
            st.binary(max_size=30),
        ),
    ),
    max_size=12,
)


def _either_result_or_user_error(fn):
    try:
        return fn()
    except USER_ERRORS as exc:
        message = str(exc)
        assert message and "\n" not in message, message  # one line, never empty
        return None


@FUZZ
@given(lines=LINES, suffix=st.sampled_from([".jsonl", ".csv", ".tsv", ".txt", ".parquet"]))
@example(lines=[b"\r\x01"], suffix=".csv")  # a bare carriage return inside an unquoted CSV field
@example(lines=[b'"\x01', b'\x01",\x01'], suffix=".csv")  # one label, and it holds a line break
def test_corpus_files_give_a_corpus_or_a_one_line_error(tmp_path, lines, suffix):
    path = tmp_path / f"corpus{suffix}"
    path.write_bytes(b"\n".join(lines))
    corpus = _either_result_or_user_error(lambda: read_corpus(path))
    if corpus is not None:
        assert len(corpus.texts) == len(corpus.labels) and len(set(corpus.labels)) >= 2
        assert all(isinstance(t, str) and isinstance(l, str) for t, l in zip(corpus.texts, corpus.labels))


@pytest.fixture(scope="module")
def two_workers():
    from pipelines.workers import WorkerPool

    with WorkerPool(2) as pool:
        yield pool


CELLS = st.one_of(
    st.text(st.sampled_from('aab b,"\t\\\u00e9'), max_size=8), st.sampled_from(["x\ny", '"\n"', "\r", "a\r\n"])
)  # line breaks, now and then
LABELS = st.sampled_from(["a", "b", '"b"', ""])
TABLE_LINES = st.lists(
    st.one_of(
        st.binary(max_size=30),  # anything at all
        st.builds(lambda label, cells: ",".join([label, *cells]).encode(), LABELS, st.lists(CELLS, max_size=2)),
        st.builds(
            lambda label, cells: ",".join([label, *('"' + c.replace('"', '""') + '"' for c in cells)]).encode(),
            LABELS,
            st.lists(CELLS, max_size=2),
        ),  # quoted cells, maybe holding line breaks
        st.builds(lambda label, text: "\t".join([text, label]).encode(), LABELS, CELLS),  # a TSV row
        st.builds(lambda label, text: f"__label__{label} {text}".encode(), LABELS, CELLS),  # fastText's
        st.sampled_from([b"label,text", b"text\tlabel", b"__label__a x", b""]),  # headers, a blank line
    ),
    min_size=3,
    max_size=25,
)


def _outcome(read, pool=None):
    """A read's corpus as what one reader sees (labels, texts, fingerprint, skips), or its user error's message;
    texts left in the file are fetched by the pool's workers."""
    try:
        corpus = read()
    except USER_ERRORS as exc:
        return ("error", str(exc))
    texts = corpus.texts
    if not isinstance(texts, list):
        fetched = texts.fetch(np.arange(len(texts)), pool)
        texts = [fetched[row] for row in range(len(texts))]
    return (corpus.labels, texts, corpus.fingerprint, corpus.skipped, corpus.non_utf8)


@FUZZ
@given(lines=TABLE_LINES, suffix=st.sampled_from([".csv", ".tsv", ".txt"]))
def test_a_large_file_read_by_the_workers_is_what_one_reader_sees(tmp_path, monkeypatch, two_workers, lines, suffix):
    from pipelines import corpus as corpus_module

    monkeypatch.setattr(corpus_module, "PARALLEL_READ_BYTES", 1)  # every file is large
    monkeypatch.setattr(corpus_module, "SHARE_BYTES", 16)  # in shares of a few lines
    path = tmp_path / f"corpus{suffix}"
    path.write_bytes(b"\n".join(lines))

    in_workers = _outcome(lambda: read_corpus(path, pool=two_workers, keep_texts=False), two_workers)
    assert in_workers == _outcome(lambda: read_corpus(path))


@FUZZ
@given(lines=LINES, suffix=st.sampled_from([".jsonl", ".csv", ".tsv", ".txt", ".parquet", "-"]))
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
@given(
    lines=st.lists(
        st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n\r\ufeff"), max_size=20),
        min_size=1,
        max_size=12,
    )
)
def test_every_line_read_to_predict_is_one_document_in_order_a_blank_one_empty(lines):
    """The output contract's reading side: standard input gives one (source, text) a line, numbered in order, so
    `predict -` prints a line for every line it read; a line of no text is a document with no text."""
    data = "\n".join(lines).encode()
    documents = _either_result_or_user_error(lambda: read_documents("-", 1.0, data))
    if documents is not None:
        read = data.decode().splitlines()
        assert [source for source, _ in documents] == [f"-:{n}" for n in range(1, len(read) + 1)]
        assert [bool(text.strip()) for _, text in documents] == [bool(line.strip()) for line in read]


@FUZZ
@given(
    data=st.dictionaries(
        st.sampled_from(
            [
                "epochs",
                "learning_rate",
                "stop_words",
                "batch_size",
                "search",
                "nb_weighting",
                "features",
                "epochz",
                "pinned",
                "devices",
            ]
        ),
        JSON_VALUES,
        max_size=4,
    )
)
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
        data[at : at + len(flips)] = flips
    path = tmp_path / "damaged.npz"
    path.write_bytes(bytes(data))
    model = _either_result_or_user_error(lambda: load_model(path))
    if model is not None:  # a flip that left it loadable still gives probabilities of the right shape
        assert model.predict_proba(["the rocket"]).shape == (1, 2)


@FUZZ
@given(
    members=st.dictionaries(
        st.sampled_from(["header.npy", "w1.npy", "b1.npy", "w2.npy", "b2.npy", "x.npy"]),
        st.binary(max_size=200),
        max_size=5,
    )
)
def test_foreign_archives_give_a_one_line_error(tmp_path, members):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    path = tmp_path / "foreign.npz"
    path.write_bytes(buffer.getvalue())
    assert _either_result_or_user_error(lambda: load_model(path)) is None


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """A service with model 'sample' v1 published (trained by the daemon), for every fuzzed request of the
    module; its own data dir (the per-test TEXTCLF_HOME of conftest is function-scoped)."""
    import shutil

    from fastapi.testclient import TestClient

    from db import jobs, open_db
    from textclf.frontends.daemon import DaemonOptions, run_daemon
    from textclf.frontends.service import ServiceOptions, create_app

    home = tmp_path_factory.mktemp("service")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TEXTCLF_HOME", str(home))
        env.delenv("TEXTCLF_DB", raising=False)
        corpus = home / "corpus"
        shutil.copytree(Path(__file__).resolve().parents[1] / "textclf" / "sample_corpus", corpus)
        db_path = home / "runs.db"
        settings = Settings(epochs=2, min_steps=60, batch_size=8, hidden=16, search="off")
        jobs.submit(open_db(db_path), str(corpus), settings.to_dict(), "sample")
        run_daemon(DaemonOptions(db_path=db_path, once=True))
        options = ServiceOptions(db_path=db_path, token="secret", data_root=home, max_body_bytes=10_000)
        with TestClient(create_app(options)) as client:
            yield client


ROUTES = [
    "/v1/models/sample:predict",
    "/v1/models/sample/versions/1:predict",
    "/v1/models/sample/versions/9:predict",
    "/v1/models/nosuch:predict",
    "/v2/models/sample/infer",
    "/v2/models/sample/versions/1/infer",
    "/v1/jobs",
]
BODIES = st.one_of(
    st.binary(max_size=120),  # not JSON at all, or JSON by chance
    JSON_VALUES,
    st.dictionaries(
        st.sampled_from(["instances", "top_k", "inputs", "corpus", "name", "settings", "id"]), JSON_VALUES, max_size=4
    ),
    st.builds(
        lambda data: {"inputs": [{"name": "text", "shape": [1], "datatype": "BYTES", "data": data}]}, JSON_VALUES
    ),
)


@FUZZ
@given(
    route=st.sampled_from(ROUTES),
    body=BODIES,
    with_token=st.booleans(),
    content_type=st.sampled_from(["application/json", None, "application/x-www-form-urlencoded"]),
)
@example(route=ROUTES[0], body={"instances": float("inf")}, with_token=True, content_type="application/json")
def test_http_bodies_get_an_answer_or_a_4xx(service, route, body, with_token, content_type):
    # (the example: FastAPI echoed inf back, a 500; no content type or a form's, as curl -d sends, is read as JSON)
    headers = {"Authorization": "Bearer secret"} if with_token else {}
    if content_type:
        headers["Content-Type"] = content_type
    # Python's json writes NaN and Infinity as bare tokens, which strict JSON parsers refuse: sent as they are.
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = service.post(route, content=content, headers=headers)
    assert response.status_code < 500, (route, body, response.status_code, response.text[:300])
    if response.status_code >= 400:
        assert isinstance(response.json()["error"], str)  # said why, as JSON


@FUZZ
@given(timeout=st.text(max_size=12), cache=st.text(max_size=6), tasks=st.text(max_size=6))
@example(timeout="0\x1e", cache="", tasks="")  # a record separator: a line break to splitlines()
def test_environment_variables_give_a_result_or_a_one_line_error(monkeypatch, timeout, cache, tasks):
    """The variables the commands read, set to anything: the command works or says in one line which variable
    is wrong; never a traceback."""
    from typer.testing import CliRunner

    from textclf.frontends.cli import app

    for name, value in (("TEXTCLF_DB_TIMEOUT", timeout), ("TEXTCLF_VECTOR_CACHE", cache), ("SLURM_NTASKS", tasks)):
        if "\x00" in value:
            continue  # an environment cannot hold a NUL byte
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["runs", "list"])
    assert result.exit_code in (0, 1), (result.output, result.exception)
    if result.exit_code == 1:
        assert len(result.output.strip().splitlines()) == 1, result.output
