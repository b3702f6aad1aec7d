#!/usr/bin/env bash
# Sets up .venv (scripts/setup.sh) and runs every test.
#   bash scripts/test.sh            full suite, including the `slow` tier (what CI runs)
#   bash scripts/test.sh --quick    skip the `slow` tier (edit-test loop)
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
args=()
if [ "${1:-}" = "--quick" ]; then
    shift
    args+=(-m "not slow")
    export SUREPICK_QUICK=1
fi
exec .venv/bin/python -m pytest -n 2 --timeout 900 --durations=40 "${args[@]}" "$@"
