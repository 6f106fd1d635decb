#!/usr/bin/env bash
# The CNN through `textclf train`, XLA and Pallas alternating twice, compile included (repository root; carry .whl):
# 60,000 / 10,000 synthetic 28x28 images in Fashion-MNIST's IDX files (10 classes, each a bright band of rows on
# noise) under /tmp/fm, then `textclf train /tmp/fm --model cnn --backend B --json` with the default settings, each
# run with an empty data dir so that each compiles cold; prints each run's test accuracy, phases and wall time.
source benchmarks/gpu/site.sh
python3 - <<'PY'
import gzip, pathlib, struct

import numpy as np

root = pathlib.Path("/tmp/fm")
root.mkdir(exist_ok=True)
rng = np.random.default_rng(0)


def write(name, array):
    with gzip.open(root / name, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, 8, array.ndim) + b"".join(struct.pack(">I", d) for d in array.shape))
        f.write(array.astype(np.uint8).tobytes())


for split, n in (("train", 60000), ("t10k", 10000)):
    labels = rng.integers(0, 10, n)
    images = rng.integers(0, 90, (n, 28, 28))
    for c in range(10):
        images[labels == c, 2 * c + 4: 2 * c + 7, :] += 120
    write(f"{split}-images-idx3-ubyte.gz", images)
    write(f"{split}-labels-idx1-ubyte.gz", labels)
PY
for backend in ${BACKENDS:-xla pallas xla pallas}; do
  export TEXTCLF_HOME=$(mktemp -d)
  /usr/bin/time -f "wall %e s" python3 -m textclf train /tmp/fm --model cnn --backend "$backend" --json 2>&1 \
    | grep -v -i warning | python3 -c "
import json, sys
text = sys.stdin.read()
run = json.loads(text[text.find('{'):text.rfind('}') + 1])
print('$backend', {key: run.get(key) for key in ('eval_accuracy', 'phases')})
print(text[text.rfind('}') + 1:].strip())"
done
