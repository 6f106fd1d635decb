#!/usr/bin/env bash
# The twelve corpora with no flags, from .baseline (the tree before a change: `git worktree add .baseline COMMIT`) and
# from this tree, one after the other per corpus (benchmarks/speed/search_budget.py: the search's seconds, choice and
# test accuracy; repository root; OUT: where logs go). Needs .devgpu/, .whl/ and .baseline/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-mixed-before-after}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
source benchmarks/gpu/english_data.sh
english_corpora /tmp/data
for name in ${CORPORA:-trec r8 mr webkb news4 agnews7600 news20 sst2 sst5 subj cr mpqa}; do
  before_after $name ""
done
