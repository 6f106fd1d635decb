#!/usr/bin/env bash
# The VGG-16 convolutions on the GPU (repository root; carry .whl): the convolution kernel's tests compiled
# through Triton, then per-layer Pallas vs cuDNN tables at batch 32 for each of DTYPES, Pallas taking the best of
# CONFIGS (benchmarks/vgg16.py); BASELINE=1 adds the float32 table of the tree in .baseline (`git archive`).
set -uo pipefail
OUT=${OUT:-build/gpu-vgg}
mkdir -p "$OUT"
log="$OUT/vgg.log"
source benchmarks/gpu/site.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$log"
if [ -z "${SKIP_TESTS:-}" ]; then
  timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/pallas_kernels/test_conv2d.py tests/textclf/test_cnn.py \
    2>&1 | tail -3 | tee -a "$log"
fi
for dtype in ${DTYPES:-bfloat16 float32}; do
  timeout "${VGG_TIMEOUT:-240}" python3 -m benchmarks.vgg16 --batches 32 --convs-only --dtype "$dtype" \
    --configs "${CONFIGS:-128x64x64x4x3,128x128x64x8x3}" ${VGG_ARGS:-} 2>&1 | grep --line-buffered -v -i warning | tee -a "$log"
done
if [ -n "${BASELINE:-}" ]; then
  echo "## baseline tree, float32" | tee -a "$log"
  (cd .baseline && PYTHONPATH=$PWD:/tmp/site timeout 240 python3 -m benchmarks.vgg16 --batches 32 2>&1 \
    | grep --line-buffered -v -i warning | tee -a "../$log")
fi
