#!/usr/bin/env bash
# Speed issue, third round (repository root; OUT: where logs go): submit-to-model latency through a warm
# daemon (news4); the 1,000,000-document synthetic corpus trained end to end by `textclf train` (hashing
# vectorizer, batch 4,096) with its peak host memory; then the whole test suite on the GPU.
set -uo pipefail
OUT=${OUT:-build/gpu-scale}
mkdir -p "$OUT"
log="$OUT/scale.log"
timeout 150 python3 -m benchmarks.service.daemon_latency .devdata/news4/train.jsonl --test .devdata/news4/test.jsonl \
  --seeds 0,0,1 2>&1 | grep -v -i warning | tee "$log"
python3 -m textclf dataset synthetic .devdata/news4/train.jsonl /tmp/syn --docs 1000000 | tee -a "$log"
python3 -m benchmarks.timed_run --label "1M synthetic, textclf train --vectorizer hashing --batch-size 4096" \
  --timeout 240 --lines 2 -- python3 -m textclf train /tmp/syn/train.jsonl --test /tmp/syn/test.jsonl \
  --vectorizer hashing --batch-size 4096 2>&1 | tee -a "$log"
timeout 330 python3 -m pytest -q -rf -p no:cacheprovider 2>&1 | tail -15 | tee -a "$log"
