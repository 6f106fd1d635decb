#!/usr/bin/env bash
# A million synthetic documents (from .devgpu's news4, see data.sh): benchmarks.vectorizing.vectorize_file (the product's path
# for a large file, alone) from .baseline (a `git archive` of the tree before a change) and this tree alternating,
# REPEAT times with the settings the search chooses for this corpus (unigrams, no stop words, no weights) and once
# with the defaults; then `textclf train` with no flags from each tree, alternating TRAIN_REPEAT times, each in a
# fresh data dir, timed with its peak host memory (benchmarks.timed_run). Needs .devgpu/, .whl/ and .baseline/
# carried; ~6 minutes on an H100 machine.
set -uo pipefail
source benchmarks/gpu/data.sh >/dev/null 2>&1
echo "$(nproc) cores"
synthetic_corpus /tmp/syn 1000000
cp benchmarks/vectorizing/vectorize_file.py /tmp/vectorize_file.py  # this tree's script, each tree's packages
echo "| tree | n-grams | stop words | read s | fit s | transform s | total s | MB/s | nonzeros |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|"
for run in $(seq "${REPEAT:-2}") defaults; do
  for tree in .baseline .; do
    if [ "$run" = defaults ]; then args=(); else args=(--ngrams 1 --stop-words none --no-weights); fi
    (cd "$tree" && PYTHONPATH=/tmp/site:$PWD python3 /tmp/vectorize_file.py /tmp/syn/train.jsonl "${args[@]}" \
      --label "$tree" 2>&1 | grep "^|")
  done
done
for run in $(seq "${TRAIN_REPEAT:-1}"); do
  for tree in .baseline .; do
    (cd "$tree" && TEXTCLF_HOME=$(mktemp -d) PYTHONPATH=/tmp/site:$PWD python3 -m benchmarks.timed_run --label "$tree" \
      --timeout 250 --lines 12 -- python3 -m textclf train /tmp/syn/train.jsonl --test /tmp/syn/test.jsonl 2>&1 \
      | grep -v -i warn | tail -14)
  done
done
