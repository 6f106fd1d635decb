"""The image half of `train` (textclf/runs/run.py hands over when settings.model == "cnn"): image corpus ->
arrays -> CNN (textclf/models/cnn.py) -> the same run record -> an image model file.

Test set: --test if given (an IDX folder contributes its t10k split when it has one); else the t10k split of
an IDX training folder (Fashion-MNIST ships both); else a stratified validation split with the run's seed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

from db import runs as run_queries
from pipelines.images import is_idx_folder, read_image_corpus
from textclf.inference.text_model import encode_labels
from textclf.training import fit_cnn
from textclf.errors import CorpusError
from textclf.runs.context import RunContext
from textclf.runs.record import EpochRecorder, finish_run
from textclf.training import EpochStats


def _test_corpus(corpus_path: Path, test_path):
    if test_path:
        split = "t10k" if is_idx_folder(test_path, "t10k") else "train"
        return read_image_corpus(test_path, split)
    if is_idx_folder(corpus_path, "t10k"):
        return read_image_corpus(corpus_path, "t10k")
    return None


# Over 80 lines as formatted: the image run's steps (read, split, train, evaluate, record, save) in their order.
def train_images(run: RunContext, corpus_path: Path, test_path, settings, backend: str, model_path):
    """The image corpus read and split, the CNN trained (textclf/training/cnn.py), the run recorded, the model
    written."""
    from textclf.inference.artifacts import save_image_model
    from textclf.inference.image_model import ImageModel
    from textclf.runs.results import TrainEvent, TrainResult

    db, run_id, phase, report = run.db, run.run_id, run.phase, run.report
    with phase("read"):
        corpus = read_image_corpus(corpus_path)
        test = _test_corpus(corpus_path, test_path)
    if test is not None and test.images.shape[1:] != corpus.images.shape[1:]:
        raise CorpusError(
            f"test images are {test.images.shape[1:]} but training images {corpus.images.shape[1:]} "
            "(H, W, C): use images of one size"
        )
    classes = sorted(set(corpus.labels))
    encode = lambda labels: encode_labels(labels, classes)
    if test is not None:
        unknown = sorted(set(test.labels) - set(classes))
        if unknown:
            raise CorpusError(
                f"test images have label '{unknown[0]}' that the training images lack: use the same label names in both"
            )
        train_x, train_y, eval_x, eval_y = corpus.images, encode(corpus.labels), test.images, encode(test.labels)
    else:
        index = np.arange(len(corpus))
        n_eval = max(len(classes), int(round(len(corpus) * settings.validation_fraction)))
        try:
            train_i, eval_i = train_test_split(
                index, test_size=n_eval, random_state=settings.seed, stratify=corpus.labels
            )
        except ValueError as exc:
            raise CorpusError(
                f"image corpus '{corpus.source}' is too small to hold out a validation set ({exc}): "
                "add images or pass --test"
            ) from None
        labels = encode(corpus.labels)
        train_x, train_y, eval_x, eval_y = (
            corpus.images[train_i],
            labels[train_i],
            corpus.images[eval_i],
            labels[eval_i],
        )
    eval_kind = "test" if test is not None else "validation"
    run.record(
        corpus_format=f"images-{corpus.format}",
        n_train=len(train_y),
        n_eval=len(eval_y),
        eval_kind=eval_kind,
        n_classes=len(classes),
        labels=classes,
        n_features=int(np.prod(train_x.shape[1:])),
    )

    record_epoch = EpochRecorder(db, run_id)

    def on_epoch(stats: EpochStats) -> None:
        record_epoch(stats)
        report(TrainEvent("epoch", epoch=stats, total_epochs=settings.epochs))

    # Reported once, with the epoch count (a `phase("train")` would report the phase a second time, without it:
    # the CLI printed "training 0 epochs"); its wall time is recorded as the phase's.
    report(TrainEvent("phase", "train", total_epochs=settings.epochs))
    interpret = backend == "pallas" and bool(os.environ.get("TEXTCLF_PALLAS_INTERPRET"))
    train_start = time.perf_counter()  # the first epoch includes compiling the epoch function
    # history: every epoch of the run, those before a resume included (on_epoch sees this attempt's)
    params, history = fit_cnn(
        train_x,
        train_y,
        len(classes),
        settings,
        backend,
        eval_x,
        eval_y,
        interpret,
        on_epoch=on_epoch,
        checkpointer=run.checkpointer,
        stop_requested=run.stop_requested,
        on_step=lambda done, total: report(TrainEvent("steps", done=done, total=total)),
    )
    phase.seconds["train"] = time.perf_counter() - train_start
    model = ImageModel(params, classes, settings, tuple(train_x.shape[1:]))
    last = history[-1]
    eval_accuracy = last.eval_accuracy  # the final parameters were scored on eval_x inside fit_cnn
    model.metadata = {
        "run_id": run_id,
        "corpus": str(corpus_path),
        "eval_kind": eval_kind,
        "eval_accuracy": eval_accuracy,
        "train_accuracy": last.train_accuracy,
        "created": run_queries.now(),
        "backend": backend,
    }
    path = finish_run(run, lambda path: save_image_model(model, path), model_path, record_epoch, last, eval_accuracy)
    return TrainResult(
        run_id,
        path.resolve() if run.primary else None,
        eval_accuracy,
        eval_kind,
        last.train_accuracy,
        len(train_y),
        len(eval_y),
        history,
        dict(phase.seconds),
        {},
        0,
        model,
    )
