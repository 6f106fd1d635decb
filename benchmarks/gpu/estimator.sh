#!/usr/bin/env bash
# The estimator beside `textclf train` on the GPU machine (repository root): the estimator's tests on the GPU, then
# benchmarks/accuracy/estimator_parity.py on trec, mr and news4. Needs .devgpu/ and .whl/ carried (benchmarks/gpu/data.sh).
set -uo pipefail
source benchmarks/gpu/data.sh
python3 -m pytest -q -x -p no:cacheprovider tests/textclf/test_estimator.py 2>&1 | tail -2
timeout ${BENCH_TIMEOUT:-300} python3 -m benchmarks.accuracy.estimator_parity /tmp/data --corpora ${TASKS:-trec,mr,news4} 2>&1 \
  | grep "^|"
