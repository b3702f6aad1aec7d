# The checks a teleop setpoint passes before the arm follows it (TeleopMode.offer): a newer
# sequence number (modulo 2^30: U30 on the link), the joint limits, the jaw's range, the end
# pose's clearance, and the whole motion to it.
#
# The path check: the four arm servo drivers' own update, run on shadow copies of their state
# tick by tick over everything the setpoint can make them do before the deadman stops them
# (DEADMAN_MS at the loop's period, carry-on included), with the clearance below (wrist, jaw
# centre and finger tips above the table and off the base column) checked along it. A freeze (deadman, leave, fault) stops each driver where it is (a
# driver whose target is its position sits on it), so every pose the arm can hold is one of
# those ticks. Between two forward kinematics the joints may turn by the clearance over the
# arm's lever (no point moves faster than that): far from the table one check covers many
# ticks, near it every tick is checked; past _PATH_CHECKS of them the setpoint is refused (fail
# closed).
from ..shared_fsm import link
from ..shared_fsm.ticks import ticks_diff
from ..shared_fsm.compat import const

from .servo import Servo
from .teleop_mode import DEADMAN_MS

_CARRY_MAX_MS = const(100)  # a stream interval longer than this is not carried on
_SEQ_MASK = const(0x3FFFFFFF)
_SEQ_HALF = const(0x20000000)
_PATH_CHECKS = const(40)    # forward kinematics one setpoint's path may take; more: refused
_MDEG_PER_RAD = 57295.78


def _within(arm, q0, q1, q2, q3):
    # Joint setpoints (mdeg) inside the arm's (coupled) limits; a slot the kind has no joint
    # for must stay 0. Floats only when a limit is coupled.
    q = (q0, q1, q2, q3)
    n = len(arm.joint_names)
    for j in range(4):
        if j >= n:
            if q[j] != 0:
                return 0
            continue
        ci = arm.coupled_index(j)
        lo, hi = arm.limit(j, q[ci] / 1000.0 if ci >= 0 else 0.0)
        if q[j] < lo * 1000 - 0.001 or q[j] > hi * 1000 + 0.001:
            return 0
    return 1


def newer(seq, last):
    # seq comes after last, modulo 2^30 (serial number arithmetic, as ticks_diff)
    d = (seq - last) & _SEQ_MASK
    return 0 < d < _SEQ_HALF


def offer(tm, seq, q, jaw, now):
    # A SETPOINT's fields -> None when taken (tm follows it), or (link code, payload) to reply.
    # (TeleopMode.offer checked that the mode is on and following.)
    if tm.streaming and not newer(seq, tm.seq):
        return _refuse(tm, "seq", seq)
    q0, q1, q2, q3 = q
    arm = tm.ctl.arm
    if not _within(arm, q0, q1, q2, q3):
        return _refuse(tm, "joint_limit", seq)
    if jaw < 0 or jaw > tm.ctl.m.jaw_max_um:
        return _refuse(tm, "jaw", seq)
    table, column = clearance(arm, (q0 / 1000.0, q1 / 1000.0, q2 / 1000.0, q3 / 1000.0))
    if table <= 0:
        return _refuse(tm, "below_table", seq)
    if column <= 0:
        return _refuse(tm, "too_close", seq)
    dt = ticks_diff(now, tm.t_sp)
    sp = tm.sp
    span = dt if 0 < dt <= _CARRY_MAX_MS and tm.streaming else 0
    # Carried on for one interval, the setpoint reaches q + dq: only within the joint limits
    # and when the stream moves no faster than the servos turn (a jump is not carried on);
    # the path check then covers the carried part too, else it is tried without.
    sv = tm.ctl.servos
    dq = [q[i] - sp[i] for i in range(4)]
    for i in range(4):
        if span and abs(dq[i]) * 1000 > sv[i].vmax * span:
            span = 0
    if span and not _within(arm, q0 + dq[0], q1 + dq[1], q2 + dq[2], q3 + dq[3]):
        span = 0
    if span and not path_ok(tm, q, dq, span):
        span = 0
    if not span and not path_ok(tm, q, dq, 0):
        return _refuse(tm, "path", seq)
    for i in range(4):
        sp[i] = q[i]
        tm.dq[i] = dq[i]
    tm.span = span
    tm.jaw = jaw
    tm.seq = seq
    tm.t_sp = now
    tm.fresh = 1
    tm.streaming = 1
    return None


