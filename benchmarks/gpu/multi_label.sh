#!/usr/bin/env bash
# Multi-label on the GPU machine (repository root; OUT: where logs go): the sigmoid/BCE kernel's and the multi-label
# tests, the K-network step's tests, then Reuters-21578 (ModApte, from benchmarks/corpora/reuters.py, carried gzipped in
# .devgpu/reuters) trained by `textclf train` with each backend, and the peers beside it (benchmarks/accuracy/multi_label.py).
set -uo pipefail
OUT=${OUT:-build/gpu-multi-label}
STAGE=${STAGE:-all}
mkdir -p "$OUT"
source benchmarks/gpu/site.sh
[ -d .whlserve ] && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whlserve/*.whl
if [ "$STAGE" = tests ] || [ "$STAGE" = all ]; then
  python3 -m pytest -q -x -p no:cacheprovider tests/pallas_kernels/test_sigmoid_bce.py tests/textclf/test_multi_label.py \
    tests/textclf/training/test_loop.py tests/textclf/training/test_device_data.py 2>&1 | tail -5 | tee "$OUT/tests.log"
  python3 -m pytest -q -x -p no:cacheprovider tests/textclf/training/search/test_halving.py -k "stacked or epoch or fused or \
ensemble or rates or candidates or scoring or precompiled" 2>&1 | tail -5 | tee "$OUT/tests_stacked.log"
fi
if [ "$STAGE" = reuters ] || [ "$STAGE" = all ]; then
  mkdir -p /tmp/reuters
  for part in train test; do gunzip -c .devgpu/reuters/$part.jsonl.gz > /tmp/reuters/$part.jsonl; done
  for backend in xla pallas auto; do
    for round in 1 2; do
      export TEXTCLF_HOME=/tmp/home-$backend-$round
      start=$(date +%s%N)
      python3 -m textclf train /tmp/reuters/train.jsonl --test /tmp/reuters/test.jsonl --backend $backend \
        --out /tmp/m-$backend.npz 2>&1 | tail -2 | tee -a "$OUT/reuters_$backend.log"
      echo "backend $backend round $round wall $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$OUT/reuters.log"
    done
  done
  unset TEXTCLF_HOME
  python3 -m benchmarks.accuracy.multi_label /tmp/reuters/train.jsonl /tmp/reuters/test.jsonl --seeds 0 \
    --peers linearsvc,logreg 2>&1 | grep "^|" | tee "$OUT/peers.log"
fi
