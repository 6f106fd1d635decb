"""Word unigram and bigram counts in compiled code: scikit-learn's word analyzer (lowercase, tokens of two or more
word characters, English stop words removed before n-grams are formed) and its counting, with no Python work per
token. (Over 600 lines: the splitting, the per-chunk numbering of words and bigrams, the chunks' merge and the
small-input path all work on one term numbering, which a split would pass between modules as bare arrays.)

Why: scikit-learn's analyzer builds a Python string per token and per bigram, and counting them through dicts cost
~300 ns a term: fitting a vocabulary on 100,000 synthetic documents (117 MB) took 25.6 s on 2 cores, 4.6 MB/s (11.0
s with this module; `benchmarks.vectorizing.vectorize_workers`, docs/decisions.md "Vectorizing in compiled code"). Here
the texts
are split by pyarrow's string kernels (ASCII documents on whitespace after a byte translation, the others by
RE2, in C++), each distinct word becomes a number once per chunk (pyarrow's
dictionary encoding), a bigram is a pair of word numbers packed in one int64, and the (document, term) counts are
numpy counts and sorts. (Inputs of a few documents, a prediction's, are split by Python's re instead:
SMALL_INPUT_CHARACTERS says why.) The texts may come as a list of str or as a pyarrow string array (a large JSONL
file's share, parsed by pyarrow: pipelines/shares.py), which is lowercased and split as it lies (`Texts`).

Same terms and counts as CountVectorizer(lowercase=True, token_pattern=r"(?u)\\b\\w\\w+\\b", ngram_range=(1, n),
stop_words) for n <= 2, or with `unspaced` as token_pattern=UNSPACED_TOKEN_PATTERN, each character of a script
written without spaces a word (tests/pipelines/test_word_counts.py checks it on trec, mr, AG News and 20 Newsgroups
posts, and on random Unicode): lowercasing is Python's own str.lower (so the Unicode special cases, such as a final
sigma, come out as
scikit-learn's), and a token is a maximal run of word characters, Python's \\w being [\\p{L}\\p{N}_] (letters,
numbers, the underscore), which is how the RE2 pattern splits (and, on ASCII, the byte table).
Longer n-grams, the character analyzer and hashing stay with scikit-learn (pipelines/vectorize/terms.py decides).
Decision: pyarrow, an established library of compiled string kernels, rather than HuggingFace tokenizers (its
WordLevel trainer and encoder, tried on news20, were slower than scikit-learn's own analyzer) or a tokenizer of
our own.

Shapes: a chunk of D documents with T term occurrences -> `ids`, `docs` (T,) int64; its W distinct words;
term keys: a unigram is its word number w (< W), a bigram W + w1 * W + w2.
"""

from __future__ import annotations

import functools
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from pipelines.workers import return_freed_memory

# The delimiters between tokens: anything that is not a word character (Python's \w: letters, numbers, "_").
NOT_WORD = r"[^\p{L}\p{N}_]+"
MAX_NGRAM = 2  # longer n-grams: scikit-learn's analyzer (their packed keys would not fit 64 bits)
# Inputs of fewer characters are split by Python's re with scikit-learn's own pattern: pyarrow compiles its regular
# expression on every call (~1.5 ms for this Unicode class), which a one-document prediction would pay each time
# (2.2 ms against scikit-learn's 58 us on an AG News document, 2 cores); Python's re splits ~30 MB/s, so below
# ~50,000 characters the compile costs more than it saves.
SMALL_INPUT_CHARACTERS = 50_000
STOP = -2  # WordCounter's word number for a stop word: left out before bigrams are formed
TOKEN_PATTERN = r"(?u)\b\w\w+\b"  # CountVectorizer's token_pattern
# Chinese, Japanese, Thai, Lao, Khmer and Myanmar put no spaces between words, so the pattern above makes one token
# of a whole run of their characters, a clause that rarely occurs twice (and breaks Thai at its vowel and tone
# marks, which are not word characters): TF-IDF + LinearSVC on 10-category Chinese shopping reviews scored 0.52 on
# such tokens and 0.90 on single characters and their pairs (BENCHMARKS.md, "Text without spaces between words").
# With `unspaced` each character of these scripts is a word of its own, so unigrams are its characters and bigrams
# its neighbouring pairs, the usual bag of words for these scripts where no word segmenter is at hand; every other
# token is a run of two or more word characters, as before, cut where such a character stands. Each character of the
# ranges counts, marks included: on Thai social media posts (wisesight's training split against its validation
# split, TF-IDF (1, 2) + LinearSVC) the tone and vowel marks as words of their own gave 0.6880, left out 0.6610,
# the pattern above 0.6498. The ranges: Thai, Lao, Myanmar, Khmer, the ideographic iteration and closing marks and
# the ideographic zero, Hiragana, Katakana (and its phonetic extensions and half-width forms), the CJK Unified
# Ideographs with extension A, the compatibility ideographs, and planes 2 and 3 (the further extensions). Hangul is
# left out: Korean puts spaces between its words.
UNSPACED_RANGES = (
    (0x0E00, 0x0EFF),
    (0x1000, 0x109F),
    (0x1780, 0x17FF),
    (0x3005, 0x3007),
    (0x3040, 0x30FF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x3FFFF),
)
# The ranges as the inside of a character class of Python's re (of RE2, below).
UNSPACED_CLASS = "".join(f"{chr(first)}-{chr(last)}" for first, last in UNSPACED_RANGES)
_UNSPACED_CLASS_RE2 = "".join(f"\\x{{{first:x}}}-\\x{{{last:x}}}" for first, last in UNSPACED_RANGES)
# What separates tokens where these scripts' characters are words: NOT_WORD, less those characters.
NOT_WORD_OR_UNSPACED = f"[^\\p{{L}}\\p{{N}}_{_UNSPACED_CLASS_RE2}]+"
# The same tokens as a scikit-learn token_pattern: runs of two or more word characters outside these scripts, or one
# character of them.
UNSPACED_TOKEN_PATTERN = f"(?u)[^\\W{UNSPACED_CLASS}]{{2,}}|[{UNSPACED_CLASS}]"
WORD_TOKEN = re.compile(TOKEN_PATTERN)
UNSPACED_WORD_TOKEN = re.compile(UNSPACED_TOKEN_PATTERN)
_UNSPACED_CHARACTER = re.compile(f"[{UNSPACED_CLASS}]")


