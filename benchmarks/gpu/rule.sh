#!/usr/bin/env bash
# A rule of the model search (RULE: a SearchRules field, or several comma-separated) or a Settings default (SETTING)
# judged on set-aside training documents of the twelve corpora on the GPU machine (benchmarks/accuracy/
# nested_rule.py; the test files unread), each value in its own process side by side (repository root; OUT: where
# logs go; VALUES: space-separated, each as nested_rule's --values takes one). Needs .devgpu/ (as
# benchmarks/gpu/data.sh and english.sh) and .whl/.
set -uo pipefail
OUT=${OUT:-build/gpu-rule}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
source benchmarks/gpu/english_data.sh
english_corpora /tmp/data
if [ "${SETTING:-}" ]; then judged="--setting $SETTING"; else judged="--rule $RULE"; fi
CORPORA=${CORPORA:-trec mr news4 agnews7600 news20 r8 webkb sst2 cr subj mpqa sst5}
for value in $VALUES; do
  timeout ${RULE_TIMEOUT:-420} python3 -m benchmarks.accuracy.nested_rule \
    $(for c in $CORPORA; do echo /tmp/data/$c/train.jsonl; done) $judged --values $value \
    --seeds ${SEEDS:-0} 2>&1 | grep "^|" > "$OUT/$(echo $value | tr '/:' '__').log" &
done
wait
cat "$OUT"/*.log | grep -v "^| training\|^|---" | sort | cut -c1-220