def _refuse(tm, what, seq):
    tm.refused += 1
    return link.E_BAD_VALUE, (what, seq)


def clearance(arm, q_deg):
    # -> (table, column), mm, negative: into it. table: how far the wrist, the jaw centre and the
    # finger tips (the arm's frame and finger_tips) keep above min_z_mm. column: how far the jaw
    # centre and the tips keep outside min_radius_mm, and the hand (wrist to tip) outside that
    # radius or above the base's top (base_height_mm: the forearm may fold back over the
    # column). The arm lies in the vertical plane at the base yaw, so radii are signed along it:
    # a hand with ends on both sides of the axis crosses it. Each figure moves no faster than
    # the points do (the path check relies on that). Opening the jaw moves the tips across that
    # plane, never lower nor nearer the axis: the tips are taken closed; base yaw changes
    # neither figure.
    wrist, jaw, _, left = arm.frame(q_deg)
    tip = arm.finger_tips(q_deg, 0.0)[0]
    cy = left[1]
    sy = -left[0]
    rw = wrist[0] * cy + wrist[1] * sy
    rj = jaw[0] * cy + jaw[1] * sy
    rt = tip[0] * cy + tip[1] * sy
    lo = arm.min_radius_mm
    table = min(wrist[2], jaw[2], tip[2]) - arm.min_z_mm
    hand = 0.0 if (rw > 0) != (rt > 0) else min(abs(rw), abs(rt))
    hand = max(hand - lo, min(wrist[2], tip[2]) - arm.H)
    return table, min(abs(rj) - lo, abs(rt) - lo, hand)


def _clear(arm, q):
    # joint mdeg -> the smallest clearance (mm) of the hand from table and column
    t, c = clearance(arm, (q[0] / 1000.0, q[1] / 1000.0, q[2] / 1000.0, q[3] / 1000.0))
    return t if t < c else c


def _lever(arm):
    # The farthest a checked point lies from a pitch joint's axis: a joint turning by d rad
    # moves each of them by at most this times d.
    return abs(arm.S) + arm.U + arm.F + arm.T + abs(arm.D) + arm.gripper["finger_tip_mm"]


def path_ok(tm, q, dq, span):
    # The servos' whole motion for this setpoint until the deadman would stop it (module
    # comment): 1 when every tick of it keeps the hand clear, else 0.
    ctl = tm.ctl
    arm = ctl.arm
    sh = _shadows(tm)
    dt = ctl.dt_ms if ctl.dt_ms > 0 else ctl.cfg.loop_period_ms
    lever = _lever(arm)
    at = [arm.joint_mdeg(i, sh[i].pos) for i in range(4)]   # joint mdeg of the last checked pose
    c = _clear(arm, at)
    checks = 1
    budget = c * _MDEG_PER_RAD / lever if c > 0 else 0
    tgt = [0, 0, 0, 0]
    age = 0
    while age + dt <= DEADMAN_MS:
        age += dt
        a = age if age < span else span
        for i in range(4):
            t = q[i] + dq[i] * a // span if span else q[i]
            tgt[i] = arm.servo_mdeg(i, t)
            sh[i].update(tgt[i], dt)
        moved = 0
        for i in range(1, 4):                # base yaw moves no point nearer table or axis
            moved += abs(arm.joint_mdeg(i, sh[i].pos) - at[i])
        if moved >= budget:
            checks += 1
            if checks > _PATH_CHECKS:
                return 0
            for i in range(4):
                at[i] = arm.joint_mdeg(i, sh[i].pos)
            c = _clear(arm, at)
            if c <= 0:
                return 0
            budget = c * _MDEG_PER_RAD / lever
        if age >= span:
            still = 1
            for i in range(4):
                if sh[i].pos != tgt[i]:
                    still = 0
            if still:                        # on the setpoint: nothing moves any more
                break
    return 1


def _shadows(tm):
    # The four arm drivers' state copied into driver objects that move no servo.
    sh = tm.shadow
    if sh is None:
        sh = tm.shadow = [Servo(None, i, tm.ctl.servos[i].cal, 1, 1, 0) for i in range(4)]
    for i in range(4):
        s = sh[i]
        r = tm.ctl.servos[i]
        s.cal = r.cal
        s.pos = r.pos
        s.vel = r.vel
        s.rem = r.rem
        s.last_target = r.last_target
        s.sq = r.sq
        s.vmax = r.vmax
        s.accel = r.accel
        s.d_brake = r.d_brake
        s.enabled = 0
        s.pulse = 0
    return sh
