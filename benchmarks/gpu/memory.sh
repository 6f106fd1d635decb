#!/usr/bin/env bash
# Host memory of a million-document run: `textclf train` with no flags from .baseline (a `git archive` of the tree
# before) and this tree alternating twice (benchmarks.timed_run: wall time, peak host memory, phases), then this
# tree's phases (benchmarks.memory.memory_phases) and the JAX runtime's own memory (benchmarks.memory.runtime_memory). Then,
# with CORPORA (default news4), benchmarks/gpu/cold_compile.sh (cold news4 end to end, the trees alternating).
# Needs .devgpu/, .whl/ and .baseline/ carried; ~7 minutes on an H100 machine.
set -uo pipefail
source benchmarks/gpu/data.sh >/dev/null 2>&1
synthetic_corpus /tmp/syn "${DOCS:-1000000}" > /dev/null
for tree in .baseline . .baseline .; do
  (cd $tree && TEXTCLF_HOME=$(mktemp -d) PYTHONPATH=/tmp/site:$PWD python3 -m benchmarks.timed_run --label "$tree" \
    --timeout 300 --lines 8 -- python3 -m textclf train /tmp/syn/train.jsonl --test /tmp/syn/test.jsonl 2>&1 \
    | grep -v -i warn)
done
TEXTCLF_HOME=$(mktemp -d) python3 -m benchmarks.memory.memory_phases /tmp/syn/train.jsonl --test /tmp/syn/test.jsonl 2>&1 \
  | grep -v -i warn | tail -13
python3 -m benchmarks.memory.runtime_memory --env "XLA_PYTHON_CLIENT_PREALLOCATE=true" --env "XLA_PYTHON_CLIENT_PREALLOCATE=false"
[ "${CORPORA:-news4}" = none ] || CORPORA=${CORPORA:-news4} bash benchmarks/gpu/cold_compile.sh
