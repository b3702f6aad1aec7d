# A run record whose file was cut mid-write (a power cut during an append): cut at every byte of
# the last rows of ticks.csv, events.csv and cycles.jsonl, it is either refused with one line
# naming the file and the torn line, or (cut exactly at a line's end: whole rows only) read with
# every number equal to the original's. Never a number cut short and read as whole ("1500" as
# "15"). The expected rows come from the original file parsed here with the csv module.
import csv
import io
import shutil

import pytest

from surepick.host.records import runrecord
from tests.support.cli import surepick

LAST_ROWS = 3


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    d = tmp_path_factory.mktemp("torn") / "run"
    r = surepick("sim", "run", "--scenario", "nominal", "--seed", "3", "--out", d, "--no-plots", timeout=300)
    assert r.returncode == 0, r.stderr
    for extra in ("report.json", "trajectory.csv"):
        (d / extra).unlink()
    return d


def _cut(record, tmp_path, name, data, at):
    d = tmp_path / "cut"
    if d.exists():
        shutil.rmtree(d)
    shutil.copytree(record, d)
    (d / name).write_bytes(data[:at])
    return d


def _int_rows(text):
    return [[int(c) for c in row] for row in list(csv.reader(io.StringIO(text)))[1:]]


@pytest.mark.parametrize("name", ["ticks.csv", "events.csv", "cycles.jsonl"])
def test_a_cut_at_every_byte_of_the_last_rows_is_refused_or_read_whole(record, tmp_path, name):
    data = (record / name).read_bytes()
    lines = data.splitlines(keepends=True)
    assert all(line.endswith(b"\n") for line in lines)
    start = len(data) - sum(len(line) for line in lines[-LAST_ROWS:])
    ends = set()
    at = start
    for line in lines[-LAST_ROWS:]:
        ends.add(at)
        at += len(line)
    refused = whole = 0
    for at in range(start, len(data)):
        d = _cut(record, tmp_path, name, data, at)
        torn_line = data[:at].count(b"\n") + 1
        try:
            rec = runrecord.load(d)
        except runrecord.RunRecordError as e:
            msg = str(e)
            assert "\n" not in msg and "Traceback" not in msg
            if at in ends:       # whole lines: refused only for what they lack (a cycle's rows)
                assert "line %d is cut short" % torn_line not in msg, (at, msg)
            else:
                assert msg.startswith("%s line %d is cut short" % (d / name, torn_line)), (at, msg)
            refused += 1
            continue
        assert at in ends, "a cut at byte %d of %s (inside line %d) was read as whole" % (at, name, torn_line)
        kept = data[:at].decode()
        if name == "ticks.csv":          # every number read is the original's
            want = _int_rows(kept)
            got = rec.ticks.tolist()
            assert got == want[:len(got)] and len(got) == len(want)
        whole += 1
    assert refused >= len(data) - start - LAST_ROWS


def test_compare_refuses_a_torn_ticks_file_in_one_line(record, tmp_path):
    data = (record / "ticks.csv").read_bytes()
    d = _cut(record, tmp_path, "ticks.csv", data, len(data) - 3)     # inside the last row's last number
    r = surepick("compare", record, d, "--out", tmp_path / "cmp", timeout=120)
    line = data[:len(data) - 3].count(b"\n") + 1
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "ticks.csv line %d is cut short" % line in r.stderr and "delete that line" in r.stderr
    assert not (tmp_path / "cmp").exists()


@pytest.mark.parametrize("name", ["ticks.csv", "events.csv", "cycles.jsonl", "run.json"])
def test_a_record_file_past_its_bound_is_refused_unread(record, tmp_path, name):
    # a sparse file one byte past the bound: refused from its size, in 1 GiB of address space
    # (reading it would need more), in one line naming it
    d = tmp_path / "big"
    shutil.copytree(record, d)
    with open(d / name, "r+b") as f:
        f.truncate(runrecord.MAX_BYTES[name] + 1)
    import subprocess
    from tests.support.cli import SUREPICK_BIN
    r = subprocess.run(["prlimit", "--as=%d" % (1 << 30), SUREPICK_BIN, "replay", str(d), "--quiet"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr[-2000:]
    assert "%s is %d MiB, larger than a run record's %s may be (%d MiB" % (
        d / name, (runrecord.MAX_BYTES[name] + 1) >> 20, name, runrecord.MAX_BYTES[name] >> 20) in r.stderr, r.stderr
