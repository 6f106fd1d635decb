#!/usr/bin/env bash
# Big corpora (repository root; OUT: where logs go): a DOCS-document synthetic corpus sampled from news4 (needs
# .devgpu/, see data.sh), then each of TOOLS trained on it with no flags, timed end to end with its peak host
# memory: "textclf" (`textclf train`), "fasttext" (the bench's peer, its tutorial settings, all cores).
set -uo pipefail
OUT=${OUT:-build/gpu-big}
DOCS=${DOCS:-1000000}
mkdir -p "$OUT"
log="$OUT/big.log"
source benchmarks/gpu/data.sh
synthetic_corpus /tmp/syn "$DOCS" | tee -a "$log"
for tool in ${TOOLS:-textclf fasttext}; do
  if [ "$tool" = textclf ]; then
    command=(python3 -m textclf train /tmp/syn/train.jsonl --test /tmp/syn/test.jsonl)
  else
    command=(python3 -m textclf.frontends.bench_tools "$tool" /tmp/syn/train.jsonl /tmp/syn/test.jsonl)
  fi
  python3 -m benchmarks.timed_run --label "$tool" --timeout "${TOOL_TIMEOUT:-400}" -- "${command[@]}" 2>&1 | tee -a "$log"
done
