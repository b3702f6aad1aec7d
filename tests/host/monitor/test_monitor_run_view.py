# The monitor's live view of a production run, against the REAL firmware on a virtual board
# (`surepick board --scenario nominal`: one part on the pad). A run of 3 cycles is sent over the
# monitor's own link: cycle 1 places the part, cycles 2 and 3 find the pad empty (GRASP_FAILED,
# one attempt, the slot skipped) and the count ends the run. What the scenario holds says the
# counts; the rate and ETA of every `--plain` line are worked out here by hand from the board's
# own flash log (RUN_START's and each RUN_CYCLE's time on the board's clock), never from the code
# under test. The live view (status_panel) is rendered from the same snapshots and read as text.
import io
import re
import threading

from rich.console import Console

from surepick.firmware.flashlog import FlashLog
from surepick.host import production
from surepick.host.monitor.loop import MonitorLoop
from surepick.host.monitor.plain import PlainPrinter
from surepick.host.monitor.status import BoardStatus
from surepick.host.monitor.store import Store
from surepick.host.monitor.tui import status_panel
from surepick.host.teleop import jobfile
from surepick.shared_fsm import codes, link, run_codes

from tests.support.board_cli import running_board
from tests.support.monitor import NOMINAL_RUN_JOB, wait_until
from tests.support.needs import NEEDS_MICROPYTHON

pytestmark = NEEDS_MICROPYTHON

COUNT = 3


def run_fields(tmp_path):
    import json
    p = tmp_path / "job.json"
    p.write_text(json.dumps(NOMINAL_RUN_JOB))
    return production.run_args(COUNT, jobfile.load(str(p)).link_job())


def render(snapshot):
    con = Console(record=True, width=220, file=io.StringIO())
    con.print(status_panel(snapshot))
    return con.export_text()


class Watch:
    # a monitor as `surepick monitor --plain` runs it, its stdout kept, and the live view rendered
    # from the snapshot taken at each change of the run's figures
    def __init__(self, port, db):
        self.out = io.StringIO()
        self.status = BoardStatus(port)
        self.printer = PlainPrinter(self.status, out=self.out, err=io.StringIO())
        self.views = []                  # (figures, the rendered live view)
        self.store = Store(db)
        self.loop = MonitorLoop(port, self.store, self.status, log_poll_s=0.3, out=self._out)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def _out(self, kind, data):
        self.printer(kind, data)
        if kind == "run":
            self.views.append((data, render(self.status.snapshot())))

    def run_lines(self):
        return [dict(re.findall(r"(\w+)=(\S+)", line.split(" run ", 1)[1]))
                for line in self.out.getvalue().splitlines() if " run cycle=" in line]

    def close(self):
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()
        self.store.close()


def the_run_on_flash(flash):
    # -> (RUN_START's t_ms, {cycle: RUN_CYCLE's t_ms}, the RUN_STOP record or None), from the log file
    start, cycles, stop = None, {}, None
    for _, _, r in FlashLog(str(flash / "log")).read_since(0):
        if r[2] != codes.K_RUN:
            continue
        if r[5] == run_codes.R_RUN_START:
            start, cycles, stop = r[1], {}, None
        elif r[5] == run_codes.R_RUN_CYCLE:
            cycles[r[7]] = r[1]
        elif r[5] == run_codes.R_RUN_STOP:
            stop = r
    return start, cycles, stop


def by_hand(t0, t_k, k, count):
    # cycles per hour of the board's clock since the run began; seconds left at that pace
    elapsed_ms = t_k - t0
    rate = k * 3600000 / elapsed_ms
    return "%.1f" % rate, (count - k) * elapsed_ms / k / 1000.0


def test_the_monitor_shows_the_run_from_the_boards_own_figures(tmp_path):
    flash = tmp_path / "flash"
    db = str(tmp_path / "m.db")
    # the arm at its true pace (--realtime): a cycle lasts seconds of wall time (the empty-pad ones
    # over 3 s), so the monitor sees each cycle's records apart however fast this machine runs the
    # plant; a monitor held up longer than a cycle would show two cycles' change in one line
    with running_board(flash, "nominal", 2, extra=("--realtime",)) as port:
        w = Watch(port, db)
        try:
            wait_until(lambda: w.status.backfills >= 1, 60, "the first back-fill")
            r = w.loop.call(link.T_RUN, run_fields(tmp_path), timeout=5)
            assert r.ok, r
            wait_until(lambda: (w.status.snapshot()["run"] or {}).get("state") == "ended", 300, "the run's end")
            wait_until(lambda: the_run_on_flash(flash)[2] is not None, 60, "the RUN_STOP on flash")
            st = w.loop.call(link.T_RUN_STATUS, (), timeout=5)
        finally:
            w.close()
        t0, t_cycle, stop = the_run_on_flash(flash)
        lines = w.run_lines()
        final = w.status.snapshot()["run"]

        # what the scenario holds: one part on the pad, so 1 placed, 2 empty pads skipped
        assert sorted(t_cycle) == [1, 2, 3] and tuple(stop[7:10]) == (3, 1, run_codes.STOP_COUNT), stop
        assert st.ok and tuple(st.payload[:7]) == (2, 3, 3, 1, 2, 2, run_codes.STOP_COUNT), st
        last = lines[-1]
        rate3, _ = by_hand(t0, t_cycle[3], 3, COUNT)
        assert last == {"cycle": "3", "of": "3", "state": "ended", "why": "count_done", "placed": "1",
                        "faulted": "2", "skipped": "2", "faults": "GRASP_FAILED:2", "skipped_slots": "0,0",
                        "rate_per_h": rate3}, lines
        assert (final["placed"], final["faulted"], final["skipped"], final["cycle"]) == (1, 2, 2, 3), final

        # every line while the run went on: rate and ETA as worked out from the board's clock
        running = [x for x in lines if x["state"] == "running"]
        assert running[0]["cycle"] == "0" and "rate_per_h" not in running[0], lines     # the start
        seen = set()
        for x in running[1:]:
            k = int(x["cycle"])
            rate, eta = by_hand(t0, t_cycle[k], k, COUNT)
            assert x["rate_per_h"] == rate and int(x["eta_s"]) == round(eta), (x, rate, eta)
            seen.add(k)
        assert {1, 2} <= seen, lines
        # one line per change: never the same line twice in a row, at most one per record or reply
        assert all(a != b for a, b in zip(lines, lines[1:])), lines
        assert len(lines) <= 2 + 2 * COUNT + 1, lines

        # the live view, rendered at the first cycle and at the end
        first = next(v for f, v in w.views if f["cycle"] == 1 and f["state"] == "running")
        rate1, eta1 = by_hand(t0, t_cycle[1], 1, COUNT)
        s = int(round(eta1))
        assert "cycle 1 of 3" in first and "%s cycles/h" % rate1 in first, first
        assert "ETA %d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60) in first, first
        end = w.views[-1][1]
        assert "cycle 3 of 3   ended: count_done" in end and "%s cycles/h" % rate3 in end, end
        assert "placed 1   faulted 2   skipped 2 (slots 0, 0)" in end and "GRASP_FAILED 2" in end, end
        assert "ETA" not in end, end

        # a monitor started later on the same database shows the same run from what it stored,
        # and one on a new database from the board's log
        for path in (db, str(tmp_path / "fresh.db")):
            later = Watch(port, path)
            try:
                wait_until(lambda: later.run_lines() and later.run_lines()[-1] == last, 60,
                           "the later monitor's run line (%s)" % later.out.getvalue()[-800:])
            finally:
                later.close()
