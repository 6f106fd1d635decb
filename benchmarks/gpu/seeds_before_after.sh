#!/usr/bin/env bash
# Test accuracy with no flags over several seeds, from .baseline (the tree before a change: `git worktree add
# .baseline COMMIT`) and from this tree, seed by seed (benchmarks/speed/search_budget.py; repository root; OUT: where
# logs go, before_after.log; CORPORA and SEEDS as below). Needs .devgpu/, .whl/ and .baseline/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-seeds-before-after}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
for name in ${CORPORA:-mr}; do
  for seed in ${SEEDS:-0 1 2 3 4}; do
    before_after $name "$seed " --option=--seed=$seed
  done
done
