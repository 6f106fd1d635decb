#!/usr/bin/env bash
# Ten million synthetic documents (from news4, the corpus of big10.sh: `textclf dataset synthetic` writes the same
# files on any machine), textclf with no flags and fastText beside it on one machine. fastText (benchmarks.
# fasttext_big: EPOCHS, default 5, fastText's own default; all cores) takes longer than one 10-minute device call,
# so it starts with setsid, which lets it outlive the call while the machine is held:
#   STAGE=start bash benchmarks/gpu/fasttext10.sh   generate, time `textclf train` (benchmarks.timed_run), then
#                                                   start fastText and wait for it up to WAIT seconds
#   STAGE=wait bash benchmarks/gpu/fasttext10.sh    the next call, on the same machine: wait up to WAIT seconds more
# One after the other, never at once: the two tools do not share the cores. Needs .devgpu/ and .whl/ carried.
set -uo pipefail
source benchmarks/gpu/data.sh >/dev/null 2>&1
LOG=/tmp/fasttext10
if [ "${STAGE:-start}" = start ]; then
  echo "$(nproc) cores"
  start=$(date +%s)
  python3 -m textclf dataset synthetic /tmp/data/news4/train.jsonl /tmp/syn10 --docs 10000000 > /dev/null
  echo "generated in $(( $(date +%s) - start )) s"
  TEXTCLF_HOME=$(mktemp -d) timeout 300 python3 -m benchmarks.timed_run --label "textclf, no flags" --timeout 290 \
    --lines 30 -- python3 -m textclf train /tmp/syn10/train.jsonl --test /tmp/syn10/test.jsonl 2>&1 | grep -v -i warn
  mkdir -p $LOG
  setsid nohup python3 -m benchmarks.speed.fasttext_big /tmp/syn10/train.jsonl /tmp/syn10/test.jsonl \
    --epochs "${EPOCHS:-5}" > $LOG/out 2> $LOG/err < /dev/null &
  echo "fastText started at $(date +%T)"
fi
waited=0
while [ $waited -lt "${WAIT:-300}" ] && ! grep -q "test accuracy" $LOG/out 2>/dev/null; do
  sleep 10; waited=$(( waited + 10 ))
done
tr '\r' '\n' < $LOG/err | grep -v "^\s*$" | tail -3
cat $LOG/out
