"""A run's data: the corpus read (or handed in memory), split, searched (runs/search.py) and vectorized into the
arrays the plan trains on; three ways, by what the corpus needs: in memory with a fitted vocabulary (tfidf, the search
on the training documents first), streamed and hashed (hashing), or shared out among several processes. Each records
what it read in the run row."""

from __future__ import annotations

import hashlib
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np

from pipelines.corpus import Corpus, read_corpus
from pipelines.shares import FetchedTexts, FileTexts
from pipelines import vector_cache
from pipelines.vectorize import fit_rows, fit_vectorizer, vectorize_pool
from pipelines.word_counts import stack_rows
from pipelines.workers import WorkerPool, return_freed_memory
from pipelines.labels import SEPARATOR, is_multi_label, label_names, shown
from textclf.inference.text_model import encode_labels
from textclf.settings import Settings
from textclf.errors import CorpusError
from textclf.paths import vector_cache_dir
from textclf.runs.context import RunContext
from textclf.runs.search import run_search
from textclf.runs.results import TrainEvent
from textclf.training import Machine, TrainingPlan, draft_plan
from textclf.training.search import SEVERAL_PROCESSES, SearchRules, SearchSummary


def split_validation(labels: list[str], source: str, settings: Settings):
    """Stratified split of document numbers with the run's seed: same corpus + same seed -> same split (a
    multi-label corpus's at random: its label sets are too many to stratify by).
    -> (training row numbers, validation row numbers)."""
    from sklearn.model_selection import train_test_split  # 1.4 s to import: only runs without --test need it

    if settings.multi_label:
        n_eval = int(round(len(labels) * settings.validation_fraction))
        if n_eval < 1 or len(labels) - n_eval < 2:
            raise CorpusError(
                f"corpus '{source}' has {len(labels)} documents, too few to hold out a validation "
                "set: add documents or pass a separate --test corpus"
            )
        return train_test_split(np.arange(len(labels)), test_size=n_eval, random_state=settings.seed)
    counts = Counter(labels)
    small = [label for label, n in sorted(counts.items()) if n < 2]
    if small:
        raise CorpusError(
            f"label '{small[0]}' has only 1 document, too few for a validation split: "
            "add documents or pass a separate --test corpus"
        )
    n_eval = max(len(counts), int(round(len(labels) * settings.validation_fraction)))
    if len(labels) - n_eval < len(counts):
        raise CorpusError(
            f"corpus '{source}' has {len(labels)} documents, too few to hold out a validation set: "
            "add documents or pass a separate --test corpus"
        )
    return train_test_split(np.arange(len(labels)), test_size=n_eval, random_state=settings.seed, stratify=labels)


def one_process_draft(
    settings: Settings, search: SearchSummary | None, n_train: int, rules: SearchRules
) -> TrainingPlan:
    """The run's draft plan (training/plan.py, draft_plan) for one process on this machine's devices, made where
    vectorizing needs one of its decisions; the run completes it (textclf/runs/run.py), never plans again."""
    import jax

    from textclf.training import stacked_is_faster

    machine = Machine(jax.local_device_count(), 1, stacked_is_faster())
    return draft_plan(settings, search, n_train, 2 if settings.char_ngrams else 1, machine, rules)


@dataclass
class TextData:
    """The text half of a run after vectorization: what the network and the run record need."""

    vectorizer: object
    train_x: object  # CSR (training documents, features)
    eval_x: object
    train_labels: list[str]
    eval_labels: list[str]
    classes: list[str]
    eval_kind: str
    skipped: dict[str, int]
    non_utf8: int
    fingerprint: str
    search: SearchSummary | None = None  # what the model search ran and chose, or why it did not run
    search_key: str | None = None  # what its choice is recorded under (textclf/runs/search.py)
    plan: TrainingPlan | None = None  # the draft plan, where vectorizing needed one of its decisions
    rows: object = None  # several processes: data_parallel.RowShare, the training documents each one holds
    read_documents: int | None = None  # training documents this process read (several processes: its share)
    train_weights: np.ndarray | None = None  # each training document's weight in the loss (Corpus.weights)


