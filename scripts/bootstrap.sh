#!/usr/bin/env bash
# Create .venv with Python >= 3.12 and install textclf (plus test tools) into it from the lock file, every
# dependency pinned with its hashes (requirements-dev.lock: `make lock` rewrites it from pyproject.toml). Idempotent.
# Finds Python 3.12 as `python3.12` on PATH, else in pyenv's versions (these machines ship it there).
set -euo pipefail
cd "$(dirname "$0")/.."

find_python() {
  for candidate in "${PYTHON:-}" python3.12 python3.13 python3; do
    [ -n "$candidate" ] || continue
    if "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
    [ -x "$candidate" ] && { echo "$candidate"; return 0; }
  done
  return 1
}

if [ ! -x .venv/bin/python ]; then
  python=$(find_python) || { echo "Error: textclf needs Python >= 3.12: install it (e.g. 'pyenv install 3.12') or set PYTHON=/path/to/python3.12" >&2; exit 1; }
  "$python" -m venv .venv
fi
stamp=.venv/.installed-$(cat pyproject.toml requirements-dev.lock | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-dev.lock
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
  touch "$stamp"
fi
