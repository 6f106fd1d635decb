#!/usr/bin/env bash
# Where the GPU search's seconds go (benchmarks/speed/search_profile.py) on the five corpora: each corpus cold (a
# fresh compilation cache) then warm, and the imports of a `textclf train` before it reads the corpus (repository
# root; OUT: where logs go). Needs .devgpu/ and .whl/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-search-parts}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh
for name in ${TASKS:-news4 trec mr agnews7600 news20}; do
  python3 -m benchmarks.speed.search_profile \
    /tmp/data/$name/train.jsonl --repeat 2 2>&1 | grep -v -i warning | tee -a "$OUT/parts.log"
done
python3 -X importtime -c "import textclf.frontends.cli; import textclf.runs.run" 2> "$OUT/importtime.log"
sort -t'|' -k2 -n "$OUT/importtime.log" | tail -12
