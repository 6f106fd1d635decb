"""scikit-learn peers on a task's train/test JSONL, timed end to end in this process (read + vectorize + fit +
predict), for comparison with `textclf train` on the same split and machine.

    python -m benchmarks.accuracy.peers TASK_DIR [--mlp]

TF-IDF here is scikit-learn's TfidfVectorizer(sublinear_tf=True) over the whole vocabulary; SGDClassifier and
MLPClassifier(128, logistic) use their defaults (random_state 0; the MLP stops after max_iter=30 epochs).
"""

from __future__ import annotations

import argparse
import time

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import SGDClassifier
from sklearn.neural_network import MLPClassifier

from pipelines.corpus import read_corpus


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("task_dir")
    parser.add_argument("--mlp", action="store_true", help="also MLPClassifier(128, logistic) (slow on a CPU)")
    args = parser.parse_args()
    models = {"TF-IDF + SGDClassifier": lambda: SGDClassifier(random_state=0)}
    if args.mlp:
        models["TF-IDF + MLPClassifier(128, logistic)"] = lambda: MLPClassifier(
            hidden_layer_sizes=(128,), activation="logistic", max_iter=30, random_state=0
        )
    print("| peer | test accuracy | wall s |")
    print("|---|---:|---:|")
    for name, make in models.items():
        start = time.perf_counter()
        train, test = read_corpus(f"{args.task_dir}/train.jsonl"), read_corpus(f"{args.task_dir}/test.jsonl")
        vectorizer = TfidfVectorizer(sublinear_tf=True)
        model = make().fit(vectorizer.fit_transform(train.texts), train.labels)
        accuracy = (model.predict(vectorizer.transform(test.texts)) == test.labels).mean()
        print(f"| {name} | {accuracy:.4f} | {time.perf_counter() - start:.1f} |", flush=True)


if __name__ == "__main__":
    main()
