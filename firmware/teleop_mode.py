# Teleop mode: the arm follows joint setpoints streamed by the host (docs/protocol.md, TELEOP and
# SETPOINT; the host turns a pose stream into joints, so the board does no IK per frame).
#
# Like the recovery finisher it is an alternate driver of what the machine would command: while
# it is on, the machine sits in IDLE (it still latches the e-stop and every fault), and step()
# writes the planner's joint setpoints (motion.joints) and the machine's jaw command (out.jaw_um).
# Everything after that is the normal path: the planner slews the jaw, the servo drivers keep
# their speed and acceleration limits, and whatever freezes the arm on a fault applies.
#
#   enter   only from IDLE at rest, without a fault, e-stop or HIL; the arm holds where it is
#   offer   a setpoint from the link (the newest of the lines read in a tick; older ones are
#           dropped), checked: a newer sequence number (modulo 2^30), joint limits, the jaw's
#           range, the end pose's clearance, and the whole motion to it (teleop_check.py,
#           loaded with the first setpoint: a job never needs it)
#   step    once per tick, after machine.step: follow the latest setpoint, carried on at the
#           stream's own speed for at most one stream interval (as the sim target does); no
#           setpoint for more than DEADMAN_MS -> hold where the servos are, in this same tick
#   leave   on request, on ABORT, or by itself on a fault: hold the pose, back to plain IDLE
#
# step() is integer-only and allocates nothing; offer() runs once per tick at most and may.
from array import array

from ..shared_fsm import link, servo_cal
from ..shared_fsm.codes import K_NOTE, R_TELEOP_ON, R_TELEOP_OFF, R_DEADMAN
from ..shared_fsm.compat import const
from ..shared_fsm.states import IDLE
from ..shared_fsm.ticks import ticks_add, ticks_diff

from .boot_recovery import jaw_um_of, pot_ok

DEADMAN_MS = const(200)    # no setpoint for longer than this: hold

# Modes (TELEOP_STATE.mode)
OFF = const(0)
FOLLOW = const(1)          # following setpoints (or holding, waiting for the first)
HELD = const(2)            # holding after a deadman; TELEOP on re-arms

# Why the last hold or end happened (TELEOP_STATE.why)
WHY_NONE = const(0)
WHY_DEADMAN = const(1)
WHY_FAULT = const(2)       # a fault or the e-stop latched (the machine's FAULT event says which)
WHY_LEFT = const(3)        # TELEOP off
WHY_ABORT = const(4)       # ABORT


