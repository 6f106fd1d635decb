"""Character n-grams inside word boundaries, counted in compiled code: scikit-learn's "char_wb" analyzer (the
character view's, pipelines/vectorize/terms.py) and its counting, in numpy and pyarrow with no Python work per n-gram.

What char_wb gives (scikit-learn's `_char_wb_ngrams`): the text lowercased and split into words at whitespace
(str.split), each word padded with a space on each side, and for each n of the range every n characters in a row
inside a padded word; a padded word of fewer than n characters gives none for that n.

Why: scikit-learn's analyzer makes a Python string of every n-gram and our counting loop a dict lookup of each: ~5
n-grams a character, so the character view cost ~5x the words (2 cores, 50,218 Chinese reviews of 2.9M characters:
7.5 s in the workers and 4.4 s merging; docs/decisions.md, "The character view counted in compiled code").

How, per chunk of texts: their code points in one array, the words found and copied padded into a second array
(`padded`), each character ranked among the chunk's distinct characters; a 2-gram numbered by ranking the pairs
(first character's rank, second's), an (n + 1)-gram by ranking (its first n characters' number, its last
character's rank), each level's numbers dense, so the packed pairs fit an int64. The (document, n-gram) counts are
word_counts.count_keys'; each distinct n-gram's text is cut from one place it occurs. The chunks' vocabularies and
counts are then merged as the words' are (word_counts.merge: a chunk's n-grams are its "words"), which gives the
terms sorted as CountVectorizer sorts them and the same counts (tests/pipelines/test_char_counts.py).

Shapes: a chunk of D documents, N code points, P = N - spaces + 2 x words padded positions.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

from pipelines import word_counts

# Python's whitespace (str.isspace, what str.split splits at and `\s` matches): all of it below U+3001.
_SPACES = np.array([code for code in range(0x3001) if chr(code).isspace()], np.uint32)
_SPACE = ord(" ")
# A transform of fewer characters is counted by a Python loop over each word's n-grams (scikit-learn's own
# analyzer's, _small_ngrams) and a dict lookup: here each call pays ~4 ms of fixed costs (pyarrow's index_in hashes
# the whole vocabulary), more than such a loop over a prediction's n-grams. mr sentences against a 148,000-term
# vocabulary, 2-core CPU, this counting against scikit-learn's CountVectorizer: 166 characters 3.8 / 0.2 ms; 1,807:
# 4.9 / 2.0 ms; 7,153: 13.4 / 10.6 ms; 29,434: 21.5 / 40.0 ms. The loop is not scikit-learn's own call, so that a
# prediction's process need not import scikit-learn (1.5-2.3 s of a one-document `textclf predict`).
SMALL_INPUT_CHARACTERS = 10_000
_RUNS_OF_SPACES = re.compile(r"\s\s+")


def count_chunk(texts: Sequence[str], ngram_range: tuple[int, int]) -> word_counts.ChunkCounts:
    """One chunk's distinct n-grams (as its words, in its own numbering: word_counts.merge joins chunks; keys
    0..K-1) and its (documents, K) CSR float32 counts."""
    low, high = ngram_range
    if not 1 <= low <= min(high, 3):  # from n = 4 on, scikit-learn gives a word too short for its first n whole
        raise ValueError(f"character n-gram range {ngram_range}: from 1, 2 or 3 characters")
    texts = [text.lower() for text in texts]
    padded, word_ends, word_docs = _padded_words(texts)
    # Per position of `padded`: its word, and how many characters of that word start there (room for an n-gram).
    word_starts = np.concatenate([np.zeros(1, np.int64), word_ends])[:-1]
    position_word = np.repeat(np.arange(len(word_ends)), word_ends - word_starts)
    room = word_ends[position_word] - np.arange(len(padded))
    _, ranks = np.unique(padded, return_inverse=True)
    ranks = ranks.astype(np.int64).reshape(-1)
    n_ranks = int(ranks.max()) + 1 if len(ranks) else 1
    keys, docs, starts, lengths = [], [], [], []
    numbers, offset = ranks, 0  # numbers[p]: the number of the (n - 1)-gram starting at p (ranks for n = 2)
    for n in range(1, high + 1):
        at = np.flatnonzero(room >= n)  # the n-grams' starts (n characters left in the word)
        if n > 1:
            distinct, first, numbers_here = np.unique(
                numbers[at] * n_ranks + ranks[at + n - 1], return_index=True, return_inverse=True
            )
            numbers = np.full(len(padded), -1, np.int64)
            numbers[at] = numbers_here.reshape(-1)
            count = len(distinct)
        else:
            count = n_ranks
            first = None
        if n >= low and len(at):
            keys.append(offset + numbers[at])
            docs.append(word_docs[position_word[at]])
            if first is None:  # unigrams: each rank's first place
                _, first = np.unique(numbers[at], return_index=True)
            starts.append(at[first])
            lengths.append(np.full(len(first), n, np.int64))
            offset += count
    if not keys:
        return word_counts.ChunkCounts(
            pa.array([], pa.large_string()), np.zeros(0, np.int64), sp.csr_matrix((len(texts), 0), dtype=np.float32)
        )
    distinct_keys, counts = word_counts.count_keys(np.concatenate(keys), np.concatenate(docs), len(texts))
    # Each level's keys are offset + 0..count-1 in order, so key k's text starts at starts[k], lengths[k] long;
    # every key of a level occurs (numbered by np.unique), so distinct_keys is 0..offset-1.
    starts, lengths = np.concatenate(starts), np.concatenate(lengths)
    return word_counts.ChunkCounts(
        _texts_at(padded, starts[distinct_keys], lengths[distinct_keys]),
        np.arange(len(distinct_keys), dtype=np.int64),
        counts,
    )


def _padded_words(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lowercased texts -> (their words, each with a space either side, one after another (P,) uint32 code points;
    each padded word's end in it (W,) int64; each word's document (W,) int64)."""
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    text_starts = np.concatenate([[0], np.cumsum(lengths)])
    points = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), np.uint32)
    in_word = ~np.isin(points, _SPACES)
    at = np.flatnonzero(in_word)  # (characters of words,) their places in `points`
    new_word = np.ones(len(at), bool)
    new_word[1:] = at[1:] != at[:-1] + 1  # a space between them
    opens_text = np.zeros(len(points) + 1, bool)
    opens_text[text_starts[:-1]] = True
    new_word |= opens_text[at]  # texts are joined with nothing between: a word ends with its text
    word_of = np.cumsum(new_word) - 1
    word_docs = np.searchsorted(text_starts, at[new_word], side="right") - 1
    word_ends = np.cumsum(np.bincount(word_of, minlength=len(word_docs)) + 2) if len(at) else np.zeros(0, np.int64)
    padded = np.full(len(at) + 2 * len(word_docs), _SPACE, np.uint32)
    padded[np.arange(len(at)) + 2 * word_of + 1] = points[at]
    return padded, word_ends.astype(np.int64), word_docs.astype(np.int64)


