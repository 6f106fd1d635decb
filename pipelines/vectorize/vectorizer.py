"""The Vectorizer a model keeps (saved as plain arrays, never pickled) and its transforms: in this process, in
worker chunks, or skipping rows the fit already weighed."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from pipelines import char_counts, word_counts
from pipelines.shares import FileTexts
from pipelines.vectorize.chunks import _map_chunks, _worker_count, vectorize_pool
from pipelines.vectorize.terms import (
    CHAR_ANALYZER,
    CHAR_NGRAM_RANGE,
    START_TOKEN,
    WordSettings,
    _stop_word_set,
    hashing_counter,
    word_counter_params,
)
from pipelines.vectorize.weights import _idf, _weight
from pipelines.workers import WorkerPool


@dataclass
class Vectorizer:
    kind: str  # "tfidf" or "hashing"
    terms: list[str] | None  # column order of the "tfidf" kind; None for "hashing"
    idf: np.ndarray  # (n_features,) float32
    ngram_max: int
    stop_words: str | None
    sublinear_tf: bool = True
    start_token: bool = False  # the words open with START_TOKEN (model files written before it have none)
    # Each character of a script written without spaces between words a word (word_counts.UNSPACED_RANGES; model
    # files written before it: runs whole)
    unspaced_as_characters: bool = False
    analyzer: str = "word"  # "word" or CHAR_ANALYZER (then the n-grams are CHAR_NGRAM_RANGE characters)
    chars: "Vectorizer | None" = None  # the character view, whose columns follow these ("tfidf" words only)
    _cached_counter: object = field(default=None, init=False, repr=False, compare=False)

    @property
    def n_features(self) -> int:
        """Columns of transform's output: every view's."""
        return int(self.idf.shape[0]) + (self.chars.n_features if self.chars is not None else 0)

    @property
    def view_widths(self) -> tuple[int, ...]:
        """Columns of each view, in order: (words,) or (words, characters)."""
        return (int(self.idf.shape[0]),) + (self.chars.view_widths if self.chars is not None else ())

    def _counter(self):
        # Built once: a CountVectorizer validates its 32k-term vocabulary on first use, which would otherwise
        # cost milliseconds on every prediction request.
        if self._cached_counter is None:
            self._cached_counter = self._build_counter()
        return self._cached_counter

    def _build_counter(self):
        if self.kind == "hashing":
            return hashing_counter(
                self.n_features, self.ngram_max, self.stop_words, self.start_token, self.unspaced_as_characters
            )
        if self.analyzer != CHAR_ANALYZER and word_counts.supports(self.ngram_max):
            return word_counts.WordCounter(
                self.terms,
                self.ngram_max,
                _stop_word_set(self.stop_words),
                START_TOKEN if self.start_token else None,
                self.unspaced_as_characters,
            )
        if self.analyzer == CHAR_ANALYZER:
            return char_counts.CharCounter(self.terms, CHAR_NGRAM_RANGE)
        from sklearn.feature_extraction.text import CountVectorizer

        return CountVectorizer(
            vocabulary=self.terms,
            **word_counter_params(self.ngram_max, self.stop_words, self.start_token, self.unspaced_as_characters),
        )

    def transform(
        self,
        texts: Sequence[str],
        workers: int | None = 1,
        pool: WorkerPool | None = None,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> sp.csr_matrix:
        """texts -> (len(texts), n_features) CSR float32, rows L2-normalised (all-zero rows stay zero).
        workers: processes for large inputs (None = all cores; see PARALLEL_MIN_DOCS); pool: use these;
        on_progress(documents done, of total) as chunks of ~CHUNK_CHARACTERS finish (of the words; the
        character view, if any, follows)."""
        if len(texts) == 0:  # (the hashing vectorizer cannot hash nothing)
            return sp.csr_matrix((0, self.n_features), dtype=np.float32)
        words = self._transform_view(texts, workers, pool, on_progress)
        if self.chars is None:
            return words
        return sp.hstack([words, self.chars._transform_view(texts, workers, pool, None)], format="csr")

    def _transform_view(
        self,
        texts: Sequence[str],
        workers: int | None,
        pool: WorkerPool | None,
        on_progress: Callable[[int, int], None] | None,
    ) -> sp.csr_matrix:
        """This view's columns only (transform's arguments)."""
        if pool is None and on_progress is None and _worker_count(len(texts), workers) == 1:
            # In this process, without a pool: a service scores a few documents a call, and the pool's set-up
            # was a tenth of a one-document call.
            return _transform_weighted(texts, self._counter(), self.idf, self.sublinear_tf)
        if pool is None:
            with vectorize_pool(len(texts), workers) as own:
                return self._transform_view(texts, workers, own, on_progress)
        # Rows are weighted independently: any chunking gives the same matrix. The counter pickled once, not once a
        # chunk (a 32,768-term vocabulary: ~30 ms each time).
        counter = pickle.dumps(self._counter(), protocol=pickle.HIGHEST_PROTOCOL)
        return word_counts.stack_rows(
            _map_chunks(pool, _transform_pickled, texts, on_progress, counter, self.idf, self.sublinear_tf)
        )

    def transform_file(
        self, texts: FileTexts, pool: WorkerPool, on_progress: Callable[[int, int], None] | None = None
    ) -> sp.csr_matrix:
        """transform of texts left in their file: each worker parses its byte shares and transforms them, so the
        texts never come to this process (FileTexts says why)."""
        return word_counts.stack_rows(list(self.transform_file_parts(texts, pool, on_progress)))

    def transform_file_parts(
        self,
        texts: FileTexts,
        pool: WorkerPool,
        on_progress: Callable[[int, int], None] | None = None,
        known: tuple[np.ndarray, sp.csr_matrix] | None = None,
    ) -> Iterator[sp.csr_matrix]:
        """transform_file's rows a share at a time, as the workers finish them (in order): a caller that puts each
        share somewhere else (a device) never holds the whole matrix. known: (rows (R,) distinct, their rows of
        this transform (R, n_features)), which the workers then skip and this process puts in their places: the
        fit's sample, whose rows fit_vectorizer gives (a million documents' 200,000: a fifth of the transform)."""
        pickled = pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)  # once, not once a share
        if known is None:
            return texts.imap_shares(pool, _transform_unpickled, pickled, on_progress=on_progress, arrow=True)
        rows, matrix = known
        if len(rows) > 1 and not bool(np.all(rows[1:] > rows[:-1])):
            order = np.argsort(rows)
            rows, matrix = rows[order], matrix[order]
        first_rows = np.asarray(texts.first_rows)
        bounds = np.searchsorted(rows, first_rows)  # share i's known rows: rows[bounds[i]:bounds[i + 1]]
        skipped = [rows[bounds[i] : bounds[i + 1]] - first_rows[i] for i in range(texts.shares)]  # within the share
        parts = texts.imap_shares(
            pool, _transform_skipping, pickled, on_progress=on_progress, arrow=True, share_args=skipped
        )
        return (_interleave(part, matrix[bounds[i] : bounds[i + 1]], skipped[i]) for i, part in enumerate(parts))

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {"idf": self.idf}
        if self.terms is not None:
            arrays["terms"] = np.array(self.terms, dtype=str)  # fixed-width unicode: loads without pickle
        if self.chars is not None:
            arrays.update({f"char_{name}": array for name, array in self.chars.to_arrays().items()})
        return arrays

    def config(self) -> dict:
        config = {
            "kind": self.kind,
            "ngram_max": self.ngram_max,
            "stop_words": self.stop_words,
            "sublinear_tf": self.sublinear_tf,
        }
        if self.start_token:
            config["start_token"] = True  # absent from older files, which a reader takes as no start token
        if self.unspaced_as_characters:
            config["unspaced_as_characters"] = True  # likewise: older files split as scikit-learn's token pattern does
        if self.chars is not None:
            config["chars"] = {"analyzer": CHAR_ANALYZER, "ngram_range": list(CHAR_NGRAM_RANGE)}
        return config

    @classmethod
    def from_arrays(cls, config: dict, arrays: dict[str, np.ndarray]) -> "Vectorizer":
        """Raises KeyError or ValueError on arrays that do not describe a vectorizer (a damaged model file)."""
        terms = [str(t) for t in arrays["terms"]] if "terms" in arrays else None
        idf = arrays["idf"]
        if config["kind"] not in ("tfidf", "hashing") or idf.ndim != 1:
            raise ValueError(f"vectorizer kind {config['kind']!r} with IDF shape {idf.shape}")
        if (
            type(config["ngram_max"]) is not int
            or config["ngram_max"] < 1
            or config["stop_words"] not in (None, "english")
        ):
            raise ValueError(f"vectorizer n-grams {config['ngram_max']!r}, stop words {config['stop_words']!r}")
        if config["kind"] == "tfidf" and (terms is None or len(terms) != len(idf) or len(set(terms)) != len(terms)):
            raise ValueError("vectorizer terms that do not match its IDF")
        if config.get("start_token", False) not in (True, False):
            raise ValueError(f"vectorizer start token {config['start_token']!r}")
        if config.get("unspaced_as_characters", False) not in (True, False):
            raise ValueError(f"vectorizer unspaced-script characters {config['unspaced_as_characters']!r}")
        chars = None
        if config.get("chars") is not None:
            if config["kind"] != "tfidf" or config["chars"] != {
                "analyzer": CHAR_ANALYZER,
                "ngram_range": list(CHAR_NGRAM_RANGE),
            }:
                raise ValueError(f"character view {config['chars']!r} of a {config['kind']!r} vectorizer")
            own = {name[len("char_") :]: array for name, array in arrays.items() if name.startswith("char_")}
            chars = cls.from_arrays(
                {
                    "kind": "tfidf",
                    "ngram_max": CHAR_NGRAM_RANGE[1],
                    "stop_words": None,
                    "sublinear_tf": config.get("sublinear_tf", True),
                },
                own,
            )
            chars.analyzer = CHAR_ANALYZER
        return cls(
            config["kind"],
            terms,
            arrays["idf"].astype(np.float32),
            config["ngram_max"],
            config["stop_words"],
            config.get("sublinear_tf", True),
            config.get("start_token", False),
            config.get("unspaced_as_characters", False),
            chars=chars,
        )


def fit_hashing_idf(counts: sp.csr_matrix, settings: WordSettings) -> Vectorizer:
    """The "hashing" Vectorizer whose IDF comes from these raw training counts."""
    return Vectorizer(
        "hashing",
        None,
        _idf(counts),
        settings.ngram_max,
        settings.stop_words,
        settings.sublinear_tf,
        settings.start_token,
        settings.unspaced_as_characters,
    )


def _transform_chunk(texts: Sequence[str], counter) -> sp.csr_matrix:
    return counter.transform(texts).tocsr()


def _transform_weighted(texts: word_counts.Texts, counter, idf: np.ndarray, sublinear: bool) -> sp.csr_matrix:
    """texts: a list of str, or a pyarrow string array (a JSONL share as pipelines/shares.py parsed it), which
    word_counts takes as it is and scikit-learn's counters as Python strings."""
    if isinstance(texts, pa.Array) and not isinstance(counter, word_counts.WordCounter):
        texts = texts.to_pylist()
    return _weight(counter.transform(texts), idf, sublinear, copy=False)  # (fresh counts: weighed where they lie)


