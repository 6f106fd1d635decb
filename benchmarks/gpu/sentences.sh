#!/usr/bin/env bash
# English sentence corpora beyond ../shared on the GPU machine (repository root; OUT: where logs go): `textclf bench`
# on sst2, sst5, subj, cr and mpqa with the peers, textclf with no flags.
# Needs .devgpu/sentences/NAME-{train,test}.jsonl.gz (benchmarks/sentence_corpora.py --gzip writes them) and .whl/
# carried.
set -uo pipefail
OUT=${OUT:-build/gpu-sentences}
mkdir -p "$OUT"
source benchmarks/gpu/site.sh
CORPORA=${CORPORA:-sst2 sst5 subj cr mpqa}
for name in $CORPORA; do
  mkdir -p /tmp/sentences/$name
  for split in train test; do gunzip -c .devgpu/sentences/$name-$split.jsonl.gz > /tmp/sentences/$name/$split.jsonl; done
done
wc -l /tmp/sentences/*/*.jsonl | tee "$OUT/sentences.log"
export TEXTCLF_HOME=${TEXTCLF_HOME:-/tmp/sentences-home}
timeout ${BENCH_TIMEOUT:-400} python3 -m textclf bench $CORPORA --data /tmp/sentences --out "$OUT/bench.md" \
  --tools ${TOOLS:-textclf-xla,fasttext,sklearn-sgd,sklearn-svm,sklearn-cnb} 2>&1 | grep -v -i warning | tee -a "$OUT/sentences.log"
find "$TEXTCLF_HOME" -name '*.db' -exec cp {} "$OUT/" \; 2>/dev/null || true
