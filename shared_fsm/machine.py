# The nine-state pick-and-place machine. Pure Python for MicroPython and CPython alike.
#
# Contract (Zephyr-SMF style): the caller copies readings into `m.inp`, calls `m.step(now_ms)`,
# then applies `m.out` (a Cartesian move target with a sequence number, a jaw opening and a hold
# flag). step() never waits and never allocates in steady state; all timing is wrap-safe.
# Motion arrival is reported back by the motion layer through `inp.arrived_seq`, never assumed.
from .compat import const
from .ticks import ticks_diff
from .states import (IDLE, APPROACH, DESCEND, GRASP, VERIFY, LIFT, TRANSFER, PLACE, RECOVER,
                     N_STATES)
from .codes import (K_TRANSITION, K_FAULT, K_NOTE, R_NONE,
                    R_JOB_START, R_ARRIVED, R_SETTLED, R_DWELL_DONE, R_VERIFY_PASS, R_VERIFY_EMPTY,
                    R_VERIFY_DISAGREE, R_VERIFY_UNSETTLED, R_RETRY, R_PLACED, R_DISAGREE_NOTE,
                    R_GRIP_FLICKER, R_RESENSED, R_CLEARED, R_RELEASED, R_TOUCHED,
                    F_GRASP_FAILED, F_SENSOR_DISAGREE, F_SENSOR_FAULT, F_CRUSH, F_DROPPED,
                    F_RELEASE_FAILED, F_MOTION_TIMEOUT, F_HOLD_OVERCURRENT, F_ESTOP, F_ABORTED,
                    F_BAD_POSE, F_LIFT_SHORT,
                    CHECK_JAW, CHECK_SWITCH, CHECK_CURRENT, CHECK_BEAM)
from .config import state_bound_ms, MAX_ATTEMPTS
from .events import EventRing

MOVE_FREE = const(0)   # joint-space move (approach, transfer)
MOVE_LINE = const(1)   # straight Cartesian segment (descend, lift, place, retreat)
MOVE_BACK = const(2)   # back along the last move's own path to where it began (a search probe's way up)
MOVE_PLAN = const(3)   # no motion: plan the moves the re-sense hook names next, at rest; arrives when done

# Results of start_job / clear_fault.
OK = const(0)
E_BUSY = const(1)
E_FAULTED = const(2)
E_UNREACHABLE = const(3)
E_BAD_JOB = const(4)
E_ESTOP_ACTIVE = const(5)
E_HOLDING = const(6)       # a verified part is still between the fingers: rescue or release it first
E_ARM_OFF = const(7)       # the arm's servos are unpowered after an interruption (the controller says)
ERROR_NAMES = ("ok", "busy", "fault latched", "unreachable pose", "bad job", "e-stop active",
               "part held", "arm unpowered")

# What the re-sense hook answers (Machine.resense).
RESENSE_NO = const(0)      # no pose: the attempt goes where it would have (the pick pose, or the spiral)
RESENSE_FOUND = const(1)   # set_part_pose() was called: the attempt goes there
RESENSE_BUSY = const(2)    # it is still looking (moving the arm itself): step it again next tick

# Phases inside the states that have several steps.
_P_MOVE = const(0)
_P_SETTLE = const(1)
_P_CHECK = const(2)
_P_OPEN = const(3)
_P_RETREAT = const(4)
_P_CLEAR = const(5)
_P_SEARCH = const(6)       # APPROACH: the re-sense hook looks for the part first
_P_SET_DOWN = const(7)     # LIFT: a short lift's part going back down to where it was picked

# Spiral of retry offsets: attempt k is shifted k * spiral_step along k * 137.5 degrees
# (golden angle, so successive tries cover different sides). cos/sin * 1000 for k = 1..10.
_SPIRAL_COS = (-737, 87, 609, -985, 843, -259, -462, 940, -924, 423)
_SPIRAL_SIN = (676, -996, 793, -174, -537, 966, -887, 342, 383, -906)


def fault_where(fault, state):
    # The state a fault is named by: the one the machine was in when it latched, except the
    # verdict after the last attempt (RECOVER found no further try), which belongs to VERIFY.
    # The machine's fault_state and every host that names a fault from its event record
    # (event from_state) use this one rule, so one fault reads the same everywhere.
    if state == RECOVER and (fault == F_GRASP_FAILED or fault == F_SENSOR_DISAGREE):
        return VERIFY
    return state


