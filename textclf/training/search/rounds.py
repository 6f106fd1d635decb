"""One fold's round for one variant, as every part of the search cuts it: the fold's matrices (fold_matrices) and its
batches on the device (candidates.round_data) with the rows' labels and weights."""

from __future__ import annotations

from textclf.settings import Settings
from textclf.training.candidates import RoundData, round_data
from textclf.training.search.folds import RoundGeometry, SearchCorpus, Variant, fold_matrices


def fold_round(
    corpus: SearchCorpus,
    geometry: RoundGeometry,
    fold: int,
    variant: Variant,
    settings: Settings,
    seed: int,
    built: tuple | None = None,
) -> RoundData:
    """The round of `fold` for `variant`, its columns selected and weighed by `settings`, its batches cut from
    `seed`'s shuffle at the variant's batch size in the search's shapes; built: the fold's matrices, where made
    ahead."""
    train_rows, val_rows = corpus.folds[fold]
    train_x, val_x = built or fold_matrices(
        corpus.counts,
        corpus.y,
        corpus.masks[variant.stop_words, variant.ngram_max],
        train_rows,
        val_rows,
        settings,
        geometry.features,
        geometry.width,
        variant,
    )
    return round_data(
        train_x,
        corpus.trained_labels(train_rows),
        val_x,
        corpus.trained_labels(val_rows),
        variant.batch_size,
        seed,
        geometry.shapes[variant.batch_size],
        geometry.val_shape,
        geometry.score_batch,
        weights=(corpus.row_weights(train_rows), corpus.row_weights(val_rows)),
    )
