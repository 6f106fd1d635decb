#!/usr/bin/env bash
# Multi-GPU numbers of BENCHMARKS.md (run on a 2-GPU machine from the repository root; OUT: where logs go).
# 1. a 1,000,000-document synthetic corpus sampled from news4's training set;
# 2. 1 vs 2 GPU parameters after the same global batches (tests/textclf/training/parallel_worker.py);
# 3. training throughput on 1 vs 2 GPUs at global batch 8,192 and 16,384 (benchmarks/speed/multi_gpu.py);
# 4. `textclf train` on news4 with all GPUs and with one; 5. the GPU-side tests of the resident-epoch path.
set -uo pipefail
OUT=${OUT:-build/gpu-multi}
mkdir -p "$OUT"
log="$OUT/multi_gpu.log"
nvidia-smi -L | tee "$log"
env | grep -E '^NCCL_NVLS|MULTICAST|NVLS' | tee -a "$log"
start=$(date +%s.%N)
python3 -m textclf dataset synthetic .devdata/news4/train.jsonl /tmp/syn --docs 1000000 2>&1 | tee -a "$log"
echo "synthetic corpus: $(awk "BEGIN{print $(date +%s.%N) - $start}") s" | tee -a "$log"
python3 tests/textclf/training/parallel_worker.py xla:adam,pallas:adam,pallas:sgd 2>&1 | tail -1 | tee -a "$log"
timeout 330 python3 -m benchmarks.speed.multi_gpu /tmp/syn/train.jsonl --epochs 3 2>&1 | grep -v -i warning | tee -a "$log"
for devices in all 1; do
  echo "== textclf train news4 --devices $devices" | tee -a "$log"
  start=$(date +%s.%N)
  python3 -m textclf train .devdata/news4/train.jsonl --test .devdata/news4/test.jsonl --devices $devices 2>&1 \
    | tail -2 | tee -a "$log"
  echo "wall $(awk "BEGIN{print $(date +%s.%N) - $start}") s" | tee -a "$log"
done
python3 -m pytest -q -x -p no:cacheprovider tests/textclf/training/test_device_data.py tests/textclf/runs/test_run.py \
  tests/pallas_kernels 2>&1 | tail -4 | tee -a "$log"