class TeleopMode:
    def __init__(self, ctl):
        self.ctl = ctl
        self.on = 0
        self.mode = OFF
        self.why = WHY_NONE
        self.sp = array("i", [0, 0, 0, 0])       # latest accepted setpoint, joint mdeg
        self.dq = array("i", [0, 0, 0, 0])       # its change from the one before
        self.span = 0            # ms between those two (0: not carried on)
        self.jaw = 0             # jaw setpoint, um
        self.seq = 0             # latest accepted sequence number
        self.applied = 0         # latest sequence number the servos were driven to
        self.t_sp = 0            # board ms the latest setpoint (or the entry) arrived
        self.fresh = 0
        self.pend = array("i", [0] * 6)     # the newest SETPOINT read this tick (seq, q0..q3, jaw)
        self.pend_rid = 0        # its request id (0: none)
        self.dropped = 0         # setpoints replaced by a newer one read in the same tick
        self.shadow = None       # the path check's copies of the arm drivers (made at first use)
        self.deadmans = 0        # since entering
        self.refused = 0         # setpoints refused since entering
        self.streaming = 0       # a setpoint came since (re-)arming: the next one has an interval
        self.report = 0          # a TELEOP_STATE frame is due
        self.next_beat = 0       # board ms of the next heartbeat frame
        self.ended = 0           # the mode ended: the App saves the rest pose at rest
        self.saved = array("i", [0] * 12)   # the arm drivers' own (vmax, accel, d_brake) while on

    # ---- requests (link handlers; may allocate) ----

    def enter(self, now):
        # -> None, or (link code, payload) saying why not. The caller checked HIL and busy.
        m = self.ctl.m
        if self.ctl.arm_error:
            return link.E_STATE, ("arm_invalid",)   # nothing moves on a bad arm description
        if m.inp.estop or self.ctl.estop.latched:
            return link.E_STATE, ("estop",)
        if m.fault:
            return link.E_FAULTED, (m.fault,)
        if m.state != IDLE:
            return link.E_BUSY, ()
        if not self.on:
            self.deadmans = 0
            self.refused = 0
            self.seq = 0
            self.applied = 0
            self._limit_arm()
            m.events.put(m, K_NOTE, IDLE, IDLE, R_TELEOP_ON)
        self._freeze()
        self._arm(now)
        return None

    def leave(self, why):
        if not self.on:
            return
        # With a fault latched the controller has already put the jaw where the fault wants it
        # (stopped where its driver was; backed off from a stall or a crush): the freeze leaves
        # it there. Frozen at its driver, a stalled jaw would stay at stall until its PWM went off.
        self._freeze(0 if self.ctl.m.fault else 1)
        self._restore_arm()
        self.on = 0
        self.mode = OFF
        self.why = why
        self.report = 1
        self.ended = 1
        m = self.ctl.m
        m.events.put(m, K_NOTE, IDLE, IDLE, R_TELEOP_OFF)

    def offer(self, seq, q0, q1, q2, q3, jaw, now):
        # A SETPOINT frame's fields. -> None when taken, or (link code, payload) to reply.
        if not self.on:
            return link.E_STATE, ("not_teleop", seq)
        if self.mode == HELD:
            return link.E_STATE, ("held", seq)
        from . import teleop_check
        return teleop_check.offer(self, seq, (q0, q1, q2, q3), jaw, now)

    # ---- the tick (no allocation) ----

    def step(self, now):
        # After machine.step, before motion.tick; only while on.
        ctl = self.ctl
        m = ctl.m
        if m.fault or m.inp.estop:
            self.leave(WHY_FAULT)
            return
        if self.mode != FOLLOW:
            return
        age = ticks_diff(now, self.t_sp)
        if age > DEADMAN_MS:
            self._freeze()
            self.mode = HELD
            self.why = WHY_DEADMAN
            self.deadmans += 1
            self.report = 1
            m.events.put(m, K_NOTE, IDLE, IDLE, R_DEADMAN)
            return
        j = ctl.motion.joints
        sp = self.sp
        span = self.span
        if span:
            dq = self.dq
            a = age if age < span else span
            for i in range(4):
                j[i] = sp[i] + dq[i] * a // span
        else:
            for i in range(4):
                j[i] = sp[i]
        m.out.jaw_um = self.jaw
        if self.fresh:
            self.fresh = 0
            self.applied = self.seq
            self.report = 1

    # ---- helpers ----

    def _limit_arm(self):
        # While on, the arm's drivers move no faster and accelerate no harder than a job's
        # planned moves (arm_speed_mdeg_s, arm_accel_mdeg_s2). A jump in the stream taken at the
        # servos' own limits makes all four draw their peak current at once: on the reference
        # battery (250 mOhm) the rail sagged to 3.6 V, under the RAIL_LOW watch and the servos'
        # own reset. The rail is sized for the moves a job makes; teleop keeps to them.
        cfg = self.ctl.cfg
        vmax = cfg.arm_speed_mdeg_s
        accel = cfg.arm_accel_mdeg_s2 // 1000
        if accel < 1:
            accel = 1
        s = self.saved
        for i in range(4):
            sv = self.ctl.servos[i]
            s[3 * i] = sv.vmax
            s[3 * i + 1] = sv.accel
            s[3 * i + 2] = sv.d_brake
            v = vmax if vmax < sv.vmax else sv.vmax
            a = accel if accel < sv.accel else sv.accel
            sv.vmax = v
            sv.accel = a
            dps = v // 1000
            sv.d_brake = dps * dps * 500 // a

    def _restore_arm(self):
        s = self.saved
        for i in range(4):
            sv = self.ctl.servos[i]
            sv.vmax = s[3 * i]
            sv.accel = s[3 * i + 1]
            sv.d_brake = s[3 * i + 2]

    def _freeze(self, jaw=1):
        # Every setpoint where its servo is now (the jaw's too, unless told not): the drivers
        # hold from this tick on.
        ctl = self.ctl
        sv = ctl.servos
        mo = ctl.motion
        j = mo.joints
        sp = self.sp
        arm = ctl.arm
        for i in range(4):
            v = arm.joint_mdeg(i, sv[i].pos)
            j[i] = v
            sp[i] = v
            self.dq[i] = 0
        self.span = 0
        if jaw:
            jaw = servo_cal.servo_to_joint_mdeg(servo_cal.GRIPPER, sv[4].pos)
            mo.jaw_um = jaw
            ctl.m.out.jaw_um = jaw
            self.jaw = jaw

    def _arm(self, now):
        self.on = 1
        self.mode = FOLLOW
        self.why = WHY_NONE
        self.t_sp = now
        self.fresh = 0
        self.streaming = 0
        self.report = 1

    def pose(self):
        # (q0..q3 mdeg, jaw um) the servos are driven to now.
        sv = self.ctl.servos
        arm = self.ctl.arm
        return (arm.joint_mdeg(0, sv[0].pos), arm.joint_mdeg(1, sv[1].pos), arm.joint_mdeg(2, sv[2].pos),
                arm.joint_mdeg(3, sv[3].pos), servo_cal.servo_to_joint_mdeg(servo_cal.GRIPPER, sv[4].pos))


