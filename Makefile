# Two entry points (see README): `make demo` and `make test`. Both set up .venv first.
.PHONY: setup demo test bench-accuracy

setup:
	@scripts/bootstrap.sh

# Train on the shipped sample corpus, classify two example files, show the run history.
demo: setup
	.venv/bin/textclf train textclf/sample_corpus
	.venv/bin/textclf predict examples/match_report.txt examples/recipe.txt
	.venv/bin/textclf runs list --limit 5

# --durations: the slowest tests named at the end of every run, where the suite's time goes.
test: setup
	.venv/bin/python -m pytest -q -n auto --durations=15

# news4 and agnews7600 accuracy (needs ../shared/data); see BENCHMARKS.md.
bench-accuracy: setup
	scripts/bench_accuracy.sh
