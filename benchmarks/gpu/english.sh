#!/usr/bin/env bash
# English corpora beyond ../shared on the GPU machine (repository root; OUT: where logs go): `textclf bench` on
# sst2, sst5, subj, cr, mpqa, r8 and webkb with the peers, textclf with no flags.
# Needs .devgpu/english/NAME-{train,test}.jsonl.gz (benchmarks/corpora/english_corpora.py --gzip writes them) and .whl/
# carried.
set -uo pipefail
OUT=${OUT:-build/gpu-english}
mkdir -p "$OUT"
source benchmarks/gpu/site.sh
source benchmarks/gpu/english_data.sh
CORPORA=${CORPORA:-sst2 sst5 subj cr mpqa r8 webkb}
english_corpora /tmp/english
wc -l /tmp/english/*/*.jsonl | tee "$OUT/english.log"
export TEXTCLF_HOME=${TEXTCLF_HOME:-/tmp/english-home}
timeout ${BENCH_TIMEOUT:-400} python3 -m textclf bench $CORPORA --data /tmp/english --out "$OUT/bench.md" \
  --tools ${TOOLS:-textclf-xla,fasttext,sklearn-sgd,sklearn-svm,sklearn-cnb} 2>&1 | grep -v -i warning | tee -a "$OUT/english.log"
find "$TEXTCLF_HOME" -name '*.db' -exec cp {} "$OUT/" \; 2>/dev/null || true
