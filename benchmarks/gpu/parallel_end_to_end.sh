#!/usr/bin/env bash
# --parallel auto end to end on a 2-GPU machine (repository root): the 1M synthetic corpus (benchmarks/gpu/data.sh)
# trained by `textclf train` at a typed batch of 4,096, search off, on one GPU (--devices 1) and with the plan's
# own choice (W1 split over both GPUs), each in a fresh data dir, timed whole (benchmarks/timed_run.py); then each
# run's plan and test accuracy.
set -uo pipefail
source benchmarks/gpu/data.sh
nvidia-smi -L
synthetic_corpus /tmp/syn 1000000
for devices in 1 auto; do
  option=$([ "$devices" = 1 ] && echo "--devices 1" || true)
  export TEXTCLF_HOME=/tmp/home-$devices
  python3 -m benchmarks.timed_run --label "devices $devices" --lines 1 -- python3 -m textclf train /tmp/syn/train.jsonl \
    --test /tmp/syn/test.jsonl --search off --batch-size ${BATCH:-4096} $option
  python3 -m textclf runs show 1 | grep -E "^(views|networks|rows|phases)"
done