# ---- the App's side: link handlers and the TELEOP_STATE frame ----

def handle_mode(app, rid, on):
    tm = app.teleop
    if on:
        if app.hil is not None:
            app._reply(rid, link.E_STATE, ("hil",))
            return
        if not tm.on and app.busy():
            app._reply(rid, link.E_BUSY)
            return
        err = tm.enter(app.now_ms)
        if err:
            app._reply(rid, err[0], err[1])
            return
    else:
        if not tm.on:
            app._reply(rid, link.E_STATE, ("not_teleop",))
            return
        tm.leave(WHY_LEFT)
    app._reply(rid, link.OK, (tm.mode,) + tm.pose())


def handle_setpoint(app, rid, a):
    # Kept until the tick's link lines are read (App._link): a newer one read in the same tick
    # replaces it unanswered (dropped, counted), so a backlog of setpoints is not played back.
    tm = app.teleop
    p = tm.pend
    if tm.pend_rid:
        tm.dropped += 1
    tm.pend_rid = rid
    for i in range(6):
        p[i] = a[i]


def offer_pending(app):
    # The newest setpoint read in this tick, if any.
    tm = app.teleop
    rid = tm.pend_rid
    if not rid:
        return
    tm.pend_rid = 0
    p = tm.pend
    err = tm.offer(p[0], p[1], p[2], p[3], p[4], p[5], app.now_ms)
    if err:
        app._reply(rid, err[0], err[1])


_BEAT_MS = const(100)       # TELEOP_STATE at least this often while on


def report(app, now):
    # Once per tick from the App's link duty: the TELEOP_STATE frame when one is due (a setpoint
    # applied, a hold, the end), and every _BEAT_MS while on. An ended mode is closed like a
    # job's cycle (App._at_rest, once the arm settled): the pose it left is saved as the rest
    # pose, or, with a fault latched, saved and kept until the fault is cleared.
    tm = app.teleop
    if tm.ended:
        tm.ended = 0
        app.cycle_open = 1
    if tm.on and ticks_diff(now, tm.next_beat) >= 0:
        tm.report = 1
    if not tm.report:
        return
    tm.report = 0
    tm.next_beat = ticks_add(now, _BEAT_MS)
    sv = app.servos
    cfg = app.cfg
    pot = app.m.inp.pot_counts
    w = app.fw
    w.begin(link.T_TELEOP_STATE)
    w.add(app.now_ms)
    w.add(tm.mode)
    w.add(tm.why)
    w.add(tm.applied)
    arm = app.arm
    for i in range(4):
        w.add(arm.joint_mdeg(i, sv[i].pos))
    w.add(sv[4].pos // servo_cal.JAW_MDEG_PER_UM)
    w.add(jaw_um_of(pot, cfg) if pot_ok(pot, cfg) else -1)
    w.add(tm.deadmans)
    w.add(tm.refused)
    app._send(w.finish())

