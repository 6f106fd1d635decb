"""The model search: a corpus's settings chosen by validation on its own training documents.

The front door: search_settings (and prepare_search, its host work done ahead) -> SearchResult; searched_rows,
the rows it reads; SearchRules, its rules as data; SEARCH_FORMAT, the version of its choices (a recorded choice of
another format is not reused). Inside: halving.py (the portfolio's rounds by successive halving and the choice),
folds.py (candidates, folds, budget and the records the rounds share), networks.py (the ensemble and character
trial), family.py (the linear family's trial), rules.py, portfolio.json (benchmarks/search/portfolio.py rebuilds it).
"""

from textclf.training.search.folds import searched_rows
from textclf.training.search.halving import (SEARCH_FORMAT, Prepared, SearchResult, prepare_search, search_curves,
                                             search_settings)
from textclf.training.search.rules import SearchRules

__all__ = ["SEARCH_FORMAT", "Prepared", "SearchResult", "SearchRules", "prepare_search", "search_curves",
           "search_settings", "searched_rows"]
