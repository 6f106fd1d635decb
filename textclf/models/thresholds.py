"""A multi-label model's thresholds: the probability above which each sigmoid output says "this label", chosen on
held-out training documents for the metric the run is judged by (micro-F1 by default).

One global threshold, or one a label where that scores higher on held-out documents it was not chosen on: both
are chosen on each half of the held-out documents and scored on the other half (two-fold), and the better kind is
then chosen on all of them. One a label fits the held-out documents more closely, so it must win where it did not
choose to be kept."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The thresholds tried: probabilities 0.05 .. 0.95.
GRID = np.round(np.arange(0.05, 0.951, 0.05), 2)
METRICS = ("micro-f1", "macro-f1", "samples-f1")


@dataclass(frozen=True)
class Thresholds:
    values: np.ndarray  # (C,) probabilities: label c is predicted where its probability > values[c]
    per_label: bool
    metric: str
    scores: dict  # the held-out two-fold score of each kind: {"global": ..., "per_label": ...}

    def summary(self) -> dict:
        return {
            "per_label": self.per_label,
            "metric": self.metric,
            "two_fold": self.scores,
            "values": [round(float(v), 4) for v in self.values],
        }


def sigmoid(scores: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * scores))


def f1(truth: np.ndarray, predicted: np.ndarray, metric: str = "micro-f1") -> float:
    """(n, C) 0/1 truth and predictions -> the metric (scikit-learn's f1_score; a document of no labels predicted
    none scores 1 in samples-F1, an F1 with nothing to count 0 otherwise)."""
    from sklearn.metrics import f1_score

    average = metric.split("-")[0]
    return float(f1_score(truth, predicted, average=average, zero_division=1 if average == "samples" else 0))


def best_score(scores: np.ndarray, truth: np.ndarray, metric: str = "micro-f1") -> float:
    """The metric of (n, C) output scores at the best global threshold of GRID."""
    probabilities, truth = sigmoid(np.asarray(scores, np.float64)), np.asarray(truth, bool)
    if metric != "micro-f1":
        return max(f1(truth, probabilities > t, metric) for t in GRID)
    best, true = 0.0, int(truth.sum())
    for threshold in GRID:  # micro-F1 from counts, a threshold at a time ((n, C) booleans, not (G, n, C))
        predicted = probabilities > threshold
        best = max(best, 2 * int((predicted & truth).sum()) / max(1, true + int(predicted.sum())))
    return float(best)


def choose_thresholds(scores: np.ndarray, truth: np.ndarray, metric: str = "micro-f1") -> Thresholds:
    """Held-out documents' (n, C) output scores (before the sigmoid) and 0/1 labels -> the thresholds."""
    probabilities, truth = sigmoid(np.asarray(scores, np.float64)), np.asarray(truth, bool)
    if len(truth) < 2:  # no two halves to choose on one and score on the other: one global threshold
        return Thresholds(_chosen(probabilities, truth, metric, False), False, metric, {})
    halves = np.arange(len(truth)) % 2 == 0
    two_fold = {"global": 0.0, "per_label": 0.0}
    for fit, held in ((halves, ~halves), (~halves, halves)):
        for kind in two_fold:
            chosen = _chosen(probabilities[fit], truth[fit], metric, kind == "per_label")
            two_fold[kind] += f1(truth[held], probabilities[held] > chosen, metric) / 2
    per_label = metric != "samples-f1" and two_fold["per_label"] > two_fold["global"]
    values = _chosen(probabilities, truth, metric, per_label)
    return Thresholds(values, per_label, metric, {k: round(v, 6) for k, v in two_fold.items()})


def _chosen(probabilities: np.ndarray, truth: np.ndarray, metric: str, per_label: bool) -> np.ndarray:
    """(C,) thresholds from GRID: the global one that scores best, then, per_label, each label's own (macro-F1: its
    own F1; micro-F1: the whole's, the others' fixed, one pass over the labels). Ties: the lowest threshold."""
    labels = truth.shape[1]
    best = max(GRID, key=lambda t: (f1(truth, probabilities > t, metric), -t))
    values = np.full(labels, best)
    if not per_label:
        return values
    if metric == "macro-f1":
        for c in range(labels):
            values[c] = max(GRID, key=lambda t: (_binary_f1(truth[:, c], probabilities[:, c] > t), -t))
        return values
    # micro-F1 from summed counts: changing label c's threshold changes its counts only
    predicted = probabilities > values
    tp = (predicted & truth).sum(axis=0).astype(np.int64)
    fp = (predicted & ~truth).sum(axis=0).astype(np.int64)
    fn = (~predicted & truth).sum(axis=0).astype(np.int64)
    for c in range(labels):
        column = probabilities[:, c][:, None] > GRID[None, :]  # (n, G)
        c_tp = (column & truth[:, c][:, None]).sum(axis=0)
        c_fp = column.sum(axis=0) - c_tp
        c_fn = truth[:, c].sum() - c_tp
        total_tp, total_fp, total_fn = tp.sum() - tp[c] + c_tp, fp.sum() - fp[c] + c_fp, fn.sum() - fn[c] + c_fn
        scores = 2 * total_tp / np.maximum(1, 2 * total_tp + total_fp + total_fn)
        pick = int(np.flatnonzero(scores == scores.max())[0])
        values[c] = GRID[pick]
        tp[c], fp[c], fn[c] = c_tp[pick], c_fp[pick], c_fn[pick]
    return values


def _binary_f1(truth: np.ndarray, predicted: np.ndarray) -> float:
    tp = int((truth & predicted).sum())
    return 2 * tp / max(1, int(truth.sum()) + int(predicted.sum()))
