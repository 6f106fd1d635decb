#!/usr/bin/env bash
# The service load benchmark on the GPU machine (BENCHMARKS.md, "Daemon and service"): an agnews7600 model
# trained by the daemon, then `benchmarks.service.service_load` for each SERVER:CLIENT process count in CONFIGS, a new version
# published during the many-clients case. Needs .whl/ and .whlserve/ (the HTTP stack's wheels) and .devgpu/.
set -euo pipefail
source benchmarks/gpu/data.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whlserve/*.whl
lscpu | grep -E "^(Model name|Thread|Core|Socket)"; nproc; python3 -c "import fastapi, uvicorn, httptools, uvloop, aiohttp; print('fastapi', fastapi.__version__, 'uvicorn', uvicorn.__version__)"
export TEXTCLF_HOME=/tmp/service-home
python3 -m textclf submit /tmp/data/agnews7600/train.jsonl --name agnews --test /tmp/data/agnews7600/test.jsonl
python3 -m textclf daemon --once
for config in ${CONFIGS:-1:8 8:8 8:4 12:4 16:4}; do
  workers=${config%%:*} processes=${config##*:}
  echo "## server processes: $workers, client processes: $processes"
  python3 -m benchmarks.service.service_load --db $TEXTCLF_HOME/runs.db --model agnews --texts /tmp/data/agnews7600/test.jsonl \
    --workers "$workers" --processes "$processes" --publish-during 2>&1 | grep -v -E "INFO|^Terminated"
done
# A before/after in one run: the same cases without the mid-run publish, served by this tree and by another
# (BASELINE: a folder holding it), alternating ROUNDS times; the baseline trains its own agnews model into its own
# data dir, so a database of this tree's newer schema is never handed to it.
if [ -n "${BASELINE:-}" ]; then
  (cd "$BASELINE" && export TEXTCLF_HOME=/tmp/service-home-baseline PYTHONPATH=/tmp/site:$PWD \
    && python3 -m textclf submit /tmp/data/agnews7600/train.jsonl --name agnews --test /tmp/data/agnews7600/test.jsonl \
    && python3 -m textclf daemon --once)
  for round in $(seq "${ROUNDS:-2}"); do
    for config in ${BASELINE_CONFIGS:-12:4}; do
      workers=${config%%:*} processes=${config##*:}
      echo "## this tree, no publish, server processes: $workers, client processes: $processes (round $round)"
      python3 -m benchmarks.service.service_load --db $TEXTCLF_HOME/runs.db --model agnews --texts /tmp/data/agnews7600/test.jsonl \
        --workers "$workers" --processes "$processes" 2>&1 | grep -v -E "INFO|^Terminated"
      echo "## baseline tree, server processes: $workers, client processes: $processes (round $round)"
      (cd "$BASELINE" && TEXTCLF_HOME=/tmp/service-home-baseline PYTHONPATH=/tmp/site:$PWD python3 -m benchmarks.service.service_load \
        --db /tmp/service-home-baseline/runs.db --model agnews --texts /tmp/data/agnews7600/test.jsonl --workers "$workers" \
        --processes "$processes" 2>&1 | grep -v -E "INFO|^Terminated")
    done
  done
fi
