# Two entry points (see README): `make demo` and `make test`. Both set up .venv first.
.PHONY: setup lock demo test bench-accuracy

setup:
	@scripts/bootstrap.sh

# Re-resolve every dependency of pyproject.toml (with the dev extras) into requirements-dev.lock, pinned with hashes,
# for every platform; `make setup` installs exactly that. Run after changing a dependency, and commit both files.
lock: setup
	.venv/bin/uv pip compile pyproject.toml --extra dev --generate-hashes --universal --python-version 3.12 \
		-o requirements-dev.lock --quiet

# Train on the shipped sample corpus, classify two example files, show the run history.
demo: setup
	.venv/bin/textclf train textclf/sample_corpus
	.venv/bin/textclf predict examples/match_report.txt examples/recipe.txt
	.venv/bin/textclf runs list --limit 5

# ruff: the lint rules and the format pyproject.toml configures (`.venv/bin/ruff format .` writes it); --durations: the
# slowest tests named at the end of every run, where the suite's time goes.
test: setup
	.venv/bin/ruff check --quiet .
	.venv/bin/ruff format --check --quiet .
	.venv/bin/python -m pytest -q -n auto --dist worksteal --durations=15

# news4 and agnews7600 accuracy (needs ../shared/data); see BENCHMARKS.md.
bench-accuracy: setup
	scripts/bench_accuracy.sh
