"""The training plan (textclf/training/plan.py): pure decisions from the settings, the search, the data's size and
the device; and `textclf train --plan-only`."""

import json

import jax
import pytest

from textclf.settings import Settings
from textclf.training.plan import (
    REFIT_HELD_OUT_FRACTION,
    Machine,
    TrainingPlan,
    draft_plan,
    held_out_count,
    plan_training,
)
from textclf.training.search.rules import SearchRules
from textclf.training.search.summary import SearchSummary

RULES = SearchRules()
GPU, CPU = Machine(1, 1, stacked_faster=True), Machine(1, 1, stacked_faster=False)
SEARCHED = SearchSummary(rounds=10)
RATES = SearchSummary(
    rounds=10,
    rate_candidates=[
        {"learning_rate": 0.01, "weight_decay": 0.0, "epochs": 4},
        {"learning_rate": 0.003, "weight_decay": 0.0, "epochs": 6},
    ],
)
BIG = RULES.search_documents + 1


def test_a_small_corpus_trains_one_network_on_every_document():
    plan = plan_training(Settings(ensemble=1), SEARCHED, 5000, (8192,), "pallas", GPU)
    assert (plan.arrangement, plan.rate_choice, plan.held_out_documents, plan.rows) == ("one", "none", 0, "host")
    assert plan.training_documents == 5000 and plan.backend == "pallas" and len(plan.views) == 1


def test_a_corpus_beyond_the_sample_holds_documents_out_and_trains_its_ensemble_in_place():
    plan = plan_training(Settings(ensemble=5), SEARCHED, BIG, (32768,), "pallas", GPU)
    assert plan.arrangement == "side_by_side" and plan.rows == "device" and plan.backend == "xla"
    assert plan.held_out_documents == held_out_count(BIG) and plan.training_documents == BIG - held_out_count(BIG)
    # where K networks one after another are faster (a CPU), the ensemble trains so, on every document
    cpu = plan_training(Settings(ensemble=5), SEARCHED, BIG, (32768,), "xla", CPU)
    assert (cpu.arrangement, cpu.held_out_documents, cpu.rows) == ("one_after_another", 0, "host")


def test_rate_candidates_are_chosen_on_held_out_documents_or_on_a_share_then_refit():
    held = plan_training(Settings(ensemble=1), RATES, BIG, (32768,), "xla", GPU)
    assert held.rate_choice == "held_out" and held.arrangement == "side_by_side" and held.rows == "device"
    assert held.rate_candidates == ((0.01, 0.0, 4), (0.003, 0.0, 6))
    refit = plan_training(Settings(ensemble=1), RATES, 9000, (32768,), "xla", CPU)
    assert refit.rate_choice == "refit" and refit.held_out_documents == 0 and refit.arrangement == "one"
    assert f"{REFIT_HELD_OUT_FRACTION:.0%} share chooses" in "\n".join(refit.lines())
    typed = plan_training(Settings(ensemble=1, pinned=("epochs",)), RATES, 9000, (32768,), "xla", CPU)
    assert typed.rate_choice == "none" and typed.rate_candidates == ()
    unsearched = plan_training(Settings(ensemble=1, search="off"), RATES, BIG, (32768,), "xla", GPU)
    assert unsearched.held_out_documents == 0  # the epochs as given


def test_a_character_view_trains_beside_the_words_with_its_own_rate_and_epochs():
    settings = Settings(
        ensemble=1, char_ngrams=True, learning_rate=0.01, epochs=5, char_learning_rate=0.003, char_epochs=9, min_steps=0
    )
    plan = plan_training(settings, SEARCHED, 5000, (8192, 8192), "xla", GPU)
    assert [(v.name, v.learning_rate, v.epochs) for v in plan.views] == [("words", 0.01, 5), ("characters", 0.003, 9)]
    assert plan.held_out_documents == 0  # a character view is never held out (small corpora only)


def test_several_processes_train_on_their_shares():
    plan = plan_training(Settings(ensemble=1), SEARCHED, 5000, (8192,), "xla", Machine(1, 2))
    assert plan.rows == "shares" and plan.processes == 2


def test_a_plan_is_frozen_and_round_trips_through_json():
    plan = plan_training(Settings(ensemble=5), RATES, BIG, (32768,), "xla", GPU)
    assert TrainingPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan
    assert plan_training(Settings(ensemble=5), RATES, BIG, (32768,), "xla", GPU) == plan  # pure


def test_train_plan_only_prints_the_plan_records_it_and_writes_no_model(tmp_path):
    from typer.testing import CliRunner

    from db import open_db, runs
    from textclf.frontends.cli import app

    from tests.textclf.training.search.test_halving import question_corpus

    texts, labels = question_corpus(200)
    corpus = tmp_path / "train.jsonl"
    corpus.write_text("".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in zip(texts, labels)))
    db_path, model = tmp_path / "runs.db", tmp_path / "m.npz"
    runner = CliRunner()
    planned = runner.invoke(
        app, ["train", str(corpus), "--db", str(db_path), "--out", str(model), "--search-steps", "800", "--plan-only"]
    )
    assert planned.exit_code == 0, planned.output
    assert "networks             1 a view, one" in planned.stdout and "planned (not trained)" in planned.stdout
    assert not model.exists()
    run = runs.get_run(open_db(db_path), 1)
    assert run["status"] == "planned" and run["plan"]["views"][0]["name"] == "words"
    shown = runner.invoke(app, ["runs", "show", "1", "--db", str(db_path)])
    assert shown.exit_code == 0 and "views                words (" in shown.stdout
    # the next train reuses the planned run's search and trains that plan
    trained = runner.invoke(
        app, ["train", str(corpus), "--db", str(db_path), "--out", str(model), "--search-steps", "800", "--json"]
    )
    assert trained.exit_code == 0, trained.output
    result = json.loads(trained.stdout)
    assert result["search"]["reused_from"] == 1 and model.exists()
    assert runs.get_run(open_db(db_path), result["run_id"])["plan"] == run["plan"]


