#!/usr/bin/env bash
# Where a first `textclf train` with no flags spends its wall time (CORPORA, default news4): the CLI's phase lines
# and every XLA compilation of over 0.1 s, each stamped with the milliseconds since the process started. Twice a
# corpus: "cold" (a fresh data dir: empty compilation cache) and then "fresh search" (the same data dir, --seed 1:
# a search of its own in a fresh process, so only the persistent compilation cache is warm). Vector cache off.
# Needs .devgpu/ and .whl/ carried.
source benchmarks/gpu/data.sh >/dev/null 2>&1
export TEXTCLF_VECTOR_CACHE=off PYTHONUNBUFFERED=1 JAX_LOG_COMPILES=1
for c in ${CORPORA:-news4}; do
  home=$(mktemp -d)
  for run in "cold" "fresh search"; do
    extra=""; [ "$run" = "fresh search" ] && extra="--seed 1"
    echo "== $c, $run"
    start=$(date +%s.%N)
    TEXTCLF_HOME=$home XDG_CACHE_HOME=$home/cache python3 -c "
import logging, runpy, sys, time
START = time.perf_counter()
class Stamped:  # each line written with the milliseconds since the process started
    def __init__(self, out): self.out, self.fresh = out, True
    def write(self, text):
        for part in text.splitlines(keepends=True):
            if self.fresh: self.out.write(f'{(time.perf_counter() - START) * 1e3:7.0f} ')
            self.out.write(part); self.fresh = part.endswith('\\n')
        return len(text)
    def flush(self): self.out.flush()
    def isatty(self): return False
sys.stdout, sys.stderr = Stamped(sys.stdout), Stamped(sys.stderr)
logging.basicConfig(format='%(message)s', level=logging.WARNING)
sys.argv = ['textclf', 'train', '/tmp/data/$c/train.jsonl', '--test', '/tmp/data/$c/test.jsonl'] + '$extra'.split()
runpy.run_module('textclf', run_name='__main__')
" 2>&1 | python3 -c "
import re, sys
for line in sys.stdin:
    m = re.search(r'Finished XLA compilation of (.*) in ([0-9.]+) sec', line)
    if m:
        if float(m.group(2)) > 0.1:
            print(line.split()[0], 'compiled', m.group(1), f'{float(m.group(2)):.2f} s')  # its end, its seconds
    elif not re.search(r'Finished|Compiling|jaxpr|tracing|WARNING|warn', line):
        print(line.rstrip()[:160])
"
    end=$(date +%s.%N)
    echo "wall $(python3 -c "print(round($end - $start, 1))") s"
  done
done
