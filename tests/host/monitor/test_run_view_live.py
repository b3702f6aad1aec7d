# The monitor's run view, live on the REAL firmware in a virtual board (`surepick board --scenario
# nominal --realtime`: one part on the pad), where a person meets it at a bench in the morning:
#   - a monitor started while the run is already going (after its first cycle) shows the run it
#     joined: cycle k of N, the counts so far, from the board's own log and RUN_STATUS;
#   - the board killed in the middle of a cycle (a power cut) and booted again on the same flash:
#     the run lives in the board's RAM, so it is over; the view says so (ended: restart) and keeps
#     what was placed before the cut.
# The expected figures come from the board's flash log, read here with FlashLog (RUN_CYCLE
# records: cycle number and outcome), never from the monitor's code. test_run_view_partial.py
# checks the same view from written-out records (a rotated log, the clock wrapping).
import json
import subprocess

from surepick.firmware.flashlog import FlashLog
from surepick.host import deploy as dp
from surepick.shared_fsm import codes, run_codes

from tests.support.cli import SUREPICK_BIN as SUREPICK
from tests.support.monitor import NOMINAL_RUN_JOB, BoardProcess, Monitor, free_port, wait_until
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON

COUNT = 3


def cycles_on_flash(flash):
    # -> {cycle number: outcome} of the newest run in the board's log (RUN_CYCLE: x is the
    # cycle, value the outcome; docs/production-run.md)
    out = {}
    for _, _, r in FlashLog(str(flash / "log")).read_since(0):
        if r[2] == codes.K_RUN and r[5] == run_codes.R_RUN_START:
            out = {}
        elif r[2] == codes.K_RUN and r[5] == run_codes.R_RUN_CYCLE:
            out[r[7]] = r[11]
    return out


def run_view(mon):
    return mon.status.snapshot()["run"] or {}


def test_a_monitor_joins_a_run_under_way_and_sees_it_end_at_a_power_cut(tmp_path):
    flash = tmp_path / "flash"
    flash.mkdir()
    job = tmp_path / "job.json"
    job.write_text(json.dumps(NOMINAL_RUN_JOB))
    port = free_port()
    board = BoardProcess(flash, port, tmp_path / "board.log")
    mon = None
    try:
        res = dp.deploy(board.address, wait_hello=True, hello_timeout=30)
        assert res.hello is not None, "no hello after the deploy"
        # the run is sent by `job run` and nothing watches it: the host went home
        sent = subprocess.run([SUREPICK, "job", "run", "--count", str(COUNT), "--job", str(job),
                               "--port", board.address], capture_output=True, text=True, timeout=120)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        wait_until(lambda: 1 in cycles_on_flash(flash), 120, "the run's first cycle on the board's log")

        # the monitor comes in the morning, on a database of its own
        mon = Monitor(board.address, str(tmp_path / "m.db"))
        wait_until(lambda: run_view(mon).get("state") == "running" and run_view(mon).get("cycle", 0) >= 1,
                   60, "the joined run in the view (%s)" % run_view(mon))
        v = run_view(mon)
        done = cycles_on_flash(flash)
        k = v["cycle"]
        # the cycle it shows has happened on the board, and its counts are the log's up to it
        assert k in done and v["count"] == COUNT, (v, done)
        assert v["placed"] == sum(1 for c, o in done.items() if c <= k and o == codes.R_PLACED), (v, done)
        assert done[1] == codes.R_PLACED                       # the scenario's one part

        # a power cut during the next cycle: the board boots again on the same flash and port
        wait_until(lambda: run_view(mon).get("cycle", 0) >= 2 or 2 in cycles_on_flash(flash), 120,
                   "the run's second cycle")
        assert 3 not in cycles_on_flash(flash)                 # cycle 3 (an empty pad, seconds) is under way
        board.kill()
        before_cut = cycles_on_flash(flash)
        board = BoardProcess(flash, port, tmp_path / "board.log")
        wait_until(lambda: mon.loop.reconnects >= 1, 60, "the monitor to reconnect")
        wait_until(lambda: run_view(mon).get("state") == "ended", 60,
                   "the view to end the run (%s)\n%s" % (run_view(mon), mon.story()))
        v = run_view(mon)
        assert v["why"] == "restart", (v, mon.story())
        assert v["placed"] == sum(1 for o in before_cut.values() if o == codes.R_PLACED) == 1, (v, before_cut)
        assert v.get("eta_s") is None, v
    finally:
        if mon is not None:
            mon.close()
        board.stop()