def test_one_network_trains_on_one_gpu_unless_told_and_then_splits_w1():
    two = Machine(2)
    for batch in (64, 4096, 16384):  # a split was slower end to end at every batch measured
        plan = plan_training(Settings(ensemble=1, batch_size=batch), SEARCHED, BIG, (32768,), "pallas", two)
        assert (plan.parallel, plan.devices, plan.backend) == ("data", 1, "pallas")
    typed = plan_training(Settings(ensemble=1, batch_size=4096, devices=2), SEARCHED, BIG, (32768,), "pallas", two)
    assert (typed.parallel, typed.devices, typed.backend) == ("features", 2, "xla")
    assert "W1 split by feature rows" in "\n".join(typed.lines())
    pallas = Settings(ensemble=1, batch_size=4096, devices=2, backend="pallas")  # the kernels split the batch
    assert plan_training(pallas, SEARCHED, BIG, (32768,), "pallas", two).parallel == "data"
    features = Settings(ensemble=1, batch_size=64, parallel="features")
    split = plan_training(features, SEARCHED, 5000, (8192,), "xla", two)
    assert (split.parallel, split.devices) == ("features", 2)  # typed: every GPU
    data = Settings(ensemble=1, batch_size=16384, parallel="data")  # typed: as many as get 8,192 documents
    assert plan_training(data, SEARCHED, BIG, (32768,), "xla", two).devices == 2
    assert plan_training(data.replace(batch_size=8192), SEARCHED, BIG, (32768,), "xla", two).devices == 1
    # an ensemble side by side is one program on one device; several processes split the batch as typed
    assert plan_training(Settings(ensemble=5, devices=2), SEARCHED, BIG, (32768,), "xla", two).devices == 1
    shared = plan_training(Settings(ensemble=1), SEARCHED, 5000, (8192,), "xla", Machine(2, processes=2))
    assert (shared.parallel, shared.devices, shared.rows) == ("data", 0, "shares")


def test_a_multi_label_plan_waits_as_many_epochs_as_make_its_steps_before_stopping():
    """A few hundred label-set documents make a few steps an epoch: two epochs without a gain on their dozen
    held-out documents stopped the README's example at its second epoch. Big corpora keep two epochs."""
    from textclf.training.plan import MULTI_LABEL_PATIENCE

    small = plan_training(Settings(multi_label=True, batch_size=64), SEARCHED, 144, (4096,), "xla", CPU)
    assert small.multi_label and small.held_out_documents == 14
    assert small.patience == -(-RULES.patience_steps // 3) == 34  # 130 documents: 3 steps an epoch
    assert "after 34 epochs without a gain" in "\n".join(small.lines())
    big = plan_training(Settings(multi_label=True, batch_size=64), SEARCHED, 7769, (32768,), "xla", CPU)
    assert big.patience == MULTI_LABEL_PATIENCE  # Reuters' training documents: 110 steps an epoch
    assert TrainingPlan.from_dict(json.loads(json.dumps(small.to_dict()))) == small


def test_a_run_plans_once_and_completes_the_draft_with_its_widths_and_backend(
    tmp_path, monkeypatch, corpus_dir, fast_settings
):
    """A run drafts its plan once (draft_plan), before or after vectorizing, and completes it with the views' widths
    and the backend it chose (TrainingPlan.completed): nothing re-plans."""
    from textclf.runs import run as run_steps
    from textclf.runs import text_data
    from textclf.runs.run import train
    from textclf.training import plan as plan_module

    drafts, completed = [], []
    draft, complete = plan_module.draft_plan, TrainingPlan.completed
    for module in (run_steps, text_data):
        monkeypatch.setattr(module, "draft_plan", lambda *a, **k: drafts.append(a) or draft(*a, **k))
    monkeypatch.setattr(TrainingPlan, "completed", lambda self, *a: completed.append(a) or complete(self, *a))
    result = train(corpus_dir, fast_settings, db_path=tmp_path / "runs.db", model_path=tmp_path / "m.npz")
    assert len(drafts) == len(completed) == 1
    widths, backend, stacked_backend = completed[0]
    assert widths == (result.model.vectorizer.n_features,) and backend in ("xla", "pallas")
    assert stacked_backend in ("xla", "pallas") and (stacked_backend == "xla" or jax.default_backend() == "gpu")
    with pytest.raises(ValueError, match="2 view widths for a plan of 1 views"):
        draft(Settings(), None, 500, 1).completed((10, 20), "xla")


def test_networks_side_by_side_take_the_k_network_steps_backend_as_the_search_picks_it():
    """One rule for the K-network step: a side-by-side plan's backend is the one completed() is given (what
    training.ensembles.side_by_side_backend says, the search's StackedStep.for_batch), a single network's the
    run's, the W1-split layout XLA."""
    ensemble = draft_plan(Settings(ensemble=5), None, 5000, 1, GPU)
    assert ensemble.arrangement == "side_by_side"
    assert ensemble.completed((32754,), "xla", "pallas").backend == "pallas"
    assert ensemble.completed((32754,), "pallas", "xla").backend == "xla"
    assert draft_plan(Settings(), None, 5000, 1, GPU).completed((32754,), "pallas", "xla").backend == "pallas"
