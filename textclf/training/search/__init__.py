"""The model search: a corpus's settings chosen by validation on its own training documents.

The front door: why_not_searched, the rule that decides whether a corpus is searched; search_settings (and
prepare_search, its host work done ahead) -> SearchResult, whose summary is a typed SearchSummary; searched_rows,
the rows it reads; stratified_sample, the split it draws; SEVERAL_PROCESSES, why several processes do not
search; SearchRules, its rules as data; SEARCH_FORMAT, the version of its choices (a recorded choice of
another format is not reused). Inside: prepare.py (the host work, JAX-free: a run does it while JAX starts),
halving.py (the portfolio's rounds by successive halving and the choice), rounds.py (one fold's round, as
every part cuts it),
folds.py (candidates, folds, budget and the records the rounds share), networks.py (the ensemble and character
trial), family.py (the linear family's trial), rules.py, summary.py (the typed records), portfolio.json
(benchmarks/search/portfolio.py rebuilds it).

The names load on first use: importing the package (or its rules, which the plan reads) must not import JAX,
which would keep a run from forking its vectorizing workers (pipelines/workers.py).
"""

import importlib

_HOMES = {
    "SEARCH_FORMAT": "halving",
    "Prepared": "prepare",
    "SearchResult": "halving",
    "prepare_search": "prepare",
    "search_curves": "halving",
    "search_settings": "halving",
    "searched_rows": "folds",
    "SearchRules": "rules",
    "SearchSummary": "summary",
    "RateChoice": "summary",
    "why_not_searched": "prepare",
    "SEVERAL_PROCESSES": "prepare",
    "stratified_sample": "folds",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
