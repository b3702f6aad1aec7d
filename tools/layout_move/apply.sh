#!/usr/bin/env bash
# Applies the pending layout move (tools/layout_move/move.py says what it does) as two commits.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
cp "$here/move.py" "$here/manual.patch" "$tmp/"
cd "$(git rev-parse --show-toplevel)"
git rm -rq tools/layout_move
python3 "$tmp/move.py"
git rm -q --cached surepick/__init__.py 2>/dev/null || true
rm -rf surepick
git add -A
git commit -qm "layout: the card's top-level folders (mechanical: imports and paths rewritten)"
git am -3 "$tmp/manual.patch"
echo "left to check by hand (paths worked out from a file's own place, dynamic module names):"
grep -rn 'REPO / "surepick"\|package_file("\(vboard\|engines\|records\|teleop\|cli\|arms\)"\|IMPORT_ROOT\|from surepick import [a-z]\|REPO / "bench"\|parents\[2\]' \
    --include=*.py firmware shared_fsm sim host tests tools || true
