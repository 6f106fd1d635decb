#!/usr/bin/env bash
# The cold-start measurements of "A small corpus in seconds" in one call (repository root; OUT: where logs go):
# cold_before_after.sh (this tree against .baseline, each corpus in a fresh data dir), fastText and ComplementNB on
# the same files, then where this tree's search spends its seconds (search_parts.sh). Needs .devgpu/, .whl/ and
# .baseline/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-cold-latency}
mkdir -p "$OUT"
OUT=$OUT bash benchmarks/gpu/cold_before_after.sh
source benchmarks/gpu/data.sh >/dev/null 2>&1
TEXTCLF_HOME=/tmp/cold-peers timeout ${BENCH_TIMEOUT:-200} python3 -m textclf bench ${TASKS:-news4 trec mr agnews7600 news20} \
  --data /tmp/data --tools fasttext,sklearn-cnb 2>&1 | grep -v -i warning | grep "^|" | tee -a "$OUT/peers.log"
OUT=$OUT bash benchmarks/gpu/search_parts.sh