def resolved_multi_label(labels: list[str], settings: Settings, source: str) -> Settings:
    """The settings with multi_label decided: as the user said, else whether any document holds other than one
    label (pipelines/labels.py). A corpus of label sets refused where the user said single-label."""
    found = is_multi_label(labels)
    if settings.multi_label is False and found:
        example = next(label for label in labels if SEPARATOR in label)
        raise CorpusError(
            f"corpus '{source}' has documents with other than one label (e.g. '{shown(example)}'): "
            "drop --no-multi-label to train a multi-label model"
        )
    multi = found if settings.multi_label is None else settings.multi_label
    if settings.metric is not None and not multi:
        raise CorpusError(
            f"--metric {settings.metric} judges label sets, and corpus '{source}' has one label a "
            "document (judged by accuracy): drop --metric, or pass --multi-label"
        )
    return settings if settings.multi_label is not None else settings.replace(multi_label=found)


def check_test_labels(test_labels, train_labels, test_source: str, multi_label: bool) -> None:
    """A test corpus's labels must be the training corpus's. A multi-label one (multi_label: the run's, decided
    from the training corpus) may hold labels no training document has (rare labels of a tagged corpus): the model
    cannot predict them, and they count as missed."""
    if multi_label or is_multi_label(test_labels):
        return
    unknown = sorted(set(test_labels) - set(train_labels))
    if unknown:
        raise CorpusError(
            f"test corpus '{test_source}' has label '{unknown[0]}' that the training corpus lacks: "
            "use the same label names in both"
        )


class ReadCorpora(NamedTuple):
    """What reading the training corpus (and the test corpus, where there is one) found besides the documents."""

    format: str
    fingerprint: str
    skipped: dict[str, int]  # the training corpus's files or rows left out, by reason
    test_skipped: dict[str, int] | None  # the test corpus's (None: no test corpus)
    non_utf8: int  # documents of both decoded with a fallback encoding


def record_corpus(
    run: RunContext,
    read: ReadCorpora,
    train_labels,
    eval_labels,
    multi_label: bool,
    counts: tuple[int, int] | None = None,
    classes: list[str] | None = None,
) -> tuple[dict[str, int], list[str], str]:
    """Record what was read in the run row -> (skips by reason, the test's prefixed "test_"; classes; eval kind).
    multi_label: the run's (resolved_multi_label). counts (training, held-out documents) and classes: every
    process's, where there are several."""
    skipped = {k: v for k, v in read.skipped.items() if v}
    skipped.update({f"test_{k}": v for k, v in (read.test_skipped or {}).items() if v})
    has_test = read.test_skipped is not None
    classes, eval_kind = classes or label_names(train_labels, multi_label), "test" if has_test else "validation"
    n_train, n_eval = counts or (len(train_labels), len(eval_labels))
    run.record(
        corpus_format=read.format,
        corpus_fingerprint=read.fingerprint,
        skipped=skipped,
        non_utf8=read.non_utf8,
        n_train=n_train,
        n_eval=n_eval,
        eval_kind=eval_kind,
        n_classes=len(classes),
        labels=classes,
    )
    return skipped, classes, eval_kind


