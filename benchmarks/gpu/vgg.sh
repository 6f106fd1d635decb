#!/usr/bin/env bash
# The VGG-16 convolutions on the GPU (repository root; carry .whl): the convolution kernels' tests compiled
# (Triton, and Mosaic GPU for conv2d_tma), then per-layer Pallas vs cuDNN tables at batch 32 for each of DTYPES,
# Pallas taking the best of CONFIGS (the Triton kernel) and, in bfloat16, of TMA_CONFIGS (conv2d_tma, on Hopper)
# (benchmarks/cnn/vgg16.py); BASELINE=1 adds the float32 table of the tree in .baseline (`git archive`).
set -uo pipefail
OUT=${OUT:-build/gpu-vgg}
mkdir -p "$OUT"
log="$OUT/vgg.log"
source benchmarks/gpu/site.sh
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a "$log"
if [ -z "${SKIP_TESTS:-}" ]; then
  timeout 300 python3 -m pytest -q -x -p no:cacheprovider tests/pallas_kernels/test_conv2d.py tests/pallas_kernels/test_conv2d_tma.py tests/textclf/models/test_cnn.py \
    2>&1 | tail -3 | tee -a "$log"
fi
TMA_CONFIGS=${TMA_CONFIGS:-2x2x32x128x4,1x4x32x128x5,1x2x32x256x4,1x8x32x64x4,2x4x32x64x3,2x4x32x64x4,4x2x32x64x4}
for dtype in ${DTYPES:-bfloat16 float32}; do
  tma=(); [ "$dtype" = bfloat16 ] && tma=(--tma-configs "$TMA_CONFIGS")
  timeout "${VGG_TIMEOUT:-400}" python3 -m benchmarks.cnn.vgg16 --batches 32 --convs-only --dtype "$dtype" \
    --configs "${CONFIGS:-128x256x64x8x3x1,128x128x64x4x3x1}" "${tma[@]}" ${VGG_ARGS:-} 2>&1 \
    | grep --line-buffered -v -i warning | tee -a "$log"
done
if [ -n "${BASELINE:-}" ]; then
  echo "## baseline tree, float32" | tee -a "$log"
  (cd .baseline && PYTHONPATH=$PWD:/tmp/site timeout 240 python3 -m benchmarks.cnn.vgg16 --batches 32 2>&1 \
    | grep --line-buffered -v -i warning | tee -a "../$log")
fi
