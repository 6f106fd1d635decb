#!/usr/bin/env bash
# Corpora of scripts written without spaces on the GPU machine (repository root; OUT: where logs go): `textclf
# bench` on three Chinese ones and a Thai one with the peers, then cold `textclf train` with no flags against the same
# with --no-unspaced-as-characters (each character of such a script a word, or runs of them kept whole as
# scikit-learn's token pattern keeps them), a fresh data dir each.
# Needs .devgpu/unspaced/NAME-{train,test}.jsonl.gz (benchmarks/corpora/unspaced_corpora.py --gzip writes them) and .whl/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-unspaced}
mkdir -p "$OUT"
source benchmarks/gpu/site.sh
CORPORA=${CORPORA:-htl waimai shop10 wisesight}
for name in $CORPORA; do
  mkdir -p /tmp/unspaced/$name
  for split in train test; do gunzip -c .devgpu/unspaced/$name-$split.jsonl.gz > /tmp/unspaced/$name/$split.jsonl; done
done
wc -l /tmp/unspaced/*/*.jsonl | tee "$OUT/unspaced.log"
export TEXTCLF_HOME=/tmp/unspaced-home
timeout ${BENCH_TIMEOUT:-400} python3 -m textclf bench $CORPORA --data /tmp/unspaced --out "$OUT/bench.md" \
  --tools ${TOOLS:-textclf-xla,fasttext,sklearn-sgd,sklearn-svm,sklearn-cnb} 2>&1 | grep -v -i warning | tee -a "$OUT/unspaced.log"
for name in $CORPORA; do
  for flags in "--no-unspaced-as-characters" ""; do
    rm -rf /tmp/unspaced-cold && start=$(date +%s%N)
    TEXTCLF_HOME=/tmp/unspaced-cold python3 -m textclf train /tmp/unspaced/$name/train.jsonl --test /tmp/unspaced/$name/test.jsonl \
      $flags 2>&1 | grep -E "^search: chose|^test accuracy" | tee -a "$OUT/unspaced.log"
    echo "$name ${flags:-(no flags)}: wall $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$OUT/unspaced.log"
  done
done
