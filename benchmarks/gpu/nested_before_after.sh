#!/usr/bin/env bash
# No-flags training judged on set-aside training documents of the twelve corpora (benchmarks/accuracy/
# nested_rule.py, the test files unread), from .baseline (the tree before a change) and from this tree, the two side
# by side on the one GPU; one log a tree in $OUT. Needs .devgpu/ (data.sh, english_data.sh), .whl/, .baseline/.
set -uo pipefail
OUT=${OUT:-build/gpu-nested-before-after}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
source benchmarks/gpu/english_data.sh
english_corpora /tmp/data
CORPORA=${CORPORA:-trec mr news4 agnews7600 news20 r8 webkb sst2 cr subj mpqa sst5}
for v in before after; do
  dir=.; [ $v = before ] && dir=.baseline
  # min_documents at its default: a no-op rule, so both trees train with no flags
  (cd $dir && XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONPATH=/tmp/site:$PWD timeout ${RULE_TIMEOUT:-540} \
    python3 -m benchmarks.accuracy.nested_rule $(for c in $CORPORA; do echo /tmp/data/$c/train.jsonl; done) \
    --rule min_documents --values 60 --seeds ${SEEDS:-0} 2>&1 | grep "^|" > "$OUT/$v.log") &
done
wait
for v in before after; do sed "s/^/$v /" "$OUT/$v.log" | grep -v "training\|---" | cut -c1-160; done
