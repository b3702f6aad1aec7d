# The monitor against a stand-in board (tests/support/link_standin.py: the link protocol over a
# real loopback socket, the firmware's own flash log in a directory). The board is killed
# and restarted mid-run with its flash kept; the store must then hold every committed record
# exactly once, compared against the board's own log read back from its flash.
import shutil
import signal
import sqlite3
import subprocess
import threading
import time

from surepick.firmware.flashlog import FlashLog

from tests.support.cli import SUREPICK_BIN as SUREPICK
from tests.support.link_standin import CYCLES_DONE
from tests.support.monitor import Monitor, free_port, start_board, wait_until



def board_log(flash):
    log = FlashLog(str(flash / "log"), n_segments=4, seg_records=64)
    return [(seq, rtype, tuple(r)) for seq, rtype, r in log.read_since(0)]


def stored(db, board_id):
    con = sqlite3.connect(db)
    rows = con.execute("SELECT seq, rtype, ev_seq, t_ms, kind, from_state, to_state, reason, attempt, "
                       "pot_counts, switch_pressed, current_ma, beam_broken, present_mask FROM records "
                       "WHERE board_id=? ORDER BY seq", (board_id,)).fetchall()
    con.close()
    return [(r[0], r[1], tuple(r[2:])) for r in rows]


def test_monitor_records_a_run_with_garbage_on_the_line(flash, tmp_path):
    port = free_port()
    b = start_board(flash, port, "--cycles", "6", "--noise", "0.2", "--name-in-ping")
    db = str(tmp_path / "m.db")
    m = Monitor("socket://127.0.0.1:%d" % port, db)
    try:
        wait_until(lambda: (m.status.snapshot()["telemetry"] or {}).get("cycles_ok", 0) + 
                   (m.status.snapshot()["telemetry"] or {}).get("cycles_failed", 0) >= 6, 30, "6 cycles")
        time.sleep(1.0)   # one more log poll after the last commit
        m.loop.store.flush()
        wait_until(lambda: m.status.snapshot()["last_seq"] >= board_log(flash)[-1][0], 10, "the back-fill")
        snap = m.status.snapshot()
    finally:
        m.close()
        b.kill()
        b.wait()
    assert stored(db, "fake-0001") == board_log(flash)
    assert snap["link"]["corrupt"] > 0          # garbage was seen, counted and skipped
    assert snap["board_id"] == "fake-0001"
    assert snap["faults"] and snap["faults"][0][5] == 32   # GRASP_FAILED, with readings
    assert snap["success_rate"] is not None


def test_board_killed_and_restarted_loses_nothing(flash, tmp_path):
    port = free_port()
    db = str(tmp_path / "m.db")
    # The current firmware does not name itself in PING replies: the id comes from --board-id
    # here, and from the HELLO after the restart.
    b = start_board(flash, port, "--step-ms", "15")
    m = Monitor("socket://127.0.0.1:%d" % port, db, board_id="fake-0001")
    try:
        wait_until(lambda: m.status.snapshot()["records_stored"] >= 20, 30, "records before the kill")
        b.send_signal(signal.SIGKILL)            # a power cut: uncommitted RAM records are lost
        b.wait()
        wait_until(lambda: not m.status.snapshot()["connected"], 10, "the monitor to notice")
        time.sleep(0.5)
        b = start_board(flash, port, "--step-ms", "15")   # same flash, same port
        wait_until(lambda: m.status.snapshot()["reconnects"] >= 1, 20, "the reconnect")
        before = board_log(flash)[-1][0]
        wait_until(lambda: m.status.snapshot()["last_seq"] > before + 10, 30, "records after the restart")
        b.send_signal(signal.SIGTERM)
        b.wait()
        final = board_log(flash)
        # the monitor may not have polled since the last commit: restart once more to let it
        # back-fill everything (it must, without being told)
        b = start_board(flash, port, "--step-ms", "15", "--cycles", "0")
        # the third boot's own record must be in flash before "everything" is well defined
        wait_until(lambda: [r[1] for r in board_log(flash)].count(3) >= 3, 20, "the third boot record")
        wait_until(lambda: m.status.snapshot()["last_seq"] >= board_log(flash)[-1][0], 20, "the final back-fill")
        final = board_log(flash)
        snap = m.status.snapshot()
    finally:
        m.close()
        b.kill()
        b.wait()
    got = stored(db, "fake-0001")
    assert got == final                              # every committed record, in order
    assert len({s for s, _, _ in got}) == len(got)   # each exactly once
    assert [r[1] for r in got].count(3) >= 3         # three boots recorded
    assert snap["reconnects"] >= 2


