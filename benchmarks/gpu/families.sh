#!/usr/bin/env bash
# The linear family on the GPU machine (repository root; OUT: where logs go): its tests on the GPU, then `textclf
# bench` with the peers on the seven English corpora beyond ../shared (benchmarks/gpu/english.sh's files).
# Needs .devgpu/english/ and .whl/ (sqlite-utils and fasttext-wheel) carried.
set -uo pipefail
OUT=${OUT:-build/gpu-families}
mkdir -p "$OUT"
source benchmarks/gpu/site.sh
timeout ${TEST_TIMEOUT:-200} python3 -m pytest -q -p no:cacheprovider tests/textclf/training/search/test_family.py \
  tests/textclf/models/test_cnn.py 2>&1 | tail -5 | tee "$OUT/tests.log"
BENCH_TIMEOUT=${BENCH_TIMEOUT:-330} bash benchmarks/gpu/english.sh
