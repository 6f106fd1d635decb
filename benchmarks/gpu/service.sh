#!/usr/bin/env bash
# The service load benchmark on the GPU machine (BENCHMARKS.md, "Daemon and service"): an agnews7600 model
# trained by the daemon, then `benchmarks.service_load` with 1, 4, 8 and 12 server processes, a new version
# published during the many-clients case. Needs .whl/ and .whlserve/ (the HTTP stack's wheels) and .devgpu/.
set -euo pipefail
source benchmarks/gpu/data.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whlserve/*.whl
nproc; python3 -c "import fastapi, uvicorn, httptools, uvloop, aiohttp; print('fastapi', fastapi.__version__, 'uvicorn', uvicorn.__version__)"
export TEXTCLF_HOME=/tmp/service-home
python3 -m textclf submit /tmp/data/agnews7600/train.jsonl --name agnews --test /tmp/data/agnews7600/test.jsonl
python3 -m textclf daemon --once
for workers in ${WORKERS:-1 4 8 12}; do
  echo "## server processes: $workers"
  python3 -m benchmarks.service_load --db $TEXTCLF_HOME/runs.db --model agnews --texts /tmp/data/agnews7600/test.jsonl \
    --workers "$workers" --publish-during 2>&1 | grep -v -E "INFO|^Terminated"
done
