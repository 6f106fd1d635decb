#!/usr/bin/env bash
# A warm daemon's time to a model for corpora it has never seen (repository root; OUT: where logs go; TASKS:
# corpora in the order submitted, from /tmp/data or .devgpu/english): one daemon on a fresh data dir and compilation
# cache, each corpus submitted once (seed 0) after the one before ended (benchmarks/service/daemon_latency.py),
# from .baseline (the tree before) and from this tree. Needs .devgpu/, .whl/ and .baseline/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-daemon-corpora}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
TASKS=${TASKS:-agnews7600 mr subj sst2 trec cr mpqa news4}
for name in $TASKS; do
  if [ -f .devgpu/english/$name-train.jsonl.gz ]; then
    mkdir -p /tmp/data/$name
    for split in train test; do gunzip -c .devgpu/english/$name-$split.jsonl.gz > /tmp/data/$name/$split.jsonl; done
  fi
done
for v in before after; do
  if [ $v = before ]; then dir=.baseline; else dir=.; fi
  echo "== $v" | tee -a "$OUT/daemon.log"
  (cd $dir && PYTHONPATH=/tmp/site:$PWD timeout 280 python3 -m benchmarks.service.daemon_latency \
    $(for name in $TASKS; do echo /tmp/data/$name/train.jsonl; done) --seeds 0 2>&1 | grep "^|" | tee -a "$OUT/daemon.log")
done