# Over 80 lines as formatted: each process's share read, the vocabulary agreed and the split made, in the order
# the processes must take them together.
def shared_data(run: RunContext, corpus_path, test_path, settings) -> TextData:
    """Several processes (textclf/training/parallel/processes.py): each reads only its share of the corpus (and of the
    test corpus) and counts its own documents; the vocabulary is agreed through the runtime
    (pipelines/vectorize.fit_vectorizer_shared). Without --test each process holds out validation_fraction of
    its own share (a seeded draw, not stratified: a share may hold one document of a label). The model search
    does not run (each process would search its own share); the vector cache is not used (its key is the
    whole corpus's fingerprint)."""
    import jax

    from pipelines.corpus import check_usable
    from pipelines.vectorize import fit_vectorizer_shared
    from textclf.training import RowShare
    from textclf.training import exchange_arrays

    phase, warmup, pool, report = run.phase, run.warmup, run.pool, run.report

    def read_progress(documents: int, stats) -> None:  # of this process's share
        report(TrainEvent("progress", "read", done=stats.bytes_read, total=stats.bytes_total, documents=documents))

    share = (jax.process_index(), jax.process_count())
    with phase("read"):
        corpus = read_corpus(corpus_path, settings.max_file_mb, read_progress, share=share)
        if settings.multi_label or is_multi_label(corpus.labels):  # (a share may hold no set: say so once)
            raise CorpusError(
                f"corpus '{corpus.source}' holds label sets, which train in one process: train it without --coordinator"
            )
        test = read_corpus(test_path, settings.max_file_mb, read_progress, share=share) if test_path else None
    has_test = test is not None  # (a Corpus of an empty share is falsy)
    if has_test:
        train_texts, train_labels, eval_texts, eval_labels = corpus.texts, corpus.labels, test.texts, test.labels
    else:
        held = np.zeros(len(corpus.labels), bool)
        rng = np.random.default_rng([settings.seed, share[0]])
        held[rng.permutation(len(held))[: int(round(len(held) * settings.validation_fraction))]] = True
        train_rows, eval_rows = np.flatnonzero(~held), np.flatnonzero(held)
        train_texts, eval_texts = [corpus.texts[i] for i in train_rows], [corpus.texts[i] for i in eval_rows]
        train_labels, eval_labels = [corpus.labels[i] for i in train_rows], [corpus.labels[i] for i in eval_rows]
    mine = {
        "labels": np.unique(corpus.labels).astype(str),
        "empty": np.array(corpus.empty_labels, dtype=str),
        "non_utf8": np.array([corpus.non_utf8 + (test.non_utf8 if has_test else 0)]),
        "sizes": np.array([len(train_labels), len(eval_labels)]),
        "fingerprint": np.array([corpus.fingerprint], dtype=str),
        "skipped": np.array([f"{k}\t{v}" for k, v in corpus.skipped.items()], dtype=str),
        "test_skipped": np.array([f"{k}\t{v}" for k, v in (test.skipped if has_test else {}).items()], dtype=str),
    }
    if has_test:
        mine["test_labels"] = np.unique(test.labels).astype(str)
    shared = exchange_arrays(mine)
    labels = sorted(set().union(*(map(str, part["labels"]) for part in shared)))
    empty = sorted(set.intersection(*(set(map(str, part["empty"])) for part in shared)))
    skipped, test_skipped = (_skips_added(shared, key) for key in ("skipped", "test_skipped"))
    check_usable(corpus.source, labels, skipped, empty)
    if has_test:
        check_test_labels(set().union(*(map(str, part["test_labels"]) for part in shared)), labels, test.source, False)
    search = SearchSummary.skip(SEVERAL_PROCESSES)  # (several processes read shares: why_not_searched's first rule)
    run.record(search=search.to_record())
    with ExitStack() as stack:
        workers = pool or stack.enter_context(vectorize_pool(len(train_texts)))
        warmup.start()
        with phase("vectorize"):
            vectorizer, train_x, classes = fit_vectorizer_shared(
                train_texts, train_labels, settings, exchange_arrays, workers
            )
            report(
                TrainEvent(
                    "progress", "vectorize", done=len(train_texts), total=len(train_texts), documents=len(train_texts)
                )
            )
            eval_x = vectorizer.transform(
                eval_texts,
                pool=workers,
                on_progress=lambda done, total: report(
                    TrainEvent("progress", "vectorize", done=done, total=total, documents=done)
                ),
            )
    train_counts = [int(part["sizes"][0]) for part in shared]
    rows = RowShare(tuple(int(x) for x in np.cumsum([0, *train_counts[:-1]])), tuple(train_counts), share[0])
    fingerprint = hashlib.sha256("".join(str(part["fingerprint"][0]) for part in shared).encode()).hexdigest()
    non_utf8 = sum(int(part["non_utf8"][0]) for part in shared)
    read = ReadCorpora(corpus.format, fingerprint, skipped, test_skipped if has_test else None, non_utf8)
    skipped, classes, eval_kind = record_corpus(
        run,
        read,
        train_labels,
        eval_labels,
        False,
        counts=(rows.total, sum(int(part["sizes"][1]) for part in shared)),
        classes=classes,
    )
    run.record(n_features=vectorizer.n_features, vectors_cached=False)
    return TextData(
        vectorizer,
        train_x,
        eval_x,
        list(train_labels),
        list(eval_labels),
        classes,
        eval_kind,
        skipped,
        non_utf8,
        fingerprint,
        search,
        rows=rows,
        read_documents=len(corpus.labels),
    )


def _skips_added(shared: list[dict], key: str) -> dict[str, int]:
    """Every process's skip counts ("reason\tcount" strings), added up by reason."""
    total: Counter = Counter()
    for part in shared:
        for entry in map(str, part[key]):
            reason, count = entry.rsplit("\t", 1)
            total[reason] += int(count)
    return dict(total)


