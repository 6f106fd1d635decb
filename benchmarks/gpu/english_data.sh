#!/usr/bin/env bash
# Sourced by the GPU run scripts of the English corpora (repository root).
# english_corpora DIR: the seven English corpora beyond ../shared (sst2 sst5 subj cr mpqa r8 webkb) as
# DIR/NAME/{train,test}.jsonl, from .devgpu/english (benchmarks/corpora/english_corpora.py --gzip writes them).
english_corpora() {
  for name in sst2 sst5 subj cr mpqa r8 webkb; do
    mkdir -p "$1/$name"
    for split in train test; do gunzip -c .devgpu/english/$name-$split.jsonl.gz > "$1/$name/$split.jsonl"; done
  done
}

