#!/usr/bin/env bash
# Ten million synthetic documents (from news4), then `textclf train` with no flags from .baseline (a `git archive`
# of the tree before) and this tree, one after the other, each in a fresh data dir through benchmarks.timed_run.
# Needs .devgpu/, .whl/ and .baseline/ carried; ~8 minutes on an H100 machine.
source benchmarks/gpu/data.sh >/dev/null 2>&1
python3 -m textclf dataset synthetic /tmp/data/news4/train.jsonl /tmp/syn10 --docs 10000000 > /dev/null
for tree in .baseline .; do
  (cd $tree && TEXTCLF_HOME=$(mktemp -d) PYTHONPATH=/tmp/site:$PWD timeout 280 python3 -m benchmarks.timed_run --label "$tree" --timeout 270 --lines 30 -- python3 -m textclf train /tmp/syn10/train.jsonl --test /tmp/syn10/test.jsonl 2>&1 | grep -v -i warn | tail -4)
done
