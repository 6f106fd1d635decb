#!/usr/bin/env bash
# Where a no-flags `textclf train` spends its time on news4 and trec (cProfile, top functions by cumulative time,
# and the run record with the search's per-round seconds), written under $OUT.
source benchmarks/gpu/data.sh >/dev/null 2>&1
export TEXTCLF_VECTOR_CACHE=off
for c in news4 trec; do
  TEXTCLF_HOME=/tmp/p-$c python3 -m cProfile -o $OUT/$c.prof -m textclf train /tmp/data/$c/train.jsonl --test /tmp/data/$c/test.jsonl 2>&1 | grep -v -i warn | tail -3
  python3 - $c <<'PY'
import pstats, sys
c = sys.argv[1]
import os
s = pstats.Stats(f"{os.environ['OUT']}/{c}.prof"); s.sort_stats("cumulative").print_stats(45)
PY
  TEXTCLF_HOME=/tmp/p-$c python3 -m textclf runs show 1 --json > $OUT/$c-run.json
done
