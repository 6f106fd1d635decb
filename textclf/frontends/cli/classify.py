"""`textclf predict` and `eval`: documents or images through a model (--model resolved by
textclf/inference/resolve.py), in text, JSON or fastText's format."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from textclf.errors import ArtifactError, CorpusError, InputError
from textclf.frontends.cli.base import DbOption, JsonOption, _print_json, app, err, out, user_errors


@app.command()
@user_errors
def predict(
    files: Annotated[
        list[str],
        typer.Argument(
            help="Text files to classify (one document each), or folders of them; .jsonl, .csv, .tsv, fastText files "
            "and - (standard input): one document a line; .parquet: one a row."
        ),
    ],
    model: Annotated[
        Optional[str],
        typer.Option(
            "--model",
            "-m",
            help="Model file, or a published model: NAME (newest version) or NAME@N (default: the newest finished "
            "run's).",
        ),
    ] = None,
    top_k: Annotated[
        Optional[int],
        typer.Option(
            "--top-k",
            "-k",
            help="How many labels to show per document; -1: all of them (default 3; 1 in fastText's formats, as its "
            "predict).",
            show_default=False,
        ),
    ] = None,
    threshold: Annotated[
        Optional[float],
        typer.Option(
            "--threshold",
            "-t",
            help="Show only labels with at least this probability (fastText's -t); a multi-label model predicts the "
            "labels above it instead of above its own thresholds.",
        ),
    ] = None,
    lines: Annotated[
        bool, typer.Option("--lines", help="Every file holds one document a line (as fastText's predict reads a file).")
    ] = False,
    output_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="text (a tab-separated line each), json (one object each), fasttext (__label__X 0.99 __label__Y "
            "0.01, as fastText's predict-prob) or fasttext-labels (__label__X __label__Y, as its predict).",
        ),
    ] = "text",
    db: DbOption = None,
    max_file_mb: Annotated[float, typer.Option(help="Refuse inputs larger than this.")] = 10.0,
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
) -> None:
    """Print the labels and probabilities of each document, one line each."""
    # One parameter an option: typer reads the command line from this signature.
    from pipelines.images import IMAGE_SUFFIXES
    from textclf.inference.artifacts import load_model
    from textclf.inference.predict import check_threshold, check_top_k, rank, read_inputs
    from textclf.inference.resolve import resolve_model

    output_format = _output_format(output_format, as_json)
    if top_k is None:
        top_k = 1 if output_format in FASTTEXT_FORMATS else 3
    check_top_k(top_k)
    if threshold is not None:
        check_threshold(threshold)
    if files and all(Path(f).suffix.lower() in IMAGE_SUFFIXES for f in files):
        results = _rank_images(load_model(resolve_model(model, db)), files, top_k, threshold or 0.0)
    else:
        stdin_bytes = None
        if "-" in files:  # read no more than the limit allows, however much the pipe holds
            stdin_bytes = _read_stdin(max_file_mb)
        documents, skipped = read_inputs(files, max_file_mb, stdin_bytes, lines)  # all checked before any output
        if skipped:
            err.print(
                "skipped files: " + ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items())), highlight=False
            )
        loaded = load_model(resolve_model(model, db))
        if loaded.kind != "text":
            raise ArtifactError("this is an image model (--model cnn): pass image files (.png, .jpg) to classify")
        results = rank(loaded, [text for _, text in documents], [source for source, _ in documents], top_k, threshold)
        blank = sum(1 for _, text in documents if not text.strip())
        if blank:
            err.print(f"{blank} input line(s) with no text: an empty prediction each", highlight=False)
    for p in results:
        typer.echo(_prediction_line(p, output_format, top_k))


FASTTEXT_FORMATS = ("fasttext", "fasttext-labels")
OUTPUT_FORMATS = ("text", "json", *FASTTEXT_FORMATS)


def _output_format(output_format: str, as_json: bool) -> str:
    if output_format not in OUTPUT_FORMATS:
        raise InputError(f"--format is '{output_format}': give one of {', '.join(OUTPUT_FORMATS)}")
    if as_json and output_format not in ("text", "json"):
        raise InputError(f"--json and --format {output_format} disagree: give one of them")
    return "json" if as_json else output_format


def _read_stdin(max_file_mb: float) -> bytes:
    limit = int(max_file_mb * 1024 * 1024)
    try:
        stdin_bytes = sys.stdin.buffer.read(limit + 1)
    except (AttributeError, OSError, ValueError):  # no stdin (`<&-`), or a closed one
        raise InputError("standard input is closed: pipe the documents in, or pass files instead of -") from None
    if len(stdin_bytes) > limit:
        raise CorpusError(
            f"standard input is over --max-file-mb ({max_file_mb:g} MB): split it, or raise --max-file-mb"
        )
    return stdin_bytes


def _prediction_line(p, output_format: str, top_k: int) -> str:
    """One document's line: JSON Lines for json (a pipe reads results as they come), fastText's predict-prob line
    for fasttext (its labels with their __label__ prefix; fasttext-labels: the labels alone, as its predict), else
    source, label and the probabilities by tabs."""
    if output_format == "json":
        labelled = {"label": p.label} if p.labels is None else {"labels": p.labels}
        return json.dumps({"file": p.source, **labelled, "top": [{"label": l, "probability": q} for l, q in p.top]})
    if output_format in FASTTEXT_FORMATS:
        from textclf.inference.predict import ALL_LABELS

        # a multi-label model's line: its predicted labels, at most top_k (fastText's predict-prob -k K -t T)
        shown = p.top if p.labels is None else list(zip(p.labels, p.label_probabilities))
        shown = shown if top_k == ALL_LABELS else shown[:top_k]
        with_probability = output_format == "fasttext"
        return " ".join(
            f"{label if label.startswith('__label__') else '__label__' + _escaped(label, ' ')}"
            + (f" {prob:.6g}" if with_probability else "")
            for label, prob in shown
        )
    others = "  ".join(f"{_escaped(label, ' ')} {prob:.3f}" for label, prob in p.top)
    predicted = _escaped(p.label or "") if p.labels is None else ",".join(_escaped(label, ",") for label in p.labels)
    return f"{_escaped(p.source)}\t{predicted}\t{others}"


# How a name or path that holds a separator of the output line is written: a backslash escape each, so that a line
# splits into its fields whatever the names hold (docs/usage.md, "Predicting and evaluating").
_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", " ": "\\s", ",": "\\,"}


def _escaped(value: str, separators: str = "") -> str:
    """value with a backslash, a tab and a line break (and these separators) written as backslash escapes."""
    kept = "\\\t\n\r" + separators
    return "".join(_ESCAPES[c] if c in kept else c for c in value) if any(c in kept for c in value) else value


def _rank_images(loaded, files: list[str], top_k: int, threshold: float):
    import numpy as np

    from textclf.inference.image_model import read_image_file
    from textclf.inference.predict import Prediction, top_labels

    if loaded.kind != "image":
        raise ArtifactError("this is a text model: pass text files, or an image model (trained with --model cnn)")
    images = np.stack([read_image_file(f, loaded.image_shape) for f in files])  # all checked before any output
    ranked = top_labels(loaded.labels, loaded.predict_proba(images), top_k, threshold)
    return [Prediction(f, top[0][0] if top else None, top) for f, top in zip(files, ranked)]


@app.command("eval")
@user_errors
def evaluate_command(
    corpus: Annotated[Path, typer.Argument(help="Labelled corpus to score the model on.")],
    model: Annotated[
        Optional[str],
        typer.Option(
            "--model",
            "-m",
            help="Model file, or a published model: NAME (newest version) or NAME@N (default: the newest finished "
            "run's).",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Accuracy, per-class precision/recall/F1 and the confusion matrix of a model on CORPUS."""
    from pipelines.corpus import read_corpus
    from textclf.inference.artifacts import load_model
    from textclf.inference.evaluate import evaluate
    from textclf.inference.resolve import resolve_model

    loaded = load_model(resolve_model(model, db))
    if loaded.kind == "image":
        from pipelines.images import is_idx_folder, read_image_corpus

        # An IDX folder is scored on its t10k (test) split when it has one.
        data = read_image_corpus(corpus, "t10k" if is_idx_folder(corpus, "t10k") else "train")
    else:
        data = read_corpus(corpus, loaded.settings.max_file_mb, label_sets=getattr(loaded, "multi_label", False))
    result = evaluate(loaded, data)
    if as_json:
        _print_json(result.to_dict())
        return
    if getattr(loaded, "multi_label", False):
        _print_multi_label(result)
        return
    table = Table(title=f"accuracy {result.accuracy:.4f} on {result.n} documents")
    for column in ("label", "precision", "recall", "f1", "support"):
        table.add_column(column, justify="left" if column == "label" else "right")
    for i, label in enumerate(result.labels):
        table.add_row(
            label,
            f"{result.precision[i]:.4f}",
            f"{result.recall[i]:.4f}",
            f"{result.f1[i]:.4f}",
            str(result.support[i]),
        )
    for average, values in result.averages.items():
        table.add_row(
            f"{average} avg",
            f"{values['precision']:.4f}",
            f"{values['recall']:.4f}",
            f"{values['f1']:.4f}",
            str(result.n),
            style="bold",
        )
    out.print(table)
    confusion = Table(title="confusion matrix (rows: true, columns: predicted)")
    confusion.add_column("")
    for label in result.labels:
        confusion.add_column(label, justify="right")
    for label, row in zip(result.labels, result.confusion):
        confusion.add_row(label, *map(str, row))
    out.print(confusion)


def _print_multi_label(result) -> None:
    """A multi-label evaluation: the averages, then each label's precision, recall, F1 and support."""
    table = Table(
        title=f"micro-F1 {result.f1['micro']:.4f}, macro-F1 {result.f1['macro']:.4f}, samples-F1 "
        f"{result.f1['samples']:.4f}, subset accuracy {result.subset_accuracy:.4f}, Hamming loss "
        f"{result.hamming_loss:.4f} on {result.n} documents"
    )
    for column in ("label", "precision", "recall", "f1", "support"):
        table.add_column(column, justify="left" if column == "label" else "right")
    for i, label in enumerate(result.labels):
        table.add_row(
            label,
            f"{result.precision[i]:.4f}",
            f"{result.recall[i]:.4f}",
            f"{result.label_f1[i]:.4f}",
            str(result.support[i]),
        )
    out.print(table)
    if result.unknown:
        err.print(f"labels the model does not know (left out): {', '.join(result.unknown)}", highlight=False)
