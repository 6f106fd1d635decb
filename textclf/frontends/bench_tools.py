"""The tools `textclf bench` compares, each run in a fresh process: `python -m textclf.frontends.bench_tools TOOL TRAIN
TEST`
prints one JSON object (accuracy, train_s, epochs, n_train, n_test, peak_host_mb, peak_gpu_mb, notes).

Every tool reads the same train/test JSONL and is timed by the parent from process start to exit (end to end:
imports, reading, vectorizing, training, predicting the test set). train_s is the tool's own training time.
- textclf-pallas / textclf-xla: `textclf.runs.run.train` with default settings in a throwaway data dir (no vector
  or compile cache from earlier runs: a cold start).
- torch-dense / torch-embeddingbag: textclf's own features (same vectorizer), the same 128-unit sigmoid MLP,
  Adam lr 1e-3, batch 64, 10 epochs in PyTorch on its GPU (CPU when none): dense batches (sparse -> dense on
  the device) or an nn.EmbeddingBag(mode="sum", per-sample weights) first layer.
- fasttext: the `fasttext` package (pip install fasttext-wheel) as its supervised tutorial recommends: lowercased
  word tokens (punctuation split off), lr 0.5, word bigrams, 25 epochs, all CPU threads.
- sklearn-sgd / sklearn-svm / sklearn-cnb: TfidfVectorizer(ngram_range (1, 2), sublinear_tf) + SGDClassifier /
  LinearSVC / ComplementNB(alpha 0.1, as in scikit-learn's text classification example); sklearn-mlp:
  TfidfVectorizer(sublinear_tf) + MLPClassifier(128, logistic, max_iter 30). random_state 0 where there is one.
A multi-label task (pipelines/labels.py) is scored by micro-F1 ("metric": "micro-F1" in the JSON, in the "accuracy"
field): textclf as it trains label sets, fastText with -loss ova and threshold 0.5, scikit-learn's classifiers
one-vs-rest (OneVsRestClassifier; MLPClassifier takes the indicator matrix itself); the torch tools train one label a
document and are skipped.
Chinese, Japanese, Thai, Lao, Khmer and Myanmar text has no spaces between words: every tool gets each of its
characters as a word (fastText's input has them apart; scikit-learn's token_pattern is
pipelines.word_counts.UNSPACED_TOKEN_PATTERN), as textclf splits it, the usual bag of words for these scripts where
no word segmenter is at hand. Other text tokenises as before.
"""

from __future__ import annotations

import json
import os
import re
import resource
import sys
import tempfile
import time
from pathlib import Path

from pipelines.word_counts import UNSPACED_CLASS, UNSPACED_TOKEN_PATTERN

TOOLS = (
    "textclf-pallas",
    "textclf-xla",
    "torch-dense",
    "torch-embeddingbag",
    "fasttext",
    "sklearn-sgd",
    "sklearn-svm",
    "sklearn-cnb",
    "sklearn-mlp",
)


class ToolMissing(Exception):
    """The tool's package is not installed here."""


def _read(train: str, test: str):
    from pipelines.corpus import read_corpus

    return read_corpus(train), read_corpus(test)


def _textclf(backend: str, train: str, test: str) -> dict:
    from textclf.settings import Settings
    from textclf.errors import BackendError
    from textclf.runs.run import train as train_model

    # No JAX before train(): it starts JAX itself, after forking its vectorizing workers (as `textclf train`).
    with tempfile.TemporaryDirectory() as home:
        os.environ["TEXTCLF_HOME"] = home
        os.environ["TEXTCLF_VECTOR_CACHE"] = "off"
        try:
            result = train_model(train, Settings(backend=backend), test_path=test)
        except BackendError as exc:
            raise ToolMissing(str(exc)) from None
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    metric = result.model.metadata.get("eval_metric", "accuracy")
    if metric != "accuracy":
        return {
            **_textclf_numbers(result, stats, jax.default_backend()),
            "accuracy": result.model.metadata["eval_score"],
            "metric": "micro-F1",
        }
    return _textclf_numbers(result, stats, jax.default_backend())


