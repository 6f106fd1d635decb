#!/usr/bin/env bash
# Chinese corpora on the GPU machine (repository root; OUT: where logs go): `textclf bench` on three of them with
# the peers, then cold `textclf train` with no flags against the same with --no-cjk-characters (each Chinese
# character a word, or runs of them kept whole as scikit-learn's token pattern keeps them), a fresh data dir each.
# Needs .devgpu/zh/NAME-{train,test}.jsonl.gz (benchmarks/cjk_corpora.py writes them) and .whl/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-cjk}
mkdir -p "$OUT"
source benchmarks/gpu/site.sh
CORPORA=${CORPORA:-htl waimai shop10}
for name in $CORPORA; do
  mkdir -p /tmp/zh/$name
  for split in train test; do gunzip -c .devgpu/zh/$name-$split.jsonl.gz > /tmp/zh/$name/$split.jsonl; done
done
wc -l /tmp/zh/*/*.jsonl | tee "$OUT/cjk.log"
export TEXTCLF_HOME=/tmp/cjk-home
timeout ${BENCH_TIMEOUT:-400} python3 -m textclf bench $CORPORA --data /tmp/zh --out "$OUT/bench.md" \
  --tools ${TOOLS:-textclf-xla,fasttext,sklearn-sgd,sklearn-svm,sklearn-cnb} 2>&1 | grep -v -i warning | tee -a "$OUT/cjk.log"
for name in $CORPORA; do
  for flags in "--no-cjk-characters" ""; do
    rm -rf /tmp/cjk-cold && start=$(date +%s%N)
    TEXTCLF_HOME=/tmp/cjk-cold python3 -m textclf train /tmp/zh/$name/train.jsonl --test /tmp/zh/$name/test.jsonl \
      $flags 2>&1 | grep -E "^search: chose|^test accuracy" | tee -a "$OUT/cjk.log"
    echo "$name ${flags:-(no flags)}: wall $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$OUT/cjk.log"
  done
done
