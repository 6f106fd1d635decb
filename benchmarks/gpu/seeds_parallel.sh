#!/usr/bin/env bash
# Test accuracy with no flags over several seeds, from .baseline (the tree before a change) and from this tree,
# PARALLEL runs at a time sharing the GPU (XLA_PYTHON_CLIENT_PREALLOCATE=false; the trained models do not depend
# on what else runs), each in a fresh data dir with its tree's shared compilation cache. One line a run in
# $OUT/seeds.log: "TREE CORPUS SEED accuracy A search_s S wall_s W". Needs .devgpu/, .whl/ and .baseline/ carried.
set -uo pipefail
OUT=${OUT:-build/gpu-seeds-parallel}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
one() {
  local v=$1 name=$2 seed=$3 dir=. start
  [ "$v" = before ] && dir=.baseline
  start=$(date +%s.%N)
  (cd $dir && TEXTCLF_HOME=/tmp/seeds-$v-$name-$seed XDG_CACHE_HOME=/tmp/seeds-cache-$v XLA_PYTHON_CLIENT_PREALLOCATE=false \
    PYTHONPATH=/tmp/site:$PWD timeout ${RUN_TIMEOUT:-300} python3 -m textclf train /tmp/data/$name/train.jsonl \
    --test /tmp/data/$name/test.jsonl --seed $seed --json > /tmp/seeds-$v-$name-$seed.json 2>/dev/null)
  python3 - "$v" "$name" "$seed" "$start" <<'PY' >> "$OUT/seeds.log"
import json, sys, time
v, name, seed, start = sys.argv[1:]
try:
    result = json.load(open(f"/tmp/seeds-{v}-{name}-{seed}.json"))
    print(f"{v} {name} {seed} accuracy {result['eval_accuracy']:.4f} search_s {result['search'].get('seconds')} "
          f"wall_s {time.time() - float(start):.1f}")
except Exception as error:
    print(f"{v} {name} {seed} failed {error!r}")
PY
}
export -f one
export OUT
for seed in ${SEEDS:-1 2 3 4}; do for name in ${CORPORA:-news4 trec mr agnews7600 news20}; do for v in before after; do
  echo "$v $name $seed"; done; done; done | xargs -P ${PARALLEL:-4} -L 1 bash -c 'one $0 $1 $2'
sort "$OUT/seeds.log"