def vectorized_data(run: RunContext, corpus_path, test_path, settings) -> tuple[TextData, Settings]:
    """ "tfidf": the texts in memory (the vocabulary fit needs them all), vectors cached by corpus fingerprint.
    Starts the JAX warm-up once the workers are forked (or at once when the vectors come from the cache).
    With Settings.search "auto" the model search chooses the settings first, on the training documents only:
    the test corpus is opened after it. -> (the data, the settings it was vectorized with)."""
    with ExitStack() as stack:
        steps = _TfidfSteps(run, stack)
        corpus = steps.read(corpus_path, settings)
        settings = resolved_multi_label(corpus.labels, settings, corpus.source)
        train_labels, eval_labels = steps.split(corpus, test_path, settings)
        train_weights = steps.train_weights(corpus)
        settings, search, search_key = run_search(
            run,
            steps.train_texts,
            train_labels,
            settings,
            lambda: steps.forked(len(corpus.texts)),
            corpus.fingerprint,
            test_path is None,
            train_weights,
        )
        test = steps.read_test(test_path, corpus, settings)
        eval_labels = test.labels if test is not None else eval_labels
        non_utf8 = corpus.non_utf8 + (test.non_utf8 if test else 0)
        read = ReadCorpora(
            corpus.format,
            corpus.fingerprint,
            corpus.skipped,
            (test.skipped or {}) if test is not None else None,
            non_utf8,
        )
        skipped, classes, eval_kind = record_corpus(run, read, train_labels, eval_labels, settings.multi_label)
        with run.phase("vectorize"):
            vectorizer, train_x, eval_x, cached = steps.vectorize(test, settings, eval_labels, classes, search)
    run.record(n_features=vectorizer.n_features, vectors_cached=cached)
    data = TextData(
        vectorizer,
        train_x,
        eval_x,
        list(train_labels),
        list(eval_labels),
        classes,
        eval_kind,
        skipped,
        non_utf8,
        corpus.fingerprint,
        search,
        search_key=search_key,
        read_documents=len(corpus.texts),
        plan=steps.plan,
        train_weights=train_weights,
    )
    return data, settings


