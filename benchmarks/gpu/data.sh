#!/usr/bin/env bash
# Sourced by the GPU run scripts (repository root): site.sh (the packages of .whl/ on PYTHONPATH), and the five
# corpora of the accuracy benchmark as train/test JSONL under /tmp/data (news4 derived from news20) from .devgpu/.
source benchmarks/gpu/site.sh
mkdir -p /tmp/data/news20 /tmp/data/news4
export TEXTCLF_HOME=${TEXTCLF_HOME:-/tmp/textclf-home}
gunzip -c .devgpu/news20-train.jsonl.gz > /tmp/data/news20/train.jsonl
gunzip -c .devgpu/news20-test.jsonl.gz > /tmp/data/news20/test.jsonl
cp -r .devgpu/agnews7600 .devgpu/trec .devgpu/mr /tmp/data/
# news4: the 20 Newsgroups documents of the comp, rec, sci and talk groups, labelled by that top-level name
# (what `textclf dataset news4` writes from the raw folders).
python3 - <<'PY'
import json
for split in ("train", "test"):
    with open(f"/tmp/data/news20/{split}.jsonl") as src, open(f"/tmp/data/news4/{split}.jsonl", "w") as dst:
        for line in src:
            record = json.loads(line)
            top = record["label"].split(".")[0]
            if top in ("comp", "rec", "sci", "talk"):
                dst.write(json.dumps({"text": record["text"], "label": top}) + "\n")
PY

# synthetic_corpus DIR DOCS: a DOCS-document synthetic corpus sampled from news4 in DIR (train.jsonl, test.jsonl;
# `textclf dataset synthetic`), made unless DIR already holds one; prints the generator's last line.
synthetic_corpus() {
  [ -f "$1/train.jsonl" ] || python3 -m textclf dataset synthetic /tmp/data/news4/train.jsonl "$1" --docs "$2" 2>&1 \
    | tail -1
}

# before_after NAME LABEL [OPTION...]: `textclf train` with no flags (and the options) on /tmp/data/NAME, from
# .baseline (the tree before a change: `git worktree add .baseline COMMIT`) then from this tree
# (benchmarks/speed/search_budget.py: the search's seconds, choice and test accuracy); each row printed and added
# to $OUT/before_after.log, opening with "before LABEL" or "after LABEL".
before_after() {
  local name=$1 label=$2 v dir
  shift 2
  for v in before after; do
    if [ $v = before ]; then dir=.baseline; else dir=.; fi
    (cd $dir && PYTHONPATH=/tmp/site:$PWD timeout ${RUN_TIMEOUT:-120} python3 -m benchmarks.speed.search_budget \
      /tmp/data --corpora "$name" "$@" 2>&1 | grep "^| $name" | sed "s/^/$v $label/" | tee -a "$OUT/before_after.log")
  done
}
