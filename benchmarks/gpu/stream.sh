#!/usr/bin/env bash
# Streaming vectorization on the 1,000,000-document synthetic corpus (repository root; OUT: where logs go):
# `textclf train --vectorizer hashing --batch-size 4096` end to end with its peak host memory, this tree
# against OLD (a copy of the packages before streaming; optional), side by side in one run.
set -uo pipefail
OUT=${OUT:-build/gpu-stream}
mkdir -p "$OUT"
log="$OUT/stream.log"
[ -f /tmp/syn/train.jsonl ] || python3 -m textclf dataset synthetic .devdata/news4/train.jsonl /tmp/syn --docs 1000000 \
  | tail -2 | tee -a "$log"
ls -la /tmp/syn | tee -a "$log"
for tree in ${OLD:+$OLD} .; do
  timeout 200 python3 - "$tree" <<'PY' 2>&1 | tee -a "$log"
import json, resource, subprocess, sys, time
command = [sys.executable, "-m", "textclf", "train", "/tmp/syn/train.jsonl", "--test", "/tmp/syn/test.jsonl",
           "--vectorizer", "hashing", "--batch-size", "4096", "--json"]
start = time.perf_counter()
done = subprocess.run(command, capture_output=True, text=True, cwd=sys.argv[1])  # `-m` imports from cwd
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
if done.returncode:
    print(done.stderr[-2000:])
summary = json.loads(done.stdout) if done.returncode == 0 else {}
phases = {k: round(v, 2) for k, v in summary.get("phases", {}).items()}
print(f"tree {sys.argv[1]}: exit {done.returncode}, wall {wall:.1f} s, peak host memory {peak:.2f} GiB, "
      f"test accuracy {summary.get('eval_accuracy')}, phases {phases}")
PY
done
