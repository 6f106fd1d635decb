#!/usr/bin/env bash
# The persistent compilation cache across corpora of different sizes: in one fresh data dir, `textclf train` on
# nine tenths of news4's training documents, then on all of them (a grown corpus), from .baseline (the tree
# before a change) and from this tree; the second run's phases show what the cache served.
set -uo pipefail
OUT=${OUT:-build/gpu-compile-cache}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
export TEXTCLF_VECTOR_CACHE=off
python3 - <<'PY'
import os
os.makedirs("/tmp/data/news4-90", exist_ok=True)
with open("/tmp/data/news4/train.jsonl") as src, open("/tmp/data/news4-90/train.jsonl", "w") as dst:
    dst.writelines(line for i, line in enumerate(src) if i % 10)
PY
for v in before after; do
  if [ $v = before ]; then dir=.baseline; else dir=.; fi
  for corpus in news4-90 news4; do
    echo "== $v $corpus" | tee -a $OUT/cache.txt
    (cd $dir && TEXTCLF_HOME=/tmp/cc-$v PYTHONPATH=/tmp/site:$PWD python3 -m benchmarks.timed_run --label "$v $corpus" \
      --timeout 200 -- python3 -m textclf train /tmp/data/$corpus/train.jsonl --test /tmp/data/news4/test.jsonl \
      2>&1 | grep -v -i warn | grep "test accuracy\|exit\|search:" | cut -c1-400) | tee -a $OUT/cache.txt
  done
done
