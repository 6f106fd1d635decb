#!/usr/bin/env bash
# CNN issue on the GPU (repository root; .fmnist holds the four Fashion-MNIST IDX files; OUT: where logs go).
# PART=tests-accuracy: kernel + CNN tests, the accuracy sweep (xla, then pallas), PyTorch training throughput.
# PART=vgg: the VGG-16 per-layer forward table.
set -uo pipefail
OUT=${OUT:-build/gpu-cnn}
mkdir -p "$OUT"
log="$OUT/${PART:-all}.log"
fm() { echo "## fashion_mnist $*" | tee -a "$log"; timeout 120 python3 -m benchmarks.fashion_mnist .fmnist "$@" 2>&1 \
  | grep -v -i warning | tee -a "$log"; }
if [ "${PART:-all}" != vgg ]; then
  timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/pallas_kernels/test_conv2d.py \
    tests/pallas_kernels/test_maxpool.py tests/pallas_kernels/test_softmax_xent.py tests/textclf/test_cnn.py 2>&1 \
    | tail -3 | tee -a "$log"
  fm --backend pallas
  fm --backend pallas --dropout 0 --augment=
  fm --backend pallas --lr-schedule cosine
  fm --backend xla
  fm --backend xla --dropout 0 --augment=
  fm --backend xla --augment=
  fm --backend xla --augment shift,flip
  fm --backend xla --lr-schedule cosine
  fm --backend xla --augment shift,flip --lr-schedule cosine
  fm --backend xla --epochs 15 --lr-schedule cosine
  for mode in "" --compile; do
    echo "## torch_cnn $mode" | tee -a "$log"
    timeout 150 python3 -m benchmarks.torch_cnn .fmnist --epochs 5 $mode 2>&1 | grep -v -i warning | tee -a "$log"
  done
fi
if [ "${PART:-all}" != tests-accuracy ]; then
  timeout 560 python3 -m benchmarks.vgg16 --batches 1,32 2>&1 | grep -v -i warning | tee -a "$log"
fi
