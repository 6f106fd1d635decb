#!/usr/bin/env bash
# A million synthetic documents (from .devgpu's news4, see data.sh), then `textclf train` on them with no flags from
# .baseline (the tree before a change: `git archive COMMIT | tar -x -C .baseline`) and from this tree, one after
# the other, each with its own empty data dir, timed with their peak host memory (benchmarks/timed_run.py).
set -uo pipefail
OUT=${OUT:-build/gpu-big-before-after}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
synthetic_corpus /tmp/syn 1000000
for v in before after; do
  if [ $v = before ]; then dir=.baseline; else dir=.; fi
  (cd $dir && TEXTCLF_HOME=/tmp/h-$v PYTHONPATH=/tmp/site:$PWD python3 -m benchmarks.timed_run --label $v --timeout 250 -- python3 -m textclf train /tmp/syn/train.jsonl --test /tmp/syn/test.jsonl 2>&1 | grep -v -i warn | tail -4) | tee -a $OUT/e2e.txt
done
