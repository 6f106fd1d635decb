#!/usr/bin/env bash
# Accuracy benchmark of BENCHMARKS.md: build news4 and agnews7600 from ../shared/data, train on each with the
# default settings, and time the whole `textclf train` command. Uses a throwaway data dir.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${TEXTCLF_SHARED:-../shared}/data
work=${BENCH_DIR:-build/bench}
mkdir -p "$work"
export TEXTCLF_HOME="$work/home"
textclf=${TEXTCLF:-.venv/bin/textclf}
"$textclf" dataset news4 "$shared/20news-bydate" "$work/news4"
"$textclf" dataset agnews7600 "$shared/ag_news/test.csv" "$work/agnews7600"
for task in news4 agnews7600; do
  echo "== $task"
  /usr/bin/time -f "wall %e s, peak RSS %M KB" "$textclf" train "$work/$task/train.jsonl" --test "$work/$task/test.jsonl" "$@"
done
