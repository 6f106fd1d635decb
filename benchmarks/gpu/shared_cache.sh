#!/usr/bin/env bash
# The compilation cache shared by data dirs (repository root; OUT: where logs go). `textclf train --test --profile`
# with no flags on each corpus, each in a fresh data dir: "before" from .baseline (the tree before: its cache in
# the data dir, so empty each time); "empty" from this tree with a fresh cache each time (a machine's first run);
# "shared" from this tree with one cache for all, the corpora in the order given (each new to the cache: it holds
# the programs of the corpora before it). Wall: the process's start to its exit. Needs .devgpu/, .whl/ and
# .baseline/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-shared-cache}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
run() {  # run LABEL DIR CACHE NAME
  local label=$1 dir=$2 cache=$3 name=$4 start end before
  before=$(ls $cache/textclf/jax 2>/dev/null | wc -l)
  start=$(date +%s.%N)
  (cd $dir && TEXTCLF_HOME=/tmp/sc-$label-$name XDG_CACHE_HOME=$cache PYTHONPATH=/tmp/site:$PWD python3 -m textclf \
    train /tmp/data/$name/train.jsonl --test /tmp/data/$name/test.jsonl --profile --json 2>&1 \
    >/tmp/sc-$label-$name.json | grep "^profile  \(search \|compile\)" | tr -s ' ' | sed "s/^/$label $name /" \
    >> "$OUT/phases.log")
  end=$(date +%s.%N)
  programs=$(( $(ls $cache/textclf/jax 2>/dev/null | wc -l) - before ))
  [ $label = before ] && programs=$(ls /tmp/sc-$label-$name/jax-cache 2>/dev/null | wc -l)
  python3 - "$label" "$name" "$start" "$end" "$programs" <<'PY' | tee -a "$OUT/shared_cache.log"
import hashlib, json, sys
label, name, start, end, programs = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
result = json.load(open(f"/tmp/sc-{label}-{name}.json"))
settings = hashlib.sha1(json.dumps(result["settings"], sort_keys=True).encode()).hexdigest()[:10]
profile = result["profile"]
print(f"| {label} | {name} | {end - start:.1f} | {result['search'].get('seconds')} | {profile.get('compile', 0):.2f} "
      f"| {result['eval_accuracy']:.4f} | {settings} | {programs} |")
PY
}
echo "| tree, cache | corpus | wall s | search s | final compile s | test accuracy | settings | programs compiled |"
echo "|---|---|---:|---:|---:|---:|---|---:|"
TASKS=${TASKS:-news20 news4 trec mr agnews7600}
for name in $TASKS; do
  run before .baseline /tmp/sc-cache-before-$name $name
  run empty . /tmp/sc-cache-empty-$name $name
done
for name in $TASKS; do
  run shared . /tmp/sc-cache-shared $name
done
