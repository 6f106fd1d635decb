"""Scoring a saved model on a labelled corpus: accuracy, per-class precision/recall/F1, confusion matrix; for a
multi-label model micro-, macro- and samples-F1, subset accuracy, Hamming loss and per-label
precision/recall/F1/support."""

from __future__ import annotations

from dataclasses import dataclass

from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from pipelines.corpus import Corpus
from pipelines.labels import indicator, is_multi_label, label_names
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
        return {
            "accuracy": self.accuracy,
            "n": self.n,
            "per_class": per_class,
            "averages": self.averages,
            "labels": self.labels,
            "confusion_matrix": self.confusion,
        }


@dataclass
class MultiLabelEvaluation:
    subset_accuracy: float  # documents whose predicted labels are exactly theirs
    hamming_loss: float  # share of (document, label) pairs predicted wrong
    f1: dict[str, float]  # "micro", "macro", "samples"
    labels: list[str]
    precision: list[float]
    recall: list[float]
    label_f1: list[float]
    support: list[int]
    n: int
    unknown: list[str]  # the corpus's labels the model does not know (their documents scored on the others)

    @property
    def accuracy(self) -> float:
        return self.subset_accuracy

    def to_dict(self) -> dict:
        per_label = {
            label: {"precision": p, "recall": r, "f1": f, "support": s}
            for label, p, r, f, s in zip(self.labels, self.precision, self.recall, self.label_f1, self.support)
        }
        return {
            "multi_label": True,
            "subset_accuracy": self.subset_accuracy,
            "hamming_loss": self.hamming_loss,
            "micro_f1": self.f1["micro"],
            "macro_f1": self.f1["macro"],
            "samples_f1": self.f1["samples"],
            "n": self.n,
            "per_label": per_label,
            "labels": self.labels,
            "unknown_labels": self.unknown,
        }


def evaluate_multi_label(model: Model, corpus: Corpus) -> MultiLabelEvaluation:
    """A multi-label model on a corpus of label sets (or of one label a document), read as label sets
    (read_corpus's label_sets)."""
    from sklearn.metrics import hamming_loss

    from textclf.models.thresholds import f1

    names = label_names(corpus.labels, True)
    truth = indicator(corpus.labels, model.labels).astype(bool)
    predicted = model.predicted_sets(model.predict_proba(corpus.texts))
    p, r, f, s = precision_recall_fscore_support(truth, predicted, zero_division=0)
    return MultiLabelEvaluation(
        subset_accuracy=float((truth == predicted).all(axis=1).mean()) if len(truth) else 0.0,
        hamming_loss=float(hamming_loss(truth, predicted)) if len(truth) else 0.0,
        f1={metric.split("-")[0]: f1(truth, predicted, metric) for metric in ("micro-f1", "macro-f1", "samples-f1")},
        labels=list(model.labels),
        precision=p.tolist(),
        recall=r.tolist(),
        label_f1=f.tolist(),
        support=[int(x) for x in s],
        n=len(truth),
        unknown=sorted(set(names) - set(model.labels)),
    )


def evaluate(model: Model, corpus: Corpus) -> Evaluation | MultiLabelEvaluation:
    """A text model on a text corpus, or an image model (textclf/inference/image_model.py) on an image corpus."""
    if getattr(model, "multi_label", False):
        return evaluate_multi_label(model, corpus)
    if is_multi_label(corpus.labels):
        raise CorpusError(
            f"corpus '{corpus.source}' has documents with other than one label, and the model "
            "predicts one a document: evaluate a multi-label model (textclf train --multi-label)"
        )
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
        ap, ar, af, _ = precision_recall_fscore_support(
            truth, predicted, labels=indices, average=average, zero_division=0
        )
        averages[average] = {"precision": float(ap), "recall": float(ar), "f1": float(af)}
    return Evaluation(
        accuracy=float((predicted == truth).mean()),
        labels=list(model.labels),
        precision=p.tolist(),
        recall=r.tolist(),
        f1=f.tolist(),
        support=[int(x) for x in s],
        confusion=confusion_matrix(truth, predicted, labels=indices).tolist(),
        n=len(truth),
        averages=averages,
    )