def _textclf_numbers(result, stats: dict, device: str) -> dict:
    return {
        "accuracy": result.eval_accuracy,
        "train_s": result.phases["train"],
        "epochs": len(result.history),
        "n_train": result.n_train,
        "n_test": result.n_eval,
        "peak_gpu_mb": stats.get("peak_bytes_in_use", 0) / 2**20 if device == "gpu" else None,
        "notes": f"search {result.phases.get('search', 0):.1f} s, compile {result.phases['compile']:.1f} s, "
        f"vectorize {result.phases['vectorize']:.1f} s; chose {_chosen(result.model.settings)}"
        f"{_family_trial(result.search.family if result.search else None)}",
    }


def _family_trial(family) -> str:
    """The search's family trial (a FamilySummary) as a note: the linear family's validation lead (or lag) over the
    network's."""
    if family is None or family.by is None:
        return ""
    beside = f", beside the network {family.mixed_by * 100:+.2f}" if family.mixed_by is not None else ""
    return f" (linear {family.by * 100:+.2f}{beside} points on validation)"


def _chosen(settings) -> str:
    return (
        f"stop words {settings.stop_words}, n-grams {settings.ngram_max}, NB {settings.nb_weighting}, "
        f"lr {settings.learning_rate:g}, wd {settings.weight_decay:g}, "
        f"{settings.epochs} epochs, "
        f"{'a linear model' if settings.family == 'linear' else f'{settings.ensemble or 1} network(s)'}"
        f"{' + character n-grams' if settings.char_ngrams else ''}"
        f"{' + a linear model' if settings.family == 'network+linear' else ''}"
    )


def _multi_label(train_corpus, test_corpus):
    """(binarizer, train sets, test sets) where the training corpus holds label sets, else None."""
    from sklearn.preprocessing import MultiLabelBinarizer

    from pipelines.labels import is_multi_label, label_set

    if not is_multi_label(train_corpus.labels):
        return None
    train_sets = [label_set(label) for label in train_corpus.labels]
    test_sets = [label_set(label) for label in test_corpus.labels]
    return MultiLabelBinarizer().fit(train_sets + test_sets), train_sets, test_sets


def _micro_f1(binarizer, truth: list, predicted: list) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(binarizer.transform(truth), binarizer.transform(predicted), average="micro", zero_division=0))


def _torch(bag: bool, train: str, test: str) -> dict:
    try:
        import torch
    except ImportError:
        raise ToolMissing("torch is not installed") from None
    import numpy as np

    from pipelines.vectorize import fit_vectorizer
    from textclf.inference.text_model import encode_labels
    from textclf.settings import Settings

    settings = Settings()
    train_corpus, test_corpus = _read(train, test)
    if _multi_label(train_corpus, test_corpus) is not None:
        raise ToolMissing("the torch tools train one label a document; this task holds label sets")
    classes = sorted(set(train_corpus.labels))
    vectorizer, x = fit_vectorizer(train_corpus.texts, train_corpus.labels, settings)
    test_x = vectorizer.transform(test_corpus.texts, workers=None)
    y = encode_labels(train_corpus.labels, classes).astype(np.int64)  # cross_entropy's targets must be int64
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    features, hidden, n_classes = x.shape[1], settings.hidden, len(classes)
    first = (
        torch.nn.EmbeddingBag(features, hidden, mode="sum") if bag else torch.nn.Linear(features, hidden, bias=False)
    )
    out = torch.nn.Linear(hidden, n_classes)
    modules = torch.nn.ModuleList([first, out]).to(device)
    bias = torch.nn.Parameter(torch.zeros(hidden, device=device))  # the hidden layer's bias (EmbeddingBag has none)
    optimizer = torch.optim.Adam(list(modules.parameters()) + [bias], lr=settings.learning_rate)

    def scores(rows):
        indptr = torch.as_tensor(rows.indptr, dtype=torch.int64, device=device)
        indices = torch.as_tensor(rows.indices, dtype=torch.int64, device=device)
        values = torch.as_tensor(rows.data, device=device)
        if bag:
            pre = first(indices, indptr[:-1], per_sample_weights=values)
        else:
            dense = torch.sparse_csr_tensor(indptr, indices, values, size=rows.shape).to_dense()
            pre = first(dense)
        return out(torch.sigmoid(pre + bias))

    rng = np.random.default_rng(0)
    labels = torch.as_tensor(y, device=device)
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(settings.epochs):
        order = rng.permutation(x.shape[0])
        for begin in range(0, len(order), settings.batch_size):
            batch = order[begin : begin + settings.batch_size]
            loss = torch.nn.functional.cross_entropy(scores(x[batch]), labels[torch.as_tensor(batch, device=device)])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    train_s = time.perf_counter() - start
    with torch.no_grad():
        predicted = np.concatenate(
            [scores(test_x[i : i + 4096]).argmax(1).cpu().numpy() for i in range(0, test_x.shape[0], 4096)]
        )
    accuracy = float((np.array(classes)[predicted] == np.array(test_corpus.labels)).mean())
    gpu = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else None
    return {
        "accuracy": accuracy,
        "train_s": train_s,
        "epochs": settings.epochs,
        "n_train": x.shape[0],
        "n_test": test_x.shape[0],
        "peak_gpu_mb": gpu,
        "notes": f"torch {torch.__version__} on {device.type}",
    }


