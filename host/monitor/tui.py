# The live view (textual): the monitor loop runs in its own thread and fills the BoardStatus; the view
# redraws from a snapshot a few times a second, so a slow terminal never slows the link.
#
# Keys act on the board through the monitor's own link (MonitorLoop.call, on a worker thread so
# the view never waits): s start a job (the one given on the command line, else the last one
# the board on this port accepted, else the reference job), a abort, c clear a fault, k
# calibrate (then p pot or i current zero). Each asks y/n first; the answer is shown below.
# A banner says when what is shown cannot be trusted: stale telemetry, no link, console lent.
import threading
import time

from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.widgets import Footer, Static

from surepick.host import rejects
from surepick.host.monitor import run_view
from surepick.host.monitor.names import code_name, fault_state_name, present_text, state_name
from surepick.shared_fsm import link

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
        _run_rows(g, s)
        return g
    fault = code_name(t["fault"]) if t["fault"] else "none"
    g.add_row("state", Text.assemble((state_name(t["state"]), "bold"), "   attempt %d   fault " % t["attempt"],
                                     (fault, "bold red" if t["fault"] else "green"),
                                     "   estop %s" % ("ON" if t["estop"] else "off")))
    job = s["job_state"]
    if s["job_started"]:
        job = "running %.1f s" % (time.time() - s["job_started"])
    g.add_row("job", job)
    _run_rows(g, s)
    for key, shows, way_out in s["bench_states"]:      # what refuses a job, and the way out of each
        g.add_row(key, Text.assemble((shows, "bold yellow"), "\n", "way out: " + way_out))
    rate = "-" if s["success_rate"] is None else "%.1f %%" % s["success_rate"]
    g.add_row("cycles", "ok %d   failed %d   success %s   faults total %d"
              % (t["cycles_ok"], t["cycles_failed"], rate, t["faults_total"]))
    g.add_row("loop", "period %d us   worst step %d us   overruns %d"
              % (t["loop_period_us"], t["worst_step_us"], t["overruns"]))
    g.add_row("sensors", "pot %d   current %d mA   switch %d   beam %d   rail %d mV"
              % (t["pot_counts"], t["current_ma"], t["switch_pressed"], t["beam_broken"], t["rail_mv"]))
    return g


def _run_rows(g, s):
    # a production run: the board's own figures (host/monitor/run_view.py)
    if s.get("run"):
        for label, text in run_view.view_lines(s["run"]):
            g.add_row(label, text)


def banner(s):
    # -> (text, style) of what makes the view untrustworthy right now, or None
    age = s["telemetry_age"]
    if not s["connected"]:
        return ("NO LINK to %s%s" % (s["port"], "" if age is None else ": shown values are stale %d s" % age),
                "bold white on red")
    if s["lent_to"]:
        return ("PAUSED: the console is lent to %s%s" % (s["lent_to"], "" if age is None else
                                                       "; stale %d s" % age), "bold black on yellow")
    if s["stale"]:
        if age is None:
            return ("STALE: no telemetry from the board yet", "bold white on red")
        return ("STALE %.0f s: no telemetry since %s; the values below are that old"
                % (age, time.strftime("%H:%M:%S", time.localtime(s["telemetry_at"]))), "bold white on red")
    return None


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
    if s["lost_to_rotation"]:
        g.add_row("lost", Text("%d records rotated off the board before they were fetched"
                               % s["lost_to_rotation"], "yellow"))
    if s["writer_elsewhere"]:
        g.add_row("storing", Text("no: %s records this board" % s["writer_elsewhere"], "yellow"))
    g.add_row("db", db)
    g.add_row("note", s["note"] or "")
    return g


