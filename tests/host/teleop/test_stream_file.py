# The recorded stream format (issue 14's interface): JSONL and CSV round trips, NaN and lost
# poses kept as such, and bad input refused with the file and line named.
import math

import numpy as np
import pytest

from surepick.host.teleop.sample import Buttons, Sample
from surepick.host.teleop.sources import SourceError, open_source
from surepick.host.teleop.sources.stream_file import read_csv, read_jsonl, write_csv, write_jsonl


def _samples():
    pose = np.arange(12, dtype=float).reshape(3, 4) / 10.0
    nan_pose = pose.copy()
    nan_pose[2, 3] = math.nan
    return [Sample(0.0, pose, Buttons(True, False, 0.25)), Sample(0.011, None, Buttons(True, True, 1.0)),
            Sample(0.022, nan_pose, Buttons(False, False, 0.0))]


@pytest.mark.parametrize("ext,write,read", [("jsonl", write_jsonl, read_jsonl), ("csv", write_csv, read_csv)])
def test_round_trip_keeps_nan_and_lost_poses(tmp_path, ext, write, read):
    p = tmp_path / ("s." + ext)
    write(p, _samples())
    got = read(str(p))
    assert [s.t for s in got] == [0.0, 0.011, 0.022]
    assert np.array_equal(got[0].pose, _samples()[0].pose)
    assert got[1].pose is None
    assert math.isnan(got[2].pose[2, 3]) and got[2].pose[0, 1] == 0.1
    assert [s.buttons for s in got] == [s.buttons for s in _samples()]
    assert open_source(str(p)).samples[0].buttons.grip == 0.25


def test_the_issue_example_line_reads(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"t": 1.5, "pose": [1, 0, 0, 0.1, 0, 1, 0, 1.2, 0, 0, 1, -0.3], '
                 '"buttons": {"clutch": true, "fine": false, "grip": 0.5}}\n'
                 '{"t": 1.51, "pose": [NaN, 0, 0, 0.1, 0, 1, 0, 1.2, 0, 0, 1, -0.3], "buttons": {"clutch": true}}\n'
                 '{"t": 1.52}\n')
    s = read_jsonl(str(p))
    assert s[0].pose[1, 3] == 1.2 and s[0].buttons == Buttons(True, False, 0.5)
    assert math.isnan(s[1].pose[0, 0]) and s[2].pose is None and s[2].buttons == Buttons()


@pytest.mark.parametrize("line,words", [
    ('{"t": 0.5}\n{"t": 0.4}', ["s.jsonl:2", "back in time"]),
    ('{"t": 0, "pose": [1, 2]}', ["s.jsonl:1", "12 numbers"]),
    ('{"t": 0, "buttons": {"grip": 2}}', ["s.jsonl:1", "grip", "0..1"]),
    ('{"t": 0, "buttons": {"clutch": 1}}', ["s.jsonl:1", "clutch", "true or false"]),
    ('{"t": 0, "posse": []}', ["s.jsonl:1", "unknown key", "posse"]),
    ('{"pose": null}', ["s.jsonl:1", "missing t"]),
    ('not json', ["s.jsonl:1", "not JSON"]),
])
def test_bad_lines_are_named(tmp_path, line, words):
    p = tmp_path / "s.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(SourceError) as e:
        open_source(str(p))
    for w in words:
        assert w in str(e.value)


def test_bad_csv_header_and_unknown_extension(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("time,x\n0,1\n")
    with pytest.raises(SourceError, match="s.csv:1: the header must be"):
        open_source(str(p))
    q = tmp_path / "s.txt"
    q.write_text("")
    with pytest.raises(SourceError, match="ends in .jsonl or .csv"):
        open_source(str(q))
