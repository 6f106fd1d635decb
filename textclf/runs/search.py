"""The run's model search: run on the training documents (run_search; its host work started while JAX starts,
_search_ahead), or its choice taken where it was recorded for the same documents, settings and device (search_key),
so that training the same documents again takes the recorded choice instead of searching again.

Why: a search costs most of a run (news4 on one H100: ~20 of ~30 s end to end; on a 2-core CPU its 30 s budget),
and a user often trains the same corpus again with nothing the search reads changed: another --out or --test, a
daemon job resubmitted, a run after a crash. The key covers everything the search's choice depends on; anything
else that differs (a new corpus fingerprint, a typed option, another search seed, device, library version or search
format) searches anew. The model's seed is not part of it where a test corpus is given: the search runs with its
own (Settings.search_seed), so another seed trains on the recorded choice; without one, the seed splits off the
validation documents, and so decides which documents the search sees. `--search fresh` searches anew whatever is
recorded (and records its own choice).
A search bounded by its time budget can end after more or fewer rounds on a busier machine; the recorded choice
is the one a search on this device made, and the run says which run's search it reuses (search.reused_from).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

from typing import Callable

import numpy as np

from db import runs as run_queries
from pipelines.workers import WorkerPool, return_freed_memory
from textclf.runs.context import RunContext
from textclf.runs.results import TrainEvent
from textclf.settings import Settings
from textclf.training import expected_platform
from textclf.training.search import SearchRules, SearchSummary, why_not_searched
from textclf.versions import versions


def search_key(
    fingerprint: str,
    validation_split: bool,
    settings: Settings,
    device: str,
    search_format: int,
    rules: SearchRules = SearchRules(),
) -> str:
    """sha256 of what the search's choice depends on. fingerprint: the training corpus's
    (pipelines.corpus); validation_split: whether its documents are split into training and validation (no
    --test: which documents the search sees then follows from the seed and validation_fraction in settings; with
    a test corpus the seed is left out: the search runs with settings.search_seed);
    settings: the run's settings before the search ("fresh" counts as "auto"); device: the run's device as
    recorded (kind and count); search_format: textclf.training.search.SEARCH_FORMAT; rules: the search's rules
    (a benchmark's variant does not reuse the defaults' choice)."""
    material = {
        "fingerprint": fingerprint,
        "validation_split": validation_split,
        "settings": settings.replace(search="auto", seed=settings.seed if validation_split else 0).to_dict(),
        "device": device,
        "versions": versions(),
        "search_format": search_format,
    }
    if rules != SearchRules():
        material["rules"] = dataclasses.asdict(rules)
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def run_search(
    run: RunContext,
    texts,
    labels,
    settings,
    workers: Callable[[], WorkerPool],
    fingerprint: str,
    validation_split: bool,
    weights: np.ndarray | None = None,
) -> tuple[Settings, SearchSummary, str | None]:
    """Whether the training documents are searched, decided here once on the search's own settings
    (searched_settings, why_not_searched); then the model search run on them, or the choice taken that was recorded
    for the same documents, settings and device (search_key; not with --search fresh); its trials and choice
    recorded. texts(rows): the training texts of these rows (None: all), indexed by row, and workers(): the
    vectorizing workers, called only if the search runs. -> (the chosen settings, the search's summary with its
    leaderboard (what the run records: a later update of it, the rate choice's, keeps the leaderboard) or why it did
    not run, the key its choice is recorded under)."""
    searching = searched_settings(settings)
    skipped = why_not_searched(searching, labels, expected_platform(), run.rules)
    if skipped is not None:
        return settings, SearchSummary.skip(skipped), None
    found = _searched(run, texts, labels, settings, searching, workers(), fingerprint, validation_split, weights)
    return_freed_memory()  # the search's sample texts and matrices: ~0.8 GB at a million documents
    return found


def _searched(
    run: RunContext,
    texts,
    labels,
    settings: Settings,
    searching: Settings,
    pool: WorkerPool,
    fingerprint: str,
    validation_split: bool,
    weights: np.ndarray | None,
) -> tuple[Settings, SearchSummary, str | None]:
    # Nine arguments: run_search's, with the search's own settings (its seed) beside the model's: the recorded choice
    # is keyed by the one (with the fingerprint and the split), searched with the other.
    """run_search's search, or the recorded choice."""
    db, run_id, phase, warmup, report = run.db, run.run_id, run.phase, run.warmup, run.report
    ahead = _search_ahead(run, texts, labels, searching, pool, weights)
    with phase("warmup"):
        run.backend_ready()
    import jax  # after the warm-up thread's import

    from textclf.training.search import SEARCH_FORMAT, search_settings, searched_rows

    def on_round(done: int, total: int) -> None:
        report(TrainEvent("search", done=done, total=total))

    key = search_key(fingerprint, validation_split, settings, warmup.result()[1], SEARCH_FORMAT, run.rules)
    recorded = run_queries.find_search(db, key) if settings.search == "auto" else None
    if recorded:
        summary = SearchSummary.from_record(recorded["summary"])
        summary.reused_from, summary.leaderboard = recorded["run_id"], summary.leaderboard or []
        chosen = Settings.from_dict({**recorded["settings"], "search": settings.search, "seed": settings.seed})
        run.record(search=summary.to_record(), settings=chosen.to_dict())
        return chosen, summary, key
    with phase("search"):
        platform = jax.default_backend()
        prepared = ahead if ahead is not None and ahead.platform == platform else None
        searched = [] if prepared else texts(searched_rows(labels, searching, platform, run.rules))
        result = search_settings(
            searched, list(labels), searching, pool, platform, on_round, run.rules, prepared, weights
        )
    if result.trials:
        run_queries.add_search_trials(db, run_id, result.trials)
    summary = result.summary
    summary.leaderboard = result.leaderboard[:10]
    chosen = result.settings.replace(seed=settings.seed)  # the model's seed, not the search's
    run.record(search=summary.to_record(), settings=chosen.to_dict())
    if not summary.searched:
        return chosen, summary, None
    run_queries.save_search(db, key, run_id, chosen.to_dict(), summary.to_record())
    return chosen, summary, key


def searched_settings(settings: Settings) -> Settings:
    """The settings the search runs with: its own seed (Settings.search_seed) in place of the model's, so that runs
    that differ only in their seed search alike."""
    return settings.replace(seed=settings.search_seed)


def _search_ahead(run: RunContext, texts, labels, settings: Settings, pool, weights: np.ndarray | None = None):
    """The search's host work (tokenising, folds, the first rounds' matrices: search.prepare_search) for the
    platform JAX is expected on, done while JAX starts in its thread: only in a process where JAX had not started
    (the daemon's and a second fit's warm-up is over at once). Its own phase, "search_ahead". A search recorded for
    these documents is found only once JAX has started (the device is part of its key): reusing it, this work is
    dropped (time the warm-up mostly took anyway). -> the work, or None."""
    if not run.warmup.cold:
        return None
    from textclf.training.search import prepare_search, searched_rows

    platform = expected_platform()
    with run.phase("search_ahead"):
        return prepare_search(
            texts(searched_rows(labels, settings, platform, run.rules)),
            list(labels),
            settings,
            pool,
            platform,
            run.rules,
            weights,
        )
