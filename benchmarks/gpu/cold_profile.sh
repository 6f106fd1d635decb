#!/usr/bin/env bash
# Cold `textclf train` with no flags, --profile, each corpus in a fresh data dir (no compilation cache, no recorded
# search), then fastText and ComplementNB on the same files in the same call (repository root; OUT: where logs go).
# Needs .devgpu/ and .whl/ (sqlite-utils, fasttext-wheel) carried.
set -uo pipefail
OUT=${OUT:-build/gpu-cold-profile}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh
for name in ${TASKS:-news4 trec mr agnews7600 news20}; do
  start=$(date +%s.%N)
  TEXTCLF_HOME=/tmp/cold-$name python3 -m textclf train /tmp/data/$name/train.jsonl --test /tmp/data/$name/test.jsonl \
    --profile 2>&1 | grep -v -i warning | grep "profile\|accuracy" | sed "s/^/$name  /" | tee -a "$OUT/cold.log"
  python3 -c "import time, sys; print(f'$name  wall {time.time() - float(sys.argv[1]):.2f} s (date before and after)')" \
    "$start" | tee -a "$OUT/cold.log"
done
TEXTCLF_HOME=/tmp/cold-peers timeout ${BENCH_TIMEOUT:-200} python3 -m textclf bench ${TASKS:-news4 trec mr agnews7600 news20} \
  --data /tmp/data --tools fasttext,sklearn-cnb 2>&1 | grep -v -i warning | grep "^|" | tee -a "$OUT/cold.log"
