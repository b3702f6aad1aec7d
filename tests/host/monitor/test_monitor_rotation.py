# The monitor tells a rotated log from a restarted board, against the real firmware on the
# virtual board and the real `surepick monitor`: the monitor is killed (SIGKILL), the board
# (never reset) logs more than its whole flash log holds, the monitor is started again. One
# epoch, the records rotated away counted as lost (in the monitor's note, the store and
# `log stats`), every record the board still holds stored once; then more monitor kills while
# the board keeps logging, still one epoch. Finally a second monitor on the same database only
# watches: no second writer, no spurious epoch.
import re
import signal
import sqlite3
import time

import pytest

from surepick.host.link.client import LinkClient
from surepick.shared_fsm import link

from tests.support.bench import Bench, text_of, wait_for_text
from tests.support.monitor import wait_until
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = [NEEDS_MICROPYTHON, pytest.mark.slow]

LOG_CAPACITY = 4 * 128        # the firmware's FlashLog geometry (firmware/app.py): 4 segments of 128


def board_log(port):
    # -> [(seq, rtype, 12 ints)] the board holds now, asked over the link (through the hub if one serves)
    out = []
    with LinkClient(port) as c:
        after = 0
        while True:
            r = c.request(link.T_LOG_SINCE, (after,), 5.0, collect=(link.T_LOG,))
            assert r.ok, r
            out += [(f.fields[0], f.fields[1], tuple(f.fields[2:])) for f in r.frames]
            if not r.payload[2] or r.payload[1] <= after:
                return out
            after = r.payload[1]


def quiet_board_log(port, quiet_s=1.5, timeout=30):
    # The board's log once it has stopped growing: the last records reach flash at the board's
    # next commit, after log_records returned, and may rotate a segment away then.
    deadline = time.monotonic() + timeout
    held = board_log(port)
    while True:
        time.sleep(quiet_s)
        now = board_log(port)
        if (now[0][0], now[-1][0]) == (held[0][0], held[-1][0]):
            return now
        assert time.monotonic() < deadline, "the board's log kept growing"
        held = now


def log_records(port, n):
    # Make the board log at least n records quickly: teleop mode entered and left, a record each
    # (R_TELEOP_ON, R_TELEOP_OFF); the arm holds where it stands, nothing moves, no cycle runs.
    # What a record says does not matter here, only that the log fills and rotates.
    with LinkClient(port) as c:
        start = last = c.request(link.T_STATUS, (), 5.0).payload[4]
        deadline = time.monotonic() + 300
        while last - start < n:
            assert time.monotonic() < deadline, "the board logged %d of %d records" % (last - start, n)
            r = c.request(link.T_TELEOP, (1,), 5.0)
            assert r.ok, r
            r = c.request(link.T_TELEOP, (0,), 5.0)
            assert r.ok, r
            last = c.request(link.T_STATUS, (), 5.0).payload[4]
        return last


def db_rows(db, sql):
    con = sqlite3.connect(str(db))
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def max_stored(db):
    # The highest record seq the monitor has stored so far (-1: none yet, or the database busy:
    # the monitor writes as it goes).
    try:
        last = db_rows(db, "SELECT MAX(seq) FROM records")[0][0]
    except sqlite3.OperationalError:
        return -1
    return -1 if last is None else last


def test_a_rotated_log_is_one_epoch_with_its_lost_records_counted(tmp_path, monkeypatch):
    b = Bench(tmp_path, scenario="nominal", seed=2)
    monkeypatch.setenv("XDG_RUNTIME_DIR", b.env["XDG_RUNTIME_DIR"])   # this test's hubs, here too
    db = tmp_path / "m.db"
    try:
        b.wait_firmware()
        p = b.port
        log_records(p, 20)
        mon = b.start("monitor", "--port", p, "--db", db, "--plain", "--poll", "0.3")
        wait_for_text(mon.out, " record board=", 30, mon)
        wait_until(lambda: max_stored(db) >= 20, 120, "the monitor to store the 20 records")
        mon.send_signal(signal.SIGKILL)
        mon.wait(10)
        stored_last = db_rows(db, "SELECT MAX(seq) FROM records")[0][0]
        assert stored_last >= 20

        # Away: the board logs more than its whole log holds; the record stored last is gone.
        log_records(p, LOG_CAPACITY + 40)
        held = quiet_board_log(p)
        first = held[0][0]
        assert first > stored_last + 1, (first, stored_last)

        mon = b.start("monitor", "--port", p, "--db", db, "--plain", "--poll", "0.3")
        err = wait_for_text(mon.err, "lost to rotation", 40, mon)
        assert "rotated past record %d" % stored_last in err
        assert "records %d..%d (%d) were lost to rotation" % (stored_last + 1, first - 1, first - stored_last - 1) in err
        assert "restarted" not in err
        wait_for_text(mon.out, re.compile(r" record board=\S+ seq=%d " % held[-1][0]), 40, mon)

        # More monitor kills while the board keeps logging: still one log, one epoch.
        for i in range(4):
            time.sleep(0.5 + 0.4 * i)
            mon.send_signal(signal.SIGKILL)
            mon.wait(10)
            log_records(p, 10)
            mon = b.start("monitor", "--port", p, "--db", db, "--plain", "--poll", "0.3")
            wait_for_text(mon.err, "connected to", 30, mon)
        held = quiet_board_log(p)
        wait_for_text(mon.out, re.compile(r" record board=\S+ seq=%d " % held[-1][0]), 40, mon)
        mon.terminate()
        mon.wait(15)

        assert db_rows(db, "SELECT DISTINCT epoch FROM records") == [(0,)]
        gaps = db_rows(db, "SELECT after_seq, next_seq, lost FROM gaps")
        assert gaps == [(stored_last, first, first - stored_last - 1)]
        stored = {r[0] for r in db_rows(db, "SELECT seq FROM records")}
        assert {s for s, _, _ in held} <= stored                  # all the board holds, once each
        assert len(stored) == held[-1][0] - (first - stored_last - 1)   # everything else: the gap only
        st = b.run("log", "stats", "--db", db)
        assert st.returncode == 0
        assert "%d records were rotated off the board" % (first - stored_last - 1) in st.stdout

        # Two monitors, one database: the second only watches; no second writer, no new epoch.
        one = b.start("monitor", "--port", p, "--db", db, "--plain", "--poll", "0.3")
        wait_for_text(one.err, "connected to", 30, one)
        time.sleep(1.0)
        two = b.start("monitor", "--port", p, "--db", db, "--plain", "--poll", "0.3")
        err2 = wait_for_text(two.err, "this monitor only watches", 30, two)
        assert re.search(r"already being recorded into .* by pid %d" % one.pid, err2), err2
        log_records(p, 12)
        one.terminate()
        one.wait(15)
        wait_for_text(two.err, "now recording", 30, two)         # it takes over
        log_records(p, 8)
        held = board_log(p)
        wait_for_text(two.out, re.compile(r" record board=\S+ seq=%d " % held[-1][0]), 40, two)
        two.terminate()
        two.wait(15)
        assert db_rows(db, "SELECT DISTINCT epoch FROM records") == [(0,)]
    finally:
        b.close()
