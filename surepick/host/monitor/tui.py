# The live view (textual): the monitor loop runs in its own thread and fills the BoardStatus; the view
# redraws from a snapshot a few times a second, so a slow terminal never slows the link.
import threading
import time

from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.widgets import Footer, Static

from surepick.host import rejects
from surepick.host.monitor.names import code_name, state_name

_REDRAW_S = 0.25


def _grid():
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold cyan", no_wrap=True)
    t.add_column()
    return t


def status_panel(s):
    g = _grid()
    who = s["board_id"] or "unknown"
    if s["board_id_assumed"]:
        who += " (assumed)"
    g.add_row("board", "%s   fw %s   boot %s" % (who, s["fw_version"] or "?",
                                                 "?" if s["boot_count"] is None else s["boot_count"]))
    if s["rejected"]:
        first = rejects.describe(s["rejects"][0]) if s["rejects"] else ""
        g.add_row("flash", Text("rejected at boot: %d   %s" % (s["rejected"], first), "bold yellow"))
    t = s["telemetry"]
    if not t:
        g.add_row("state", "no telemetry yet")
        return g
    fault = code_name(t["fault"]) if t["fault"] else "none"
    g.add_row("state", Text.assemble((state_name(t["state"]), "bold"), "   attempt %d   fault " % t["attempt"],
                                     (fault, "bold red" if t["fault"] else "green"),
                                     "   estop %s" % ("ON" if t["estop"] else "off")))
    job = s["job_state"]
    if s["job_started"]:
        job = "running %.1f s" % (time.time() - s["job_started"])
    g.add_row("job", job)
    rate = "-" if s["success_rate"] is None else "%.1f %%" % s["success_rate"]
    g.add_row("cycles", "ok %d   failed %d   success %s   faults total %d"
              % (t["cycles_ok"], t["cycles_failed"], rate, t["faults_total"]))
    g.add_row("loop", "period %d us   worst step %d us   overruns %d"
              % (t["loop_period_us"], t["worst_step_us"], t["overruns"]))
    g.add_row("sensors", "pot %d   current %d mA   switch %d   beam %d   rail %d mV"
              % (t["pot_counts"], t["current_ma"], t["switch_pressed"], t["beam_broken"], t["rail_mv"]))
    return g


def link_panel(s, db):
    g = _grid()
    l = s["link"]
    g.add_row("port", s["port"])
    g.add_row("link", Text("connected", "green") if s["connected"] else Text("disconnected", "bold red"))
    g.add_row("frames", "%d   corrupt %d   echoed %d" % (l.get("frames", 0), l.get("corrupt", 0),
                                                         l.get("echoed", 0)))
    g.add_row("reconnects", "%d   request timeouts %d" % (s["reconnects"], l.get("timeouts", 0)))
    g.add_row("records", "%d stored (last seq %d), %d new this run, %d back-fills"
              % (s["records_stored"], s["last_seq"], s["records_added"], s["backfills"]))
    g.add_row("db", db)
    g.add_row("note", s["note"] or "")
    return g


def faults_panel(s):
    t = Table(title="last faults", title_justify="left", expand=True, show_edge=False, pad_edge=False)
    for c in ("t_ms", "fault", "state", "attempt", "pot", "switch", "current mA", "beam", "present"):
        t.add_column(c)
    for ev in s["faults"]:
        t.add_row(str(ev[1]), code_name(ev[5]), state_name(ev[3]), str(ev[6]), str(ev[7]), str(ev[8]),
                  str(ev[9]), str(ev[10]), str(ev[11]))
    if not s["faults"]:
        t.add_row("-", "none", "", "", "", "", "", "", "")
    return t


class MonitorApp(App):
    TITLE = "surepick monitor"
    CSS = """
    #top { height: auto; }
    #status { width: 3fr; height: auto; border: round $accent; padding: 0 1; }
    #link { width: 2fr; height: auto; border: round $accent; padding: 0 1; }
    #faults { height: auto; border: round $warning; padding: 0 1; }
    #repl { height: 1fr; border: round $secondary; padding: 0 1; }
    """
    BINDINGS = [("q", "quit", "quit")]

    def __init__(self, loop, status, stop, db):
        super().__init__()
        self.loop = loop
        self.status = status
        self.stop = stop
        self.db = db
        self._thread = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="top"):
            yield Static(id="status")
            yield Static(id="link")
        yield Static(id="faults")
        yield Static(id="repl")
        yield Footer()

    def on_mount(self):
        self.query_one("#repl").border_title = "REPL / board text"
        self._thread = threading.Thread(target=self.loop.run, args=(self.stop,), name="monitor-loop",
                                        daemon=True)
        self._thread.start()
        self.set_interval(_REDRAW_S, self.redraw)
        self.set_interval(0.5, self._check_stop)
        self.redraw()

    def _check_stop(self):
        if self.stop.is_set():
            self.exit()

    def redraw(self):
        s = self.status.snapshot()
        self.query_one("#status", Static).update(status_panel(s))
        self.query_one("#link", Static).update(link_panel(s, self.db))
        self.query_one("#faults", Static).update(faults_panel(s))
        repl = self.query_one("#repl", Static)
        rows = max(1, repl.size.height - 2)
        repl.update(Text("\n".join(s["text"][-rows:])))

    def on_unmount(self):
        self.stop.set()
        if self._thread is not None:
            self._thread.join(5)


def run_tui(loop, status, stop, db):
    MonitorApp(loop, status, stop, db).run()
