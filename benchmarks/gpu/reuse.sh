#!/usr/bin/env bash
# A search's recorded choice reused (textclf/runs/search.py), before and after (repository root; OUT: where
# logs go; .baseline: the tree before, unpacked with `git archive`): news4 through a warm daemon (jobs with seeds
# 0, 0, 1: the second resubmits the first's corpus and settings, the third another seed, which trains on the
# recorded search where the search has its own seed, Settings.search_seed), then `textclf train`
# cold and again in the same data dir (benchmarks/speed/cold_start.py), each tree in one call.
set -uo pipefail
OUT=${OUT:-build/gpu-reuse}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
[ "${SKIP_TESTS:-}" ] || python3 -m pytest -q -p no:cacheprovider tests/textclf/training/search/test_halving.py tests/textclf/runs/test_run.py \
  -k "reused or rate or seed" 2>&1 | tail -3 | tee "$OUT/reuse.txt"
cp benchmarks/service/daemon_latency.py .baseline/benchmarks/  # the same client for both trees (--seeds, held jobs)
for v in before after; do
  if [ $v = before ]; then dir=.baseline; else dir=.; fi
  echo "== daemon, $v" | tee -a "$OUT/reuse.txt"
  (cd $dir && PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m benchmarks.service.daemon_latency /tmp/data/news4/train.jsonl \
    --test /tmp/data/news4/test.jsonl --seeds 0,0,1 2>&1 | grep -v -i warn | tee -a "$OUT/reuse.txt")
done
echo "== textclf train, cold then again" | tee -a "$OUT/reuse.txt"
timeout 300 python3 -m benchmarks.speed.cold_start /tmp/data/news4/train.jsonl --test /tmp/data/news4/test.jsonl \
  --variants before=.baseline,after=. --repeat 1 2>&1 | grep -v -i warn | tee -a "$OUT/reuse.txt"