# fastText's tutorial's tokens (words, punctuation split off), each character of a script written without spaces
# (Chinese, Japanese, Thai, ...) one of its own.
_FASTTEXT_TOKEN = re.compile(f"(?u)[^\\W{UNSPACED_CLASS}]+|[{UNSPACED_CLASS}]|[^\\w\\s]")


def fasttext_text(text: str) -> str:
    """A document as fastText's tutorial prepares it: lowercased word tokens, punctuation split off, one line."""
    return " ".join(_FASTTEXT_TOKEN.findall(text.lower()))


def fasttext_label(label: str) -> str:
    return f"__label__{label.replace(' ', '_')}"


FASTTEXT_EPOCHS = 25  # the supervised tutorial's


def fasttext_train(path: str, epochs: int = FASTTEXT_EPOCHS, verbose: int = 0, loss: str = "softmax"):
    """fastText trained on its input file (a line a document: fasttext_label, a space, fasttext_text) as its
    supervised tutorial recommends: lr 0.5, word bigrams, every CPU thread. verbose 2: its progress and ETA on
    stderr."""
    try:
        import fasttext
    except ImportError:
        raise ToolMissing("fasttext is not installed (pip install fasttext-wheel)") from None
    return fasttext.train_supervised(
        path, lr=0.5, epoch=epochs, wordNgrams=2, thread=os.cpu_count() or 1, verbose=verbose, loss=loss
    )


def _fasttext(train: str, test: str) -> dict:
    train_corpus, test_corpus = _read(train, test)
    threads = os.cpu_count() or 1
    sets = _multi_label(train_corpus, test_corpus)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8") as handle:
        for number, (label, text) in enumerate(zip(train_corpus.labels, train_corpus.texts)):
            labels = [label] if sets is None else sets[1][number]
            handle.write(" ".join(fasttext_label(name) for name in labels) + f" {fasttext_text(text)}\n")
        handle.flush()
        start = time.perf_counter()
        model = fasttext_train(handle.name, loss="softmax" if sets is None else "ova")
        train_s = time.perf_counter() - start
    texts = [fasttext_text(t) for t in test_corpus.texts]
    if sets is not None:  # its -loss ova prediction: every label above 0.5 (a list: NumPy 2 breaks one text's)
        found, _ = model.predict(texts, k=-1, threshold=0.5)
        names = {fasttext_label(name): name for name in sets[0].classes_}
        predicted = [[names[label] for label in labels if label in names] for labels in found]
        return {
            "accuracy": _micro_f1(sets[0], sets[2], predicted),
            "metric": "micro-F1",
            "train_s": train_s,
            "epochs": FASTTEXT_EPOCHS,
            "n_train": len(train_corpus),
            "n_test": len(test_corpus),
            "peak_gpu_mb": None,
            "notes": f"{threads} threads, lr 0.5, wordNgrams 2, -loss ova, threshold 0.5",
        }
    predicted, _ = model.predict(texts)
    expected = [fasttext_label(label) for label in test_corpus.labels]
    accuracy = sum(p[0] == e for p, e in zip(predicted, expected)) / len(expected)
    return {
        "accuracy": accuracy,
        "train_s": train_s,
        "epochs": FASTTEXT_EPOCHS,
        "n_train": len(train_corpus),
        "n_test": len(test_corpus),
        "peak_gpu_mb": None,
        "notes": f"{threads} threads, lr 0.5, wordNgrams 2",
    }


