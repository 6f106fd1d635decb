#!/usr/bin/env bash
# The linear models' loss on the GPU machine (repository root; OUT: where logs go): the family tests on the GPU, then
# Settings.linear_loss judged on set-aside training documents of the twelve corpora through rule.sh (each value in
# its own process side by side). Needs .devgpu/ (as benchmarks/gpu/data.sh and english.sh) and .whl/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-linear-loss}
mkdir -p "$OUT"
source benchmarks/gpu/site.sh
[ "${SKIP_TESTS:-}" ] || timeout ${TEST_TIMEOUT:-150} python3 -m pytest -q -p no:cacheprovider \
  tests/textclf/training/search/test_family.py tests/textclf/training/steps/test_stacked.py 2>&1 | tail -3 \
  | tee "$OUT/tests.log"
OUT=$OUT SETTING=linear_loss VALUES=${VALUES:-"log squared_hinge"} bash benchmarks/gpu/rule.sh
