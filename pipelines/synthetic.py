"""A large synthetic corpus for scale tests: documents sampled from a real corpus's word distribution.

For each label of the source corpus (20 Newsgroups: its groups), a unigram distribution over the words of that
label's documents; each synthetic document takes a label with the source's label frequencies, a length drawn
from that label's real document lengths (capped at MAX_WORDS so the output stays a few hundred bytes per
document, like news4's median), and words drawn half from its label's distribution and half from the whole
corpus's (pure per-label sampling would make the task easier than the real one). Written as JSONL in chunks,
so memory stays bounded for any size.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer

from pipelines.errors import CorpusError

MAX_WORDS = 400
LABEL_SHARE = 0.5  # fraction of a document's words drawn from its own label's distribution
CHUNK = 20_000


def write_synthetic(texts: list[str], labels: list[str], out_path: str | Path, n_docs: int, seed: int = 0) -> Path:
    """Sample n_docs documents shaped like (texts, labels) into the JSONL file out_path (atomically)."""
    if n_docs < 1:
        raise CorpusError(f"--docs {n_docs}: ask for at least 1 document")
    classes, label_index = np.unique(np.asarray(labels), return_inverse=True)  # sorted names, each one's number
    classes = [str(c) for c in classes]
    if len(classes) < 2:
        raise CorpusError("the source corpus needs at least 2 labels to sample a classification corpus from")
    counter = CountVectorizer(lowercase=True, dtype=np.int64)
    counts = counter.fit_transform(texts).tocsr()  # (docs, words)
    words = counter.get_feature_names_out().astype(object)
    lengths = np.minimum(np.asarray(counts.sum(axis=1)).ravel(), MAX_WORDS)
    overall = np.asarray(counts.sum(axis=0)).ravel().astype(np.float64)
    per_label = [
        np.asarray(counts[label_index == c].sum(axis=0)).ravel().astype(np.float64) for c in range(len(classes))
    ]
    cumulative = [np.cumsum(d / d.sum()) for d in per_label] + [np.cumsum(overall / overall.sum())]
    label_freq = np.bincount(label_index, minlength=len(classes)) / len(labels)
    model = (classes, words, cumulative, [lengths[label_index == c] for c in range(len(classes))], label_freq)
    sizes = [min(CHUNK, n_docs - start) for start in range(0, n_docs, CHUNK)]
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(out_path.suffix + ".tmp")
    from joblib import Parallel, delayed

    # Chunks are sampled on all cores, each from its own seed (seed, chunk number), and written in order as
    # they arrive, so the output does not depend on the number of cores and memory holds a few chunks at most.
    jobs = 1 if len(sizes) == 1 else -1
    chunks = Parallel(n_jobs=jobs, return_as="generator")(
        delayed(_sample_chunk)(model, size, np.random.SeedSequence([seed, number])) for number, size in enumerate(sizes)
    )
    try:
        with tmp.open("w", encoding="utf-8") as out:
            for lines in chunks:
                out.write(lines)
        tmp.replace(out_path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out_path


def _sample_chunk(model, size: int, seed_sequence) -> str:
    classes, words, cumulative, real_lengths, label_freq = model
    rng = np.random.default_rng(seed_sequence)
    doc_labels = rng.choice(len(classes), size=size, p=label_freq)
    lines = []
    for c in range(len(classes)):
        rows = np.flatnonzero(doc_labels == c)
        if not rows.size:
            continue
        doc_lengths = np.maximum(1, rng.choice(real_lengths[c], size=rows.size))
        total = int(doc_lengths.sum())
        own = rng.random(total) < LABEL_SHARE
        draws = rng.random(total)
        ids = np.where(own, np.searchsorted(cumulative[c], draws), np.searchsorted(cumulative[-1], draws)).clip(
            0, len(words) - 1
        )
        text_words = words[ids]
        bounds = np.concatenate([[0], np.cumsum(doc_lengths)])
        for i in range(rows.size):
            lines.append(json.dumps({"text": " ".join(text_words[bounds[i] : bounds[i + 1]]), "label": classes[c]}))
    rng.shuffle(lines)
    return "\n".join(lines) + "\n"
