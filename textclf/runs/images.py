"""The image half of a run (textclf/runs/run.py, where settings.model == "cnn"): the image corpus read and split into
ImageData (image_data), which the plan trains like any corpus (training/plan.py's image plan, runs/fitting.py's
CNN trainer); the trained CNN scored, written as an image model file and recorded (saved_image_model).

Test set: --test if given (an IDX folder contributes its t10k split when it has one); else the t10k split of
an IDX training folder (Fashion-MNIST ships both); else a stratified validation split with the run's seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from db import runs as run_queries
from pipelines.images import is_idx_folder, read_image_corpus
from textclf.errors import CorpusError
from textclf.runs.context import RunContext
from textclf.runs.record import EpochRecorder, finish_run


@dataclass
class ImageData:
    """The image half of a run after reading and splitting: what the plan, the CNN and the run record need."""

    train_x: np.ndarray  # (images, H, W, C) uint8
    train_y: np.ndarray  # (images,) class numbers
    eval_x: np.ndarray
    eval_y: np.ndarray
    classes: list[str]
    eval_kind: str  # "test" or "validation"
    search: None = None  # (images are not searched)

    @property
    def pixels(self) -> int:
        """The values of one image (H x W x C): the plan's one view's width."""
        return int(np.prod(self.train_x.shape[1:]))


def _test_corpus(corpus_path: Path, test_path):
    if test_path:
        split = "t10k" if is_idx_folder(test_path, "t10k") else "train"
        return read_image_corpus(test_path, split)
    if is_idx_folder(corpus_path, "t10k"):
        return read_image_corpus(corpus_path, "t10k")
    return None


def image_data(run: RunContext, corpus_path: Path, test_path, settings) -> ImageData:
    """The image corpus (and its test images) read, checked and split; what was read recorded in the run row."""
    with run.phase("read"):
        corpus = read_image_corpus(corpus_path)
        test = _test_corpus(corpus_path, test_path)
    if test is not None and test.images.shape[1:] != corpus.images.shape[1:]:
        raise CorpusError(
            f"test images are {test.images.shape[1:]} but training images {corpus.images.shape[1:]} "
            "(H, W, C): use images of one size"
        )
    names, labels = np.unique(np.asarray(corpus.labels, str), return_inverse=True)  # (classes sorted, as text's)
    classes, labels = names.tolist(), labels.astype(np.int32)
    if test is not None:
        unknown = sorted(set(test.labels) - set(classes))
        if unknown:
            raise CorpusError(
                f"test images have label '{unknown[0]}' that the training images lack: use the same label names in both"
            )
        test_labels = np.searchsorted(names, np.asarray(test.labels, str)).astype(np.int32)
        data = ImageData(corpus.images, labels, test.images, test_labels, classes, "test")
    else:
        from sklearn.model_selection import train_test_split  # (slow to import: only a run without test images)

        n_eval = max(len(classes), int(round(len(corpus) * settings.validation_fraction)))
        try:
            train_i, eval_i = train_test_split(
                np.arange(len(corpus)), test_size=n_eval, random_state=settings.seed, stratify=corpus.labels
            )
        except ValueError as exc:
            raise CorpusError(
                f"image corpus '{corpus.source}' is too small to hold out a validation set ({exc}): "
                "add images or pass --test"
            ) from None
        images = corpus.images
        data = ImageData(images[train_i], labels[train_i], images[eval_i], labels[eval_i], classes, "validation")
    run.record(
        corpus_format=f"images-{corpus.format}",
        n_train=len(data.train_y),
        n_eval=len(data.eval_y),
        eval_kind=data.eval_kind,
        n_classes=len(classes),
        labels=classes,
        n_features=data.pixels,
    )
    return data


def saved_image_model(run: RunContext, data: ImageData, fitted, model_path, record_epoch: EpochRecorder):
    """The trained CNN (fitted: runs/fitting.py's Fitted) as an image model, written and recorded finished, its
    accuracy on the held-out images the last epoch's (scored with the final parameters as the CNN trained)."""
    from textclf.inference.artifacts import save_image_model
    from textclf.inference.image_model import ImageModel
    from textclf.runs.results import TrainResult

    model = ImageModel(fitted.params, data.classes, fitted.settings, tuple(data.train_x.shape[1:]))
    last = fitted.history[-1]
    eval_accuracy = last.eval_accuracy
    model.metadata = {
        "run_id": run.run_id,
        "corpus": run.source,
        "eval_kind": data.eval_kind,
        "eval_accuracy": eval_accuracy,
        "train_accuracy": last.train_accuracy,
        "created": run_queries.now(),
        "backend": fitted.backend,
    }
    path = finish_run(run, lambda path: save_image_model(model, path), model_path, record_epoch, last, eval_accuracy)
    return TrainResult(
        run.run_id,
        path.resolve() if run.primary else None,
        eval_accuracy,
        data.eval_kind,
        last.train_accuracy,
        len(data.train_y),
        len(data.eval_y),
        fitted.history,
        dict(run.phase.seconds),
        {},
        0,
        model,
    )
