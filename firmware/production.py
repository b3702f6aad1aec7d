# A production run: the board runs cycle after cycle by itself over the job machinery (the App's
# _start_job, the machine's cycle, the marker and the flash log as for one JOB), walking a pick
# pattern and a place pattern, waiting for the part to be ready, counting faults by the
# machine's own reasons and stopping on the fault policy (config run_*; docs/production-run.md).
#
# Loaded by the RUN request only (App._run_request), at rest: a board that never runs one never
# holds this module in its heap. The run lives in RAM only: a reset mid-run boots as after any
# job (INTERRUPTED when a cycle was open) and the run does not resume.
#
# Every record goes into the machine's event ring as a K_RUN record (run_codes.R_RUN_*), so the
# EVENT frames, the flash log and `surepick job report` see the run as they see the cycles.
from ..shared_fsm.compat import const
from ..shared_fsm import link
from ..shared_fsm.codes import K_RUN, R_PLACED, F_GRASP_FAILED, F_SENSOR_DISAGREE
from ..shared_fsm.run_codes import (R_RUN_START, R_RUN_CYCLE, R_RUN_SKIP, R_RUN_STOP, R_RUN_WAIT,
                                    STOP_COUNT, STOP_PICKS_DONE, STOP_PLACES_FULL, STOP_REQUESTED,
                                    STOP_FAULT, STOP_FAILED_PART, STOP_IN_ROW, STOP_RATE,
                                    STOP_READY_TIMEOUT, STOP_REFUSED, READY_NONE, READY_CHECK)
from ..shared_fsm.config import MAX_ATTEMPTS
from ..shared_fsm.machine import Job, OK as M_OK, E_ESTOP_ACTIVE as M_ESTOP
from ..shared_fsm.ticks import ticks_diff

WAIT = const(0)     # at rest between cycles: the last cycle's flash work, then part-ready
CYCLE = const(1)    # a cycle's job runs
ENDED = const(2)    # the run is over (why says why); kept for RUN_STATUS until the next run

SLOT_TODO = const(0)
SLOT_DONE = const(1)
SLOT_SKIPPED = const(2)
SLOT_FAILED = const(3)       # the part the run stopped on (run_on_fail stop)
MAX_SLOTS = const(255)


# ask(): the RUN's fields after req_id
_COUNT = const(0)
_PICK = const(1)
_PLACE = const(5)
_WIDTH = const(9)
_TRIES = const(10)
_PGRID = const(11)
_QGRID = const(15)
_READY = const(19)
_READY_MS = const(20)
_WRAP = const(21)
_APPROACH = const(22)        # optional: the job file's approach height (0 or absent: the board's own)
_HEIGHT = "approach_height_um"


def request(app, ftype, rid, a):
    # The App's RUN, RUN_STOP and RUN_STATUS (docs/protocol.md).
    run = app.production
    if ftype == link.T_RUN_STATUS:
        app._reply(rid, link.OK, run.status())
    elif ftype == link.T_RUN_STOP:
        if run.phase == ENDED:
            app._reply(rid, link.E_STATE, ("no_run",))
        else:
            run.stop_asked = 1     # after the current cycle: nothing held is let go early
            app._reply(rid, link.OK)
    else:
        # (anything running refused the RUN before this module loaded: App._load_run)
        # checked whole, at rest, before anything moves; the first cycle starts from the loop
        # (Run.step) once the board is at rest and the part is ready
        r = _blocker(app)
        if r != M_OK:
            app._start_reply(rid, r)
            return
        # As JOB's: the run's approach height is set in RAM (the slots are checked with it), put
        # back if the run is refused, and saved with the first cycle's marker (a refused RUN
        # changes nothing on the board).
        was = app.cfg.approach_height_um
        h = a[_APPROACH] if len(a) > _APPROACH else 0
        if h and h != was:
            try:
                app.settings.set(_HEIGHT, h)
            except ValueError:
                app._reply(rid, link.E_BAD_VALUE, (_HEIGHT,))
                return
            app.apply_settings()
        bad = check(a, app.cfg, app.check_pose)
        if bad is not None:
            if app.cfg.approach_height_um != was:
                app.settings.set(_HEIGHT, was)
                app.apply_settings()
            app._reply(rid, link.E_BAD_VALUE, bad)
            return
        if app.cfg.approach_height_um != was and app.persist:
            app.settings_unsaved = 1
        app.production = Run(a, app.now_ms)
        app.production.begin(app)
        app._reply(rid, link.OK)


