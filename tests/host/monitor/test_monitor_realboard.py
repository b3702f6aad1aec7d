# The monitor against the REAL firmware: `surepick deploy` installs firmware/ and shared_fsm/
# (compiled) on a virtual board (`surepick board --scenario nominal`: the unix micropython in
# lockstep with the MuJoCo plant), the monitor follows it, jobs go over the monitor's own link,
# the board process is killed mid-job (flash kept) and started again on the same port. The
# monitor must reconnect and back-fill, and its database must then hold every record the
# board had committed, exactly once, compared with the board's own log read from its flash.
import os
import sqlite3
import subprocess
import threading
import time

import pytest

from surepick.firmware.flashlog import FlashLog
from surepick.host import deploy as dp
from surepick.shared_fsm import codes
from surepick.shared_fsm import link
from surepick.shared_fsm import states

from tests.support.needs import NEEDS_MICROPYTHON

from tests.support.cli import SUREPICK_BIN as SUREPICK
from tests.support.monitor import BOARD_SEED, BoardProcess, Monitor, free_port, wait_until
from tests.support.period import PERIOD_US

# The live view sizes itself from its terminal, not from the COLUMNS/LINES pytest-xdist sets.
TERMINAL_ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}

pytestmark = NEEDS_MICROPYTHON

SEED = BOARD_SEED    # the plant BoardProcess serves: the job's poses are worked out for it


def board_log(flash):
    # The firmware's own log (firmware/app.py: FlashLog(root + "/log"), default geometry).
    return [(seq, rtype, tuple(r)) for seq, rtype, r in FlashLog(str(flash / "log")).read_since(0)]


def stored(db):
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT seq, rtype, ev_seq, t_ms, kind, from_state, to_state, reason, attempt, "
                           "pot_counts, switch_pressed, current_ma, beam_broken, present_mask FROM records "
                           "ORDER BY seq").fetchall()
    finally:
        con.close()
    return [(r[0], r[1], tuple(r[2:])) for r in rows]


def job_args():
    from surepick.host.engines.world_service import WorldService
    pick, place, width = WorldService("nominal", SEED).job_um()
    return tuple(pick) + tuple(place) + (width,)


def is_placed(rec):
    seq, rtype, r = rec
    return rtype == 1 and r[4] == states.IDLE and r[5] == codes.R_PLACED


