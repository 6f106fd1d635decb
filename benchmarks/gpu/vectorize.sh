#!/usr/bin/env bash
# Vectorizing a million synthetic documents, from the tree before (.baseline, `git archive` of a commit) and this
# one in one call (repository root; OUT: where logs go). PARTS (comma-separated, default all three):
#   fit      benchmarks.vectorizing.vectorize_fit, unigrams without stop words twice and bigrams with English ones once,
#            the trees alternating;
#   workers  benchmarks.vectorizing.vectorize_workers (the default settings' fit, then the test file transformed);
#   train    `textclf train` with no flags, timed end to end (benchmarks.timed_run).
# Needs build/news4-train.jsonl.gz (`gzip -c .devdata/news4/train.jsonl > build/news4-train.jsonl.gz`) and .whl/
# (site.sh).
set -uo pipefail
OUT=${OUT:-build/gpu-vectorize}
DOCS=${DOCS:-1000000}
PARTS=${PARTS:-fit,workers,train}
mkdir -p "$OUT" /tmp/seed
log="$OUT/vectorize.log"
source benchmarks/gpu/site.sh
gunzip -c build/news4-train.jsonl.gz > /tmp/seed/train.jsonl
echo "$(nproc) cores" | tee -a "$log"
[ -f /tmp/syn/train.jsonl ] || PYTHONPATH=/tmp/site:$PWD python3 -m textclf dataset synthetic /tmp/seed/train.jsonl \
  /tmp/syn --docs "$DOCS" | tee -a "$log"
trees=("$PWD/.baseline" "$PWD")
if [[ ,$PARTS, == *,fit,* ]]; then
  cp benchmarks/vectorizing/vectorize_fit.py /tmp/vectorize_fit.py  # this tree's script, each tree's packages
  echo "| tree | n-grams | stop words | fit s | nonzeros |" | tee -a "$log"
  for run in unigrams unigrams bigrams; do
    for tree in "${trees[@]}"; do
      if [ $run = unigrams ]; then args=(--ngrams 1 --stop-words none); else args=(--ngrams 2 --stop-words english); fi
      (cd "$tree" && PYTHONPATH=/tmp/site:$tree python3 /tmp/vectorize_fit.py /tmp/syn/train.jsonl "${args[@]}" \
        --label "$tree" 2>&1 | tee -a "$log")
    done
  done
fi
if [[ ,$PARTS, == *,workers,* ]]; then
  for tree in "${trees[@]}"; do
    echo "== $tree: vectorize_workers" | tee -a "$log"
    (cd "$tree" && PYTHONPATH=/tmp/site:$tree python3 -m benchmarks.vectorizing.vectorize_workers /tmp/syn/train.jsonl \
      --test /tmp/syn/test.jsonl --workers "${WORKERS:-16}" 2>&1 | tee -a "$log")
  done
fi
if [[ ,$PARTS, == *,train,* ]]; then
  for tree in "${trees[@]}"; do
    echo "== $tree: textclf train, no flags" | tee -a "$log"
    (cd "$tree" && TEXTCLF_HOME=$(mktemp -d) PYTHONPATH=/tmp/site:$tree python3 -m benchmarks.timed_run --label "$tree" \
      --timeout "${TOOL_TIMEOUT:-300}" --lines 30 -- python3 -m textclf train /tmp/syn/train.jsonl \
      --test /tmp/syn/test.jsonl 2>&1 | tail -25 | tee -a "$log")
  done
fi
