#!/usr/bin/env bash
# Model search on the GPU machine (repository root; OUT: where logs go): the search's and the K-model step's
# tests on the GPU, then `textclf bench` on the five corpora with textclf's defaults (search on; textclf-xla: what
# auto trains with on a GPU, textclf/training/backends.py) and the peers.
# Needs .devgpu/ (news20 train/test JSONL gzipped, agnews7600/, trec/, mr/ folders) and .whl/ (sqlite-utils,
# sqlite-fts4, click-default-group, fasttext-wheel) carried.
set -uo pipefail
OUT=${OUT:-build/gpu-search}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh
wc -l /tmp/data/*/*.jsonl | tee "$OUT/search.log"
[ "${SKIP_TESTS:-}" ] || python3 -m pytest -q -x -p no:cacheprovider tests/textclf/training/search/test_halving.py 2>&1 | tail -3 | tee -a "$OUT/search.log"
timeout ${BENCH_TIMEOUT:-540} python3 -m textclf bench ${TASKS:-news4 agnews7600 news20 trec mr} --data /tmp/data \
  --out "$OUT/bench.md" --tools ${TOOLS:-textclf-xla,fasttext,sklearn-sgd,sklearn-svm,sklearn-cnb} 2>&1 \
  | grep -v -i warning | tee -a "$OUT/search.log"
# The runs database (every trial of every search: `textclf runs show ID --db runs.db` prints a leaderboard).
find "$TEXTCLF_HOME" -name '*.db' -exec cp {} "$OUT/" \; 2>/dev/null || true