def test_plain_mode_one_line_per_record(flash, tmp_path):
    port = free_port()
    # The cycles begin when the monitor's link hub connects, so its live events are seen however
    # long it takes to start (slow steps, about 3.5 s: the monitor joins its hub meanwhile); it is
    # stopped (Ctrl-C) once the board's cycles are over and it has printed as many records as the
    # board's log holds: events, not a guess at durations.
    b = start_board(flash, port, "--cycles", "3", "--name-in-ping", "--noise", "0.3", "--step-ms", "150",
                    "--start-on-client")
    db = str(tmp_path / "m.db")
    m = subprocess.Popen([SUREPICK, "monitor", "--port", "socket://127.0.0.1:%d" % port, "--db", db, "--plain"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, err = [], []
    readers = [threading.Thread(target=lambda s=s, into=into: into.extend(s), daemon=True)
               for s, into in ((m.stdout, lines), (m.stderr, err))]
    for t in readers:
        t.start()
    try:
        wait_until(lambda: CYCLES_DONE in b.stdout.readline(), 60, "the stand-in's cycles to end")
        n_log = len(board_log(flash))
        wait_until(lambda: sum(" record board=fake-0001 seq=" in l for l in list(lines)) >= n_log, 60,
                   "every record printed")
        m.send_signal(signal.SIGINT)
        assert m.wait(30) == 0
        for t in readers:
            t.join(10)
    finally:
        if m.poll() is None:
            m.kill()
            m.wait()
        b.kill()
        b.wait()
    records = [l for l in lines if " record board=fake-0001 seq=" in l]
    assert len(records) == n_log, "".join(lines)
    assert any(" event ev_seq=" in l for l in lines)
    err = "".join(err)
    assert "REPL text" in err and not any("REPL text" in l for l in lines)   # REPL text on stderr only


def test_board_log_restarted_is_kept_as_a_new_epoch(flash, tmp_path):
    port = free_port()
    db = str(tmp_path / "m.db")
    b = start_board(flash, port, "--cycles", "2", "--name-in-ping", "--step-ms", "5")
    m = Monitor("socket://127.0.0.1:%d" % port, db)
    try:
        wait_until(lambda: m.status.snapshot()["last_seq"] >= 15, 20, "first log")
        first = board_log(flash)
        b.kill()
        b.wait()
        shutil.rmtree(flash / "log")          # flash wiped: seqs start again at 1
        b = start_board(flash, port, "--cycles", "1", "--name-in-ping", "--step-ms", "5")
        wait_until(lambda: m.loop.epoch == 1 and m.status.snapshot()["last_seq"] >= 8, 20, "second log")
    finally:
        m.close()
        b.kill()
        b.wait()
    con = sqlite3.connect(db)
    epochs = dict(con.execute("SELECT epoch, COUNT(*) FROM records GROUP BY epoch").fetchall())
    assert epochs[0] >= len(first) - 2 and epochs[1] >= 8


def test_no_board_yet_then_it_appears(tmp_path, flash):
    # Started before the board: waits, then connects on its own.
    port = free_port()
    db = str(tmp_path / "m.db")
    m = Monitor("socket://127.0.0.1:%d" % port, db)
    try:
        wait_until(lambda: "waiting for the board" in m.status.snapshot()["note"], 30, "the monitor to wait")
        b = start_board(flash, port, "--cycles", "1", "--name-in-ping")
        try:
            wait_until(lambda: m.status.snapshot()["records_stored"] > 0, 20, "records")
        finally:
            b.kill()
            b.wait()
    finally:
        m.close()
