#!/usr/bin/env bash
# W1 split by feature rows vs data parallelism on 1 and 2 GPUs (run on a 2-GPU machine from the repository root).
# 1. 1 vs 2 GPU parameters after the same global batches (tests/textclf/training/parallel_worker.py, both layouts);
# 2. training throughput at global batch 8,192 and 16,384 on news4 rows x 100 and on the 1M synthetic corpus
#    (benchmarks/speed/multi_gpu.py), every layout and device count in one process each.
set -uo pipefail
source benchmarks/gpu/data.sh
nvidia-smi -L
python3 tests/textclf/training/parallel_worker.py xla:adam,xla-features:adam,features-pieces:adam 2>&1 | tail -1
timeout 200 python3 -m benchmarks.speed.multi_gpu /tmp/data/news4/train.jsonl --vectorizer tfidf --repeat 100 \
  --devices 1,2 --batches 8192,16384 --backends xla,xla-features --epochs 3 2>&1 | grep -v -i warning
if [ -z "${SKIP_SYNTHETIC:-}" ]; then
  python3 -m textclf dataset synthetic /tmp/data/news4/train.jsonl /tmp/syn --docs 1000000 2>&1 | tail -1
  timeout 300 python3 -m benchmarks.speed.multi_gpu /tmp/syn/train.jsonl --devices 1,2 --batches 16384 \
    --backends xla,xla-features --epochs 3 2>&1 | grep -v -i warning
fi
