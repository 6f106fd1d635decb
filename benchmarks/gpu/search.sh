#!/usr/bin/env bash
# Model search on the GPU machine (repository root; OUT: where logs go): the search's and the K-model step's
# tests on the GPU, then `textclf bench` on the five corpora with textclf's defaults (search on) and the peers.
# Needs .devgpu/ (news20 train/test JSONL gzipped, agnews7600/, trec/, mr/ folders) and .whl/ (sqlite-utils,
# sqlite-fts4, click-default-group, fasttext-wheel) carried.
set -uo pipefail
OUT=${OUT:-build/gpu-search}
mkdir -p "$OUT" /tmp/data/news20 /tmp/data/news4
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
wc -l /tmp/data/*/*.jsonl | tee "$OUT/search.log"
[ "${SKIP_TESTS:-}" ] || python3 -m pytest -q -x -p no:cacheprovider tests/textclf/test_search.py 2>&1 | tail -3 | tee -a "$OUT/search.log"
timeout ${BENCH_TIMEOUT:-540} python3 -m textclf bench ${TASKS:-news4 agnews7600 news20 trec mr} --data /tmp/data \
  --out "$OUT/bench.md" --tools ${TOOLS:-textclf-pallas,fasttext,sklearn-sgd,sklearn-svm,sklearn-cnb} 2>&1 \
  | grep -v -i warning | tee -a "$OUT/search.log"
# The runs database (every trial of every search: `textclf runs show ID --db runs.db` prints a leaderboard).
find "$TEXTCLF_HOME" -name '*.db' -exec cp {} "$OUT/" \; 2>/dev/null || true
