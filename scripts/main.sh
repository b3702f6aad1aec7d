#!/usr/bin/env bash
# Sets up .venv (scripts/setup.sh) and runs the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/surepick demo "$@"