def _blocker(app):
    # What would refuse the run's first JOB, said now (before anything moves): the controller's
    # job_refusal, and the e-stop (the machine's start_job says that one)
    r = app.job_refusal()
    if r == M_OK and app.m.inp.estop:
        return M_ESTOP
    return r


def slot_pose(origin, dx, dy, nx, i):
    # Slot i of a grid (row by row along x, then the next row along y) from its origin.
    return (origin[0] + (i % nx) * dx, origin[1] + (i // nx) * dy, origin[2], origin[3])


def check(a, cfg, check_pose):
    # The RUN's fields -> None when the run can start, else the BAD_VALUE reason (a token; with
    # the first slot out of reach, which one).
    if a[_PGRID + 2] < 1 or a[_PGRID + 3] < 1 or a[_QGRID + 2] < 1 or a[_QGRID + 3] < 1:
        return ("grid",)
    if a[_PGRID + 2] * a[_PGRID + 3] > MAX_SLOTS or a[_QGRID + 2] * a[_QGRID + 3] > MAX_SLOTS:
        return ("grid",)
    if a[_TRIES] > MAX_ATTEMPTS:
        return ("attempts",)
    if a[_READY] > READY_CHECK:
        return ("ready",)
    if a[_READY] == READY_CHECK and a[_PGRID + 2] * a[_PGRID + 3] != 1:
        return ("ready",)           # a grasp tells a part that is not there yet only at one pose
    if a[_WIDTH] > cfg.jaw_max_um:
        return ("width",)
    lift = cfg.approach_height_um
    for base, side in ((_PICK, "pick"), (_PLACE, "place")):
        g = _PGRID if base == _PICK else _QGRID
        o = a[base:base + 4]
        for i in range(a[g + 2] * a[g + 3]):
            p = slot_pose(o, a[g], a[g + 1], a[g + 2], i)
            try:
                check_pose(p[0], p[1], p[2], p[3])
                check_pose(p[0], p[1], p[2] + lift, p[3])
            except ValueError:
                return ("unreachable", side, i)
    return None


class Run:
    def __init__(self, a, now):
        self.count = a[_COUNT]
        self.pick = a[_PICK:_PICK + 4]
        self.place = a[_PLACE:_PLACE + 4]
        self.width = a[_WIDTH]
        self.tries = a[_TRIES]
        self.pgrid = a[_PGRID:_PGRID + 4]
        self.qgrid = a[_QGRID:_QGRID + 4]
        self.ready = a[_READY]
        self.ready_ms = a[_READY_MS]
        self.picks = self.pgrid[2] * self.pgrid[3]
        self.places = self.qgrid[2] * self.qgrid[3]
        self.wrap = a[_WRAP]      # the place slots are drop spots used in turn (a bin)
        self.slots = bytearray(self.picks)
        self.phase = WAIT
        self.on = 1               # until it ends (App.running: no constant of this module at boot)
        self.cycles = 0
        self.placed = 0
        self.faulted = 0
        self.skipped = 0
        self.pick_slot = 0
        self.place_slot = 0
        self.in_row = 0
        self.window = 0           # the last run_rate_window cycles, newest in bit 0: 1 faulted
        self.why = -1
        self.loud = 0             # it ended on its own (a fault, the policy): the LED's stop pattern
        self.fault = 0
        self.stop_asked = 0
        self.since = now          # the wait before the next pick began
        self.ready_since = now    # READY_CHECK: the part has been awaited since
        self.job_t = now
        self.start_seq = 0        # the RUN_START record's event number
        self.logged = 0           # ... it is on flash

    def begin(self, app):
        self.start_seq = app.m.events.next_seq
        app.m.events.put_data(app.m, K_RUN, R_RUN_START, self.count, self.picks, self.places, self.ready)

    def status(self):
        # RUN_STATUS's payload (docs/protocol.md)
        return (2 if self.phase == ENDED else 1, self.cycles, self.count, self.placed, self.faulted,
                self.skipped, self.why, self.pick_slot, self.picks)

    def step(self, app, now):
        # Once a tick while the run is on (WAIT or CYCLE). Allocates nothing until a cycle starts.
        m = app.m
        if self.phase == CYCLE:
            if m.busy() or app.job_waiting is not None:
                return
            self._cycle_ended(app, now)
            return
        if m.fault or m.inp.estop:
            self._stop(app, STOP_FAULT, m.fault)     # latched between cycles (an e-stop pressed)
            return
        if self.stop_asked:
            self._stop(app, STOP_REQUESTED, 0)
            return
        if app.busy() or app.cycle_open or not app.settled():
            return                # the last cycle's rest pose, marker and log go to flash first
        if not self.logged:
            # The RUN_START record on flash before anything moves (a tick without other flash
            # work, once the record is in the log): a reset mid-run then leaves the run in the
            # log, and `job report` says the board restarted mid-run.
            if app.ev_sent >= self.start_seq and not app.flash_tick:
                app._flash_commit()
                self.logged = 1
            return
        if self.ready != READY_NONE and ticks_diff(now, self.since) < self.ready_ms:
            return
        self._start_cycle(app, now)

    def _start_cycle(self, app, now):
        i = self.pick_slot
        g = self.pgrid
        pick = slot_pose(self.pick, g[0], g[1], g[2], i)
        q = self.qgrid
        place = slot_pose(self.place, q[0], q[1], q[2], self.place_slot)
        r = app._start_job(Job(pick, place, self.width, self.tries))
        if r != M_OK:
            self._stop(app, STOP_REFUSED, r)
            return
        self.job_t = now
        self.phase = CYCLE

    def _cycle_ended(self, app, now):
        m = app.m
        f = m.fault
        slot = self.pick_slot
        cfg = app.cfg
        if f == F_GRASP_FAILED and self.ready == READY_CHECK and not m.holding:
            # Nothing at the pick pose yet: a part-ready check, not a failed part.
            waited = ticks_diff(now, self.ready_since)
            m.events.put_data(m, K_RUN, R_RUN_WAIT, self.cycles + 1, slot, waited, 0)
            if waited >= cfg.run_ready_timeout_ms:
                self._stop(app, STOP_READY_TIMEOUT, f)
                return
            m.clear_fault()
            self.phase = WAIT
            self.since = now
            return
        self.cycles += 1
        self.window = (self.window << 1) & ((1 << cfg.run_rate_window) - 1)
        m.events.put_data(m, K_RUN, R_RUN_CYCLE, self.cycles, slot, ticks_diff(now, self.job_t),
                          f if f else R_PLACED)
        if f:
            self.faulted += 1
            self.in_row += 1
            self.window |= 1
            if (f != F_GRASP_FAILED and f != F_SENSOR_DISAGREE) or m.holding or app.arm_off:
                # e-stop, a safety fault, a part dropped or held (the machine still counts it
                # held: jobs are refused until a rescue): a human looks
                self._stop(app, STOP_FAULT, f)
                return
            if cfg.run_on_fail:
                self.slots[slot] = SLOT_FAILED
                self._stop(app, STOP_FAILED_PART, f)
                return
            self.slots[slot] = SLOT_SKIPPED
            self.skipped += 1
            m.events.put_data(m, K_RUN, R_RUN_SKIP, self.cycles, slot, 0, f)
            if self.in_row >= cfg.run_stop_in_row:
                self._stop(app, STOP_IN_ROW, f)
                return
            if self.cycles >= cfg.run_rate_window and _bits(self.window) * 100 > cfg.run_rate_pct * cfg.run_rate_window:
                self._stop(app, STOP_RATE, f)
                return
            m.clear_fault()       # the part's own failure, counted and skipped: the run goes on
        else:
            self.placed += 1
            self.in_row = 0
            self.slots[slot] = SLOT_DONE
            if self.places > 1:
                self.place_slot += 1
                if self.wrap and self.place_slot >= self.places:
                    self.place_slot = 0
        if self.picks > 1:
            self.pick_slot += 1
        self.phase = WAIT
        self.since = now
        self.ready_since = now
        if self.count and self.cycles >= self.count:
            self._stop(app, STOP_COUNT, 0)
        elif self.picks > 1 and self.pick_slot >= self.picks:
            self._stop(app, STOP_PICKS_DONE, 0)
        elif self.places > 1 and not self.wrap and self.place_slot >= self.places:
            self._stop(app, STOP_PLACES_FULL, 0)
        elif self.stop_asked:
            self._stop(app, STOP_REQUESTED, 0)

    def _stop(self, app, why, fault):
        m = app.m
        self.why = why
        self.loud = 1 if why >= STOP_FAULT else 0
        self.fault = fault
        self.phase = ENDED
        self.on = 0
        m.events.put_data(m, K_RUN, R_RUN_STOP, self.cycles, self.placed, why, fault)


def _bits(v):
    n = 0
    while v:
        n += v & 1
        v >>= 1
    return n
