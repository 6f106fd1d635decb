#!/usr/bin/env bash
# Held-out scoring on the host and on the device (benchmarks/speed/eval_scoring.py) on a million synthetic documents,
# then `textclf train` on them with no flags from .baseline (the tree before) and this one (big_before_after.sh).
set -uo pipefail
OUT=${OUT:-build/gpu-eval}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
synthetic_corpus /tmp/syn 1000000
python3 -m benchmarks.speed.eval_scoring /tmp/syn/train.jsonl /tmp/syn/test.jsonl --docs 1000,10000,100000 2>&1 | grep -v -i warn | tee $OUT/eval.md
bash benchmarks/gpu/big_before_after.sh
