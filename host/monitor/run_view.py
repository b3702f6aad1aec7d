# The production run as the monitor shows it (docs/production-run.md): cycle n of N, rate, ETA,
# faults by reason, slots placed and skipped. Every figure is the board's own: the run's records
# (codes.K_RUN events, live or back-filled from its log; each names its cycle and carries the
# board's clock) and its RUN_STATUS reply. Nothing is timed or counted on the host's clock, so the
# view cannot disagree with `job status` or `job report`.
#
# Rate: cycles per hour of the board's clock, from the run's start (RUN_START's time, cycle 0) to
# its newest RUN_CYCLE; without the start (the log rotated past it before the monitor came), from
# the oldest cycle seen. ETA: the cycles left at that rate. The counts come from the records when
# they hold every cycle since the start; otherwise (a monitor that joined late, or only watches)
# from RUN_STATUS, and the faults by reason say how many they could not name.
import statistics

from surepick.shared_fsm import codes, run_codes
from surepick.shared_fsm.ticks import ticks_diff

_MS_PER_H = 3600 * 1000
_X, _Y, _Z, _VALUE = 7, 8, 9, 11          # a K_RUN record's numbers (run_codes.RUN_FIELDS)


class RunView:
    def __init__(self):
        self._reset()
        self.status = None        # the last RUN_STATUS payload (9 ints), or None
        self._boot_since = False  # the board booted since the run's start: a new start is a new run

    def _reset(self):
        self._seen = set()        # the records taken (live and back-filled: the same one counts once)
        self.start = None         # (t_ms, count, pick slots)
        self.cycles = {}          # cycle number -> (t_ms, slot, cycle ms, outcome)
        self.skips = {}           # cycle number -> slot
        self.stop = None          # (cycles, placed, why, fault)
        self.restarted = False    # the board said hello since the run's start: the run is over, not resumed

    # ---- what the board said ----

    def add(self, ev):
        """A K_RUN event record (12 ints), live or from the log; the same record twice counts
        once. -> True when the view changed."""
        if ev[2] != codes.K_RUN:
            return False
        key = (ev[0], ev[1], ev[5], ev[_X])
        if key in self._seen:
            return False
        self._seen.add(key)
        r, t = ev[5], ev[1]
        if r == run_codes.R_RUN_START:
            if self.start is not None and not self._boot_since and ticks_diff(t, self.start[0]) <= 0:
                return False      # an older run's start, back-filled after the newer one was seen
            self._reset()
            self._seen.add(key)
            self._boot_since = False
            self.status = None    # a RUN_STATUS from before this run's start (asked again after it)
            self.start = (t, ev[_X], ev[_Y])
            return True
        if self.start is not None and ticks_diff(t, self.start[0]) < 0 and not self._boot_since:
            return False          # an older run's record
        if r == run_codes.R_RUN_CYCLE:
            self.cycles[ev[_X]] = (t, ev[_Y], ev[_Z], ev[_VALUE])
        elif r == run_codes.R_RUN_SKIP:
            self.skips[ev[_X]] = ev[_Y]
        elif r == run_codes.R_RUN_STOP:
            self.stop = (ev[_X], ev[_Y], ev[_Z], ev[_VALUE])
        else:
            return False          # RUN_WAIT: a part not there yet changes no figure
        return True

    def set_status(self, payload):
        """RUN_STATUS's reply payload. -> True when the view changed."""
        if payload and payload[0] == 0:
            p = (0,) * 9          # no run since this boot
        else:
            p = tuple(payload[:9]) if payload and len(payload) >= 9 else None
        if p == self.status:
            return False
        self.status = p
        return True

    def on_boot(self):
        # The board said hello (live): it is not running the run it ran (a run lives in RAM), and
        # the RUN_STATUS it had is gone with it. (A boot back-filled from the log is no news: the
        # RUN_STATUS asked after it says whether this boot runs the run.)
        self._boot_since = True
        self.status = None
        if self.start is not None and self.stop is None:
            self.restarted = True
            return True
        return False

    # ---- the figures ----

    def figures(self):
        """-> a dict of the run's figures, or None when no run was seen."""
        st = self.status
        if self.start is None and not self.cycles and self.stop is None and (st is None or st[0] == 0):
            return None
        newest = max(self.cycles) if self.cycles else 0
        complete = self.start is not None and set(self.cycles) == set(range(1, newest + 1))
        if self.stop is not None:
            complete = complete and self.stop[0] == newest
        if complete:
            cycle = newest
            placed = sum(1 for c in self.cycles.values() if c[3] == codes.R_PLACED)
            faulted = cycle - placed
            skipped = len(self.skips)
        elif st is not None and st[0]:
            cycle, placed, faulted, skipped = st[1], st[3], st[4], st[5]
        else:
            cycle = self.stop[0] if self.stop else newest
            placed = self.stop[1] if self.stop else sum(1 for c in self.cycles.values() if c[3] == codes.R_PLACED)
            faulted, skipped = cycle - placed, len(self.skips)
        count = self.start[1] if self.start is not None else (st[2] if st is not None and st[0] else None)
        picks = self.start[2] if self.start is not None else (st[8] if st is not None and st[0] else 1)
        by_reason = {}
        for c in self.cycles.values():
            if c[3] != codes.R_PLACED:
                by_reason[codes.name(c[3])] = by_reason.get(codes.name(c[3]), 0) + 1
        unnamed = max(0, faulted - sum(by_reason.values()))
        if self.stop is not None:
            state, why = "ended", _stop_name(self.stop[2])
        elif st is not None and st[0] == 2:
            state, why = "ended", _stop_name(st[6])
        elif self.restarted or (st is not None and st[0] == 0):
            state, why = "ended", "restart"    # no run since this boot: the board restarted mid-run
        else:
            state, why = "running", None
        rate, eta_s = self._rate(count, picks, cycle, state)
        times = [c[2] for c in self.cycles.values() if c[3] == codes.R_PLACED]
        return {"cycle": cycle, "count": count, "state": state, "why": why,
                "fault": codes.name(self.stop[3]) if self.stop is not None and self.stop[3] else None,
                "placed": placed, "faulted": faulted, "skipped": skipped,
                "skipped_slots": [self.skips[k] for k in sorted(self.skips)],
                "faults_by_reason": by_reason, "faults_unnamed": unnamed,
                "rate_per_h": rate, "eta_s": eta_s,
                "cycle_ms_median": statistics.median(times) if times else None}

    def _rate(self, count, picks, cycle, state):
        # -> (cycles per hour, seconds left or None), both on the board's clock
        if not self.cycles:
            return None, None
        last = max(self.cycles)
        if self.start is not None:
            ref_n, ref_t = 0, self.start[0]
        else:
            ref_n = min(self.cycles)
            ref_t = self.cycles[ref_n][0]
        done, ms = last - ref_n, ticks_diff(self.cycles[last][0], ref_t)
        if done <= 0 or ms <= 0:
            return None, None
        rate = done * _MS_PER_H / ms
        ends = [n for n in (count or None, picks if picks and picks > 1 else None) if n]
        if state != "running" or not ends:
            return rate, None
        left = max(0, min(ends) - cycle)
        return rate, left * ms / done / 1000.0


