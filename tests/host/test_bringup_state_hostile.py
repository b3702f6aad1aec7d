# A damaged DIR/bringup-state.json (a hand edit, another tool): a step's result, "board" or
# "restore" that is not a JSON object. `surepick bringup --list` (no board needed) must say so in
# one line naming the file and the way out, exit 2, no traceback, and leave the file as it was:
# it holds the steps a person already confirmed.
import json

import pytest

from tests.support.cli import surepick

GOOD = {"format": 1, "arm": "reference", "steps": {"estop": {"closed": True}}}
DAMAGE = {
    "a step's result a number": ({"steps": {"estop": 5}}, "step 'estop'"),
    "a step's result a list": ({"steps": {"switch": [1]}}, "step 'switch'"),
    "a step's result null": ({"steps": {"estop": None}}, "step 'estop'"),
    "board a list": ({"board": [1]}, "board"),
    "restore a string": ({"restore": "fast"}, "restore"),
}


@pytest.mark.parametrize("what", sorted(DAMAGE))
def test_a_damaged_state_is_one_line_and_kept(tmp_path, what):
    change, needle = DAMAGE[what]
    state = tmp_path / "bringup-state.json"
    state.write_text(json.dumps(dict(GOOD, **change)))
    before = state.read_bytes()
    r = surepick("bringup", "--out", tmp_path, "--list")
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and len(err) == 1, r.stderr
    assert str(state) in err[0] and needle in err[0] and "move it away" in err[0], err
    assert state.read_bytes() == before


def test_a_good_state_still_lists(tmp_path):
    (tmp_path / "bringup-state.json").write_text(json.dumps(GOOD))
    r = surepick("bringup", "--out", tmp_path, "--list")
    assert r.returncode == 0, r.stderr
    assert any(line.split() == ["estop", "confirmed"] for line in r.stdout.splitlines()), r.stdout
