#!/usr/bin/env bash
# Speed issue, second round (repository root; OUT: where logs go): sparse kernel GPU tests with the tuned
# blocks; dense vs sparse Pallas input on news4 and agnews7600 rows (stacked 100x); `textclf bench`.
set -uo pipefail
OUT=${OUT:-build/gpu-final}
mkdir -p "$OUT"
log="$OUT/final.log"
[ "${ONLY_BENCH:-}" ] || python3 -m pytest -q -x -p no:cacheprovider tests/pallas_kernels/test_sparse_hidden.py 2>&1 \
  | tail -2 | tee "$log"
[ "${ONLY_BENCH:-}" ] || for task in news4 agnews7600; do
  timeout 200 python3 -m benchmarks.speed.multi_gpu .devdata/$task/train.jsonl --vectorizer tfidf --repeat 100 \
    --devices 1 --batches 64,1024,4096 --backends pallas-dense,pallas-sparse,xla --epochs 2 2>&1 \
    | grep -v -i warning | tee -a "$log"
done
[ "${SKIP_BENCH:-}" ] && exit 0
mkdir -p /tmp/data && cp -r .devdata/news4 .devdata/agnews7600 /tmp/data/
timeout 500 python3 -m textclf bench news4 agnews7600 --data /tmp/data --out "$OUT/bench.md" \
  --tools textclf-pallas,textclf-xla,torch-dense,torch-embeddingbag,fasttext,sklearn-sgd 2>&1 | tee -a "$log"