def token_pattern(unspaced: bool) -> str:
    """The scikit-learn token_pattern that splits as this module does."""
    return UNSPACED_TOKEN_PATTERN if unspaced else TOKEN_PATTERN


def holds_unspaced(terms: Sequence[str]) -> bool:
    """Whether any of the terms holds a character of UNSPACED_RANGES."""
    return any(_UNSPACED_CHARACTER.search(term) for term in terms)


def supports(ngram_max: int) -> bool:
    """Whether this module counts n-grams up to ngram_max."""
    return 1 <= ngram_max <= MAX_NGRAM


@dataclass
class Tokens:
    """A chunk's tokens: its distinct words (W,) and, per token in document order, the word's number and the
    document's (T,) int64."""

    words: pa.Array  # (W,) str
    ids: np.ndarray  # (T,) int64, numbers into words
    docs: np.ndarray  # (T,) int64: each document's tokens next to each other, in the document's order


def tokens(
    texts: Texts, stop_words: frozenset[str] | None, prefix: str | None = None, unspaced: bool = False
) -> Tokens:
    """texts -> Tokens, lowercased as scikit-learn does, stop words left out; prefix: a word put in front of each
    text (before lowercasing, as a preprocessor would); unspaced: each character of a script written without spaces a
    word (UNSPACED_RANGES)."""
    small = _small(texts)
    lowered = _lowered(texts, prefix, ascii_lowered=small)
    return (_python_tokens if small else _arrow_tokens)(lowered, stop_words, unspaced)


# Texts as this module takes them: Python strings, or a pyarrow string array (a JSONL share parsed by pyarrow's
# JSON reader, pipelines/shares.py), which is lowercased and split without a Python string per document.
Texts = Sequence[str] | pa.Array


def _lowered(texts: Texts, prefix: str | None, ascii_lowered: bool = True) -> list[str] | pa.Array:
    """The texts lowercased as Python's str.lower does, the prefix and a space in front of each: a list, or a
    large_string array for an array (_lowered_array; ascii_lowered=False: its ASCII texts left as they are, for
    _arrow_split, whose ASCII split lowercases them as it goes)."""
    if isinstance(texts, pa.Array):
        return _lowered_array(texts, prefix, ascii_lowered)
    return [(prefix + " " + text).lower() for text in texts] if prefix else [text.lower() for text in texts]


def _lowered_array(texts: pa.Array, prefix: str | None, ascii_lowered: bool = True) -> pa.Array:
    """_lowered of an array: the ASCII texts by pyarrow's ASCII lowercasing (the same as str.lower on ASCII) unless
    not ascii_lowered, the others by str.lower itself (pyarrow's Unicode lowercasing differs from Python's in its
    special cases)."""
    texts = texts.cast(pa.large_string())
    if prefix:
        texts = pc.binary_join_element_wise(
            pa.scalar(prefix, pa.large_string()), texts, pa.scalar(" ", pa.large_string())
        )
    ascii_texts = pc.string_is_ascii(texts)
    lowered = pc.ascii_lower(texts) if ascii_lowered else texts
    if not pc.all(ascii_texts).as_py():
        others = pc.invert(ascii_texts)
        lowered = pc.replace_with_mask(
            lowered, others, pa.array([text.lower() for text in texts.filter(others).to_pylist()], pa.large_string())
        )
    return lowered


def _small(texts: Texts) -> bool:
    """Whether Python's re splits these texts (SMALL_INPUT_CHARACTERS says why)."""
    if isinstance(texts, pa.Array):  # bytes: at least the characters, so a small array is small in both
        return _text_bytes(texts) < SMALL_INPUT_CHARACTERS
    return sum(map(len, texts)) < SMALL_INPUT_CHARACTERS


def _text_bytes(texts: pa.Array) -> int:
    """The bytes of a string or large_string array's texts (another type is cast first)."""
    if texts.type == pa.string():
        offsets = np.frombuffer(texts.buffers()[1], np.int32, len(texts) + 1, texts.offset * 4)
    else:
        offsets = string_offsets(texts if texts.type == pa.large_string() else texts.cast(pa.large_string()))
    return int(offsets[-1] - offsets[0])


def string_offsets(texts: pa.Array) -> np.ndarray:
    """A large_string array's (len + 1,) int64 offsets into its data buffer, as they lie (no copy): text i is bytes
    offsets[i]:offsets[i + 1] (a slice of an array starts past 0)."""
    return np.frombuffer(texts.buffers()[1], np.int64, len(texts) + 1, texts.offset * 8)


