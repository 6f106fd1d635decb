#!/usr/bin/env bash
# Input layouts on the GPU machine (through the device tool), from the repository root with .devdata/ built by
# `textclf dataset news4|agnews7600 .devdata/...`. Prints markdown tables; docs/decisions.md, "Input layouts".
set -u
PART=${PART:-all}
if [ "$PART" = all ] || [ "$PART" = tests ]; then
  python -m pytest -q -p no:cacheprovider tests/pallas_kernels/test_pieces_hidden.py tests/textclf/training/test_device_data.py \
    tests/textclf/training/test_loop.py tests/textclf/runs/test_run.py "tests/pallas_kernels/test_mlp.py::test_training_matches_xla" \
    2>&1 | grep -E "passed|failed|FAILED|Error"
fi
if [ "$PART" = all ] || [ "$PART" = product ]; then
  for task in news4 agnews7600; do
    python -m benchmarks.speed.multi_gpu .devdata/$task/train.jsonl --vectorizer tfidf --repeat 100 --devices 1 \
      --batches 4096,1024 --backends xla,pallas,pallas-dense --epochs 3
  done
fi
if [ "$PART" = all ] || [ "$PART" = layouts ]; then
  python -m benchmarks.speed.input_layouts .devdata/news4/train.jsonl --repeat 20 --batches 256 --widths 16 \
    --variants xla-pieces,pallas-dense
  python -m benchmarks.speed.input_layouts .devdata/news4/train.jsonl --repeat 100 --batches 4096 --widths 16 --kernels \
    --variants xla-flat
  python -m benchmarks.speed.epoch_profile .devdata/news4/train.jsonl --batches 4096 --backends xla,pallas-pieces --top 8
fi
