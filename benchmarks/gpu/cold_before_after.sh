#!/usr/bin/env bash
# Cold `textclf train --profile` with no flags on each corpus from .baseline (the tree before a change: `git worktree
# add .baseline COMMIT`) and from this tree, one after the other, each in a fresh data dir (no compilation cache,
# no recorded search); ROUNDS times over (repository root; OUT: where logs go). Needs .devgpu/, .whl/ and .baseline/
# carried. SEEN=CORPUS: each tree keeps one compilation cache for all its runs, first filled by a run on CORPUS (a
# machine that has trained before); else every run has an empty cache (a machine's first run).
set -uo pipefail
OUT=${OUT:-build/gpu-cold-before-after}
mkdir -p "$OUT"
source benchmarks/gpu/data.sh >/dev/null 2>&1
cache_of() {  # the XDG_CACHE_HOME of a run: tree $1, corpus $2, round $3
  if [ -n "${SEEN:-}" ]; then echo /tmp/seen-cache-$1; else echo /tmp/cold-$1-$2-$3/cache; fi
}
if [ -n "${SEEN:-}" ]; then
  for v in before after; do
    if [ $v = before ]; then dir=.baseline; else dir=.; fi
    (cd $dir && TEXTCLF_HOME=/tmp/seen-$v XDG_CACHE_HOME=$(cache_of $v) PYTHONPATH=/tmp/site:$PWD python3 -m textclf \
      train /tmp/data/$SEEN/train.jsonl >/dev/null 2>&1)
  done
fi
for round in $(seq 1 ${ROUNDS:-1}); do
  for name in ${TASKS:-news4 trec mr agnews7600 news20}; do
    for v in before after; do
      if [ $v = before ]; then dir=.baseline; else dir=.; fi
      (cd $dir && TEXTCLF_HOME=/tmp/cold-$v-$name-$round XDG_CACHE_HOME=$(cache_of $v $name $round) PYTHONPATH=/tmp/site:$PWD python3 -m textclf train \
        /tmp/data/$name/train.jsonl --test /tmp/data/$name/test.jsonl --profile --json 2>&1 >/tmp/cold-$v-$name.json \
        | grep "^profile" | sed "s/^/$v $name  /" >> "$OUT/cold.log")
      python3 - "$v" "$name" <<'PY' | tee -a "$OUT/cold.log"
import hashlib, json, sys
v, name = sys.argv[1:]
result = json.load(open(f"/tmp/cold-{v}-{name}.json"))
settings = json.dumps(result["settings"], sort_keys=True)  # the chosen settings: the same in both trees?
print(f"{v} {name} phases {sum(result['profile'].values()):.2f} s accuracy {result['eval_accuracy']:.4f} "
      f"settings {hashlib.sha1(settings.encode()).hexdigest()[:10]} search {result['search'].get('seconds')} s "
      f"final training {result['profile'].get('train', 0.0):.2f} s")
PY
    done
  done
done