def faults_panel(s):
    t = Table(title="last faults", title_justify="left", expand=True, show_edge=False, pad_edge=False)
    for c in ("t_ms", "fault", "state", "attempt", "pot", "switch", "current mA", "beam", "present"):
        t.add_column(c)
    for ev in s["faults"]:
        t.add_row(str(ev[1]), code_name(ev[5]), fault_state_name(ev[5], ev[3]), str(ev[6]), str(ev[7]), str(ev[8]),
                  str(ev[9]), str(ev[10]), present_text(ev[11]))
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
    #banner { height: auto; }
    #ask { height: auto; padding: 0 1; }
    """
    BINDINGS = [("q", "quit", "quit"), ("s", "start", "start job"), ("a", "abort", "abort"),
                ("c", "clear", "clear fault"), ("k", "calibrate", "calibrate")]

    def __init__(self, loop, status, stop, db, job=None):
        super().__init__()
        self.loop = loop
        self.status = status
        self.stop = stop
        self.db = db
        self.job = job                # JobSpec given on the command line, or None
        self._thread = None
        self._asking = None           # (question, {key: action}) while a y/n (or p/i) is pending
        self._said = ""               # the answer to the last action
        self.loop_error = None        # what ended the monitor loop, raised once the view has closed

    def compose(self) -> ComposeResult:
        yield Static(id="banner")
        with Horizontal(id="top"):
            yield Static(id="status")
            yield Static(id="link")
        yield Static(id="faults")
        yield Static(id="repl")
        yield Static(id="ask")
        yield Footer()

    def on_mount(self):
        self.query_one("#repl").border_title = "REPL / board text"
        self._thread = threading.Thread(target=self._run_loop, name="monitor-loop", daemon=True)
        self._thread.start()
        self.set_interval(_REDRAW_S, self.redraw)
        self.set_interval(0.5, self._check_stop)
        self.redraw()

    def _run_loop(self):
        # An error that ends the loop (a damaged store, ...) ends the view too and is told as
        # `--plain` tells it: a view left showing NO LINK would record nothing and say nothing.
        try:
            self.loop.run(self.stop)
        except BaseException as e:     # noqa: BLE001 -- handed to run_tui, which raises it
            self.loop_error = e
            self.stop.set()

    def _check_stop(self):
        if self.stop.is_set():
            self.exit()

    def redraw(self):
        s = self.status.snapshot()
        b = banner(s)
        self.query_one("#banner", Static).update(Text(" %s " % b[0], b[1]) if b else "")
        if self._asking:
            ask = Text(self._asking[0], "bold black on yellow")
        else:
            ask = Text(self._said)
        self.query_one("#ask", Static).update(ask)
        self.query_one("#status", Static).update(status_panel(s))
        self.query_one("#link", Static).update(link_panel(s, self.db))
        self.query_one("#faults", Static).update(faults_panel(s))
        repl = self.query_one("#repl", Static)
        rows = max(1, repl.size.height - 2)
        repl.update(Text("\n".join(s["text"][-rows:])))

    # ---- keys: ask first, then act on a worker thread ----

    def _ask(self, question, choices):
        self._asking = (question + "  " + "  ".join("[%s] %s" % (k, what) for k, (what, _) in choices.items())
                        + "  [n] no", choices)
        self.redraw()

    def on_key(self, event):
        if self._asking is None:
            return
        choices = self._asking[1]
        key = event.key
        event.stop()
        event.prevent_default()
        if key in choices:
            self._asking = None
            what, act = choices[key]
            self._said = "%s ..." % what
            self.run_worker(act, thread=True, exclusive=True)
        elif key in ("n", "escape"):
            self._asking = None
            self._said = "cancelled"
        self.redraw()

    def _job_to_start(self):
        from surepick.host.link.jobs import JobSpec, last_job
        if self.job is not None:
            return self.job, "from the command line"
        last = last_job(self.loop.port)
        if last is not None:
            return last, "the last job on this port"
        return JobSpec(), "the reference job"

    def action_start(self):
        spec, whence = self._job_to_start()
        self._ask("Start a job (%s): %s?" % (whence, spec.text()), {"y": ("start", lambda: self._start(spec))})

    def action_abort(self):
        self._ask("Abort the running job (the arm holds where it is, ABORTED latches)?",
                  {"y": ("abort", lambda: self._request("abort", link.T_ABORT, ()))})

    def action_clear(self):
        self._ask("Clear the latched fault?", {"y": ("clear", lambda: self._request("clear", link.T_CLEAR_FAULT, ()))})

    def action_calibrate(self):
        self._ask("Calibrate what?", {
            "p": ("calibrate pot", lambda: self._confirm_cal("pot", link.CAL_POT,
                                                              "the jaw closes on nothing: is it empty?")),
            "i": ("calibrate current", lambda: self._confirm_cal("current", link.CAL_CURRENT,
                                                                  "the gripper must be still: go?"))})

    def _confirm_cal(self, name, target, question):
        # called on the worker thread: ask again on the UI thread
        self.call_from_thread(self._ask, "Calibrate %s: %s" % (name, question),
                              {"y": ("calibrate %s" % name,
                                     lambda: self._request("calibrate %s" % name, link.T_CALIBRATE, (target,), 10.0))})

    def _start(self, spec):
        from surepick.host.link.jobs import remember
        try:
            args = spec.link_args()
        except ValueError as e:
            self._said = "not started: %s" % e
            return
        if self._request("start", link.T_JOB, args):
            remember(self.loop.port, spec)

    def _request(self, what, ftype, args, timeout=3.0):
        # One request over the monitor's link; the outcome in words. -> True when the board said OK.
        from surepick.host.link.errors import LinkError
        try:
            r = self.loop.call(ftype, args, timeout=timeout)
        except LinkError as e:
            self._said = "%s: %s" % (what, e)
            return False
        if r.ok:
            self._said = "%s: done%s" % (what, (" (%s)" % ", ".join(str(p) for p in r.payload)) if r.payload else "")
            return True
        # In words, as the CLI says it: a latched fault's payload is (fault, state, attempt), which
        # only answers.py reads right.
        from surepick.host.link.answers import refusal
        self._said = "%s: refused: %s" % (what, refusal(r.code, r.payload, self.loop.port))
        return False

    def on_unmount(self):
        self.stop.set()
        if self._thread is not None:
            self._thread.join(5)


def run_tui(loop, status, stop, db, job=None):
    app = MonitorApp(loop, status, stop, db, job)
    app.run()
    if app.loop_error is not None:
        raise app.loop_error
