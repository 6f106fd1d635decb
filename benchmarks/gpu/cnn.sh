#!/usr/bin/env bash
# CNN issue on the GPU (repository root; .fmnist holds the four Fashion-MNIST IDX files; OUT: where logs go).
# PART=tests-accuracy: kernel + CNN tests, the accuracy sweep (xla, then pallas), PyTorch training throughput.
# PART=vgg: the VGG-16 per-layer forward table.
set -uo pipefail
OUT=${OUT:-build/gpu-cnn}
mkdir -p "$OUT"
log="$OUT/${PART:-all}.log"
fm() { echo "## fashion_mnist $*" | tee -a "$log"; timeout 120 python3 -m benchmarks.cnn.fashion_mnist .fmnist "$@" 2>&1 \
  | grep --line-buffered -v -i warning | tee -a "$log"; }
if [ "${PART:-all}" != vgg ]; then
  timeout 240 python3 -m pytest -q -x -p no:cacheprovider tests/pallas_kernels/test_conv2d.py \
    tests/pallas_kernels/test_maxpool.py tests/pallas_kernels/test_softmax_xent.py tests/textclf/models/test_cnn.py 2>&1 \
    | tail -3 | tee -a "$log"
  fm --backend pallas  # the defaults (textclf.settings: 20 epochs, cosine, dropout 0.25, shift)
  fm --backend xla
  fm --backend pallas --epochs 10 --dropout 0 --augment= --lr-schedule constant  # throughput vs PyTorch
  for mode in "" --compile; do
    echo "## torch_cnn $mode" | tee -a "$log"
    timeout 150 python3 -m benchmarks.cnn.torch_cnn .fmnist --epochs 5 $mode 2>&1 | grep --line-buffered -v -i warning | tee -a "$log"
  done
fi
if [ "${PART:-all}" != tests-accuracy ]; then
  for batch in 1 32; do  # one process per batch: a timeout keeps the finished table
    timeout 270 python3 -m benchmarks.cnn.vgg16 --batches $batch 2>&1 | grep --line-buffered -v -i warning | tee -a "$log"
  done
fi
