#!/usr/bin/env bash
# The linear models' loss on the GPU machine (repository root; OUT: where logs go): the family tests on the GPU, then
# Settings.linear_loss judged on set-aside training documents of the twelve corpora (benchmarks/accuracy/
# nested_rule.py, the test files unread), each value in its own process side by side.
# Needs .devgpu/ (as benchmarks/gpu/data.sh and english.sh) and .whl/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-linear-loss}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh
source benchmarks/gpu/english_data.sh
english_corpora /tmp/data
[ "${SKIP_TESTS:-}" ] || timeout ${TEST_TIMEOUT:-150} python3 -m pytest -q -p no:cacheprovider \
  tests/textclf/training/test_search_family.py tests/textclf/training/test_stacked_step.py 2>&1 | tail -3 \
  | tee "$OUT/tests.log"
CORPORA=${CORPORA:-r8 webkb trec mr news4 agnews7600 sst2 cr subj mpqa sst5 news20}
for value in ${VALUES:-log squared_hinge}; do
  timeout ${RULE_TIMEOUT:-420} python3 -m benchmarks.accuracy.nested_rule \
    $(for c in $CORPORA; do echo /tmp/data/$c/train.jsonl; done) --setting linear_loss --values $value \
    --seeds ${SEEDS:-0} 2>&1 | grep "^|" > "$OUT/$value.log" &
done
wait
cat "$OUT"/*.log | sort | cut -c1-260
