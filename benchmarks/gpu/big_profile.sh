#!/usr/bin/env bash
# Where a million-document `textclf train` with no flags spends its time, and what its final training costs at
# other batch sizes (repository root; OUT: where logs and the profile go; needs build/news4-train.jsonl.gz, see
# vectorize.sh, and .whl/, see site.sh):
#   1. `textclf train` with no flags under cProfile (the parent process: phases, the vectorize phase's callees);
#   2. benchmarks.speed.big_batch on that run's vectors and chosen settings (BATCHES).
set -uo pipefail
OUT=${OUT:-build/gpu-big-profile}
DOCS=${DOCS:-1000000}
mkdir -p "$OUT" /tmp/seed
log="$OUT/big_profile.log"
source benchmarks/gpu/site.sh
gunzip -c build/news4-train.jsonl.gz > /tmp/seed/train.jsonl
echo "$(nproc) cores" | tee -a "$log"
[ -f /tmp/syn/train.jsonl ] || python3 -m textclf dataset synthetic /tmp/seed/train.jsonl /tmp/syn --docs "$DOCS" \
  | tee -a "$log"
export TEXTCLF_HOME=$(mktemp -d)
start=$SECONDS
python3 -m cProfile -o "$OUT/train.prof" -m textclf train /tmp/syn/train.jsonl --test /tmp/syn/test.jsonl --json \
  > "$OUT/run.json" 2> "$OUT/train.err"
echo "textclf train (cProfile): $((SECONDS - start)) s wall" | tee -a "$log"
python3 - "$OUT" <<'PY' 2>&1 | tee -a "$log"
import json, pstats, sys
out = sys.argv[1]
run = json.load(open(f"{out}/run.json"))
print("test accuracy", run["eval_accuracy"], "phases", run["phases"])
print("chosen", run["search"].get("chosen"), "ensemble", run["settings"]["ensemble"], "epochs", run["settings"]["epochs"])
stats = pstats.Stats(f"{out}/train.prof")
stats.sort_stats("cumulative").print_stats("run.py|vectorize|word_counts|workers|vector_cache|files|corpus", 45)
stats.sort_stats("tottime").print_stats(30)
PY
[ -n "${BATCHES:-64,256,1024,4096}" ] && python3 -m benchmarks.speed.big_batch "$OUT/run.json" /tmp/syn/train.jsonl \
  /tmp/syn/test.jsonl --batches "${BATCHES:-64,256,1024,4096}" 2>&1 | tee -a "$log"
