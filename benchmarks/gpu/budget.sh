#!/usr/bin/env bash
# The search's work budget on the GPU machine (repository root; OUT: where logs go): the five corpora with no flags
# through benchmarks/speed/search_budget.py, on this tree and on the tree in .baseline/ (a `git worktree` of the commit
# to compare with), one after the other in the same call. Needs .devgpu/ and .whl/ carried (benchmarks/gpu/data.sh).
set -uo pipefail
OUT=${OUT:-build/gpu-budget}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh
for tree in . .baseline; do
  echo "== $tree ($(git -C $tree rev-parse --short HEAD 2>/dev/null))" | tee -a "$OUT/budget.md"
  PYTHONPATH=/tmp/site:$PWD/$tree timeout ${BENCH_TIMEOUT:-270} python3 benchmarks/speed/search_budget.py /tmp/data \
    --corpora ${TASKS:-news4,agnews7600,news20,trec,mr} 2>&1 | grep -v -i warning | tee -a "$OUT/budget.md"
done
