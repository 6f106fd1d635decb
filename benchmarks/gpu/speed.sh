#!/usr/bin/env bash
# Single-GPU speed numbers of BENCHMARKS.md (speed issue), from the repository root; OUT: where logs go.
# 1. GPU kernel tests of the sparse and dense training paths; 2. start-up costs of a cold process;
# 3. epoch throughput on news4 rows (its tf-idf matrix stacked 100x: 965,000 documents) for the XLA path and
#    the Pallas path with dense and sparse input; 4. `textclf train` news4 cold, then again (warm caches).
set -uo pipefail
OUT=${OUT:-build/gpu-speed}
mkdir -p "$OUT"
log="$OUT/speed.log"
nvidia-smi -L | tee "$log"
python3 -m pytest -q -x -p no:cacheprovider tests/pallas_kernels/test_sparse_hidden.py tests/pallas_kernels/test_mlp.py \
  2>&1 | tail -3 | tee -a "$log"
t() { local start=$(date +%s.%N); "$@"; echo "wall $(awk "BEGIN{print $(date +%s.%N) - $start}") s: $*" | tee -a "$log"; }
t python3 -c "import jax; jax.devices()"
t python3 -c "import textclf.frontends.cli, sklearn.feature_extraction.text"
python3 - <<'PY' 2>&1 | tee -a "$log"
import time
from pipelines import vectorize
from pipelines.corpus import read_corpus
from textclf.settings import Settings
c = read_corpus(".devdata/news4/train.jsonl")
for workers, floor in ((1, 10**9), (None, 0)):
    vectorize.PARALLEL_MIN_DOCS = floor
    start = time.perf_counter(); vectorize.fit_vectorizer(c.texts, c.labels, Settings(), workers=workers)
    print(f"news4 fit_vectorizer workers={workers}: {time.perf_counter() - start:.2f} s")
PY
timeout 300 python3 -m benchmarks.speed.multi_gpu .devdata/news4/train.jsonl --vectorizer tfidf --repeat 100 --devices 1 \
  --batches 1024,4096,8192 --backends xla,pallas-dense,pallas-sparse --epochs 3 2>&1 | grep -v -i warning | tee -a "$log"
for run in cold warm; do
  t python3 -m textclf train .devdata/news4/train.jsonl --test .devdata/news4/test.jsonl 2>&1 | tail -2 | tee -a "$log"
done
for fmt in dense sparse; do
  python3 -m textclf train .devdata/news4/train.jsonl --test .devdata/news4/test.jsonl --pallas-input $fmt 2>&1 \
    | tail -2 | tee -a "$log"
done