def _texts_at(points: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """The strings points[s:s + n] for each (s, n), as a large_string array, built from their UTF-8 bytes."""
    total = int(lengths.sum())
    ends = np.cumsum(lengths)
    take = np.arange(total) - np.repeat(ends - lengths, lengths) + np.repeat(starts, lengths)
    chosen = points[take]
    utf8_sizes = 1 + (chosen >= 0x80) + (chosen >= 0x800) + (chosen >= 0x10000).astype(np.int64)
    offsets = np.zeros(len(starts) + 1, np.int64)
    if total:
        offsets[1:] = np.cumsum(utf8_sizes)[ends - 1]
    data = chosen.tobytes().decode("utf-32-le", "surrogatepass").encode("utf-8", "surrogatepass")
    return pa.Array.from_buffers(pa.large_string(), len(starts), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


class CharCounter:
    """CountVectorizer(vocabulary=terms, analyzer="char_wb", ngram_range).transform: raw counts of the given
    character n-grams, (documents, len(terms)) CSR float32, columns in the terms' order."""

    def __init__(self, terms: Sequence[str], ngram_range: tuple[int, int]):
        self.terms = list(terms)
        self.ngram_range = tuple(ngram_range)
        self._vocabulary = pa.array(self.terms, pa.large_string())
        self._columns: dict[str, int] | None = None  # term -> column, for small inputs (built on first use)

    def transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        texts = list(texts)
        if sum(map(len, texts)) < SMALL_INPUT_CHARACTERS:
            return self._small_transform(texts)
        found = count_chunk(texts, self.ngram_range)
        column = pc.index_in(found.words, value_set=self._vocabulary).fill_null(-1).to_numpy(zero_copy_only=False)
        counts = word_counts.move_columns(found.counts, column.astype(np.int64), len(self.terms))
        counts.sort_indices()
        return counts

    def _small_transform(self, texts: list[str]) -> sp.csr_matrix:
        if self._columns is None:
            self._columns = {term: column for column, term in enumerate(self.terms)}
        columns, values, indptr = [], [], [0]
        for text in texts:
            for term, count in Counter(_small_ngrams(text.lower(), *self.ngram_range)).items():
                column = self._columns.get(term)
                if column is not None:
                    columns.append(column)
                    values.append(count)
            indptr.append(len(columns))
        counts = sp.csr_matrix(
            (np.array(values, np.float32), np.array(columns, np.int32), np.array(indptr, np.int64)),
            shape=(len(texts), len(self.terms)),
        )
        counts.sort_indices()
        return counts

    def __getstate__(self) -> dict:  # to workers without the lookup (rebuilt there if needed)
        return {**self.__dict__, "_columns": None}


def _small_ngrams(text: str, low: int, high: int) -> list[str]:
    """A lowercased text's char_wb n-grams, as scikit-learn's analyzer lists them (_char_wb_ngrams)."""
    ngrams = []
    for word in _RUNS_OF_SPACES.sub(" ", text).split():
        word = " " + word + " "
        for n in range(low, high + 1):
            offset = 0
            ngrams.append(word[offset : offset + n])
            while offset + n < len(word):
                offset += 1
                ngrams.append(word[offset : offset + n])
            if offset == 0:  # a word shorter than n: counted once
                break
    return ngrams
