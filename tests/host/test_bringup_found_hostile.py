# Bring-up adds each cycle step's readings to DIR/found.json (host/bringup/finish.note_found). A
# damaged or missing found.json must not end the step in a traceback after its cycle ran (the
# readings would be lost with it): note_found says why and leaves the file as it was.
import json

import pytest

from surepick.host.bringup.finish import note_found

READINGS = {"closed_ma": 41.0, "squeeze_ma": 230.5}


@pytest.mark.parametrize("content", [b"", b"{\"servos\": [1, 2", b"\xff\xfe\x00garbage", b"[1, 2, 3]",
                                     b"{\"gripper\": 5}", b"\"text\""])
def test_a_damaged_found_json_is_named_and_left_as_it_was(tmp_path, content):
    path = tmp_path / "found.json"
    path.write_bytes(content)
    why = note_found(str(path), "current", READINGS)
    assert isinstance(why, str) and why
    assert path.read_bytes() == content
    assert [p.name for p in tmp_path.iterdir()] == ["found.json"]


def test_a_missing_found_json_is_named(tmp_path):
    why = note_found(str(tmp_path / "found.json"), "current", READINGS)
    assert "found.json" in why
    assert list(tmp_path.iterdir()) == []


def test_the_readings_join_what_the_write_step_wrote(tmp_path):
    path = tmp_path / "found.json"
    written = {"servos": {"shoulder": {"zero_us": 1480}}, "gripper": {"pot": {"closed_counts": 812}}}
    path.write_text(json.dumps(written))
    assert note_found(str(path), "current", READINGS) is None
    d = json.loads(path.read_text())
    assert d["servos"] == written["servos"]
    assert d["gripper"] == {"pot": {"closed_counts": 812}, "current": READINGS}
