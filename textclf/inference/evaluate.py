"""Scoring a saved model on a labelled corpus: accuracy, per-class precision/recall/F1, confusion matrix."""

from __future__ import annotations

from dataclasses import dataclass

from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from pipelines.corpus import Corpus
from textclf.inference.text_model import Model, encode_labels
from textclf.errors import CorpusError


@dataclass
class Evaluation:
    accuracy: float
    labels: list[str]
    precision: list[float]
    recall: list[float]
    f1: list[float]
    support: list[int]
    confusion: list[list[int]]  # rows: true label, columns: predicted label (order of `labels`)
    n: int
    # "macro" (unweighted mean over the classes) and "weighted" (by support): precision, recall, f1, as in
    # scikit-learn's classification_report
    averages: dict[str, dict[str, float]]

    def to_dict(self) -> dict:
        per_class = {
            label: {"precision": p, "recall": r, "f1": f, "support": s}
            for label, p, r, f, s in zip(self.labels, self.precision, self.recall, self.f1, self.support)
        }
        return {"accuracy": self.accuracy, "n": self.n, "per_class": per_class, "averages": self.averages,
                "labels": self.labels, "confusion_matrix": self.confusion}


def evaluate(model: Model, corpus: Corpus) -> Evaluation:
    """A text model on a text corpus, or an image model (textclf/inference/image_model.py) on an image corpus."""
    unknown = sorted(set(corpus.labels) - set(model.labels))
    if unknown:
        raise CorpusError(
            f"corpus '{corpus.source}' has label '{unknown[0]}' that the model does not know "
            f"(it knows {', '.join(model.labels)}): evaluate on a corpus with the model's labels"
        )
    truth = encode_labels(corpus.labels, model.labels)
    if model.kind == "image":
        predicted = model.predict_proba(corpus.images).argmax(axis=1)
    else:
        predicted = model.scores(model.vectorizer.transform(corpus.texts)).argmax(axis=1)
    indices = list(range(len(model.labels)))
    p, r, f, s = precision_recall_fscore_support(truth, predicted, labels=indices, zero_division=0)
    averages = {}
    for average in ("macro", "weighted"):
        ap, ar, af, _ = precision_recall_fscore_support(truth, predicted, labels=indices, average=average,
                                                        zero_division=0)
        averages[average] = {"precision": float(ap), "recall": float(ar), "f1": float(af)}
    return Evaluation(
        accuracy=float((predicted == truth).mean()), labels=list(model.labels),
        precision=p.tolist(), recall=r.tolist(), f1=f.tolist(), support=[int(x) for x in s],
        confusion=confusion_matrix(truth, predicted, labels=indices).tolist(), n=len(truth), averages=averages,
    )
