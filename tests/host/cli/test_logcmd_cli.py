# `surepick log export|stats` on a store filled through the Store API (no board needed):
# formats, --since, the statistics, and clear errors (exit 2) for bad input.
import csv
import io
import json
import subprocess

import pytest

from surepick.host.monitor.export import parse_since
from surepick.host.monitor.stats import summarise
from surepick.host.monitor.store import Store
from surepick.shared_fsm import codes
from surepick.shared_fsm import states
from tests.support.cli import SUREPICK_BIN as SUREPICK


def ev(kind, frm, to, reason):
    return (0, 100, kind, frm, to, reason, 1, 23000, 1, 250, 0, 7)


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "m.db")
    s = Store(path)
    s.touch_board("pico-1")
    recs = [(1, 3, (0, 0, 1, 1, 0, -1, 0, 0, 0, 0, 0, 0))]      # boot 1
    seq = 2
    for cycle in range(7):
        if cycle in (2, 5):
            recs.append((seq, 2, ev(codes.K_FAULT, states.VERIFY, states.IDLE, codes.F_GRASP_FAILED)))
        else:
            recs.append((seq, 1, ev(codes.K_TRANSITION, states.PLACE, states.IDLE, codes.R_PLACED)))
        seq += 1
    recs.append((seq, 2, ev(codes.K_FAULT, states.LIFT, states.IDLE, codes.F_DROPPED)))
    assert s.add_records("pico-1", 0, recs) == len(recs)
    assert s.add_records("pico-1", 0, recs) == 0          # stored exactly once
    s.close()
    return path


def run(*args):
    return subprocess.run([SUREPICK, "log", *args], capture_output=True, text=True, timeout=30)


def test_export_csv_and_json(db):
    r = run("export", "--db", db, "--format", "csv")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [int(x["seq"]) for x in rows] == list(range(1, 10))
    assert rows[3]["type"] == "fault" and rows[3]["reason_name"] == "GRASP_FAILED"
    assert rows[3]["from"] == "VERIFY"
    r = run("export", "--db", db, "--format", "json", "--since", "seq:7")
    data = json.loads(r.stdout)
    assert [d["seq"] for d in data] == [8, 9] and data[1]["reason_name"] == "DROPPED"
    assert json.loads(run("export", "--db", db, "--format", "json", "--since", "1h").stdout)
    assert json.loads(run("export", "--db", db, "--format", "json", "--since", "2999-01-01").stdout) == []


def test_stats(db):
    r = run("stats", "--db", db, "--json")
    s = json.loads(r.stdout)
    assert s["faults_by_code"] == {"GRASP_FAILED": 2, "DROPPED": 1}
    assert s["faults_by_state"] == {"VERIFY": 2, "LIFT": 1}
    assert s["cycles_between_faults"]["faults"] == 3
    assert s["cycles_between_faults"]["min"] == 1 and s["cycles_between_faults"]["max"] == 2
    assert s["cycles_ok"] == 5 and s["cycles_failed"] == 3
    assert s["success_rate_by_boot"]["1"]["rate"] == 62.5
    text = run("stats", "--db", db).stdout
    assert "faults by code" in text and "GRASP_FAILED" in text


def test_bad_input_is_a_clear_error(db, tmp_path):
    r = run("export", "--db", db, "--format", "xml")
    assert r.returncode == 2 and "unknown format 'xml'" in r.stderr
    r = run("stats", "--db", str(tmp_path / "missing.db"))
    assert r.returncode == 2 and "no database at" in r.stderr
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not sqlite at all" * 100)
    r = run("stats", "--db", str(junk))
    assert r.returncode == 2 and "not a surepick monitor database" in r.stderr
    r = run("export", "--db", db, "--format", "csv", "--since", "yesterday-ish")
    assert r.returncode == 2 and "--since" in r.stderr
    assert run("export", "--db", db).returncode == 2      # --format is required (argparse)


def test_parse_since():
    assert parse_since("seq:12") == ("seq", 12)
    assert parse_since("30m", now=10000.0) == ("time", 10000.0 - 1800)
    with pytest.raises(ValueError):
        parse_since("seq:x")


def test_summarise_empty():
    s = summarise([])
    assert s["success_rate"] is None and s["faults_by_code"] == {}


def _damage_records(path):
    # A torn page where the records' table starts (a crash, a disk, a copy cut short): the
    # schema and its meta row still read, so the file opens and fails only when records are read.
    import sqlite3
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name='records'").fetchone()[0]
    size = con.execute("PRAGMA page_size").fetchone()[0]
    con.close()
    with open(path, "r+b") as f:
        f.seek((root - 1) * size)
        f.write(b"\xa5" * size)


@pytest.mark.parametrize("args", [("stats",), ("export", "--format", "csv"), ("export", "--format", "json")])
def test_a_damaged_store_is_a_clear_error(db, args):
    # Opening reads only the meta row: the damage shows when the records are read, and must then
    # be told like any bad file (exit 2, one line naming the file and the way out), not a traceback.
    _damage_records(db)
    r = run(*args, "--db", db)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert db in r.stderr and "damaged" in r.stderr and ".recover" in r.stderr and "--db" in r.stderr


def test_a_damaged_store_exported_as_a_run_record_leaves_no_folder(db, tmp_path):
    # The store is read whole before the run record's folder is made: a store that cannot be
    # read is told (exit 2, one line) and leaves nothing half written behind.
    _damage_records(db)
    out = tmp_path / "run"
    r = run("export", "--run", str(out), "--db", db)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "damaged" in r.stderr and ".recover" in r.stderr, r.stderr
    assert not out.exists(), sorted(p.name for p in out.iterdir())


def test_a_damaged_store_stops_the_monitor_with_a_clear_error_and_the_board_idle(db, tmp_path):
    # The monitor writes what the board sends into the store: a damaged one ends it with the
    # store's error (exit 2, no traceback); it never asks the board to do anything.
    from tests.support.board_cli import running_board
    _damage_records(db)
    with running_board(tmp_path / "flash") as port:
        r = subprocess.run([SUREPICK, "monitor", "--plain", "--seconds", "60", "--db", db, "--port", port],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, r.stderr
        assert "Traceback" not in r.stderr and "damaged" in r.stderr and db in r.stderr, r.stderr
        st = subprocess.run([SUREPICK, "job", "status", "--port", port], capture_output=True, text=True, timeout=60)
        assert st.stdout.startswith("state IDLE, attempt 0, fault none, cycles ok 0 failed 0"), st.stdout


def test_a_damaged_store_ends_the_live_view_with_the_same_clear_error(db, tmp_path):
    # The live view runs the monitor loop on a thread of its own: the store's error there must end
    # the view and be told (exit 2), not leave it showing NO LINK, recording nothing, saying nothing.
    from tests.support.board_cli import in_terminal, running_board
    _damage_records(db)
    with running_board(tmp_path / "flash") as port:
        code, text = in_terminal("monitor", "--db", db, "--port", port, timeout=120)
        assert code == 2, text[-2000:]
        assert "Traceback" not in text and "damaged" in text and ".recover" in text, text[-2000:]
        st = subprocess.run([SUREPICK, "job", "status", "--port", port], capture_output=True, text=True, timeout=60)
        assert st.stdout.startswith("state IDLE, attempt 0, fault none, cycles ok 0 failed 0"), st.stdout
