#!/usr/bin/env bash
# A first model search, compiled meanwhile or not (repository root): a cold no-flags `textclf train` (a fresh data
# dir each, so an empty compilation cache; no vector cache) of news4 and trec from the tree before (.baseline,
# `git archive` of a commit) and this one, alternating, ROUNDS times. Needs .devgpu/ and .whl/ (data.sh).
set -uo pipefail
source benchmarks/gpu/data.sh > /dev/null 2>&1
export TEXTCLF_VECTOR_CACHE=off
for round in $(seq "${ROUNDS:-2}"); do
  for corpus in ${TASKS:-news4 trec}; do
    for tree in "$PWD/.baseline" "$PWD"; do
      (cd "$tree" && TEXTCLF_HOME=$(mktemp -d) PYTHONPATH=/tmp/site:$tree python3 -m benchmarks.timed_run \
        --label "$corpus $(basename "$tree")" --lines 2 -- python3 -m textclf train /tmp/data/$corpus/train.jsonl \
        --test /tmp/data/$corpus/test.jsonl 2>&1 | grep -v -i warn)
    done
  done
done
