#!/usr/bin/env bash
# The twelve corpora with no flags, from .baseline (the tree before a change: `git worktree add .baseline COMMIT`) and
# from this tree, one after the other per corpus (benchmarks/speed/search_budget.py: the search's seconds, choice and
# test accuracy; repository root; OUT: where logs go). Needs .devgpu/, .whl/ and .baseline/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-mixed-before-after}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
for name in sst2 sst5 subj cr mpqa r8 webkb; do
  mkdir -p /tmp/data/$name
  for split in train test; do gunzip -c .devgpu/english/$name-$split.jsonl.gz > /tmp/data/$name/$split.jsonl; done
done
for name in ${CORPORA:-trec r8 mr webkb news4 agnews7600 news20 sst2 sst5 subj cr mpqa}; do
  for v in before after; do
    if [ $v = before ]; then dir=.baseline; else dir=.; fi
    (cd $dir && PYTHONPATH=/tmp/site:$PWD timeout ${RUN_TIMEOUT:-120} python3 -m benchmarks.speed.search_budget \
      /tmp/data --corpora $name 2>&1 | grep "^| $name" | sed "s/^/$v /" | tee -a "$OUT/before_after.log")
  done
done
