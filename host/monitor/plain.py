# `surepick monitor --plain`: one line per record on stdout, for piping into grep/awk; link
# notes and REPL text on stderr. Every line starts with the host time and a kind word:
#   2026-05-01T10:00:00.123 hello board=pico-e66 fw=0.1.0 boot=4 reset=POWER_ON log_last_seq=812 rejected=0
#   ... rejected board=pico-e66 /config.json wdt_ms: out of range (default used)
#   ... event seq=17 t_ms=5230 transition GRASP->VERIFY reason=DWELL_DONE attempt=1 pot=23000 ...
#       present=jaw+switch (the grasp checks that said "part present", by name)
#   ... fault t_ms=5400 GRASP_FAILED state=VERIFY attempt=3 faults_total=2
#   ... record board=pico-e66 seq=813 type=fault ...
#   ... telemetry state=GRASP cycles_ok=12 ... (only with --telemetry)
#   ... board holding: a part is held ...; way out: `surepick job rescue --place` (when it changes)
#   ... run cycle=7 of=200 state=running placed=6 faulted=1 skipped=1 faults=GRASP_FAILED:1 skipped_slots=3
#       rate_per_h=212.5 eta_s=3283 (a production run, when its figures change: about once a cycle;
#       host/monitor/run_view.py)
import sys
import time

from surepick.host import rejects
from surepick.shared_fsm import codes
from surepick.firmware import flashlog
from surepick.host.monitor import run_view
from surepick.host.monitor.names import (EVENT_RECORD_TYPES, boot_action_name, code_name, fault_state_name,
                                         present_text, record_type_name, reset_cause_name, state_name)


def _now():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t)) + ".%03d" % (int(t * 1000) % 1000)


def event_text(ev):
    kind = codes.KIND_NAMES[ev[2]] if 0 <= ev[2] < len(codes.KIND_NAMES) else "kind%d" % ev[2]
    if ev[2] == codes.K_SEARCH:
        # a part search's step: where (um), the beam, and the value its reason gives
        return ("ev_seq=%d t_ms=%d search %s reason=%s attempt=%d x_um=%d y_um=%d z_um=%d beam=%d value=%d"
                % (ev[0], ev[1], state_name(ev[3]), code_name(ev[5]), ev[6], ev[7], ev[8], ev[9], ev[10], ev[11]))
    if ev[2] == codes.K_RUN:
        from surepick.host.link.answers import run_text
        return "ev_seq=%d t_ms=%d %s" % (ev[0], ev[1], run_text(ev))
    return ("ev_seq=%d t_ms=%d %s %s->%s reason=%s attempt=%d pot=%d switch=%d current_ma=%d "
            "beam=%d present=%s" % (ev[0], ev[1], kind, state_name(ev[3]), state_name(ev[4]),
                                    code_name(ev[5]), ev[6], ev[7], ev[8], ev[9], ev[10], present_text(ev[11])))


def record_text(seq, rtype, r):
    name = record_type_name(rtype)
    if rtype in EVENT_RECORD_TYPES:
        body = event_text(r)
    elif rtype == flashlog.R_COUNTERS:
        body = "cycles_ok=%d cycles_failed=%d faults=%d boots=%d dropped=%d" % tuple(r[:5])
    elif rtype == flashlog.R_BOOT:
        body = "t_ms=%d reset_cause=%s boot_count=%d action=%s rest_stored=%d rejected=%d" % (
            r[1], reset_cause_name(r[2]), r[3], boot_action_name(r[4]), r[10], r[11])
    else:
        body = " ".join(str(v) for v in r)
    return "seq=%d type=%s %s" % (seq, name, body)


class PlainPrinter:
    def __init__(self, status, out=sys.stdout, err=sys.stderr, telemetry=False):
        self.status = status
        self.outf = out
        self.errf = err
        self.telemetry = telemetry
        self.shown = None            # the bench states last printed (host/board_state.py)
        self.run_shown = None        # the production run's line last printed

    def _bench_states(self):
        # One line per state that refuses a job when the set changes, with its way out.
        now = self.status.snapshot()["bench_states"]
        if now == self.shown:
            return
        self.shown = now
        for key, shows, way_out in now or [("clear", "nothing latched, held or running", "none needed")]:
            print("%s board %s: %s; way out: %s" % (_now(), key, shows, way_out), file=self.outf, flush=True)

    def __call__(self, kind, data):
        if kind == "note":
            print("%s note %s" % (_now(), data), file=self.errf, flush=True)
            return
        if kind == "hello":
            line = "hello board=%s fw=%s boot=%d reset=%s log_last_seq=%d" % (
                data[0], data[1], data[4], reset_cause_name(data[3]), data[5])
            count, _ = rejects.from_hello(data)
            if count is not None:
                line += " rejected=%d" % count
        elif kind == "rejects":       # (count, items): one line per item the board listed
            for item in data[1]:
                print("%s rejected board=%s %s" % (_now(), self.status.board_id, rejects.describe(item)),
                      file=self.outf, flush=True)
            return
        elif kind == "event":
            line = "event " + event_text(data)
        elif kind == "fault":
            line = "fault t_ms=%d %s state=%s attempt=%d faults_total=%d" % (
                data["t_ms"], code_name(data["fault"]), fault_state_name(data["fault"], data["state"]),
                data["attempt"], data["faults_total"])
        elif kind == "run":
            line = run_view.plain_text(data)
            if line == self.run_shown:
                return
            self.run_shown = line
        elif kind == "record":
            line = "record board=%s %s" % (self.status.board_id, record_text(*data))
        elif kind == "telemetry":
            self._bench_states()
            if not self.telemetry:
                return
            line = "telemetry " + " ".join("%s=%s" % (k, v) for k, v in data.items() if k != "type")
        else:
            return
        print("%s %s" % (_now(), line), file=self.outf, flush=True)

    def text(self, data):
        # REPL text: straight through to stderr, as it arrives
        try:
            self.errf.write(data.decode("utf-8", "replace"))
            self.errf.flush()
        except (OSError, ValueError):
            pass
