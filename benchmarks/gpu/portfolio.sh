#!/usr/bin/env bash
# The portfolio's offline study on the GPU (benchmarks/search/portfolio.py curves): every corpus of .devgpu/ (the
# five of data.sh, eng/*, small/*), split over the machine's GPUs, one process a GPU; curves into $OUT/curves.
# Needs .devgpu/ and .whl/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-portfolio}
mkdir -p "$OUT/curves"
source benchmarks/gpu/data.sh >/dev/null 2>&1
for dir in .devgpu/eng/*; do
  name=$(basename "$dir"); mkdir -p /tmp/data/$name; gunzip -c "$dir/train.jsonl.gz" > /tmp/data/$name/train.jsonl
done
for file in .devgpu/small/*.jsonl; do
  name=$(basename "$file" .jsonl); mkdir -p /tmp/data/$name; cp "$file" /tmp/data/$name/train.jsonl
done
gpus=$(nvidia-smi -L | wc -l)
corpora=(${CORPORA:-news20 news4 agnews7600 trec mr sst2 sst5 subj cr mpqa r8 webkb ag300 n4300})
for g in $(seq 0 $((gpus - 1))); do
  mine=()
  for i in "${!corpora[@]}"; do [ $((i % gpus)) = $g ] && mine+=("/tmp/data/${corpora[$i]}/train.jsonl"); done
  CUDA_VISIBLE_DEVICES=$g python3 -m benchmarks.search.portfolio curves "${mine[@]}" --out "$OUT/curves" \
    --seeds ${SEEDS:-0} > "$OUT/gpu$g.log" 2>&1 &
done
wait
cat "$OUT"/gpu*.log | grep -v Warning