def _sklearn(kind: str, train: str, test: str) -> dict:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import SGDClassifier
    from sklearn.naive_bayes import ComplementNB
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import LinearSVC

    train_corpus, test_corpus = _read(train, test)
    vectorizer = TfidfVectorizer(
        sublinear_tf=True, ngram_range=(1, 1) if kind == "mlp" else (1, 2), token_pattern=UNSPACED_TOKEN_PATTERN
    )
    x = vectorizer.fit_transform(train_corpus.texts)
    model = {
        "mlp": lambda: MLPClassifier(hidden_layer_sizes=(128,), activation="logistic", max_iter=30, random_state=0),
        "sgd": lambda: SGDClassifier(random_state=0),
        "svm": lambda: LinearSVC(random_state=0),
        "cnb": lambda: ComplementNB(alpha=0.1),
    }[kind]()
    sets = _multi_label(train_corpus, test_corpus)
    if sets is not None:  # one-vs-rest over the label indicator matrix
        from sklearn.multiclass import OneVsRestClassifier

        model = model if kind == "mlp" else OneVsRestClassifier(model)
        start = time.perf_counter()
        model.fit(x, sets[0].transform(sets[1]))
        train_s = time.perf_counter() - start
        chosen = model.predict(vectorizer.transform(test_corpus.texts))
        return {
            "accuracy": float(_micro_f1(sets[0], sets[2], sets[0].inverse_transform(chosen))),
            "metric": "micro-F1",
            "train_s": train_s,
            "epochs": 0,
            "n_train": len(train_corpus),
            "n_test": len(test_corpus),
            "peak_gpu_mb": None,
            "notes": "one-vs-rest",
        }
    start = time.perf_counter()
    model.fit(x, train_corpus.labels)
    train_s = time.perf_counter() - start
    accuracy = float((model.predict(vectorizer.transform(test_corpus.texts)) == test_corpus.labels).mean())
    return {
        "accuracy": accuracy,
        "train_s": train_s,
        "epochs": int(getattr(model, "n_iter_", 0)),
        "n_train": len(train_corpus),
        "n_test": len(test_corpus),
        "peak_gpu_mb": None,
        "notes": "",
    }


def run_tool(tool: str, train: str, test: str) -> dict:
    runners = {
        "textclf-pallas": lambda: _textclf("pallas", train, test),
        "textclf-xla": lambda: _textclf("xla", train, test),
        "torch-dense": lambda: _torch(False, train, test),
        "torch-embeddingbag": lambda: _torch(True, train, test),
        "fasttext": lambda: _fasttext(train, test),
        "sklearn-sgd": lambda: _sklearn("sgd", train, test),
        "sklearn-svm": lambda: _sklearn("svm", train, test),
        "sklearn-cnb": lambda: _sklearn("cnb", train, test),
        "sklearn-mlp": lambda: _sklearn("mlp", train, test),
    }
    result = runners[tool]()
    # The largest of this process and its (vectorizing) worker processes; Linux reports KB.
    result["peak_host_mb"] = (
        max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024
    )
    return result


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    try:
        print(json.dumps(run_tool(*sys.argv[1:4])))
    except ToolMissing as exc:
        print(json.dumps({"missing": str(exc)}))