def spiral_dx_um(cfg, attempt):
    # The x shift of attempt `attempt`'s grasp from the pick pose (0 for the first attempt).
    # Used by the machine and by the planner that prepares a job's retry moves ahead.
    if attempt < 2:
        return 0
    k = attempt - 2 if attempt < 11 else 9
    return cfg.spiral_step_um * (attempt - 1) * _SPIRAL_COS[k] // 1000


def spiral_dy_um(cfg, attempt):
    # The y shift, as spiral_dx_um.
    if attempt < 2:
        return 0
    k = attempt - 2 if attempt < 11 else 9
    return cfg.spiral_step_um * (attempt - 1) * _SPIRAL_SIN[k] // 1000


class Inputs:
    # Readings the caller copies in before each step (logical values; see docs/conventions.md).
    def __init__(self):
        self.pot_counts = 0
        self.switch_pressed = 0
        self.current_ma = 0
        self.beam_broken = 0
        self.estop = 0
        self.rail_mv = 0
        self.arrived_seq = 0     # sequence number of the last move the motion layer finished
        self.error_seq = 0       # sequence number of a move the motion layer could not plan
        self.jaw_done = 0        # 1 when the jaw setpoint has reached the commanded opening
        self.jaw_setpoint_um = -1  # where the jaw setpoint is now (-1: not known): a fault freezes it there


class Outputs:
    # Commands the caller applies after each step.
    def __init__(self):
        self.move_seq = 0
        self.move_kind = MOVE_FREE
        self.move_gentle = 0     # 1: lift/transfer/place profile (bounded, low acceleration)
        self.x_um = 0
        self.y_um = 0
        self.z_um = 0
        self.pitch_mdeg = -90000
        self.jaw_um = 0
        self.hold = 0            # 1: stop motion where it is (fault, e-stop); the jaw command froze too


class Job:
    # One pick-and-place order. Poses are the jaw centre in um and the tool pitch in mdeg.
    def __init__(self, pick, place, part_width_um, max_attempts=0):
        self.pick = tuple(int(v) for v in pick)
        self.place = tuple(int(v) for v in place)
        self.part_width_um = int(part_width_um)
        self.max_attempts = int(max_attempts)


