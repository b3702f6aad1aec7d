#!/usr/bin/env bash
# Sets up .venv (scripts/setup.sh) and runs the main job: one simulated pick-and-place cycle of the
# nominal scenario on the MuJoCo plant, judged from the physics; prints where its report is.
# Extra arguments go to `surepick sim run` (e.g. --scenario part_offset --cycles 5). Each run replaces
# the last one in runs/main (--force).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/surepick sim run --scenario nominal --out runs/main --force "$@"
