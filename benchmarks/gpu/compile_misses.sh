#!/usr/bin/env bash
# Which programs each cold `textclf train` compiles when the corpora before it left theirs in one shared compilation
# cache (repository root; OUT: where logs go; TASKS: corpora in order, from /tmp/data or .devgpu/english). Each run
# in a fresh data dir; the log of each (JAX_LOG_COMPILES=1) read by benchmarks/speed/compile_log.py. CACHE: the
# shared cache (default fresh). Needs .devgpu/ and .whl/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-compile-misses}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
CACHE=${CACHE:-/tmp/cm-cache-$$}
for name in ${TASKS:-news4 agnews7600 mr subj sst2 trec}; do
  if [ -f .devgpu/english/$name-train.jsonl.gz ]; then
    mkdir -p /tmp/data/$name
    for split in train test; do gunzip -c .devgpu/english/$name-$split.jsonl.gz > /tmp/data/$name/$split.jsonl; done
  fi
  start=$(date +%s.%N)
  TEXTCLF_HOME=/tmp/cm-home-$name-$$ XDG_CACHE_HOME=$CACHE JAX_LOG_COMPILES=1 PYTHONPATH=/tmp/site:$PWD python3 -m textclf \
    train /tmp/data/$name/train.jsonl --test /tmp/data/$name/test.jsonl --profile > "$OUT/$name.out" 2> "$OUT/$name.log"
  end=$(date +%s.%N)
  echo "$name wall $(python3 -c "print(f'{$end - $start:.2f}')") s $(grep -o 'accuracy[^,]*' "$OUT/$name.out" | head -1)" \
    | tee -a "$OUT/walls.log"
done
python3 -m benchmarks.speed.compile_log "$OUT"/*.log > "$OUT/misses.md"
tail -20 "$OUT/misses.md"