class Machine:
    def __init__(self, cfg, inp=None, out=None, events=None):
        self.cfg = cfg
        self.inp = inp if inp is not None else Inputs()
        self.out = out if out is not None else Outputs()
        self.events = events if events is not None else EventRing()
        # Optional re-sense hook, hook(machine, attempt) -> RESENSE_NO / FOUND / BUSY (False and
        # True are NO and FOUND), asked when each retry's approach begins (and the first
        # attempt's too when the hook's `first` is true): BUSY keeps the machine in APPROACH
        # stepping the hook, which moves the arm through move() / arrived() (a part search:
        # shared_fsm/search.py, installed from the config's `resense`). Its job(machine), if
        # it has one, is called when a job starts.
        self.resense = None
        self.arm = None          # the arm the controller runs (shared_fsm/arm.py), for the hook
        self.touch_mv = 0        # set_arm: the sag that says a finger came down on something
        self.jaw_max_um = cfg.jaw_max_um   # the config's widest opening, capped by the arm's jaw
        self.bound = [0] * N_STATES
        self.reconfigure()
        self.state = IDLE
        self.now = 0
        self.entered = 0
        self.phase = 0
        self.phase_t = 0
        self.attempt = 0
        self.max_attempts = cfg.max_attempts
        self.fault = 0
        self.fault_state = IDLE
        self.estop_latched = 0   # this e-stop press has latched (a later fault may replace the code)
        self.holding = 0         # a verified part is between the fingers, not yet let go on purpose
        self.outcome = 0         # R_PLACED or the fault code of the last finished cycle
        self.present = 0         # last grasp-check mask (bits of codes.CHECK_*)
        self.disagreed = 0       # a verification in this cycle saw the checks disagree
        self.cycles_started = 0
        self.cycles_placed = 0
        self.cycles_faulted = 0
        # switch debouncer: a level is a fact after debounce_reads equal reads in a row
        self.sw_last = 0
        self.sw_streak = 0
        self.sw_stable = 0
        # settle detector for the whole check mask (VERIFY, pre-grasp and release checks)
        self.mask_last = -1
        self.mask_streak = 0
        self.touch_streak = 0    # DESCEND: reads in a row with the rail a touch's sag down (_touched)
        self.crush_streak = 0
        self.jaw_ref_um = 0      # a jaw reading at or above this counts as "part present"
        self.loss_active = 0
        self.loss_since = 0
        self.over_active = 0
        self.over_since = 0
        # job
        self.job_pending = 0
        self.part_width_um = 0
        self.px = 0              # part pose as ordered (um, mdeg)
        self.py = 0
        self.pz = 0
        self.pp = 0
        self.gx = 0              # grasp pose of the current attempt
        self.gy = 0
        self.gz = 0
        self.hz = cfg.approach_height_um  # how high above it this attempt approaches and lifts
        # The lift ends this much higher: the sag the description predicts there with its part,
        # set by the job's payload check (firmware/controller.py); up_um is this attempt's.
        self.lift_up_um = 0
        self.up_um = 0
        self.tx = 0              # place pose
        self.ty = 0
        self.tz = 0
        self.tp = 0
        self.close_um = 0
        self.open_um = 0
        self.grip_jaw_um = 0
        # the lift's sink check (_lift_short): the rail and the gripper current, each a running
        # mean (x8, a time constant of 8 reads), taken at the approach point (the lift ends up_um
        # over it) settled, before the descent; the job's um of sink
        # per A the arm servos draw more (Arm.lift_droop_um_per_a), the rail's source resistance
        self.rail_f = 0
        self.cur_f = 0
        self.lift_mv0 = 0
        self.lift_ma0 = 0
        self.lift_k = 0
        self.lift_mohm = 0
        self.lift_sink_um = 0    # the last lift's estimated sink (um)

    def set_arm(self, arm):
        self.arm = arm
        # DESCEND's touch (_touched): the rail sag of one of the shoulder and elbow at stall, half
        # of both's. A descent's own pull stays well under it (measured: docs/arm-description.md).
        self.touch_mv = arm.load_stall_sag_mv() // 2 if arm is not None else 0
        self.reconfigure()

    def reconfigure(self):
        j = self.cfg.jaw_max_um
        if self.arm is not None and self.arm.jaw_max_um < j:
            j = self.arm.jaw_max_um     # a gripper that opens less: never command it wider
        self.jaw_max_um = j
        for s in range(N_STATES):
            self.bound[s] = state_bound_ms(self.cfg, s)
        if self.cfg.resense:
            if self.resense is None:
                from .search import Search
                self.resense = Search(self.cfg)
            elif hasattr(self.resense, "reconfigure"):
                self.resense.reconfigure(self.cfg)
        elif self.resense is not None and hasattr(self.resense, "reconfigure"):
            self.resense = None      # the config's search, switched off

    # ---- commands from outside (not in the hot loop; may allocate) ----

    def start_job(self, job, check_pose=None):
        # check_pose(x_um, y_um, z_um, pitch_mdeg) raises ValueError when unreachable
        # (kinematics-backed); None skips the check (tests that do not move a real arm).
        r = self.refusal()
        if r:
            return r
        if len(job.pick) != 4 or len(job.place) != 4 or job.part_width_um <= 0:
            return E_BAD_JOB
        if job.part_width_um > self.jaw_max_um or job.max_attempts < 0 or job.max_attempts > MAX_ATTEMPTS:
            return E_BAD_JOB
        if check_pose is not None:
            lift = self.cfg.approach_height_um
            try:
                for pose in (job.pick, job.place):
                    check_pose(pose[0], pose[1], pose[2], pose[3])
                    check_pose(pose[0], pose[1], pose[2] + lift, pose[3])
            except ValueError:
                return E_UNREACHABLE
        self.px, self.py, self.pz, self.pp = job.pick
        self.tx, self.ty, self.tz, self.tp = job.place
        self.lift_k = 0
        if check_pose is not None and self.arm is not None and self.cfg.lift_sink_max_um:
            p = job.pick
            self.lift_k = self.arm.lift_droop_um_per_a(p[0] / 1000.0, p[1] / 1000.0,
                                                      (p[2] + self.cfg.approach_height_um) / 1000.0, p[3] / 1000.0)
            self.lift_mohm = int(self.arm.sensors["rail"]["source_mohm"])
        self.part_width_um = job.part_width_um
        self.max_attempts = job.max_attempts or self.cfg.max_attempts
        if self.resense is not None and hasattr(self.resense, "job"):
            self.resense.job(self)
        self.job_pending = 1
        return OK

    def refusal(self):
        # -> what start_job answers before it looks at the job (OK: the machine takes one now).
        # Changes nothing: a caller asks it before it sets anything up for the job.
        if self.fault:
            return E_FAULTED
        if self.state != IDLE or self.job_pending:
            return E_BUSY
        if self.holding:
            return E_HOLDING     # a new approach would open the jaw wherever the arm is
        return OK

    def abort(self):
        self.job_pending = 0
        if self.state != IDLE:
            self._fault(F_ABORTED)

    def clear_fault(self):
        if self.inp.estop:
            return E_ESTOP_ACTIVE
        if self.fault:
            self._note(R_CLEARED)
            self.fault = 0
            self.estop_latched = 0
            self.out.hold = 0
        return OK

    def release(self, open_um):
        # The operator's explicit release of a held part (never done by the machine itself
        # outside PLACE): open the jaw to open_um here, noted. Only in IDLE.
        if self.state != IDLE or self.job_pending:
            return E_BUSY
        self.out.jaw_um = open_um
        self.holding = 0
        self._note(R_RELEASED)
        return OK

    def latch_fault(self, code, log=True):
        # For the controller (F_INTERRUPTED at boot, F_STALL, F_RAIL_LOW, a rescue's fault):
        # latch a fault found outside the machine, with the same hold and logging as its own.
        # log=False: latch without a new event (an interruption a previous boot already logged).
        # The same fault found again while it is still latched (a rail that sags again before
        # anyone cleared RAIL_LOW) is the same event: logged and counted once.
        if code == self.fault:
            return
        if log:
            self._fault(code)
            return
        self.fault = code
        self.fault_state = self.state
        self.out.hold = 1
        if self.inp.jaw_setpoint_um >= 0:
            self.out.jaw_um = self.inp.jaw_setpoint_um

    def set_part_pose(self, x_um, y_um, z_um, above_um=0):
        # For the re-sense hook: the next attempt grasps here, without a spiral offset, and
        # approaches above_um above it and lifts to it (0: approach_height_um and the lift's
        # up_um over it; lower where the arm cannot reach that high over a part found further out).
        self.gx = x_um
        self.gy = y_um
        self.gz = z_um
        if above_um > 0:
            h = self.cfg.approach_height_um
            self.hz = above_um if above_um < h else h
            self.up_um = above_um - self.hz

    def move(self, x, y, z, pitch, kind, gentle):
        # For the re-sense hook: command a move (MOVE_*); arrived() says when it is done.
        self._move(x, y, z, pitch, kind, gentle)

    def arrived(self):
        return self.inp.arrived_seq == self.out.move_seq

    def jaw_um(self):
        # The jaw opening the pot reads now (um).
        return self._jaw_um()

    def busy(self):
        return self.state != IDLE or self.job_pending

    # ---- the hot loop ----

    def step(self, now):
        self.now = now
        inp = self.inp
        self.rail_f += inp.rail_mv - (self.rail_f >> 3)
        if inp.current_ma >= 0:
            self.cur_f += inp.current_ma - (self.cur_f >> 3)
        self._debounce_switch(inp.switch_pressed)
        if inp.estop:
            if not self.estop_latched:
                self.estop_latched = 1
                self._fault(F_ESTOP)
            return
        st = self.state
        if st == IDLE:
            if self.job_pending and not self.fault:
                self._begin_cycle()
            return
        if inp.error_seq == self.out.move_seq and inp.error_seq != 0:
            self._fault(F_BAD_POSE)
            return
        if self._pot_bad():      # a broken pot wire, in every state of a cycle
            return
        entered = self.entered
        self._run(st)
        # Backstop: no state outlives its bound (a missed arrival ends here).
        if self.state == st and self.entered == entered and ticks_diff(now, entered) > self.bound[st]:
            self._fault(F_MOTION_TIMEOUT)

    def _run(self, st):
        if st == APPROACH:
            self._approach()
        elif st == DESCEND:
            if self._touched():
                return
            if self._arrived():
                self._enter(GRASP, R_ARRIVED)
                self.out.jaw_um = self.close_um
        elif st == GRASP:
            # The dwell counts from when the close has been carried out, not from the command:
            # a closing jaw still moving reads like a part.
            if self.phase == _P_MOVE:
                if self.inp.jaw_done:
                    self._phase(_P_SETTLE)
            elif self._elapsed(self.phase_t) >= self.cfg.grasp_dwell_ms:
                self._enter(VERIFY, R_DWELL_DONE)
                self.mask_streak = 0
                self.crush_streak = 0
                self.jaw_ref_um = self.close_um + self.cfg.jaw_present_min_um
        elif st == VERIFY:
            self._verify()
        elif st == LIFT:
            if self._grip_ok() and self._arrived():
                if self.phase == _P_SET_DOWN:
                    self._fault(F_LIFT_SHORT)    # set back down where it was picked (_lift_short)
                elif not self._lift_short():
                    self._enter(TRANSFER, R_ARRIVED)
                    self._move(self.tx, self.ty, self.tz + self.cfg.approach_height_um, self.tp, MOVE_FREE, 1)
        elif st == TRANSFER:
            if self._grip_ok() and self._arrived():
                self._enter(PLACE, R_ARRIVED)
                self._move(self.tx, self.ty, self.tz, self.tp, MOVE_LINE, 1)
        elif st == PLACE:
            self._place()
        elif st == RECOVER:
            self._recover()

    # ---- states ----

    def _begin_cycle(self):
        self.job_pending = 0
        self.cycles_started += 1
        self.attempt = 1
        self.disagreed = 0
        self.gx = self.px
        self.gy = self.py
        self.gz = self.pz
        self._start_approach(R_JOB_START)

    def _start_approach(self, reason):
        cfg = self.cfg
        self._enter(APPROACH, reason)
        self.hz = cfg.approach_height_um
        self.up_um = self.lift_up_um
        self.close_um = self.part_width_um - cfg.squeeze_um
        if self.close_um < 0:
            self.close_um = 0
        self.open_um = self.part_width_um + cfg.open_margin_um + (self.attempt - 1) * cfg.retry_open_extra_um
        if self.open_um > self.jaw_max_um:
            self.open_um = self.jaw_max_um
        self.out.jaw_um = self.open_um
        h = self.resense
        if h is not None and (self.attempt > 1 or getattr(h, "first", 0)):
            self._searched()
        else:
            self._move(self.gx, self.gy, self.gz + self.hz, self.pp, MOVE_FREE, 0)

    def _searched(self):
        # Ask the re-sense hook; while it looks (BUSY) stay in this phase and ask again next
        # step, then approach where the attempt goes: the pose it found, or the one it had.
        r = self.resense(self, self.attempt)
        if r == RESENSE_BUSY:
            self.phase = _P_SEARCH       # (phase_t stays: the phase's time is the approach's)
            return
        if r == RESENSE_FOUND:
            self._note(R_RESENSED)
            self.open_um = self.jaw_max_um   # as wide as the search's probes, which found it clear
        self.out.jaw_um = self.open_um
        self._phase(_P_MOVE)
        self._move(self.gx, self.gy, self.gz + self.hz, self.pp, MOVE_FREE, 0)

    def _approach(self):
        if self.phase == _P_SEARCH:
            self._searched()
        elif self.phase == _P_MOVE:
            if self._arrived():
                self._phase(_P_SETTLE)
        elif self.phase == _P_SETTLE:
            if self._elapsed(self.phase_t) >= self.cfg.settle_ms:
                self._phase(_P_CHECK)
                self.mask_streak = 0
                self.jaw_ref_um = 0
        else:
            # Pre-grasp check with the jaws open and nothing between them: the switch must be
            # released, the beam clear and the jaw where it was sent. A stuck switch or a
            # blocked beam is caught here, before it can fake a grasp.
            cfg = self.cfg
            jaw = self._jaw_um()
            if jaw < self.open_um - cfg.jaw_open_tolerance_um or jaw > self.open_um + cfg.jaw_open_tolerance_um:
                self._fault(F_SENSOR_FAULT)
                return
            if not self._mask_settled(CHECK_SWITCH | CHECK_BEAM):
                if self._elapsed(self.phase_t) >= cfg.verify_window_ms:
                    self._fault(F_SENSOR_DISAGREE)
                return
            if self.present & (CHECK_SWITCH | CHECK_BEAM) & cfg.verify_enabled_mask:
                self._fault(F_SENSOR_DISAGREE)
                return
            self.lift_mv0 = self.rail_f      # (about) the lift's pose, settled, without the part
            self.lift_ma0 = self.cur_f
            self.touch_streak = 0
            self._enter(DESCEND, R_SETTLED)
            self._move(self.gx, self.gy, self.gz, self.pp, MOVE_LINE, 0)

    def _verify(self):
        cfg = self.cfg
        if self.inp.current_ma >= cfg.current_crush_ma:
            self.crush_streak += 1
            if self.crush_streak >= cfg.debounce_reads:
                jaw = self._jaw_um()
                self._fault(F_CRUSH)
                self.out.jaw_um = jaw if jaw > 0 else 0  # stop squeezing whatever this is
                return
        else:
            self.crush_streak = 0
        if self._mask_settled(cfg.verify_enabled_mask):
            self._decide(self.present, R_NONE)
        elif self._elapsed(self.entered) >= cfg.verify_window_ms:
            self._decide(0, R_VERIFY_UNSETTLED)  # fail closed: unsettled is not a grasp

    def _decide(self, mask, reason):
        cfg = self.cfg
        en = mask & cfg.verify_enabled_mask
        req = cfg.verify_required_mask
        disagree = en != 0 and en != cfg.verify_enabled_mask
        if (en & req) == req and _popcount(en) >= cfg.verify_min_agree:
            if disagree:
                self._note(R_DISAGREE_NOTE)
            jaw = self._jaw_um()
            self.grip_jaw_um = jaw
            hold = jaw - cfg.hold_squeeze_um
            self.out.jaw_um = hold if hold > 0 else 0
            self.loss_active = 0
            self.over_active = 0
            self.holding = 1
            self._enter(LIFT, R_VERIFY_PASS)
            self._move(self.gx, self.gy, self.gz + self.hz + self.up_um, self.pp, MOVE_LINE, 1)
            return
        if reason == R_NONE:
            reason = R_VERIFY_DISAGREE if disagree else R_VERIFY_EMPTY
        if reason == R_VERIFY_DISAGREE:
            self.disagreed = 1
        self._enter(RECOVER, reason)
        self.open_um = self.part_width_um + cfg.open_margin_um + self.attempt * cfg.retry_open_extra_um
        if self.open_um > self.jaw_max_um:
            self.open_um = self.jaw_max_um
        self.out.jaw_um = self.open_um

    def _touched(self):
        # DESCEND: the rail touch_mv (set_arm; without an arm search_touch_mv) under its level at
        # the approach pose (settled, the jaw open and still), debounce_reads reads in a row: a
        # finger came down on something (a part off its pose, another part) and the shoulder or
        # elbow pushes at stall. Back up the way down at once and retry as after an empty grasp;
        # closing, checking and opening down there first kept them at stall 1.3 to 1.9 s
        # (docs/arm-description.md).
        if (self.lift_mv0 >> 3) - self.inp.rail_mv >= (self.touch_mv or self.cfg.search_touch_mv):
            self.touch_streak += 1
        else:
            self.touch_streak = 0
        if self.touch_streak < self.cfg.debounce_reads:
            return 0
        self._enter(RECOVER, R_TOUCHED)
        self._phase(_P_RETREAT)
        self._move(self.gx, self.gy, self.gz + self.hz, self.pp, MOVE_BACK, 0)
        return 1

    def _lift_short(self):
        # At the lift's end: the arm servos' current above what they drew before it (the rail's
        # sag through its source resistance, less the gripper's own change, which the board
        # measures) times the sink per A of this pose. Deeper than lift_sink_max_um: the part
        # is too heavy for these servos and the lift fell short. Held up there, the servos push
        # near stall until a watch unpowers them and the arm comes down with the part: set it
        # back down the lift's own path, gently, then LIFT_SHORT with the pad carrying it.
        if not self.lift_k or not self.lift_mohm:
            return 0
        ma = ((self.lift_mv0 - self.rail_f) * 1000 // self.lift_mohm - (self.cur_f - self.lift_ma0)) >> 3
        self.lift_sink_um = ma * self.lift_k // 1000 if ma > 0 else 0
        if self.lift_sink_um > self.cfg.lift_sink_max_um:
            self._phase(_P_SET_DOWN)
            self._move(self.gx, self.gy, self.gz, self.pp, MOVE_BACK, 1)
            return 1
        return 0

    def _place(self):
        # Lower, settle, open, wait, confirm the fingers let go (switch released, jaw open),
        # retreat straight up, then confirm the part stayed behind (beam clear above it).
        # The beam cannot confirm the release before the retreat: the open fingers still
        # surround the part, so the beam across them is legitimately broken.
        cfg = self.cfg
        ph = self.phase
        if ph == _P_MOVE:
            if self._grip_ok() and self._arrived():
                self._phase(_P_SETTLE)
        elif ph == _P_SETTLE:
            if self._grip_ok() and self._elapsed(self.phase_t) >= cfg.settle_ms:
                self._phase(_P_OPEN)
                self.out.jaw_um = self.open_um  # open BEFORE the retreat, always
                self.holding = 0                # let go over the place pose, on purpose
        elif ph == _P_OPEN:
            if self._elapsed(self.phase_t) >= cfg.release_wait_ms:
                self._phase(_P_CHECK)
                self.mask_streak = 0
                self.jaw_ref_um = 0x3FFFFFFF  # the jaw check plays no part in release
        elif ph == _P_CHECK:
            let_go = (self._mask_settled(CHECK_SWITCH) and not (self.present & cfg.verify_enabled_mask)
                      and self._jaw_um() >= self.open_um - cfg.jaw_open_tolerance_um)
            if let_go:
                self._phase(_P_RETREAT)
                self._move(self.tx, self.ty, self.tz + cfg.approach_height_um, self.tp, MOVE_LINE, 0)
            elif self._elapsed(self.phase_t) >= cfg.release_confirm_ms:
                self._fault(F_RELEASE_FAILED)
        elif ph == _P_RETREAT:
            if self._arrived():
                self._phase(_P_CLEAR)
                self.mask_streak = 0
        elif self._mask_settled(CHECK_BEAM):
            if self.present & CHECK_BEAM & cfg.verify_enabled_mask:
                self._fault(F_RELEASE_FAILED)  # the part came up with the fingers
                return
            self.outcome = R_PLACED
            self.cycles_placed += 1
            self._enter(IDLE, R_PLACED)
        elif self._elapsed(self.phase_t) >= cfg.verify_window_ms:
            self._fault(F_RELEASE_FAILED)

    def _recover(self):
        cfg = self.cfg
        if self.phase == _P_MOVE:
            # open (already commanded on entry) and let the jaw get there before moving up
            if self._elapsed(self.entered) >= cfg.settle_ms:
                self._phase(_P_RETREAT)
                self._move(self.gx, self.gy, self.gz + self.hz, self.pp, MOVE_LINE, 0)
        elif self._arrived():
            if self.attempt >= self.max_attempts:
                # Something was sensed but never confirmed on some attempt: say the sensors
                # disagreed; nothing sensed on any attempt: the part is not there.
                self._fault(F_SENSOR_DISAGREE if self.disagreed else F_GRASP_FAILED)
                return
            self.attempt += 1
            self.gx = self.px + spiral_dx_um(cfg, self.attempt)
            self.gy = self.py + spiral_dy_um(cfg, self.attempt)
            self.gz = self.pz
            self._start_approach(R_RETRY)   # (a re-sense hook may replace the spiral's pose)

    # ---- helpers ----

    def _enter(self, to, reason):
        self.events.put(self, K_TRANSITION, self.state, to, reason)
        self.state = to
        self.entered = self.now
        self.phase = 0
        self.phase_t = self.now

    def _phase(self, ph):
        self.phase = ph
        self.phase_t = self.now

    def _note(self, reason):
        self.events.put(self, K_NOTE, self.state, self.state, reason)

    def _fault(self, code):
        # Latch, freeze every setpoint in this same step, go to IDLE and wait for a human. The
        # arm holds where it is (a limp arm falls); the jaw setpoint stops where it is: a closing
        # jaw stops closing, an opening one stops opening, and a verified grip stays at the
        # holding squeeze it was backed off to (an opened gripper drops the part).
        self.fault = code
        self.fault_state = fault_where(code, self.state)
        self.out.hold = 1
        if self.inp.jaw_setpoint_um >= 0:
            self.out.jaw_um = self.inp.jaw_setpoint_um
        self.job_pending = 0
        self.events.put(self, K_FAULT, self.state, IDLE, code)
        if self.state != IDLE:
            self.cycles_faulted += 1
            self.outcome = code
        self.state = IDLE
        self.entered = self.now
        self.phase = 0

    def _move(self, x, y, z, pitch, kind, gentle):
        out = self.out
        out.x_um = x
        out.y_um = y
        out.z_um = z
        out.pitch_mdeg = pitch
        out.move_kind = kind
        out.move_gentle = gentle
        out.move_seq += 1

    def _arrived(self):
        return self.inp.arrived_seq == self.out.move_seq

    def _elapsed(self, since):
        return ticks_diff(self.now, since)

    def _jaw_um(self):
        return (self.inp.pot_counts - self.cfg.pot_closed_counts) * 1000 // self.cfg.pot_counts_per_mm

    def _pot_bad(self):
        c = self.inp.pot_counts
        if c < self.cfg.pot_valid_min_counts or c > self.cfg.pot_valid_max_counts:
            self._fault(F_SENSOR_FAULT)
            return True
        return False

    def _debounce_switch(self, level):
        if level == self.sw_last:
            if self.sw_streak < self.cfg.debounce_reads:
                self.sw_streak += 1
                if self.sw_streak >= self.cfg.debounce_reads:
                    self.sw_stable = level
        else:
            self.sw_last = level
            self.sw_streak = 1
            if self.cfg.debounce_reads <= 1:
                self.sw_stable = level

    def _sample(self, switch):
        inp = self.inp
        m = 0
        if self._jaw_um() >= self.jaw_ref_um:
            m |= CHECK_JAW
        if switch:
            m |= CHECK_SWITCH
        if inp.current_ma >= self.cfg.current_grip_min_ma:
            m |= CHECK_CURRENT
        if inp.beam_broken:
            m |= CHECK_BEAM
        return m

    def _mask_settled(self, relevant):
        # The raw switch read is part of the mask, so "settled" means debounce_reads equal
        # reads of every relevant check in a row, counted from when the check began.
        m = self._sample(self.inp.switch_pressed) & relevant
        if m == self.mask_last:
            self.mask_streak += 1
        else:
            self.mask_last = m
            self.mask_streak = 1
        self.present = m
        return self.mask_streak >= self.cfg.debounce_reads

    def _grip_ok(self):
        # Grip monitor during LIFT, TRANSFER and the lowering part of PLACE. A loss must last
        # grip_loss_ms to count (a ringing pad flickers); a sustained loss is DROPPED.
        cfg = self.cfg
        self.jaw_ref_um = self.grip_jaw_um - cfg.grip_slip_um
        mon = cfg.grip_monitor_mask
        m = self._sample(self.sw_stable) & mon
        self.present = m
        if m != mon:
            if not self.loss_active:
                self.loss_active = 1
                self.loss_since = self.now
            elif self._elapsed(self.loss_since) >= cfg.grip_loss_ms:
                self._fault(F_DROPPED)
                return False
        elif self.loss_active:
            self.loss_active = 0
            self._note(R_GRIP_FLICKER)
        if self.inp.current_ma > cfg.current_hold_limit_ma:
            if not self.over_active:
                self.over_active = 1
                self.over_since = self.now
            elif self._elapsed(self.over_since) >= cfg.hold_overcurrent_ms:
                self._fault(F_HOLD_OVERCURRENT)
                return False
        else:
            self.over_active = 0
        return True


def _popcount(m):
    n = 0
    while m:
        n += m & 1
        m >>= 1
    return n
