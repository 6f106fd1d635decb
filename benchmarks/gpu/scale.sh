#!/usr/bin/env bash
# Speed issue, third round (repository root; OUT: where logs go): submit-to-model latency through a warm
# daemon (news4); the 1,000,000-document synthetic corpus trained end to end by `textclf train` (hashing
# vectorizer, batch 4,096) with its peak host memory; then the whole test suite on the GPU.
set -uo pipefail
OUT=${OUT:-build/gpu-scale}
mkdir -p "$OUT"
log="$OUT/scale.log"
timeout 150 python3 -m benchmarks.daemon_latency .devdata/news4/train.jsonl --test .devdata/news4/test.jsonl \
  --jobs 3 2>&1 | grep -v -i warning | tee "$log"
python3 -m textclf dataset synthetic .devdata/news4/train.jsonl /tmp/syn --docs 1000000 | tee -a "$log"
timeout 240 python3 - <<'PY' 2>&1 | tee -a "$log"
import resource, subprocess, sys, time
command = [sys.executable, "-m", "textclf", "train", "/tmp/syn/train.jsonl", "--test", "/tmp/syn/test.jsonl",
           "--vectorizer", "hashing", "--batch-size", "4096"]
start = time.perf_counter()
done = subprocess.run(command, capture_output=True, text=True)
wall = time.perf_counter() - start
print("\n".join(done.stdout.strip().splitlines()[-2:]), done.stderr.strip().splitlines()[-1:] if done.returncode else "")
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
print(f"1M synthetic, textclf train --vectorizer hashing --batch-size 4096: exit {done.returncode}, "
      f"wall {wall:.1f} s, peak host memory {peak:.1f} GiB")
PY
timeout 330 python3 -m pytest -q -rf -p no:cacheprovider 2>&1 | tail -15 | tee -a "$log"