def _stop_name(why):
    return run_codes.STOP_NAMES[why] if 0 <= why < len(run_codes.STOP_NAMES) else "stop%d" % why


def _faults_text(f, sep, join):
    parts = ["%s%s%d" % (k, sep, v) for k, v in sorted(f["faults_by_reason"].items())]
    if f["faults_unnamed"]:
        parts.append("unnamed%s%d" % (sep, f["faults_unnamed"]))
    return join.join(parts) or "none"


def duration_text(s):
    s = int(round(s))
    return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60)


def plain_text(f):
    """One `--plain` line's body: `run cycle=3 of=200 state=running placed=3 ...`."""
    out = "run cycle=%d of=%s state=%s" % (f["cycle"], "?" if f["count"] is None else
                                           "until_stopped" if f["count"] == 0 else f["count"], f["state"])
    if f["why"]:
        out += " why=%s" % f["why"]
    if f["fault"]:
        out += " fault=%s" % f["fault"]
    out += " placed=%d faulted=%d skipped=%d faults=%s" % (f["placed"], f["faulted"], f["skipped"],
                                                           _faults_text(f, ":", ","))
    if f["skipped_slots"]:
        out += " skipped_slots=%s" % ",".join(str(s) for s in f["skipped_slots"])
    if f["rate_per_h"] is not None:
        out += " rate_per_h=%.1f" % f["rate_per_h"]
    if f["eta_s"] is not None:
        out += " eta_s=%d" % round(f["eta_s"])
    return out


def view_lines(f):
    """The live view's run rows: [(label, text)]."""
    of = ("(count unknown)" if f["count"] is None else "(until stopped)" if f["count"] == 0
          else "of %d" % f["count"])
    head = "cycle %d %s   %s" % (f["cycle"], of, f["state"] if f["why"] is None else "ended: %s%s" % (
        f["why"], " (%s)" % f["fault"] if f["fault"] else ""))
    pace = "-" if f["rate_per_h"] is None else "%.1f cycles/h" % f["rate_per_h"]
    if f["eta_s"] is not None:
        pace += "   ETA %s" % duration_text(f["eta_s"])
    if f["cycle_ms_median"] is not None:
        pace += "   median cycle %.0f ms" % f["cycle_ms_median"]
    slots = "placed %d   faulted %d   skipped %d%s" % (
        f["placed"], f["faulted"], f["skipped"],
        " (slots %s)" % ", ".join(str(s) for s in f["skipped_slots"]) if f["skipped_slots"] else "")
    return [("run", head), ("pace", pace), ("parts", slots), ("run faults", _faults_text(f, " ", ", "))]
