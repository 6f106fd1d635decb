#!/usr/bin/env bash
# Cold `textclf train` with no flags (a fresh data dir each, so an empty compilation cache) in VARIANTS, each
# "NAME=TREE[:XLA_FLAGS]" (default: .baseline, a `git archive` of the tree before, and this tree), alternating
# ROUNDS times (default 2) per corpus (CORPORA, default news4 trec mr), with JAX_LOG_COMPILES=1: wall seconds, the
# XLA compile seconds summed over the programs, the test accuracy with the run's phases, and the search's choice.
# E.g. VARIANTS="before=.baseline after=. after-O1=.:--xla_backend_optimization_level=1" adds this tree with every
# program compiled at LLVM's -O1. Needs .devgpu/, .whl/ and .baseline/ carried.
source benchmarks/gpu/data.sh >/dev/null 2>&1
export TEXTCLF_VECTOR_CACHE=off
for c in ${CORPORA:-news4 trec mr}; do
  for round in $(seq "${ROUNDS:-2}"); do
    for variant in ${VARIANTS:-before=.baseline after=.}; do
      name=${variant%%=*}; spec=${variant#*=}; tree=${spec%%:*}; flags=""
      [[ $spec == *:* ]] && flags=${spec#*:}
      home=$(mktemp -d)
      start=$(date +%s.%N)
      (cd $tree && XLA_FLAGS="$flags" TEXTCLF_HOME=$home XDG_CACHE_HOME=$home/cache PYTHONPATH=/tmp/site:$PWD JAX_LOG_COMPILES=1 python3 -m textclf \
        train /tmp/data/$c/train.jsonl --test /tmp/data/$c/test.jsonl > $home/out.txt 2> $home/err.txt)
      end=$(date +%s.%N)
      compiled=$(python3 -c "
import re
t = [float(m.group(1)) for l in open('$home/err.txt') for m in [re.search(r'Finished XLA compilation of .* in ([0-9.]+) sec', l)] if m]
print(f'{len(t)} programs, XLA compile {sum(t):.2f} s')")
      echo "$c $name wall $(python3 -c "print(round($end - $start, 1))") s; $compiled; $(grep -i 'test accuracy' $home/out.txt)"
      (cd $tree && TEXTCLF_HOME=$home PYTHONPATH=/tmp/site:$PWD python3 -m textclf runs show 1 2>/dev/null \
        | grep -o "chose.*" | head -1)
    done
  done
done
