#!/usr/bin/env bash
# One big corpus in the formats textclf reads (repository root; OUT: where logs go): a DOCS-document synthetic
# corpus sampled from news4 (needs .devgpu/, see data.sh) written as JSONL, as a headerless CSV (label, then
# text: Zhang et al.'s Yelp and DBpedia files), in fastText's format and as Parquet (one row group, and row groups
# of 65,536 rows), then `textclf train` with no flags on each (FORMATS, default "jsonl csv fasttext parquet
# parquet-groups"), timed end to end with its peak host memory, from
# each tree of VARIANTS in turn (default "this=.": this tree; "before=.baseline after=." carries .baseline/ too).
set -uo pipefail
OUT=${OUT:-build/gpu-formats}
DOCS=${DOCS:-1000000}
mkdir -p "$OUT"
log="$OUT/formats.log"
source benchmarks/gpu/data.sh
synthetic_corpus /tmp/syn "$DOCS" | tee -a "$log"
python3 - <<'PY'
import csv, json
import pyarrow as pa, pyarrow.parquet as pq
for split in ("train", "test"):
    labels, texts = [], []
    with open(f"/tmp/syn/{split}.jsonl") as source:
        for line in source:
            record = json.loads(line)
            labels.append(record["label"]); texts.append(record["text"])
    with open(f"/tmp/syn/{split}.csv", "w", newline="") as out:
        csv.writer(out, quoting=csv.QUOTE_ALL).writerows(zip(labels, texts))
    with open(f"/tmp/syn/{split}.ft", "w") as out:
        out.writelines(f"__label__{label} {' '.join(text.split())}\n" for label, text in zip(labels, texts))
    table = pa.table({"text": texts, "label": labels})
    pq.write_table(table, f"/tmp/syn/{split}.parquet")  # pyarrow's default: one row group of up to 1Mi rows
    pq.write_table(table, f"/tmp/syn/{split}.groups.parquet", row_group_size=65536)
PY
ls -la /tmp/syn | tee -a "$log"
declare -A suffix=([jsonl]=jsonl [csv]=csv [fasttext]=ft [parquet]=parquet [parquet-groups]=groups.parquet)
for format in ${FORMATS:-jsonl csv fasttext parquet parquet-groups}; do
  s=${suffix[$format]}
  for variant in ${VARIANTS:-this=.}; do  # NAME=TREE, e.g. "before=.baseline after=." (a git archive beside this one)
    name=${variant%%=*}; tree=${variant#*=}
    (cd "$tree" && TEXTCLF_HOME=$(mktemp -d) PYTHONPATH=/tmp/site:$PWD python3 -m benchmarks.timed_run \
      --label "$format $name" --timeout "${TOOL_TIMEOUT:-240}" --lines 2 -- \
      python3 -m textclf train /tmp/syn/train.$s --test /tmp/syn/test.$s) 2>&1 | tee -a "$log"
  done
done
