"""Counting terms: word n-grams (pipelines/word_counts.py in compiled code for unigrams and bigrams,
scikit-learn's analyzers for trigrams and hashing), the character view's n-grams (pipelines/char_counts.py), the
chunks' vocabularies merged as one CountVectorizer's, stop words and the search's column masks."""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Protocol, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from pipelines import char_counts, word_counts
from pipelines.errors import CorpusError
from pipelines.shares import LineTexts
from pipelines.stop_words import ENGLISH
from pipelines.vectorize.chunks import _map_chunks
from pipelines.workers import WorkerPool

if TYPE_CHECKING:  # scikit-learn is imported where it is used: a prediction's process mostly needs none of it
    from sklearn.feature_extraction.text import HashingVectorizer


class WordSettings(Protocol):
    """What the vectorizers read from a settings object (textclf.settings.Settings has these fields, and so can
    any small dataclass a caller builds): the pipelines take it by shape, not by importing the application."""

    features: int  # columns of the output matrix
    vectorizer: str  # "tfidf" (fitted vocabulary) or "hashing"
    feature_selection: str  # "chi2" or "frequency": how "tfidf" keeps `features` terms
    ngram_max: int  # 1 = unigrams, 2 = unigrams + bigrams, ...
    stop_words: str | None  # "english" or None
    min_df: int  # terms in fewer training documents are dropped
    sublinear_tf: bool  # 1 + log(tf) instead of tf
    nb_weighting: bool  # "tfidf": each column also scaled by its naive Bayes log-count ratio (nb_ratios)
    char_ngrams: bool  # "tfidf": a second view of character n-grams (CHAR_NGRAM_RANGE) beside the words
    start_token: bool  # every document's words open with START_TOKEN (word_counter_params says why)
    unspaced_as_characters: bool  # each character of a script without spaces a word (word_counts.UNSPACED_RANGES)
    max_file_mb: float  # larger corpus files are skipped


SMALL_CORPUS_DOCS = 200  # below this min_df is forced to 1 (min_df=2 would drop most words)


# The character view: scikit-learn's "char_wb" analyzer (n-grams inside word boundaries, each word padded with a
# space, lowercased) of 2 to 5 characters, the range its documentation's examples use; not searched.
CHAR_ANALYZER = "char_wb"


CHAR_NGRAM_RANGE = (2, 5)


# A word that opens every document (start_token): with bigrams, "__start__ what" tells a question's first word from
# the same word further on, which decides a question's type ("how many" opening a question, not inside it); chosen
# by cross-validation on the training files (docs/decisions.md, "The start token"). Not a word of the token
# pattern's (\w\w+) that real text is likely to hold. Alone it is in every document and tells nothing: fitted
# vocabularies leave it out (_without_start_token); the "hashing" kind, which has no vocabulary, counts it in one
# bucket of every row, whose IDF is then the lowest (1).
START_TOKEN = "__start__"


@dataclass(frozen=True)
class StartMarkedWords:
    """A word analyzer (start_token): scikit-learn's own for these n-grams and stop words, on the text with
    START_TOKEN in front. An analyzer object rather than a preprocessor: scikit-learn runs a preprocessor on each
    stop word too and warns that the token it adds is not one. Only plain fields, so it pickles to workers."""

    ngram_max: int
    stop_words: str | None
    unspaced_as_characters: bool = False

    def __call__(self, text: str) -> list[str]:
        return _word_analyzer(self.ngram_max, self.stop_words, self.unspaced_as_characters)(START_TOKEN + " " + text)


@functools.cache
def _word_analyzer(ngram_max: int, stop_words: str | None, unspaced_as_characters: bool) -> Callable[[str], list[str]]:
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(
        ngram_range=(1, ngram_max),
        stop_words=stop_words,
        token_pattern=word_counts.token_pattern(unspaced_as_characters),
    ).build_analyzer()


def word_counter_params(
    ngram_max: int, stop_words: str | None, start_token: bool, unspaced_as_characters: bool
) -> dict:
    """The keyword arguments of every word CountVectorizer / HashingVectorizer here (fitting, the search's widest
    view and transforming build the same analyzer from them)."""
    if start_token:
        return dict(analyzer=StartMarkedWords(ngram_max, stop_words, unspaced_as_characters), dtype=np.float32)
    return dict(
        ngram_range=(1, ngram_max),
        stop_words=stop_words,
        dtype=np.float32,
        token_pattern=word_counts.token_pattern(unspaced_as_characters),
    )


