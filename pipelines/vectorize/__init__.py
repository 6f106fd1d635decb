"""scikit-learn bag of words -> L2-normalised sublinear TF-IDF rows (scipy CSR, float32), in rooms: vectorizer.py
(the Vectorizer a model keeps, and its transforms), fit.py (fitting one), shared.py (fitting one across several
processes), terms.py (counting terms and characters), selection.py (chi-squared and naive Bayes columns),
weights.py (IDF and row weighting), chunks.py (cutting the documents for the worker processes). The names below
are the package's API.

Two kinds, both saved as plain arrays (never pickled):
- "tfidf": CountVectorizer over the training corpus (min_df, stop words, n-grams), then the `features` terms
  that a chi-squared test finds most tied to the labels (or the most frequent ones). Saved: the terms.
  (Tried and dropped: filling the columns a small vocabulary leaves spare with character 2-5-grams lifted
  TF-IDF + SGD on agnews7600 from 0.891 to 0.901 but cost this MLP 1.5 points, 0.893 -> 0.878; a network of
  their own beside the words', the character view below, is another matter.)
- "hashing": HashingVectorizer into `features` buckets; nothing to fit but the IDF. Saved: nothing but IDF.
At prediction time the same CountVectorizer/HashingVectorizer is rebuilt from the saved terms and settings.
A "tfidf" vectorizer may carry a second view (`chars`, when the settings ask for character n-grams): character
2-5-grams within word boundaries, selected and weighted the same way, whose columns follow the words' (each view's
rows normalised on their own), so that a model can hold one network per view (textclf/models/stacked.py,
joined_views).

Word unigrams and bigrams are tokenised and counted in compiled code (pipelines/word_counts.py: the same terms and
counts as CountVectorizer; a whole file's transform in 0.36-0.38x its time, benchmarks/vectorizing/transform_latency),
and so are
the character view's n-grams (pipelines/char_counts.py); word trigrams and "hashing" go through scikit-learn's own
analyzers (_count_chunk).
Corpora of PARALLEL_MIN_DOCS documents or more are counted on all CPU cores (pipelines/workers.py: forked
workers when that is safe): the documents are cut into contiguous chunks, each chunk is counted in a worker
process, and the chunk vocabularies are merged (union, min_df, the kept terms sorted, columns remapped), which
gives exactly the matrix one CountVectorizer would; "hashing" needs no merge. Smaller corpora are counted in this
process (starting workers would cost more than they save).
"""

from pipelines.vectorize.chunks import vectorize_pool  # noqa: F401
from pipelines.vectorize.fit import FIT_DOCUMENTS, fit_rows, fit_vectorizer  # noqa: F401
from pipelines.vectorize.selection import (  # noqa: F401
    chi2_scores,
    most_tied_columns,
    nb_ratios,
    select_and_weigh,
    weigh_counts,
)
from pipelines.vectorize.shared import Exchange, fit_vectorizer_shared  # noqa: F401
from pipelines.vectorize.terms import (  # noqa: F401
    CHAR_ANALYZER,
    CHAR_NGRAM_RANGE,
    START_TOKEN,
    StartMarkedWords,
    WordSettings,
    count_chars,
    count_terms,
    hashing_counter,
    term_mask,
    term_masks,
    word_counter_params,
)
from pipelines.vectorize.vectorizer import Vectorizer, fit_hashing_idf  # noqa: F401
