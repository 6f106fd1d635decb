#!/usr/bin/env bash
# Big corpora (repository root; OUT: where logs go): a DOCS-document synthetic corpus sampled from news4 (needs
# .devgpu/, see data.sh), then each of TOOLS trained on it with no flags, timed end to end with its peak host
# memory: "textclf" (`textclf train`), "fasttext" (the bench's peer, its tutorial settings, all cores).
set -uo pipefail
OUT=${OUT:-build/gpu-big}
DOCS=${DOCS:-1000000}
mkdir -p "$OUT"
log="$OUT/big.log"
source benchmarks/gpu/data.sh
[ -f /tmp/syn/train.jsonl ] || python3 -m textclf dataset synthetic /tmp/data/news4/train.jsonl /tmp/syn --docs "$DOCS" \
  | tee -a "$log"
for tool in ${TOOLS:-textclf fasttext}; do
  python3 - "$tool" "${TOOL_TIMEOUT:-400}" <<'PY' 2>&1 | tee -a "$log"
import resource, subprocess, sys, time
tool = sys.argv[1]
if tool == "textclf":
    command = [sys.executable, "-m", "textclf", "train", "/tmp/syn/train.jsonl", "--test", "/tmp/syn/test.jsonl"]
else:
    command = [sys.executable, "-m", "textclf.frontends.bench_tools", tool, "/tmp/syn/train.jsonl", "/tmp/syn/test.jsonl"]
start = time.perf_counter()
try:
    done = subprocess.run(command, capture_output=True, text=True, timeout=float(sys.argv[2]))
except subprocess.TimeoutExpired as stopped:  # run() killed the child
    done = subprocess.CompletedProcess(command, "timeout", stopped.stdout or b"", stopped.stderr or b"")
    done.stdout, done.stderr = (s.decode() if isinstance(s, bytes) else s for s in (done.stdout, done.stderr))
wall = time.perf_counter() - start
print("\n".join(done.stdout.strip().splitlines()[-3:]))
if done.returncode:
    print("\n".join(done.stderr.strip().splitlines()[-8:]))
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
print(f"{tool}: exit {done.returncode}, wall {wall:.1f} s, peak host memory {peak:.1f} GiB", flush=True)
PY
done
