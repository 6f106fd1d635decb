"""The model search's choice kept by what decides it, so that training the same documents again with the same
settings on the same device takes the recorded choice instead of searching again.

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

from textclf.settings import Settings
from textclf.training.search import SearchRules
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
