"""Multi-label corpora: textclf beside its peers in one run, on the test file or on set-aside training documents.

    python -m benchmarks.accuracy.multi_label TRAIN TEST [--nested] [--seeds 0,1,2] [--textclf-args "--search off"]

--nested: every model trains on 90% of TRAIN (split by the seed) and is scored on the other 10% (the test file is
not read): how a default is chosen without the test file. Peers as their docs recommend: TF-IDF (1, 2)-grams,
sublinear tf, then scikit-learn's OneVsRestClassifier(LinearSVC()) and OneVsRestClassifier(LogisticRegression());
fastText with -loss ova, its tutorial's settings (lr 0.5, 25 epochs, word bigrams) and threshold 0.5
(`predict -1 0.5`). Prints micro-, macro- and samples-F1, subset accuracy, and each model's seconds.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import MultiLabelBinarizer
from sklearn.svm import LinearSVC

from pipelines.corpus import read_corpus
from pipelines.labels import label_set


def scores(truth: np.ndarray, predicted: np.ndarray) -> dict:
    return {
        "micro-F1": f1_score(truth, predicted, average="micro", zero_division=0),
        "macro-F1": f1_score(truth, predicted, average="macro", zero_division=0),
        "samples-F1": f1_score(truth, predicted, average="samples", zero_division=1),  # (as textclf's eval)
        "subset acc": float((truth == predicted).all(axis=1).mean()),
    }


def sklearn_peer(make, train, test, binarizer) -> np.ndarray:
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)
    model = OneVsRestClassifier(make()).fit(vectorizer.fit_transform(train[0]), binarizer.transform(train[1]))
    return model.predict(vectorizer.transform(test[0]))


def fasttext_peer(train, test, binarizer) -> np.ndarray:
    import fasttext

    from textclf.frontends.bench_tools import fasttext_label, fasttext_text

    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8") as handle:
        for text, labels in zip(*train):
            handle.write(" ".join(fasttext_label(label) for label in labels) + f" {fasttext_text(text)}\n")
        handle.flush()
        model = fasttext.train_supervised(
            handle.name, lr=0.5, epoch=25, wordNgrams=2, loss="ova", thread=os.cpu_count() or 1, verbose=0
        )
    # a list of texts: fastText's one-text predict builds its probabilities with NumPy 1's copy=False
    found, _ = model.predict([fasttext_text(text) for text in test[0]], k=-1, threshold=0.5)
    predicted = [[label[len("__label__") :] for label in labels] for labels in found]
    names = {fasttext_label(c)[len("__label__") :]: c for c in binarizer.classes_}
    return binarizer.transform([[names[p] for p in labels if p in names] for labels in predicted])


def textclf_model(train_path: Path, test_path: Path, extra: list[str], binarizer, texts, seed: int) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        model = Path(folder) / "m.npz"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "textclf",
                "train",
                str(train_path),
                "--test",
                str(test_path),
                "--out",
                str(model),
                "--db",
                str(Path(folder) / "runs.db"),
                "--seed",
                str(seed),
                *extra,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        from textclf.inference.artifacts import load_model

        loaded = load_model(model)
        chosen = loaded.predicted_sets(loaded.predict_proba(texts))
        return binarizer.transform([[loaded.labels[i] for i in np.flatnonzero(row)] for row in chosen])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("train")
    parser.add_argument("test")
    parser.add_argument("--nested", action="store_true")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--textclf-args", default="")
    parser.add_argument("--peers", default="linearsvc,logreg,fasttext")
    args = parser.parse_args()
    corpus = read_corpus(args.train)
    texts, sets = list(corpus.texts), [label_set(label) for label in corpus.labels]
    print("| model | seed | micro-F1 | macro-F1 | samples-F1 | subset acc | s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for seed in [int(s) for s in args.seeds.split(",")]:
        with tempfile.TemporaryDirectory() as folder:
            if args.nested:
                fit, held = train_test_split(np.arange(len(texts)), test_size=0.1, random_state=seed)
                train = ([texts[i] for i in fit], [sets[i] for i in fit])
                test = ([texts[i] for i in held], [sets[i] for i in held])
            else:
                test_corpus = read_corpus(args.test)
                train, test = (texts, sets), (list(test_corpus.texts), [label_set(l) for l in test_corpus.labels])
            import json

            paths = []
            for name, (part_texts, part_sets) in (("train", train), ("test", test)):
                path = Path(folder) / f"{name}.jsonl"
                path.write_text(
                    "".join(json.dumps({"text": t, "labels": s}) + "\n" for t, s in zip(part_texts, part_sets))
                )
                paths.append(path)
            binarizer = MultiLabelBinarizer().fit(train[1] + test[1])
            truth = binarizer.transform(test[1])
            models = {
                "textclf": lambda: textclf_model(*paths, shlex.split(args.textclf_args), binarizer, test[0], seed)
            }
            peers = args.peers.split(",")
            if "linearsvc" in peers:
                models["TF-IDF + OvR LinearSVC"] = lambda: sklearn_peer(LinearSVC, train, test, binarizer)
            if "logreg" in peers:
                models["TF-IDF + OvR LogisticRegression"] = lambda: sklearn_peer(
                    lambda: LogisticRegression(max_iter=1000), train, test, binarizer
                )
            if "fasttext" in peers:
                models["fastText -loss ova"] = lambda: fasttext_peer(train, test, binarizer)
            for name, run in models.items():
                start = time.perf_counter()
                predicted = run()
                row = scores(truth, predicted)
                print(
                    f"| {name} | {seed} | "
                    + " | ".join(f"{v:.4f}" for v in row.values())
                    + f" | {time.perf_counter() - start:.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
