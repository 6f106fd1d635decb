#!/usr/bin/env bash
# fastText beside ten million synthetic documents (from news4, the corpus of big10.sh: `textclf dataset synthetic`
# writes the same files on any machine): benchmarks.fasttext_big with EPOCHS (default 5, fastText's own default),
# all cores. Needs .devgpu/ and .whl/ carried.
set -uo pipefail
source benchmarks/gpu/data.sh >/dev/null 2>&1
echo "$(nproc) cores"
start=$(date +%s)
python3 -m textclf dataset synthetic /tmp/data/news4/train.jsonl /tmp/syn10 --docs 10000000 > /dev/null
echo "generated in $(( $(date +%s) - start )) s"
timeout "${FASTTEXT_TIMEOUT:-500}" python3 -m benchmarks.fasttext_big /tmp/syn10/train.jsonl /tmp/syn10/test.jsonl \
  --epochs "${EPOCHS:-5}" 2>&1
