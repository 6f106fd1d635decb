#!/usr/bin/env bash
# Sourced by the GPU run scripts (repository root): what the GPU machine lacks, from .whl/, into /tmp/site and on
# PYTHONPATH: wheels (sqlite-utils, sqlite-fts4, click-default-group, tabulate, fasttext-wheel: `pip download
# --no-deps -d .whl ...`) and site-packages trees as .tar.gz (pyarrow without its Flight and S3 libraries, which
# textclf does not use, so that the carried files stay under the device tool's 64 MiB: unzip the wheel, delete
# pyarrow/libarrow_flight*, libarrow_s3*, _flight*, _s3fs*, include/, tests/, src/, then `tar czf
# .whl/pyarrow-slim.tar.gz -C DIR .`).
mkdir -p /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for tree in .whl/*.tar.gz; do [ -f "$tree" ] && tar xzf "$tree" -C /tmp/site; done
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