def _transform_pickled(texts: Sequence[str], counter: bytes, idf: np.ndarray, sublinear: bool) -> sp.csr_matrix:
    """_transform_weighted in a worker, its counter as this process's pool pickled it (never bytes from outside)."""
    return _transform_weighted(texts, pickle.loads(counter), idf, sublinear)


def _transform_unpickled(texts: Sequence[str], vectorizer: bytes) -> sp.csr_matrix:
    """Vectorizer.transform in a worker, the vectorizer as this process's pool pickled it (never bytes from
    outside). The last one unpickled is kept with its counter: a worker transforms many shares of one file with
    one vectorizer, and building the counter's vocabulary lookup took ~0.12 s a share (a 16 MB share
    transformed in ~1.1 s, one core)."""
    global _last_unpickled
    if _last_unpickled is None or _last_unpickled[0] != vectorizer:
        _last_unpickled = (vectorizer, pickle.loads(vectorizer))
    return _last_unpickled[1].transform(texts, workers=1)


_last_unpickled: tuple[bytes, "Vectorizer"] | None = None  # _transform_unpickled's (bytes, vectorizer)


def _transform_skipping(texts: word_counts.Texts, skipped: np.ndarray, vectorizer: bytes) -> sp.csr_matrix:
    """_transform_unpickled of the texts but those at `skipped` (ascending positions): their rows are known."""
    if len(skipped):
        kept = np.ones(len(texts), bool)
        kept[skipped] = False
        texts = (
            texts.filter(pa.array(kept))
            if isinstance(texts, pa.Array)
            else [text for text, keep in zip(texts, kept) if keep]
        )
    return _transform_unpickled(texts, vectorizer)


def _interleave(transformed: sp.csr_matrix, known: sp.csr_matrix, at: np.ndarray) -> sp.csr_matrix:
    """A share's rows from the rows transformed (its other rows, in order) and the rows known (its rows at `at`,
    ascending): (transformed + known rows, n_features) CSR, each row in its place."""
    if not len(at):
        return transformed
    n = transformed.shape[0] + known.shape[0]
    is_known = np.zeros(n, bool)
    is_known[at] = True
    source = np.empty(n, np.int64)  # row i of the share is row source[i] of [transformed; known]
    source[~is_known] = np.arange(transformed.shape[0])
    source[is_known] = transformed.shape[0] + np.arange(known.shape[0])
    return sp.vstack([transformed, known], format="csr")[source]