def hashing_counter(
    n_features: int, ngram_max: int, stop_words: str | None, start_token: bool, unspaced_as_characters: bool
) -> "HashingVectorizer":
    """Raw term counts hashed into n_features columns (no sign flipping, no normalisation: _weight does that)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(
        n_features=n_features,
        alternate_sign=False,
        norm=None,
        **word_counter_params(ngram_max, stop_words, start_token, unspaced_as_characters),
    )


def _count_chunk(texts: Sequence[str], counter_params: dict) -> tuple[bytes, sp.csr_matrix, np.ndarray]:
    """Word trigrams' counting (word_counts counts word unigrams and bigrams, char_counts character n-grams):
    one chunk's own vocabulary (in first-seen order, as one UTF-8 string of the terms joined by newlines,
    which no term holds), its (documents, terms) counts, and each term's hash().
    Why one string: the merge keeps few of a chunk's terms (most bigrams occur once), and a list of millions of
    str objects cost the parent process ~60 bytes a term to receive, where the string costs the term's length;
    _merge_counts splits one chunk at a time.
    Decision: scikit-learn's analyzer (tokens, stop words, n-grams) but our own counting loop, because
    CountVectorizer.fit_transform also sorts and names every term it saw (~1M on news4, most of them bigrams
    that min_df drops after the merge): that took 2 of its 4.4 s on half of news4. Here a Counter per document
    and one dict lookup per distinct term; _merge_counts sorts only the terms it keeps. Same matrix
    (tests/pipelines/test_vectorize.py checks it against CountVectorizer). The hashes (free: the dict computed
    them) let the merge skip terms seen once in one chunk without looking at their text."""
    from sklearn.feature_extraction.text import CountVectorizer

    analyze = CountVectorizer(**counter_params).build_analyzer()
    vocabulary: dict[str, int] = defaultdict()
    vocabulary.default_factory = vocabulary.__len__  # an unseen term gets the next column
    columns: list[int] = []
    values: list[int] = []
    indptr = [0]
    for text in texts:
        counts = Counter(analyze(text))
        columns.extend(map(vocabulary.__getitem__, counts))
        values.extend(counts.values())
        indptr.append(len(columns))
    matrix = sp.csr_matrix(
        (np.array(values, np.float32), np.array(columns, np.int32), np.array(indptr, np.int64)),
        shape=(len(texts), len(vocabulary)),
    )
    terms = list(vocabulary)
    return (
        "\n".join(terms).encode("utf-8", "surrogatepass"),
        matrix,
        np.fromiter(map(hash, terms), np.int64, len(terms)),
    )


def _chunk_terms(blob: bytes) -> list[str]:
    """A chunk's terms from _count_chunk's string."""
    return blob.decode("utf-8", "surrogatepass").split("\n") if blob else []


def _merge_counts(
    parts: list[tuple[bytes, sp.csr_matrix, np.ndarray]], min_df: int
) -> tuple[np.ndarray, sp.csr_matrix]:
    """Chunk vocabularies, counts and term hashes (_count_chunk) -> the terms in at least min_df documents over
    all chunks, sorted (the order CountVectorizer uses), and the counts with their columns remapped to them,
    stacked: the matrix one CountVectorizer(min_df) would give.
    How: a term in one document of one chunk only has document frequency 1. Most chunk terms are such bigrams,
    so with min_df >= 2 the terms in one document of their chunk whose hash shows up in no other chunk are
    dropped by their hashes alone (a hash collision can only keep a term for the exact count below, never drop
    one: exact). The rest go through one dict (first-seen ids), their document frequencies are summed, and only
    the kept terms are sorted. (np.unique over the 1.3M terms of news4 in 16 chunks took 6.5 s.)
    The hashes must come from processes that share Python's hash seed: one WorkerPool's workers (see
    pipelines/workers.py) or this process alone."""
    chunk_df = [np.bincount(counts.indices, minlength=counts.shape[1]) for _, counts, _ in parts]
    candidate = [np.ones(counts.shape[1], bool) for _, counts, _ in parts]
    if min_df >= 2 and len(parts) > 1:
        seen, times = np.unique(np.concatenate([hashes for _, _, hashes in parts]), return_counts=True)
        elsewhere = seen[times > 1]  # terms in several chunks (or a collision)
        candidate = [(df >= 2) | _among(hashes, elsewhere) for (_, _, hashes), df in zip(parts, chunk_df)]
    number: dict[str, int] = defaultdict()
    number.default_factory = number.__len__  # first-seen ids
    chunk_ids = []
    for (blob, counts, _), keep in zip(parts, candidate):
        ids = np.full(counts.shape[1], -1, np.int64)
        picked = np.flatnonzero(keep)
        terms = _chunk_terms(blob)  # one chunk's terms at a time
        ids[picked] = np.fromiter(map(number.__getitem__, map(terms.__getitem__, picked)), np.int64, len(picked))
        chunk_ids.append(ids)
        del terms
    union = list(number)
    df = np.zeros(len(union) + 1, np.int64)  # the last cell stands for the dropped terms (id -1); never kept
    for ids, local in zip(chunk_ids, chunk_df):
        df[ids] += local  # the kept ids are distinct within a chunk
    kept = np.flatnonzero(df[:-1] >= max(1, min_df))
    kept_terms = [union[i] for i in kept]
    order = sorted(range(len(kept_terms)), key=kept_terms.__getitem__)
    column = np.full(len(union) + 1, -1, np.int64)
    column[kept[order]] = np.arange(len(kept))
    counts = sp.vstack(
        [word_counts.move_columns(counts, column[ids], len(kept)) for ids, (_, counts, _) in zip(chunk_ids, parts)],
        format="csr",
    )
    counts.sort_indices()
    return np.array([kept_terms[i] for i in order], dtype=object), counts


def _among(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """values in sorted_set (np.isin hashed each chunk's values first: 0.5 s of the news4 merge)."""
    if not len(sorted_set):
        return np.zeros(len(values), bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


def count_terms(
    texts: Sequence[str],
    ngram_max: int,
    stop_words: str | None,
    min_df: int,
    pool: WorkerPool,
    start_token: bool,
    on_progress: Callable[[int, int], None] | None = None,
    *,
    unspaced_as_characters: bool,
) -> tuple[np.ndarray, sp.csr_matrix]:
    """The full vocabulary's raw counts, nothing selected or weighted: (terms sorted, (documents, terms) CSR
    float32) -> the widest view that the model search derives its vectorizer variants from (column masks and
    re-weightings, see `term_mask` and `select_and_weigh`), so the texts are tokenised once. on_progress(documents
    counted, of total) as chunks finish."""
    if word_counts.supports(ngram_max):
        counted = _counted(
            texts,
            min_df,
            pool,
            _count_word_chunk,
            functools.partial(word_counts.merge, leave_out=START_TOKEN if start_token else None),
            on_progress,
            ngram_max,
            _stop_word_set(stop_words),
            START_TOKEN if start_token else None,
            unspaced_as_characters,
        )
    else:
        counted = _counted(
            texts,
            min_df,
            pool,
            _count_chunk,
            _merge_counts,
            on_progress,
            word_counter_params(ngram_max, stop_words, start_token, unspaced_as_characters),
        )
    terms, counts = _without_start_token(*counted)
    if not len(terms):
        raise CorpusError(
            "no words to learn from: the documents hold only stop words or symbols; "
            "add real text or pass --stop-words none"
        )
    return terms, counts


def _count_word_chunk(
    texts: Sequence[str],
    ngram_max: int,
    stop_words: frozenset[str] | None,
    prefix: str | None,
    unspaced_as_characters: bool,
) -> word_counts.ChunkCounts:
    """word_counts.count_chunk in a worker; texts left in their file (a fit's sample: LineTexts) parsed by pyarrow
    where it can (a 14 MB chunk's lines in ~55 ms where reading them one by one took ~100, one core)."""
    if isinstance(texts, LineTexts):
        parsed = texts.arrow()
        texts = texts if parsed is None else parsed
    return word_counts.count_chunk(texts, ngram_max, stop_words, prefix, unspaced_as_characters)


def _without_start_token(terms: np.ndarray, counts: sp.csr_matrix) -> tuple[np.ndarray, sp.csr_matrix]:
    """Fitted vocabularies leave out START_TOKEN alone: in every document, it tells nothing (its bigrams do).
    (word_counts.merge leaves it out as it merges: this copy is for scikit-learn's counting, n-grams of 3.)"""
    alone = np.flatnonzero(terms == START_TOKEN)
    if not len(alone):
        return terms, counts
    keep = np.delete(np.arange(len(terms)), alone)
    return terms[keep], counts[:, keep]


def count_chars(texts: Sequence[str], min_df: int, pool: WorkerPool) -> tuple[np.ndarray, sp.csr_matrix]:
    """count_terms for the character view: (CHAR_NGRAM_RANGE character n-grams sorted, their raw counts)."""
    terms, counts = _counted(texts, min_df, pool, _count_char_chunk, word_counts.merge, None, CHAR_NGRAM_RANGE)
    if not len(terms):
        raise CorpusError(
            "no character n-grams to learn from: the documents are empty; add real text or pass --no-char-ngrams"
        )
    return terms, counts


def _count_char_chunk(texts: Sequence[str], ngram_range: tuple[int, int]) -> word_counts.ChunkCounts:
    """char_counts.count_chunk in a worker (texts left in their file are read there)."""
    return char_counts.count_chunk(list(texts), ngram_range)


def _counted(
    texts: Sequence[str],
    min_df: int,
    pool: WorkerPool,
    count: Callable,
    merge: Callable,
    on_progress: Callable[[int, int], None] | None,
    *args,
) -> tuple[np.ndarray, sp.csr_matrix]:
    """count(chunk, *args) on the pool's workers, contiguous chunks of the texts (_chunk_count), then merge(parts,
    min_df) (_count_chunk and _merge_counts, or word_counts' count_chunk and merge): (terms sorted, counts).
    min_df is 1 for a corpus under SMALL_CORPUS_DOCS. on_progress(documents counted, of total) as chunks finish."""
    return merge(_map_chunks(pool, count, texts, on_progress, *args), min_df if len(texts) >= SMALL_CORPUS_DOCS else 1)


def _stop_word_set(stop_words: str | None) -> frozenset[str] | None:
    """The stop-word list by its settings name ("english" or None)."""
    if stop_words not in (None, "english"):
        raise ValueError(f"stop_words must be 'english' or None, not {stop_words!r}")
    return ENGLISH if stop_words == "english" else None


def term_mask(terms: np.ndarray, ngram_max: int, stop_words: str | None) -> np.ndarray:
    """(terms,) bool: the terms of `count_terms(..., stop_words=None)` that a vectorizer with these settings keeps:
    at most ngram_max words, none of them a stop word. (scikit-learn removes stop words before it forms n-grams,
    so its own bigrams also join words across a removed one; the mask keeps only bigrams that had no stop word.
    The search uses the mask to compare settings; the chosen model is then fitted with scikit-learn's rule.)"""
    return term_masks(terms, [(stop_words, ngram_max)])[stop_words, ngram_max]


def term_masks(
    terms: np.ndarray, variants: Iterable[tuple[str | None, int]]
) -> dict[tuple[str | None, int], np.ndarray]:
    """term_mask for each (stop_words, ngram_max) of `variants`, the terms split into their words once and each
    stop-word list tested once. In Arrow's compiled kernels (split_pattern, is_in): both masks of news4's 343k
    terms took 0.95-1.07 s with a Python set test per word and numpy's string functions (2 cores), 0.11-0.16 s so."""
    split = pc.split_pattern(pa.array(terms, type=pa.string()), " ")  # every term's words
    words = pc.list_value_length(split).to_numpy(zero_copy_only=False)  # (terms,) words in each
    without: dict[str | None, np.ndarray] = {}  # stop-word list -> (terms,) no word of the term is on it
    masks = {}
    for stop_words, ngram_max in variants:
        if stop_words not in without:
            stop = _stop_word_set(stop_words)
            without[stop_words] = np.ones(len(terms), bool)
            if stop:  # every term's words in one flat list, each word tested once
                is_stop = pc.is_in(pc.list_flatten(split), value_set=pa.array(sorted(stop), type=pa.string()))
                owner = np.repeat(np.arange(len(terms)), words)  # (words,) the term each word belongs to
                without[stop_words][owner[is_stop.to_numpy(zero_copy_only=False)]] = False
        masks[stop_words, ngram_max] = without[stop_words] & (words <= ngram_max)
    return masks
