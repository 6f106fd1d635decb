#!/usr/bin/env bash
# The one engine on the GPU machine (repository root; OUT: where logs go): the search's, the plan's and the
# estimator's tests on the GPU, then benchmarks/gpu/budget.sh (this tree beside .baseline/ on the five corpora).
set -uo pipefail
OUT=${OUT:-build/gpu-engine}
mkdir -p "$OUT"
source benchmarks/gpu/site.sh
python3 -m pytest -q -x -p no:cacheprovider tests/textclf/training/search/test_halving.py tests/textclf/training/test_plan.py \
  tests/textclf/test_estimator.py 2>&1 | tail -4 | tee "$OUT/tests.log"
OUT=$OUT bash benchmarks/gpu/budget.sh
