"""The search's typed records (textclf/training/search/summary.py) and the one rule for whether a corpus is
searched (prepare.why_not_searched)."""

import json

import pytest
from hypothesis import given, strategies as st

from textclf.settings import Settings
from textclf.training.search.prepare import SEVERAL_PROCESSES, why_not_searched
from textclf.training.search.rules import SearchRules
from textclf.training.search.summary import (
    BatchForAll,
    FamilySummary,
    KeptDefaults,
    NetworksSummary,
    RateChoice,
    SearchSummary,
)

RULES = SearchRules()
LABELS = ["a", "b", "c"] * 40


def test_a_summary_records_the_fields_that_apply_and_reads_back_the_same():
    summary = SearchSummary(
        platform="gpu",
        budget_steps=2_000_000,
        rounds=13,
        rounds_planned=13,
        folds=3,
        best_accuracy=0.9689,
        chosen={"stop_words": "english", "epochs": 3},
        kept_defaults=KeptDefaults({"stop_words": None}, 0.97),
        batch_for_all=BatchForAll(64, 256, 90_000, 4096),
        ensemble=NetworksSummary(5, char_ngrams=False, single_accuracy=0.96, folds=3),
        family=FamilySummary("network", linear_not_tried="label sets"),
        leaderboard=[{"settings": {"learning_rate": 0.01}, "accuracy": 0.97}],
    )
    record = summary.to_record()
    assert "budget_s" not in record and "skipped" not in record  # None: left out, as JSON has no field for it
    assert record["ensemble"] == {"members": 5, "char_ngrams": False, "single_accuracy": 0.96, "folds": 3}
    assert record["batch_for_all"] == {"sample": 64, "all": 256, "documents": 90_000, "epoch_steps": 4096}
    assert SearchSummary.from_record(json.loads(json.dumps(record))) == summary
    assert summary.searched and not SearchSummary.skip("--search off").searched


def test_a_record_of_another_version_reads_without_the_keys_this_one_does_not_know():
    read = SearchSummary.from_record({"rounds": 3, "race": {"kept": 2}, "family": {"chosen": "linear", "old": 1}})
    assert read.rounds == 3 and read.family == FamilySummary("linear")


@given(st.lists(st.lists(st.floats(0, 1), min_size=1, max_size=4), min_size=1, max_size=3), st.booleans())
def test_a_rate_choice_survives_its_json(curves, refit):
    choice = RateChoice(
        [{"learning_rate": 0.01, "weight_decay": 0.0, "epochs": 3}] * len(curves),
        0,
        curves,
        held_out_documents=120 if refit else None,
        refit=refit or None,
    )
    assert RateChoice.from_record(json.loads(json.dumps(choice.to_record()))) == choice


@pytest.mark.parametrize(
    "settings, labels, processes, reason",
    [
        (Settings(), LABELS, 2, SEVERAL_PROCESSES),
        (Settings(search="off"), LABELS, 1, "--search off"),
        (Settings(vectorizer="hashing"), LABELS, 1, "the search chooses tfidf settings only"),
        (Settings(), LABELS[:59], 1, "fewer than 60 training documents"),
        (Settings(), [str(n) for n in range(100)], 1, "fewer than 3 documents in every class"),
        (Settings(), LABELS, 1, None),
    ],
)
def test_one_rule_says_whether_a_corpus_is_searched_and_why_not(settings, labels, processes, reason):
    assert why_not_searched(settings, labels, "gpu", RULES, processes) == reason


def test_a_corpus_whose_every_searched_setting_is_typed_is_not_searched():
    fields = dict(
        stop_words="english",
        ngram_max=1,
        nb_weighting=False,
        sublinear_tf=False,
        batch_size=64,
        learning_rate=0.01,
        weight_decay=0.0,
        epochs=5,
        ensemble=1,
    )
    typed = Settings(**fields, pinned=tuple(fields))
    assert why_not_searched(typed, LABELS, "cpu", RULES) == "every searched setting was set explicitly"
    assert (
        why_not_searched(typed.replace(pinned=tuple(f for f in fields if f != "epochs")), LABELS, "cpu", RULES) is None
    )
