# What the monitor knows about the board right now: filled by the monitor loop's thread, read
# by the live view and the plain printer through snapshot() (a plain dict: no shared mutable state).
import collections
import threading
import time

from surepick.host import rejects
from surepick.shared_fsm import codes
from surepick.shared_fsm import states
from surepick.host.monitor.names import code_name
from surepick.host.monitor.run_view import RunView

MAX_FAULTS = 8
MAX_TEXT_LINES = 200
STALE_S = 1.0                   # no telemetry for longer than this: what is shown is stale


class BoardStatus:
    def __init__(self, port, port_given=None):
        self._lock = threading.Lock()
        self.port = port
        self.port_given = port_given  # --port as the user gave it, for the commands the view suggests
        self.connected = False
        self.note = "starting"
        self.board_id = None
        self.board_id_assumed = False
        self.fw_version = None
        self.boot_count = None
        self.rejected = None         # how many things the boot rejected from flash (None: unknown)
        self.rejects = []            # (file, key, reason) items of them, as far as known
        self.telemetry = None        # dict of the last TELEMETRY frame
        self.telemetry_at = 0.0
        self.job_state = "idle"
        self.job_started = None      # host time the current cycle started
        self.faults = collections.deque(maxlen=MAX_FAULTS)   # newest first
        self._fault_keys = set()
        self.text = collections.deque(maxlen=MAX_TEXT_LINES)
        self._partial = ""
        self.reconnects = 0
        self.records_stored = 0
        self.records_added = 0
        self.last_seq = 0
        self.backfills = 0
        self.lost_to_rotation = 0    # records the board's log rotated away before they were fetched
        self.link = {"frames": 0, "corrupt": 0}
        self.via_hub = False
        self.lent_to = None          # the hub lent the board's console to this program
        self.writer_elsewhere = None  # another monitor records this board into the database
        self.bench_states = []       # (key, how it shows, way out) of what the board is in (host/board_state.py)
        self._run = RunView()        # the production run, from the board's run records and RUN_STATUS
        self.run_version = 0         # counts the changes of the run's figures (the plain printer's cue)

    def update(self, **kw):
        with self._lock:
            for k, v in kw.items():
                setattr(self, k, v)

    def on_hello(self, hello):
        # HELLO fields; a newer firmware adds what its boot rejected: the count and the first item
        count, first = rejects.from_hello(hello)
        with self._lock:
            self.fw_version = hello[1]
            self.boot_count = hello[4]
            self.rejected = count
            self.rejects = [first] if first else []
            if self._run.on_boot():
                self.run_version += 1
            if self.job_started is not None:
                # a board that boots is not running the job it ran: the boot says what became of it
                self.job_state = "ended by a restart (boot %s)" % hello[4]
                self.job_started = None

    def on_event(self, ev):
        # ev: the 12-int event record of an EVENT frame
        kind, frm, to, reason = ev[2], ev[3], ev[4], ev[5]
        with self._lock:
            if kind == codes.K_TRANSITION:
                if frm == states.IDLE and to != states.IDLE:
                    self.job_started = time.time()
                    self.job_state = "running"
                elif to == states.IDLE:
                    self.job_state = "done: %s" % code_name(reason)
                    self.job_started = None
            elif kind == codes.K_FAULT:
                self.job_state = "fault: %s" % code_name(reason)
                self.job_started = None
                self._add_fault(ev)
            elif kind == codes.K_RUN and self._run.add(ev):
                self.run_version += 1

    def on_run_record(self, ev):
        # a run record from the board's log (back-filled, or stored before this monitor began)
        with self._lock:
            if self._run.add(ev):
                self.run_version += 1

    def on_run_status(self, payload):
        with self._lock:
            if self._run.set_status(payload):
                self.run_version += 1

    def run_figures(self):
        # -> (version, the run's figures or None)
        with self._lock:
            return self.run_version, self._run.figures()

    def on_telemetry(self, d):
        # A monitor that joins mid-cycle has not seen the job start: the state says it runs.
        from surepick.host import board_state
        view = board_state.View.from_telemetry(d)
        shown = [(e.key, board_state.shows(e, view), board_state.way_out(e, self.port_given))
                 for e in board_state.active(view) if e.blocks_job or e.level != "OK"]
        with self._lock:
            self.telemetry = d
            self.telemetry_at = time.time()
            self.bench_states = shown
            if d["state"] != states.IDLE and self.job_started is None and not d["fault"]:
                self.job_started = time.time()
                self.job_state = "running"
            elif d["fault"] and self.job_started is not None:
                # a fault latched with no event seen for it (one a restart latched quietly): the job is over
                self.job_state = "fault: %s" % code_name(d["fault"])
                self.job_started = None

    def clear_faults(self):
        with self._lock:
            self.faults.clear()
            self._fault_keys.clear()

    def add_fault_records(self, faults):
        # faults: [(seq, 12 ints)] from the store, newest first
        with self._lock:
            for _, ev in reversed(faults):
                self._add_fault(ev)

    def _add_fault(self, ev):
        key = (ev[1], ev[0], ev[5])  # t_ms, event seq, code: the same fault live and from the log
        if key in self._fault_keys:
            return
        self._fault_keys.add(key)
        self.faults.appendleft(tuple(ev))

    def add_text(self, data):
        s = self._partial + data.decode("utf-8", "replace").replace("\r", "")
        lines = s.split("\n")
        with self._lock:
            self._partial = lines.pop()
            for line in lines:
                if line.strip():
                    self.text.append(line)

    def snapshot(self):
        with self._lock:
            d = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
            d["faults"] = list(self.faults)
            d["text"] = list(self.text)
            d["link"] = dict(self.link)
            d["run"] = self._run.figures()
            if self._partial.strip():
                d["text"].append(self._partial)
        # How old what the view shows is: telemetry older than STALE_S (or none on a link that
        # is up) is stale and the view says so.
        d["telemetry_age"] = time.time() - d["telemetry_at"] if d["telemetry_at"] else None
        d["stale"] = (d["telemetry_age"] is None or d["telemetry_age"] > STALE_S)
        t = d["telemetry"]
        if t:
            done = t["cycles_ok"] + t["cycles_failed"]
            d["success_rate"] = (100.0 * t["cycles_ok"] / done) if done else None
        else:
            d["success_rate"] = None
        return d
