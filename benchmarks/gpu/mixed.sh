#!/usr/bin/env bash
# A linear model beside the network on the GPU machine (repository root; OUT: where logs go): the family trial's
# tests on the GPU, then the rule that admits it (SearchRules.mixed_errors) judged on set-aside training documents
# of the twelve corpora (benchmarks/accuracy/nested_rule.py: never against the rule's value; the test files unread).
# Needs .devgpu/ (as benchmarks/gpu/data.sh and english.sh) and .whl/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-mixed}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh
source benchmarks/gpu/english_data.sh
english_corpora /tmp/data
[ "${SKIP_TESTS:-}" ] || timeout ${TEST_TIMEOUT:-150} python3 -m pytest -q -p no:cacheprovider \
  tests/textclf/training/search/test_family.py 2>&1 | tail -3 | tee "$OUT/tests.log"
CORPORA=${CORPORA:-trec r8 mr webkb news4 agnews7600 sst2 cr subj mpqa sst5 news20}
timeout ${RULE_TIMEOUT:-420} python3 -m benchmarks.accuracy.nested_rule $(for c in $CORPORA; do echo /tmp/data/$c/train.jsonl; done) \
  --rule mixed_errors --values ${VALUES:-1000000,0} --seeds ${SEEDS:-0} 2>&1 | grep -v -i warning | tee "$OUT/rule.log"
