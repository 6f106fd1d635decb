#!/usr/bin/env bash
# Sourced by the GPU run scripts (repository root): the wheels of .whl/ on PYTHONPATH (what the GPU machine
# lacks: pyarrow, sqlite-utils, sqlite-fts4, click-default-group, tabulate, fasttext-wheel; `pip download --no-deps
# -d .whl ...`), and the five corpora of the accuracy benchmark as train/test JSONL under /tmp/data (news4
# derived from news20) from .devgpu/.
mkdir -p /tmp/data/news20 /tmp/data/news4
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TEXTCLF_HOME=${TEXTCLF_HOME:-/tmp/textclf-home}
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
