"""A "tfidf" vectorizer fitted on a random sample of the training documents against one fitted on all of them:
the same network (the product's default settings, no search, fixed epochs) trained on each one's matrix.

    python -m benchmarks.accuracy.fit_sample TRAIN.jsonl --test TEST.jsonl [--samples 20000,50000] [--epochs 4]

Prints a markdown table: documents fitted on, fit + transform seconds, the share of the full fit's selected
terms the sample also selected, validation accuracy (a tenth of TRAIN held out, never fitted on) and test
accuracy. pipelines/vectorize/fit.py's FIT_DOCUMENTS rests on it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train")
    parser.add_argument("--test", required=True)
    parser.add_argument("--samples", default="20000")
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()
    from pipelines.corpus import read_corpus
    from pipelines.vectorize import fit_vectorizer, vectorize_pool
    from textclf.inference.text_model import Model, encode_labels
    from textclf.settings import Settings
    from textclf.training.inputs import TrainingRows
    from textclf.training.network import fit_network

    corpus, test = read_corpus(args.train), read_corpus(args.test)
    rows = np.random.default_rng(1).permutation(len(corpus.texts))
    held = rows[: len(rows) // 10]
    kept = np.sort(rows[len(rows) // 10 :])
    texts, labels = [corpus.texts[i] for i in kept], [corpus.labels[i] for i in kept]
    classes = sorted(set(labels))
    settings = Settings(search="off", epochs=args.epochs, pinned=("epochs",))
    full_terms = None
    print(
        f"{len(texts):,} training documents ({len(held):,} held out for validation), {len(test.texts):,} test; "
        f"{args.epochs} epochs"
    )
    print("| fitted on | fit + transform s | selected terms shared with the full fit | validation | test |")
    print("|---:|---:|---:|---:|---:|")
    with vectorize_pool(len(texts)) as pool:
        for documents in [len(texts)] + [int(s) for s in args.samples.split(",")]:
            start = time.perf_counter()
            vec, train_x = fit_vectorizer(texts, labels, settings, pool=pool, fit_documents=documents)
            seconds = time.perf_counter() - start
            full_terms = full_terms or set(vec.terms)
            held_x = vec.transform([corpus.texts[i] for i in held], pool=pool)
            test_x = vec.transform(test.texts, pool=pool)
            held_y = encode_labels([corpus.labels[i] for i in held], classes)
            result = fit_network(
                TrainingRows(train_x, encode_labels(labels, classes), len(classes), held_x, held_y), settings, "xla"
            )
            scores = Model(vec, result.params, labels=classes, settings=settings).scores(test_x)
            test_accuracy = float((scores.argmax(axis=1) == encode_labels(test.labels, classes)).mean())
            shared = len(full_terms & set(vec.terms)) / len(full_terms)
            print(
                f"| {documents:,} | {seconds:.1f} | {shared:.1%} | {result.history[-1].eval_accuracy:.4f} | "
                f"{test_accuracy:.4f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