class _TfidfSteps:
    """The steps of vectorized_data over one corpus, and what they share: the vectorizing workers (forked on first
    use, before JAX starts threads, then the warm-up), the corpus, and its training rows."""

    def __init__(self, run: RunContext, stack: ExitStack):
        self.run, self.stack, self.workers = run, stack, run.pool
        self.corpus = None
        self.train_rows = self.eval_rows = None  # with a test corpus: every document of the corpus trains
        self.train_labels: list[str] = []
        self.fit_sample = None  # the vocabulary's fit sample (None: every text)
        self.in_file = False  # the texts left in the file (FileTexts), read by the workers when needed
        self.in_memory = None  # the training texts as a list, where they are in memory
        self.plan = None  # the run's draft plan, where vectorizing needed it (one_process_draft)

    def forked(self, documents: int) -> WorkerPool:
        """The vectorizing workers for this many documents, forked on first use, then the warm-up."""
        if self.workers is None:
            self.workers = self.stack.enter_context(vectorize_pool(documents))
        if not self.run.warmup.started:  # the first use: the run records how its vectorizing runs
            self.run.record(vectorize_workers=self.workers.description)
        self.run.warmup.start()
        return self.workers

    def _read_progress(self, documents: int, stats) -> None:
        self.run.report(
            TrainEvent("progress", "read", done=stats.bytes_read, total=stats.bytes_total, documents=documents)
        )

    def _vectorize_progress(self, done: int, total: int) -> None:
        self.run.report(TrainEvent("progress", "vectorize", done=done, total=total, documents=done))

    def read(self, corpus_path, settings: Settings):
        """The training corpus. A large file of one document a line (JSONL, fastText's, CSV, TSV; Parquet in row
        groups) is parsed by the workers (pipelines.corpus.parallel_read), so they are forked first (for at least
        as many documents as the file can hold lines of 100 bytes: all cores), and JAX starts while they read.
        Its texts stay in the file (FileTexts): the workers parse it again for the texts the search and the
        vocabulary's fit sample need, and to transform it share by share."""
        with self.run.phase("read"):
            if isinstance(corpus_path, Corpus):
                self.corpus = corpus_path
            else:
                self.corpus = read_corpus(
                    corpus_path,
                    settings.max_file_mb,
                    self._read_progress,
                    pool=lambda: self.forked(Path(corpus_path).stat().st_size // 100),
                    keep_texts=False,
                    label_sets=bool(settings.multi_label),
                )
        return self.corpus

    def split(self, corpus, test_path, settings: Settings) -> tuple[list[str], list[str]]:
        """-> (training labels, held-out labels: none where a test corpus follows); the texts' place decided."""
        eval_labels: list[str] = []
        if test_path is not None:
            self.train_labels = corpus.labels
        else:
            self.train_rows, self.eval_rows = split_validation(corpus.labels, corpus.source, settings)
            self.train_labels = [corpus.labels[i] for i in self.train_rows]
            eval_labels = [corpus.labels[i] for i in self.eval_rows]
        self.fit_sample = fit_rows(len(self.train_labels), settings)
        self.in_file = isinstance(corpus.texts, FileTexts)
        if self.in_file and self.fit_sample is None:
            self.in_file = False  # a file of few long documents: the fit reads every text anyway
            corpus.texts = list(corpus.texts.fetch(np.arange(len(corpus.texts)), self.forked(len(corpus.texts))))
        if not self.in_file:
            self.in_memory = corpus.texts if self.train_rows is None else [corpus.texts[i] for i in self.train_rows]
        return self.train_labels, eval_labels

    def train_weights(self, corpus) -> np.ndarray | None:
        """The training documents' weights in the loss at a mean of 1 (training.inputs.mean_one), or None."""
        if corpus.weights is None:
            return None
        from textclf.training import mean_one

        return mean_one(corpus.weights if self.train_rows is None else np.asarray(corpus.weights)[self.train_rows])

    def train_texts(self, rows: np.ndarray | None) -> Sequence[str]:
        """The texts of these training documents (None: all, as a list: the search slices them), indexed by their
        number among them."""
        if self.in_memory is not None:
            return self.in_memory
        every = rows is None
        rows = np.arange(len(self.train_labels)) if every else rows
        in_corpus = rows if self.train_rows is None else self.train_rows[rows]
        fetched = self.corpus.texts.fetch(in_corpus, self.forked(len(self.corpus.texts)))
        if every:
            return [fetched[c] for c in in_corpus]
        return FetchedTexts(len(self.train_labels), {int(r): fetched[c] for r, c in zip(rows, in_corpus)})

    def read_test(self, test_path, corpus, settings: Settings):
        """The test corpus (None without one), read only now: after the search."""
        if test_path is None:
            return None
        with self.run.phase("read", "reading the test corpus"):
            test = (
                test_path
                if isinstance(test_path, Corpus)
                else read_corpus(
                    test_path,
                    settings.max_file_mb,
                    self._read_progress,
                    pool=self.workers,
                    keep_texts=False,
                    label_sets=settings.multi_label,
                )
            )
        check_test_labels(test.labels, corpus.labels, test.source, settings.multi_label)
        return test

    def vectorize(self, test, settings: Settings, eval_labels, classes, search) -> tuple:
        """-> (vectorizer, training rows, held-out rows, whether they came from the vector cache)."""
        run, corpus = self.run, self.corpus
        key = vector_cache.cache_key(
            corpus.fingerprint, test.fingerprint if test else None, settings, list(self.train_labels), list(eval_labels)
        )
        cached = vector_cache.load(vector_cache_dir(), key) if run.keep_files else None
        if cached:
            run.warmup.start()  # no workers needed: nothing to fork first
            return (*cached, True)
        workers = self.forked(len(corpus.texts))
        if self.in_file:
            vectorizer, train_x, eval_x, on_device = self._fit_in_file(test, settings, classes, search, workers)
        else:
            vectorizer, train_x = fit_vectorizer(
                self.train_texts(None), self.train_labels, settings, pool=workers, on_progress=self._vectorize_progress
            )
            # the fit's pass ends (a corpus of one chunk tells only this)
            self._vectorize_progress(len(self.train_labels), len(self.train_labels))
            eval_x, on_device = None, False
            if self.train_rows is not None:
                eval_x = vectorizer.transform(
                    [corpus.texts[i] for i in self.eval_rows], pool=workers, on_progress=self._vectorize_progress
                )
        if test is not None:
            eval_x = (
                vectorizer.transform_file(test.texts, workers, self._vectorize_progress)
                if isinstance(test.texts, FileTexts)
                else vectorizer.transform(test.texts, pool=workers, on_progress=self._vectorize_progress)
            )
        if run.primary and not on_device and run.keep_files:
            vector_cache.save(vector_cache_dir(), key, vectorizer, train_x, eval_x)
        return vectorizer, train_x, eval_x, False

    def _fit_in_file(self, test, settings: Settings, classes, search, workers) -> tuple:
        """Fitted on a sample of the training texts, then the whole file transformed -> (vectorizer, training rows,
        held-out rows or None, whether the training rows went to the device). The sample's texts are read by the
        workers that count them (LineTexts), not sent to them; the fit gives their rows, which the transform then
        skips (transform_file_parts' `known`)."""
        corpus, train_rows = self.corpus, self.train_rows
        sample_rows = self.fit_sample if train_rows is None else train_rows[self.fit_sample]
        vectorizer, sample_x = fit_vectorizer(
            corpus.texts.lines(sample_rows),
            [self.train_labels[i] for i in self.fit_sample],
            settings,
            pool=workers,
            on_progress=self._vectorize_progress,
        )
        return_freed_memory()  # the sample's counts (~1 GB) before the matrix is built
        parts = vectorizer.transform_file_parts(
            corpus.texts, workers, self._vectorize_progress, known=(sample_rows, sample_x)
        )
        # the plan trains networks side by side on the matrix in place, some of its rows held out
        self.plan = (
            one_process_draft(settings, search, len(self.train_labels), self.run.rules) if test is not None else None
        )
        on_device = self.plan is not None and self.plan.rows == "device"
        if on_device:
            # Straight to the device a share at a time: the host never holds the whole matrix (~1.3 GB a million
            # documents); nor does the vector cache, so it is not written.
            from textclf.training import resident_from_parts

            train_x = resident_from_parts(parts, encode_labels(self.train_labels, classes))
        else:
            train_x = stack_rows(list(parts))
        eval_x = None
        if train_rows is not None:
            train_x, eval_x = train_x[train_rows], train_x[self.eval_rows]
        return vectorizer, train_x, eval_x, on_device


def hashed_data(run: RunContext, corpus_path, test_path, settings) -> tuple[TextData, Settings]:
    """ "hashing": read and hashed in one streaming pass (pipelines/stream.py), texts never all in memory;
    the phase is "read_vectorize" since reading and hashing overlap. -> (the data, the settings with multi_label
    decided)."""
    from pipelines.stream import hash_corpus, weigh
    from pipelines.vectorize import fit_hashing_idf

    with run.phase("read_vectorize"):
        corpus = hash_corpus(corpus_path, settings)
        settings = resolved_multi_label(corpus.labels, settings, corpus.source)
        test = hash_corpus(test_path, settings) if test_path else None
        if test:
            check_test_labels(test.labels, corpus.labels, test.source, settings.multi_label)
            train_counts, eval_counts = corpus.counts, test.counts
            train_labels, eval_labels = corpus.labels, test.labels
        else:
            # Rows in corpus order (sorted row numbers): slicing a CSR matrix by sorted rows is one pass.
            train_rows, eval_rows = (np.sort(rows) for rows in split_validation(corpus.labels, corpus.source, settings))
            train_counts, eval_counts = corpus.counts[train_rows], corpus.counts[eval_rows]
            train_labels = [corpus.labels[i] for i in train_rows]
            eval_labels = [corpus.labels[i] for i in eval_rows]
        corpus.counts = None  # without --test: the whole matrix is freed once its two slices exist
        vectorizer = fit_hashing_idf(train_counts, settings)
        train_x, eval_x = weigh(train_counts, vectorizer), weigh(eval_counts, vectorizer)
    non_utf8 = corpus.stats.non_utf8 + (test.stats.non_utf8 if test else 0)
    read = ReadCorpora(
        corpus.format, corpus.fingerprint, corpus.stats.skipped, (test.stats.skipped or {}) if test else None, non_utf8
    )
    skipped, classes, eval_kind = record_corpus(run, read, train_labels, eval_labels, settings.multi_label)
    run.record(n_features=vectorizer.n_features, vectors_cached=False)
    return TextData(
        vectorizer,
        train_x,
        eval_x,
        list(train_labels),
        list(eval_labels),
        classes,
        eval_kind,
        skipped,
        non_utf8,
        corpus.fingerprint,
        read_documents=len(corpus.labels),
    ), settings