def _arrow_tokens(lowered: list[str] | pa.Array, stop_words: frozenset[str] | None, unspaced: bool) -> Tokens:
    """tokens() of lowercased texts in compiled code (_arrow_split), each distinct word numbered once by pyarrow's
    dictionary encoding."""
    flat, docs = _arrow_split(lowered, unspaced)
    encoded = pc.dictionary_encode(flat)
    ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    if stop_words:  # looked up once per distinct word, not per token; the stop words stay unused in `words`
        stop = pc.is_in(encoded.dictionary, value_set=_word_array(stop_words)).to_numpy(zero_copy_only=False)
        keep = ~stop[ids]
        ids, docs = ids[keep], docs[keep]
    return Tokens(encoded.dictionary, ids, docs)


def _arrow_split(lowered: list[str] | pa.Array, unspaced: bool = False) -> tuple[pa.Array, np.ndarray]:
    """Lowercased texts (ASCII ones may come as they are: the byte translation lowercases them) -> (every token
    (T,) large_string, lowercased, its document (T,) int64): the ASCII documents (nearly all of most corpora)
    split on whitespace after a byte translation (_ascii_split), the others by pyarrow's RE2
    (_regex_split). Each document's tokens stay together and in order, which is all term_keys and WordCounter
    need of `docs` (the ASCII documents' tokens come first). unspaced: as tokens() (an ASCII text holds no such
    character)."""
    if isinstance(lowered, pa.Array):
        ascii_docs = pc.string_is_ascii(lowered).to_numpy(zero_copy_only=False)
    else:
        ascii_docs = np.fromiter((text.isascii() for text in lowered), bool, len(lowered))
    parts = []
    regex_split = functools.partial(_regex_split, unspaced=unspaced)
    for split, which in ((_ascii_split, ascii_docs), (regex_split, ~ascii_docs)):
        if which.all():
            parts.append(split(lowered))
        elif which.any():
            numbers = np.flatnonzero(which)
            flat, docs = split(
                lowered.filter(pa.array(which)) if isinstance(lowered, pa.Array) else [lowered[i] for i in numbers]
            )
            parts.append((flat, numbers[docs]))
    if len(parts) == 1:
        return parts[0]
    return pa.concat_arrays([part[0] for part in parts]), np.concatenate([part[1] for part in parts])


def _regex_split(lowered: list[str] | pa.Array, unspaced: bool = False) -> tuple[pa.Array, np.ndarray]:
    """-> (tokens of two characters or more (T,) large_string, their documents (T,) int64), split by RE2. unspaced:
    each character of UNSPACED_RANGES set apart by spaces first, and kept as a token of one character."""
    texts = lowered if isinstance(lowered, pa.Array) else pa.array(lowered, pa.large_string())
    if unspaced:
        texts = pc.replace_substring_regex(texts, f"[{_UNSPACED_CLASS_RE2}]", " \\0 ")
    return _long_pieces(
        pc.split_pattern_regex(texts, NOT_WORD_OR_UNSPACED if unspaced else NOT_WORD), pc.utf8_length, unspaced
    )


def _long_pieces(pieces: pa.ListArray, length, unspaced: bool = False) -> tuple[pa.Array, np.ndarray]:
    """Each document's split pieces -> (the pieces of two characters or more, flattened (T,); their documents
    (T,) int64): \\w\\w+, two word characters at least. length: the pyarrow kernel that counts characters.
    unspaced: a piece of one character kept too where it is one of UNSPACED_RANGES'."""
    flat = pc.list_flatten(pieces)
    lengths = length(flat)
    keep = pc.greater_equal(lengths, 2)
    if unspaced:  # (the pieces of one character tested alone: most pieces are longer)
        single = pc.equal(lengths, 1)
        if pc.any(single).as_py():
            unspaced_single = pc.match_substring_regex(flat.filter(single), f"^[{_UNSPACED_CLASS_RE2}]$")
            keep = pc.replace_with_mask(keep, single, unspaced_single)
    docs = pc.list_parent_indices(pieces).to_numpy().astype(np.int64, copy=False)[keep.to_numpy(zero_copy_only=False)]
    return pc.filter(flat, keep), docs


# ASCII bytes -> themselves if a word character (Python's \w on ASCII: letters, digits, the underscore), lowercased
# (as str.lower lowercases ASCII), else a space. Lowercasing here spares the large texts' ASCII ones a pass of their
# own (_lowered's ascii_lowered): a 16 MB share's pyarrow ascii_lower took 11 of its ~300 ms (one core).
_WORD_OR_SPACE = np.full(256, ord(" "), np.uint8)
for _first, _last in ("az", "09", "__"):
    _WORD_OR_SPACE[ord(_first) : ord(_last) + 1] = np.arange(ord(_first), ord(_last) + 1)
_WORD_OR_SPACE[ord("A") : ord("Z") + 1] = np.arange(ord("a"), ord("z") + 1)
# The table as bytes.translate takes it: a byte-to-byte loop, where numpy's indexing by a uint8 array widened the
# indices to int64 first (a 14 MB share: 6 ms against 19, one core).
_WORD_OR_SPACE_BYTES = _WORD_OR_SPACE.tobytes()


