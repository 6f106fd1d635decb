#!/usr/bin/env bash
# The character view's counting on the GPU machine's cores (repository root): benchmarks/vectorizing/char_counting.py on five
# training files, then cold `textclf train` with no flags from .baseline (the tree before) and this tree,
# alternating (cold_compile.sh), on CORPORA (default mr shop10: the character network chosen on both).
# Needs .devgpu/ (with unspaced/: benchmarks/corpora/unspaced_corpora.py --gzip), .whl/ and .baseline/ carried.
set -uo pipefail
source benchmarks/gpu/data.sh >/dev/null 2>&1
for name in htl waimai shop10; do
  mkdir -p /tmp/data/$name
  for split in train test; do gunzip -c .devgpu/unspaced/$name-$split.jsonl.gz > /tmp/data/$name/$split.jsonl; done
done
python3 -m benchmarks.vectorizing.char_counting /tmp/data/{trec,mr,agnews7600,htl,shop10}/train.jsonl --repeat ${REPEAT:-2}
CORPORA=${CORPORA:-mr shop10} ROUNDS=${ROUNDS:-2} bash benchmarks/gpu/cold_compile.sh