def test_monitor_backfills_every_committed_record_across_a_board_kill(tmp_path):
    t0 = time.monotonic()
    flash = tmp_path / "flash"
    flash.mkdir()
    port = free_port()
    db = str(tmp_path / "m.db")
    blog = tmp_path / "board.log"
    board = BoardProcess(flash, port, blog)
    mon = None
    try:
        # 1. the real deploy, waiting for the firmware's hello (its board id)
        res = dp.deploy(board.address, wait_hello=True, hello_timeout=30)
        assert res.hello is not None, "no hello after the deploy"
        bid = res.hello[0]
        # The monitor joins after that hello. Until the firmware names itself in PING replies,
        # the id is given as with `surepick monitor --board-id` (a PING payload would win).
        mon = Monitor(board.address, db, board_id=bid)
        wait_until(lambda: mon.status.backfills >= 1, 20, "the first back-fill")
        assert mon.loop.board_id == bid
        # 2. a whole job: placed, committed at rest, back-filled
        r = mon.loop.call(link.T_JOB, job_args(), timeout=5)
        assert r.ok, r
        wait_until(lambda: any(is_placed(x) for x in stored(db)), 40, "the PLACED record in the db")
        before = stored(db)
        # 3. a second job (the part is in the bin now: the pick finds nothing), killed mid-run
        wait_until(lambda: (mon.status.snapshot()["telemetry"] or {}).get("state") == states.IDLE,
                   20, "the board at rest")
        # IDLE comes before the arm has braked to its rest pose: a job is refused busy until then
        end = time.monotonic() + 20
        r = mon.loop.call(link.T_JOB, job_args(), timeout=5)
        while r.code == link.E_BUSY and time.monotonic() < end:
            time.sleep(0.1)
            r = mon.loop.call(link.T_JOB, job_args(), timeout=5)
        assert r.ok, r
        wait_until(lambda: (mon.status.snapshot()["telemetry"] or {}).get("state", 0) not in
                   (states.IDLE,), 20, "the second job to run")
        time.sleep(0.3)
        running = mon.status.snapshot()["telemetry"]
        t_kill = time.monotonic()
        board.kill()
        assert running["state"] != states.IDLE, running     # really mid-run
        assert (flash / "job.json").exists()                 # the interrupted cycle's marker
        killed_log = board_log(flash)
        # 4. the same port, the same flash: the board boots again (into INTERRUPTED)
        time.sleep(0.5)
        board = BoardProcess(flash, port, blog)
        wait_until(lambda: mon.loop.reconnects >= 1, 30, "the monitor to reconnect")

        def in_sync():
            a = board_log(flash)
            return len(a) > len(killed_log) and stored(db) == a
        try:
            wait_until(in_sync, 30, "the db to match the board's log after the restart")
        except AssertionError as e:
            raise AssertionError("%s\nkilled at %.3f; the monitor said:\n%s" % (e, t_kill, mon.story())) from None
        # at rest now: one more look a second later. A record the board commits meanwhile reaches
        # the db at the monitor's next poll, so the two are compared as they stand once they agree.
        time.sleep(1.0)
        look = {}

        def caught_up():
            look["final"] = board_log(flash)
            look["rows"] = stored(db)
            return look["rows"] == look["final"]
        wait_until(caught_up, 30, "the db to match the board's log at rest")
        rows = look["rows"]
        # exactly once: one row per (board, seq), one board, one epoch, seqs 1..N with no gap
        con = sqlite3.connect(db)
        n, seqs, boards, epoch = con.execute("SELECT COUNT(*), COUNT(DISTINCT seq), COUNT(DISTINCT board_id), "
                                             "MAX(epoch) FROM records").fetchone()
        assert (n, boards, epoch) == (seqs, 1, 0) and n >= len(rows)   # (a later record may have come in)
        con.close()
        assert [x[0] for x in rows] == list(range(1, len(rows) + 1))
        # the records from before the kill are unchanged, the second boot is there
        assert rows[:len(before)] == before
        assert sum(1 for x in rows if x[1] == 3) >= 2, rows        # boot records
        assert any(is_placed(x) for x in rows)
        assert any(x[1] == 3 for x in rows[len(killed_log):]), "no boot record after the restart"
        link_stats = mon.loop.link_stats()
        assert link_stats["reconnects"] >= 1
        # the recording as a run record (kind board-recording, no ticks)
        from surepick.host.records import runrecord
        run = tmp_path / "run"
        r = subprocess.run([SUREPICK, "log", "export", "--db", db, "--run", str(run)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        rec = runrecord.load(str(run), ticks=False)
        assert rec.meta["kind"] == "board-recording"
        outcomes = [c["outcome"] for c in rec.cycles]
        assert outcomes[0] == "placed" and len(outcomes) == 2, outcomes
        assert outcomes[1] != "placed", outcomes               # the killed cycle
        n_ev = sum(1 for x in rows if x[1] in (1, 2, 4))
        assert sum(len(v) for v in rec.events.values()) + rec.meta["source"]["events_outside_cycles"] == n_ev
        print("\nrecords %d (before kill %d), reconnects %d, frames %d, corrupt %d, wall %.1f s"
              % (len(rows), len(killed_log), link_stats["reconnects"], link_stats["frames"],
                 link_stats["corrupt"], time.monotonic() - t0))
    finally:
        if mon is not None:
            mon.close()
        board.stop()


# ---- the live view on the real firmware, rendered by tmux ----

def _paced(ps, joined, factor=0.9, until_joined=10.0):
    # Let the plant's virtual time run at about wall-clock speed (it runs ~5x faster by
    # itself), so a human-length job is on screen long enough to be captured; at a tenth of that
    # until `joined` is set (the monitor is on screen), so however long the monitor takes to
    # start, the job it joins is still early on. The board still answers the link meanwhile (a
    # held plant would stop it). The plant service has no pacing option: wrap its per-tick
    # exchange (test-only).
    orig = ps._exchange

    def exchange(advance_ms, *a, **kw):
        if advance_ms:
            time.sleep(advance_ms * (factor if joined.is_set() else until_joined) / 1000.0)
        return orig(advance_ms, *a, **kw)
    ps._exchange = exchange


def _capture(tmux, name):
    return subprocess.run(tmux + ["capture-pane", "-p", "-t", name], capture_output=True,
                          text=True, timeout=10).stdout


@pytest.mark.skipif(__import__("shutil").which("tmux") is None, reason="tmux is not installed")
def test_live_view_shows_a_running_job_on_the_real_firmware(tmp_path):
    import re

    from surepick.host.link.client import LinkClient
    from surepick.host.engines.vboard_world import board_in_world

    flash = tmp_path / "flash"
    flash.mkdir()
    board = board_in_world(flash, "nominal", SEED).start()
    name = "surepick-rb-%d" % os.getpid()
    sock = str(tmp_path / "tmux.sock")   # a private tmux server: never touches the user's
    tmux = ["tmux", "-S", sock]
    db = tmp_path / "m.db"
    try:
        board.wait_repl(20)
        res = dp.deploy(board.address, wait_hello=True, hello_timeout=30)
        bid = res.hello[0]
        joined = threading.Event()
        _paced(board.world_service, joined)
        with LinkClient(board.address) as c:     # the job starts before the monitor joins
            r = c.request(link.T_JOB, job_args(), timeout=5)
            assert r.ok, r
        subprocess.run(tmux + ["new-session", "-d", "-s", name, "-x", "120", "-y", "40",
                               "%s monitor --port %s --db %s --board-id %s --seconds 100"
                               % (SUREPICK, board.address, db, bid)], check=True, timeout=10,
                       env=TERMINAL_ENV)
        subprocess.run(tmux + ["resize-window", "-t", name, "-x", "120", "-y", "40"], timeout=10)
        moving = ("APPROACH", "DESCEND", "GRASP", "VERIFY", "LIFT", "TRANSFER", "PLACE")
        running = done = ""
        deadline = time.monotonic() + 90      # the paced cycle is ~5 s; a loaded machine stretches it
        while time.monotonic() < deadline and not done:
            time.sleep(0.3)
            screen = _capture(tmux, name)
            if re.search(r"link\s+connected", screen):
                joined.set()
            m = re.search(r"state\s+(\w+)", screen)
            if not running and m and m.group(1) in moving and re.search(r"job\s+running", screen):
                running = screen
            if running and re.search(r"job\s+done: PLACED", screen) and "ok 1" in screen:
                done = screen
        assert running, screen
        assert "board    %s" % bid in running, running
        assert re.search(r"cycles\s+ok 0\s+failed 0", running), running     # counters mid-job
        assert re.search(r"loop\s+period %d us" % PERIOD_US, running), running   # virtual ticks, one period each
        assert re.search(r"link\s+connected", running) and "corrupt 0" in running, running
        assert done, screen
        assert re.search(r"cycles\s+ok 1\s+failed 0\s+success 100\.0 %", done), done
        assert re.search(r"state\s+IDLE", done), done
    finally:
        subprocess.run(tmux + ["kill-server"], timeout=10)
        board.close()
