#!/usr/bin/env bash
# XLA's Triton GEMM fusions on and off for the whole process (XLA_FLAGS=--xla_gpu_enable_triton_gemm=false):
# PART=compile: a cold `textclf train news4` (fresh data dir) with JAX_LOG_COMPILES=1, on / off / on, the compile
# seconds per program name; PART=runtime: the search twice in one process (benchmarks.speed.search_steps, news4 and mr),
# the one-network MLP epoch (benchmarks.speed.multi_gpu, news4 x20, batches 64 / 1,024 / 4,096) and the CNN epoch
# (benchmarks.cnn.cnn_epoch), on then off. Needs .devgpu/ and .whl/ carried.
source benchmarks/gpu/data.sh >/dev/null 2>&1
export TEXTCLF_VECTOR_CACHE=off
if [ "${PART:-compile}" = compile ]; then
  for flags in "" "--xla_gpu_enable_triton_gemm=false" ""; do
    home=$(mktemp -d)
    start=$(date +%s.%N)
    TEXTCLF_HOME=$home XLA_FLAGS="$flags" JAX_LOG_COMPILES=1 python3 -m textclf train /tmp/data/news4/train.jsonl \
      --test /tmp/data/news4/test.jsonl > $home/out.txt 2> $home/err.txt
    end=$(date +%s.%N)
    echo "== flags '$flags': wall $(python3 -c "print(round($end - $start, 1))") s"
    grep -i "accuracy" $home/out.txt | head -2
    python3 - $home/err.txt <<'PY'
import collections, re, sys
total, n = collections.defaultdict(float), collections.Counter()
for line in open(sys.argv[1]):
    m = re.search(r"Finished XLA compilation of (.*) in ([0-9.]+) sec", line)
    if m:
        name = m.group(1).split(" with ")[0]
        total[name] += float(m.group(2))
        n[name] += 1
print(f"programs {sum(n.values())}, XLA compile {sum(total.values()):.2f} s")
for k, v in sorted(total.items(), key=lambda kv: -kv[1])[:14]:
    print(f"  {v:6.2f} s x{n[k]} {k[:110]}")
PY
  done
else
  for flags in "" "--xla_gpu_enable_triton_gemm=false"; do
    echo "=== flags '$flags'"
    XLA_FLAGS="$flags" timeout 150 python3 -m benchmarks.speed.search_steps /tmp/data/news4/train.jsonl \
      /tmp/data/mr/train.jsonl 2>&1 | grep -v -i warn
    XLA_FLAGS="$flags" timeout 150 python3 -m benchmarks.speed.multi_gpu /tmp/data/news4/train.jsonl --vectorizer tfidf \
      --repeat 20 --devices 1 --batches 64,1024,4096 --backends xla,pallas --epochs 3 2>&1 | grep "^|"
    XLA_FLAGS="$flags" timeout 120 python3 -m benchmarks.cnn.cnn_epoch --images 60000 --repeat 3 --modes scanned \
      --backends xla,pallas 2>&1 | grep -v -i warn | tail -4
  done
fi