def _ascii_split(lowered: list[str] | pa.Array) -> tuple[pa.Array, np.ndarray]:
    """_regex_split for ASCII texts: every byte that is not a word character becomes a space and every capital
    letter a small one (one table translation of the joined texts' bytes, handed to pyarrow as a string array
    without a copy), then pyarrow's split on ASCII whitespace, which needs no regular expression. On synthetic
    news posts, one core: 0.54 s for 57 MB where the RE2 split took 1.39 s (BENCHMARKS.md, "Vectorizing in
    compiled code")."""
    if isinstance(lowered, pa.Array):  # a large_string array's bytes and offsets as they lie
        offsets = string_offsets(lowered)
        data = memoryview(lowered.buffers()[2])[offsets[0] : offsets[-1]].tobytes().translate(_WORD_OR_SPACE_BYTES)
        offsets = offsets - offsets[0]
    else:
        data = "".join(lowered).encode("ascii").translate(_WORD_OR_SPACE_BYTES)
        offsets = np.zeros(len(lowered) + 1, np.int64)
        np.cumsum([len(text) for text in lowered], out=offsets[1:])
    texts = pa.Array.from_buffers(pa.large_string(), len(lowered), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return _long_pieces(pc.ascii_split_whitespace(texts), pc.binary_length)  # ASCII: a byte is a character


def _python_tokens(lowered: list[str] | pa.Array, stop_words: frozenset[str] | None, unspaced: bool = False) -> Tokens:
    """tokens() of a small input, by scikit-learn's own token pattern in Python's re (UNSPACED_TOKEN_PATTERN with
    unspaced)."""
    if isinstance(lowered, pa.Array):
        lowered = lowered.to_pylist()
    number: dict[str, int] = {}
    ids, docs = [], []
    pattern = UNSPACED_WORD_TOKEN if unspaced else WORD_TOKEN
    for doc, text in enumerate(lowered):
        for token in pattern.findall(text):
            if not stop_words or token not in stop_words:
                ids.append(number.setdefault(token, len(number)))
                docs.append(doc)
    return Tokens(pa.array(list(number), pa.large_string()), np.array(ids, np.int64), np.array(docs, np.int64))


@functools.lru_cache(maxsize=4)
def _word_array(words: frozenset[str]) -> pa.Array:
    """A stop-word list as pyarrow's is_in takes it, built once per list."""
    return pa.array(sorted(words), pa.large_string())


def term_keys(found: Tokens, ngram_max: int) -> tuple[np.ndarray, np.ndarray]:
    """-> (keys, docs) (T',) int64 of every term occurrence: the unigrams, then (ngram_max 2) the bigrams of
    neighbouring tokens of one document."""
    n_words = len(found.words)
    if ngram_max == 1 or len(found.ids) < 2:
        return found.ids, found.docs
    same = found.docs[1:] == found.docs[:-1]  # neighbours in one document
    bigrams = n_words + found.ids[:-1][same] * n_words + found.ids[1:][same]
    return np.concatenate([found.ids, bigrams]), np.concatenate([found.docs, found.docs[:-1][same]])


def count_keys(keys: np.ndarray, docs: np.ndarray, n_docs: int) -> tuple[np.ndarray, sp.csr_matrix]:
    """Term occurrences -> (the distinct keys, sorted (K,); (n_docs, K) CSR float32 counts, columns sorted
    within rows). Keys of a range at most twice their occurrences (a chunk's unigrams) are counted (below); others
    (bigrams) by one sort of (key, document) packed in an int64, which orders the counts by key, as a CSC matrix:
    np.unique's hash table, np.searchsorted and an argsort were each slower on millions of keys."""
    if not len(keys):
        return keys, sp.csr_matrix((n_docs, 0), dtype=np.float32)
    span = int(keys.max()) + 1
    if span <= 2 * len(keys):
        # Keys of a small range (a chunk's unigrams: its word numbers): the distinct ones by a count of each, no
        # sort of the occurrences; the rows by row_counts (a chunk of 25,000 synthetic posts, unigrams, one core:
        # count_chunk 0.81-1.09 s with the sort below, 0.63-0.84 s so, after a first call).
        present = np.bincount(keys, minlength=span) > 0
        rank = np.cumsum(present, dtype=np.int32) - 1
        return np.flatnonzero(present).astype(keys.dtype), row_counts(docs, rank[keys], n_docs, int(rank[-1]) + 1)
    n = max(n_docs, 1)
    if span * n >= 2**62:  # a chunk of millions of distinct words: rank the keys first
        distinct, ranks = _ranks(keys)
        _, counts = count_keys(ranks.astype(np.int64), docs, n_docs)  # (packed with documents in int64)
        return distinct, counts
    key, doc, counts = _pair_counts(keys, docs, n)
    new_key = _changes(key)
    by_key = sp.csc_matrix(
        (counts, doc.astype(np.int32), np.append(np.flatnonzero(new_key), len(key))), shape=(n_docs, int(new_key.sum()))
    )
    return key[new_key], by_key.tocsr()


def _pair_counts(major: np.ndarray, minor: np.ndarray, n_minor: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Occurrences of (major, minor) pairs, minor < n_minor -> (major, minor, float32 count) of each distinct pair,
    sorted by major then minor: one sort of the pairs packed in an int64."""
    packed = major * n_minor
    packed += minor
    packed.sort()
    starts = np.flatnonzero(_changes(packed))
    # Run lengths straight into float32: each fresh array of millions of entries costs its page faults here.
    counts = np.empty(len(starts), np.float32)
    np.subtract(starts[1:], starts[:-1], out=counts[:-1], casting="unsafe")
    counts[-1:] = len(packed) - starts[-1:]
    first, second = np.divmod(packed[starts], n_minor)
    return first, second, counts


def row_counts(docs: np.ndarray, columns: np.ndarray, n_docs: int, width: int) -> sp.csr_matrix:
    """(document, column) occurrences, (T,) each -> (n_docs, width) CSR float32 counts, columns sorted within rows.
    The occurrences put in document order (a stable sort only where they are not: the tokens come grouped by
    document, the ASCII documents' first), then each row's columns ordered by two counting sorts, scipy's
    conversions to CSC and back (each stable and linear: the second visits the columns in order, so each row
    receives its columns in order, repeats side by side), and the repeats added. On a 16 MB share of synthetic
    posts (2.5M unigram occurrences, one core) 0.05 s where scipy's sort within each row took 0.08 s; one sort of
    every (document, column) pair packed in an int64 (_pair_counts) took 1.4-2.1 s on a 57 MB share."""
    if len(columns) <= SMALL_OCCURRENCES:
        return _small_row_counts(docs, columns, n_docs, width)
    if len(docs) > 1 and not bool(np.all(docs[1:] >= docs[:-1])):
        order = np.argsort(docs, kind="stable")
        docs, columns = docs[order], columns[order]
    indptr = np.zeros(n_docs + 1, np.int64)
    np.cumsum(np.bincount(docs, minlength=n_docs), out=indptr[1:])
    counts = sp.csr_matrix((np.ones(len(columns), np.float32), columns, indptr), shape=(n_docs, width)).tocsc().tocsr()
    counts.sum_duplicates()  # (the rows' columns already in order: no sort, the repeats added)
    return counts


# Up to this many occurrences (a service's few documents a call), row_counts sorts the (document, column) pairs
# packed in an int64 and builds one matrix: the conversions below cost a few scipy constructions a call, most of
# a one-document transform.
SMALL_OCCURRENCES = 1 << 14


def _small_row_counts(docs: np.ndarray, columns: np.ndarray, n_docs: int, width: int) -> sp.csr_matrix:
    """row_counts of a few occurrences: the same matrix (columns sorted within rows, repeats added)."""
    keys, counts = np.unique(docs.astype(np.int64) * width + columns, return_counts=True)
    rows, columns = np.divmod(keys, width)
    indptr = np.zeros(n_docs + 1, np.int32)
    np.cumsum(np.bincount(rows, minlength=n_docs), out=indptr[1:])
    matrix = sp.csr_matrix((counts.astype(np.float32), columns.astype(np.int32), indptr), shape=(n_docs, width))
    matrix.has_sorted_indices = True  # (np.unique sorted them, and added the repeats)
    return matrix


def _changes(ordered: np.ndarray) -> np.ndarray:
    """(n,) bool: where a sorted array's value differs from the one before (the first always)."""
    new = np.empty(len(ordered), bool)
    new[:1], new[1:] = True, ordered[1:] != ordered[:-1]
    return new


def _ranks(keys: np.ndarray, runs: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """-> (the distinct keys sorted, each key's rank among them: int32 where they fit, half the memory of tens
    of millions of chunk terms). runs: the keys are a few sorted runs one after the other, which numpy's stable
    sort (a merge sort) merges in a third of its default's time (24M keys in 16 runs: 0.9 s against 3.0, one
    core)."""
    order = np.argsort(keys, kind="stable" if runs else None)
    ordered = keys[order]
    new = _changes(ordered)
    distinct = ordered[new]
    del ordered
    ranks = np.empty(len(keys), np.int32 if len(keys) < 2**31 else np.int64)
    ranks[order] = np.cumsum(new, dtype=ranks.dtype) - 1
    return distinct, ranks


def _ranks_of_runs(
    runs: list[tuple[np.ndarray, np.ndarray]], threads: ThreadPoolExecutor, workers: int
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Sorted arrays, each of distinct keys, with a whole-number weight each -> (the distinct keys of all of them
    sorted (N,); each array's keys' ranks among them, int64; each distinct key's weights summed (N,) int64). The
    keys are cut into ranges at values of the longest array's (a key falls in one range in every array), and each
    range is ranked and summed on a thread of its own: its pieces of the arrays are sorted runs, which numpy's
    stable sort merges (_ranks)."""
    longest = max((keys for keys, _ in runs), key=len)
    pieces = max(1, min(workers * 2, len(longest) // 10_000))  # (a few a thread: the ranges' sizes differ)
    cuts = longest[(np.arange(1, pieces) * len(longest)) // pieces]  # (pieces - 1,) ascending
    bounds = [np.concatenate([[0], np.searchsorted(keys, cuts), [len(keys)]]) for keys, _ in runs]

    def rank_range(piece: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        spans = [slice(bound[piece], bound[piece + 1]) for bound in bounds]
        distinct, ranks = _ranks(np.concatenate([keys[span] for (keys, _), span in zip(runs, spans)]), runs=True)
        weights = np.concatenate([weight[span] for (_, weight), span in zip(runs, spans)])
        return distinct, ranks, np.bincount(ranks, weights=weights, minlength=len(distinct)).astype(np.int64)

    ranked = list(threads.map(rank_range, range(pieces)))
    first_rank = np.cumsum([0] + [len(distinct) for distinct, _, _ in ranked])
    # Where each array's keys start in each range's concatenation: (arrays + 1, pieces) running sums of the
    # (arrays, pieces) lengths of its pieces.
    lengths = np.diff(np.stack(bounds), axis=1)
    starts = np.concatenate([np.zeros((1, pieces), np.int64), np.cumsum(lengths, axis=0)])
    ranks = [
        np.concatenate(
            [
                piece_ranks[starts[index, piece] : starts[index + 1, piece]] + first_rank[piece]
                for piece, (_, piece_ranks, _) in enumerate(ranked)
            ]
        )
        for index in range(len(runs))
    ]
    return (
        np.concatenate([distinct for distinct, _, _ in ranked]),
        ranks,
        np.concatenate([totals for _, _, totals in ranked]),
    )


@dataclass
class ChunkCounts:
    """count_chunk's answer: the chunk's words, its distinct term keys (K,) sorted, (documents, K) counts."""

    words: pa.Array
    keys: np.ndarray
    counts: sp.csr_matrix


def count_chunk(
    texts: Texts, ngram_max: int, stop_words: frozenset[str] | None, prefix: str | None = None, unspaced: bool = False
) -> ChunkCounts:
    """One chunk's terms and counts, in its own numbering (merge joins chunks)."""
    found = tokens(texts, stop_words, prefix, unspaced)
    keys, docs = term_keys(found, ngram_max)
    distinct, counts = count_keys(keys, docs, len(texts))
    return ChunkCounts(found.words, distinct, counts)


def _split_keys(keys: np.ndarray, n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """Keys -> (first word, second word or -1 for a unigram)."""
    bigram = keys >= n_words
    first, second = np.divmod(np.where(bigram, keys - n_words, keys * n_words), n_words)
    return first, np.where(bigram, second, -1)


def _global_keys(first: np.ndarray, second: np.ndarray, n_words: int) -> np.ndarray:
    return np.where(second < 0, first, n_words + first * n_words + second)


@dataclass
class MergedTerms:
    """merge_terms' answer: the kept terms of all chunks and where each chunk's terms went."""

    terms: pa.Array  # (V,) large_string: the terms in at least min_df documents, sorted as CountVectorizer sorts them
    df: np.ndarray  # (V,) int64: the documents of all chunks that hold each term
    columns: list[np.ndarray]  # per chunk, (K,) int64: each of its distinct keys' column in `terms`, -1: dropped


def merge_terms(parts: list[ChunkCounts], min_df: int, leave_out: str | None = None) -> MergedTerms:
    """Chunks -> the terms in at least min_df documents of all of them, sorted as CountVectorizer sorts its
    vocabulary, their document frequencies, and each chunk term's column: merge without moving any counts, for a
    caller that moves each chunk's itself (merge; pipelines/vectorize/fit.py, `_view_from_chunks`).
    leave_out: a word whose unigram is not kept (its bigrams are): the start token, which every document holds
    (pipelines/vectorize/terms.py), dropped here with the rare terms rather than by copying the merged matrix.
    The per-chunk steps run on threads (numpy and pyarrow let go of the GIL): this runs in one process after the
    workers counted, so on many cores it is what a fit waits for."""
    if not parts:
        return MergedTerms(pa.array([], pa.large_string()), np.zeros(0, np.int64), [])
    encoded = pc.dictionary_encode(pa.concat_arrays([part.words.cast(pa.large_string()) for part in parts]))
    numbers = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)  # chunk word -> shared word number
    words = encoded.dictionary
    n_words = len(words)
    offsets = np.cumsum([0] + [len(part.words) for part in parts])
    workers = min(len(parts), os.cpu_count() or 1)

    def shared_keys(index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A chunk's keys in the shared word numbering, sorted; the order that sorts them (its keys are sorted in
        its own numbering, not in the shared one); and each one's document frequency in the chunk, in that order."""
        part = parts[index]
        first, second = _split_keys(part.keys, len(part.words))
        mapped = numbers[offsets[index] : offsets[index + 1]]
        keys = _global_keys(mapped[first], np.where(second < 0, -1, mapped[second]), n_words)
        order = np.argsort(keys)
        return keys[order], order, np.bincount(part.counts.indices, minlength=len(part.keys))[order]

    # Document frequencies summed over the chunks, by ranking the keys of all of them (each chunk's are distinct).
    # Each chunk's keys sorted on a thread of its own, then ranked together a range of keys a thread
    # (_ranks_of_runs), where one argsort of all of them took most of a bigram fit's merge (BENCHMARKS.md, "The
    # vocabulary's fit by chunks").
    with ThreadPoolExecutor(workers) as threads:
        sorted_keys = list(threads.map(shared_keys, range(len(parts))))
        distinct, run_ranks, totals = _ranks_of_runs([(keys, df) for keys, _, df in sorted_keys], threads, workers)
    keep = totals >= max(1, min_df)
    if leave_out is not None:
        word = pc.index(words, pa.scalar(leave_out, words.type)).as_py()  # -1: no document holds it
        keep &= distinct != word  # a unigram's key is its word's number (bigrams' are n_words or more)
    kept = np.flatnonzero(keep)
    first, second = _split_keys(distinct[kept], n_words)
    # The kept terms' order as strings (UTF-8 bytes sort as Python sorts str, by code point), found from their
    # words' order. Bigrams are word bigrams, and a word holds no byte at or below the space that joins a bigram's
    # two (word characters are ASCII letters, digits and "_", or bytes from 0x80 on), so "a b" sorts as the pair
    # (a, b), and a unigram "a" before every "a ..." (character n-grams, spaces and all, are unigrams here: their
    # words' order). Sorting the pairs' numbers took a fifth of sorting the strings (2.6M bigram terms: 0.58 s,
    # one core).
    word_rank = np.empty(n_words, np.int64)
    word_rank[pc.array_sort_indices(words).to_numpy()] = np.arange(n_words)
    alphabetical = np.argsort(
        word_rank[first] * (n_words + 1) + np.where(second < 0, 0, word_rank[np.maximum(second, 0)] + 1)
    )
    first, second = first[alphabetical], second[alphabetical]
    terms = pc.if_else(
        pa.array(second < 0),
        words.take(pa.array(first)),
        pc.binary_join_element_wise(
            words.take(pa.array(first)), words.take(pa.array(np.maximum(second, 0))), pa.scalar(" ", pa.large_string())
        ),
    )
    column = np.full(len(distinct), -1, np.int64)  # distinct key -> its column, -1: dropped
    column[kept[alphabetical]] = np.arange(len(kept))

    def chunk_columns(index: int) -> np.ndarray:  # a chunk's terms' columns, in its own order of its terms
        columns = np.empty(len(run_ranks[index]), np.int64)
        columns[sorted_keys[index][1]] = column[run_ranks[index]]
        return columns

    with ThreadPoolExecutor(workers) as threads:
        columns = list(threads.map(chunk_columns, range(len(parts))))
    return MergedTerms(terms, totals[kept[alphabetical]], columns)


def merge(parts: list[ChunkCounts], min_df: int, leave_out: str | None = None) -> tuple[np.ndarray, sp.csr_matrix]:
    """Chunks -> (the terms in at least min_df documents of all of them, sorted as CountVectorizer sorts its
    vocabulary; the counts with their columns in that order, stacked): the one-CountVectorizer result.
    leave_out: as merge_terms.
    Consumes `parts`: each chunk's counts are let go once moved to the shared columns, so that the merge holds the
    chunks' counts and the result's only as one chunk's share of each: moving every chunk's entries at once held
    them all, moved and unmoved, beside each other (BENCHMARKS.md, "Big corpora with no flags": the vectorize
    phase's rise at a million documents was mostly this fit)."""
    if not parts:
        return np.array([], dtype=object), sp.csr_matrix((0, 0), dtype=np.float32)
    merged = merge_terms(parts, min_df, leave_out)
    width = len(merged.terms)

    def moved(index: int) -> sp.csr_matrix:
        """Chunk `index`'s counts in the shared columns, the dropped terms left out; the chunk let go."""
        counts = parts[index].counts
        parts[index] = None
        chunk = move_columns(counts, merged.columns[index], width)
        chunk.sort_indices()
        return chunk

    with ThreadPoolExecutor(min(len(parts), os.cpu_count() or 1)) as threads:
        rows = list(threads.map(moved, range(len(parts))))
    parts.clear()
    return np.array(merged.terms.to_pylist(), dtype=object), stack_rows(rows)


def move_columns(counts: sp.csr_matrix, new_column: np.ndarray, width: int) -> sp.csr_matrix:
    """counts with column j moved to new_column[j] of a (rows, width) matrix (int32 columns); entries bound for
    -1 dropped."""
    columns = new_column[counts.indices]
    keep = columns >= 0
    return sp.csr_matrix(
        (counts.data[keep], columns[keep].astype(np.int32), kept_indptr(counts.indptr, keep)),
        shape=(counts.shape[0], width),
    )


def stack_rows(parts: list[sp.csr_matrix]) -> sp.csr_matrix:
    """sp.vstack of CSR parts of one width, emptying the list as each part is copied: the result's arrays are
    allocated untouched (pages become resident only when written) and each part is freed once copied, its pages
    handed back to the system (return_freed_memory: parts under glibc's mmap threshold stayed resident, and a
    million documents' stacking peaked at the parts and the whole copy, 2 x 1.6 GB), so the peak is the matrix
    plus one part, where vstack held the parts and the whole copy at once."""
    if len(parts) == 1:
        return parts.pop()
    rows, nnz, width = sum(p.shape[0] for p in parts), sum(p.nnz for p in parts), parts[0].shape[1]
    index = np.int32 if max(nnz, width) < 2**31 - 1 else np.int64
    data, indices = np.empty(nnz, parts[0].dtype), np.empty(nnz, index)
    indptr = np.empty(rows + 1, index)
    indptr[0] = at = row = 0
    while parts:
        part = parts.pop(0)
        data[at : at + part.nnz], indices[at : at + part.nnz] = part.data, part.indices
        indptr[row + 1 : row + 1 + part.shape[0]] = part.indptr[1:] + at
        at, row = at + part.nnz, row + part.shape[0]
        del part
        return_freed_memory()
    return sp.csr_matrix((data, indices, indptr), shape=(rows, width))


def kept_indptr(indptr: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """A CSR matrix's row pointers (rows + 1,) once only its entries where `keep` (nnz,) bool remain: each
    pointer moves back by the dropped entries before it, found by a search among the dropped entries' positions.
    No array as long as the entries (a row number or a running count each): on this project's machines a fresh
    array of 16M int64 costs ~0.3 s in page faults, ten times writing it again."""
    return indptr - np.searchsorted(np.flatnonzero(~keep), indptr)


class WordCounter:
    """CountVectorizer(vocabulary=terms).transform for word n-grams up to MAX_NGRAM: raw counts of the given terms,
    (documents, len(terms)) CSR float32, columns in the terms' order. It pickles to worker processes with its
    vocabulary's words (a dict) and lookup arrays."""

    def __init__(
        self,
        terms: Sequence[str],
        ngram_max: int,
        stop_words: frozenset[str] | None,
        prefix: str | None = None,
        unspaced: bool = False,
    ):
        if not supports(ngram_max):
            raise ValueError(f"word counting supports n-grams up to {MAX_NGRAM}, not {ngram_max}")
        self.ngram_max, self.stop_words, self.prefix, self.unspaced = ngram_max, stop_words, prefix, unspaced
        self.width = len(terms)
        split = [term.split(" ") for term in terms]
        words = sorted({word for parts in split for word in parts})
        self.n_words = len(words)
        # word -> its number: each chunk's distinct words are looked up here (pyarrow's index_in would build a hash
        # table of all the vocabulary's words on every call: 2 ms a one-document transform)
        self.number = number = {word: i for i, word in enumerate(words)}
        first = np.array([number[parts[0]] for parts in split], np.int64)
        second = np.array([number[parts[1]] if len(parts) > 1 else -1 for parts in split], np.int64)
        unigram = second < 0
        # A unigram's column by its word number, one cell more for "no such word" (number -1): a lookup, no search.
        # int32: the matrix's column numbers, so that a share's millions of them need no conversion.
        self.unigram_column = np.full(self.n_words + 1, -1, np.int32)
        self.unigram_column[first[unigram]] = np.flatnonzero(unigram)
        pairs = first[~unigram] * self.n_words + second[~unigram]  # (bigram terms,) the two word numbers packed
        order = np.argsort(pairs)
        self.bigram_pairs, self.bigram_column = pairs[order], np.flatnonzero(~unigram)[order].astype(np.int32)

    def transform(self, texts: Texts) -> sp.csr_matrix:
        small = _small(texts)
        ids, token_docs = self._word_numbers(_lowered(texts, self.prefix, ascii_lowered=small), small)  # (T,) each
        columns = [self.unigram_column[ids]]
        docs = [token_docs]
        if self.ngram_max == 2 and len(self.bigram_pairs) and len(ids) > 1:
            # Neighbouring tokens of one document, both words known: the pairs a bigram term may be.
            both = (token_docs[1:] == token_docs[:-1]) & (ids[:-1] >= 0) & (ids[1:] >= 0)
            pairs = ids[:-1][both] * self.n_words + ids[1:][both]
            at = np.minimum(np.searchsorted(self.bigram_pairs, pairs), len(self.bigram_pairs) - 1)
            hit = self.bigram_pairs[at] == pairs
            columns.append(self.bigram_column[at[hit]])
            docs.append(token_docs[:-1][both][hit])
        # (Each fresh array of a share's millions of tokens costs its page faults: none made that is not needed.)
        columns, docs = (np.concatenate(columns), np.concatenate(docs)) if len(columns) > 1 else (columns[0], docs[0])
        known_terms = columns >= 0
        if not known_terms.all():
            columns, docs = columns[known_terms], docs[known_terms]
        return row_counts(docs, columns, len(texts), self.width)

    def _word_numbers(self, lowered: list[str] | pa.Array, small: bool) -> tuple[np.ndarray, np.ndarray]:
        """Lowercased texts (_lowered; small: _small of them, else ASCII texts may come as they are) -> (each
        token's word number in the vocabulary, -1 for a word it lacks; its document), (T,) int64 each, stop words
        left out."""
        if small:  # each token looked up as it is found (_python_tokens' pattern and stop words)
            pattern = UNSPACED_WORD_TOKEN if self.unspaced else WORD_TOKEN
            stop, lookup = self.stop_words, self.number.get
            ids: list[int] = []
            docs: list[int] = []
            for doc, text in enumerate(lowered.to_pylist() if isinstance(lowered, pa.Array) else lowered):
                tokens = pattern.findall(text)
                if stop:
                    tokens = [token for token in tokens if token not in stop]
                ids.extend([lookup(token, -1) for token in tokens])
                docs.extend([doc] * len(tokens))
            return np.array(ids, np.int64), np.array(docs, np.int64)
        # Each token looked up in the vocabulary's words at once, where the chunk's own words were dictionary-encoded
        # and then looked up one by one: on a 16 MB share's tokens (one core, one process) the encoding alone took
        # 0.33 s, this lookup 0.14 s.
        flat, docs = _arrow_split(lowered, self.unspaced)
        words, numbers = self._lookup
        found = pc.index_in(flat, value_set=words).fill_null(-1).to_numpy(zero_copy_only=False)
        numbers = numbers[found]  # (T,): -1 unknown, STOP a stop word
        if self.stop_words:
            keep = numbers != STOP
            numbers, docs = numbers[keep], docs[keep]
        return numbers, docs

    @functools.cached_property
    def _lookup(self) -> tuple[pa.Array, np.ndarray]:
        """What _word_numbers looks tokens up in: the stop words, then the vocabulary's other words (a stop word
        first, so that it is left out even where a vocabulary term holds it: such a term never matches); and
        (len(words) + 1,) int64 each one's number (STOP for a stop word), the last cell -1 for a token not found
        (index_in's null, filled with -1)."""
        stop = self.stop_words or frozenset()
        others = [(word, number) for word, number in self.number.items() if word not in stop]
        words = pa.array(sorted(stop) + [word for word, _ in others], pa.large_string())
        return words, np.array([STOP] * len(stop) + [number for _, number in others] + [-1], np.int64)
