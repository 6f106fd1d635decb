#!/usr/bin/env bash
# Corpora larger than the search's sample, where the held-out documents choose among the sample's near-tied rates
# (textclf/training/candidates.py, fit_rates): 100,000 synthetic documents through `textclf bench` with fastText
# beside it, from .baseline (the tree before: `git archive COMMIT | tar -x -C .baseline`) and from this tree; then
# the million documents end to end, before and after (big_before_after.sh).
set -uo pipefail
OUT=${OUT:-build/gpu-rates}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
[ -f /tmp/data/syn100k/train.jsonl ] || python3 -m textclf dataset synthetic /tmp/data/news4/train.jsonl \
  /tmp/data/syn100k --docs 100000 2>&1 | tail -1
for v in before after; do
  if [ $v = before ]; then dir=.baseline; tools=textclf-xla; else dir=.; tools=textclf-xla,fasttext; fi
  echo "== syn100k $v" | tee -a $OUT/syn100k.txt
  (cd $dir && TEXTCLF_HOME=/tmp/h100k-$v PYTHONPATH=/tmp/site:$PWD python3 -m textclf bench syn100k --data /tmp/data \
    --tools $tools 2>&1 | grep -v -i warn | tail -8) | tee -a $OUT/syn100k.txt
done
OUT=$OUT bash benchmarks/gpu/big_before_after.sh
