#!/usr/bin/env bash
# What --parallel auto and --devices all choose from (run on a 2-GPU machine from the repository root): training
# throughput of one network at global batches 1,024 to 16,384 on news4 rows x 100, on 1 and 2 GPUs, for the
# Pallas and XLA steps (data parallel) and XLA with W1 split by feature rows (benchmarks/speed/multi_gpu.py).
set -uo pipefail
source benchmarks/gpu/data.sh
nvidia-smi -L
timeout ${BENCH_TIMEOUT:-480} python3 -m benchmarks.speed.multi_gpu /tmp/data/news4/train.jsonl --vectorizer tfidf \
  --repeat 100 --devices 1,2 --batches ${BATCHES:-1024,4096,8192,16384} --backends ${BACKENDS:-pallas,xla,xla-features} \
  --epochs 3 2>&1 | grep -v -i warning
