# The firmware's teleop mode under hostile SETPOINT streams (issue "safe under hostile input"),
# under the unix `micropython`, through the real loop (App.tick) with the stand-in HAL.
# After every tick the four arm pulses the board wrote, and its drivers' positions, go through
# the shared forward kinematics (Arm.frame, Arm.finger_tips: the oracle here, not the clearance
# the firmware computes): the wrist, the jaw centre and both finger tips must stay above the
# table and outside the base column, at every tick, whatever the stream.
#   crafted: the reproducers (a path through the table from home, end poses with the wrist or
#            the fingers in the table), a sequence number of 2^30-1, a backlog of setpoints
#   random:  seeded streams of setpoints anywhere in the joint limits, jumps, repeats, stale
#            and wrapped sequence numbers, gaps past the deadman, re-arms
#   micropython tests/mpy/fw_teleop_hostile.py FLASH_DIR [SEEDS]
import sys

from surepick.shared_fsm import link, servo_cal
from surepick.shared_fsm.config import Config
from surepick.firmware.hal.scripted import ScriptedHal
from surepick.firmware import app as app_mod
from checks import check, finish, result, show_at_most
from prng import Prng

FLASH = sys.argv[1]
SEEDS = int(sys.argv[2]) if len(sys.argv) > 2 else 40
show_at_most(20)
hal = ScriptedHal(Config(), {})
a = app_mod.App(hal, root=FLASH)
hal.out = a.m.out
a.boot()
arm = a.arm
PERIOD = a.cfg.loop_period_ms
MIN_Z = arm.min_z_mm
MIN_R = arm.min_radius_mm
TIP = arm.gripper["finger_tip_mm"]
JAW_MAX = arm.gripper["jaw_max_mm"]
# a pulse is whole us: the angle it stands for is known to (travel / pulse span) mdeg; the three
# pitch joints' share of that, over the arm's longest lever, is what a pulse-based point may lie
# below its true place
LEVER = arm.U + arm.F + arm.T + abs(arm.D) + abs(arm.S) + TIP
PULSE_SLACK_MM = 0.0
for i in range(1, 4):
    cal = arm.servo_cal(i)
    PULSE_SLACK_MM += LEVER * (servo_cal.SERVO_RANGE_MDEG / (cal[1] - cal[0])) / 57295.78
worst = [1e9]          # the smallest clearance seen (mm)
unsafe = [0]


def margin(q_deg):
    # The smallest clearance (mm): the wrist, the jaw centre and the finger tips (closed and
    # fully open) above the table; the jaw centre and the tips outside the column's radius; 21
    # points along the hand (wrist to tip) each outside that radius or above the base's top
    # (the forearm may fold back over the column).
    import math
    wrist, jaw, _, _ = arm.frame(q_deg)
    l0, r0 = arm.finger_tips(q_deg, 0.0)
    l1, r1 = arm.finger_tips(q_deg, JAW_MAX)
    m = 1e9
    for p in (wrist, jaw, l0, r0, l1, r1):
        m = min(m, p[2] - MIN_Z)
        if p is not wrist:
            m = min(m, math.sqrt(p[0] * p[0] + p[1] * p[1]) - MIN_R)
    for k in range(21):
        p = [wrist[i] + (l0[i] - wrist[i]) * k / 20.0 for i in range(3)]
        m = min(m, max(math.sqrt(p[0] * p[0] + p[1] * p[1]) - MIN_R, p[2] - arm.H))
    return m


def joints_of_pulses():
    q = []
    for i in range(4):
        s = servo_cal.servo_mdeg_from_pulse(arm.servo_cal(i), hal.pulses[i])
        q.append(arm.joint_mdeg(i, s) / 1000.0)
    return q


def joints_of_drivers():
    return [arm.joint_mdeg(i, a.servos[i].pos) / 1000.0 for i in range(4)]


def tick(what):
    a.tick(hal.ticks_ms())
    hal._advance(PERIOD)
    m_drv = margin(joints_of_drivers())
    m_pul = margin(joints_of_pulses())
    if m_drv < worst[0]:
        worst[0] = m_drv
    if m_drv < 0 or m_pul < -PULSE_SLACK_MM:
        unsafe[0] += 1
        check(False, "%s: t=%d the hand is %.2f mm (pulses %.2f) into table or column at %s"
              % (what, hal.ticks_ms(), m_drv, m_pul, joints_of_drivers()))


def run(ticks, what):
    for _ in range(ticks):
        tick(what)


rid = [100]


def nrid():
    rid[0] = rid[0] % 60000 + 1
    return rid[0]


def replies(mark):
    return [f[1] for f in hal.frames(mark) if f[0] == link.T_REPLY]


def teleop(on):
    hal.console_out = bytearray()        # what came before is read: keep the heap small
    mark = 0
    r = nrid()
    hal.send(link.request(link.T_TELEOP, r, (on,)))
    run(3, "teleop %d" % on)
    got = [x for x in replies(mark) if x[0] == r]
    return got[0] if got else None


def setpoint(seq, q_mdeg, jaw_um=20000):
    f = link.setpoint(nrid(), seq, q_mdeg, jaw_um)
    check(f is not None, "a setpoint the link can carry %s" % (q_mdeg,))
    if f is not None:
        hal.send(f)


def mdeg(q_deg):
    return [int(round(v * 1000)) for v in q_deg]


run(100, "boot")
seq = 1
home = joints_of_drivers()
check(margin(home) > 0, "home is clear %s" % home)

# ---- crafted 1: from home, single setpoints whose end poses are clear but whose paths (each
# servo slewing on its own) are not: the (0, 3, -178, -27) (through the table and the
# base axis; its hand also straddles the axis at the end), and (0, 28.925, -99.69, -175.516)
# (22 mm clear at its end, 33 mm into the table on the way); each kept alive for 3 s so the
# servos would go all the way ----
for target in ((0, 3, -178, -27), (0, 28.925, -99.69, -175.516)):
    teleop(0)
    run(50, "rest")
    r = teleop(1)
    check(r is not None and r[1] == link.OK, "TELEOP on %s" % (r,))
    mark = len(hal.console_out)
    for k in range(150):
        setpoint(seq, mdeg(target))
        seq += 1
        run(5, "home -> %s" % (target,))
    got = replies(mark)
    check(got and got[0][1] == link.E_BAD_VALUE, "the setpoint to %s refused %s" % (target, got[:1]))
result("path_refused", 1 if got and got[0][2] == "path" else 0)

# ---- crafted 2: end poses clear at the jaw centre, with the wrist or the fingers in the table;
# approached in small steps (each path clear until the last part) ----
for target in ((0, 1.64, -89.855, -174.42), (56.196, 40.868, -77.581, -87.899)):
    teleop(0)
    run(50, "rest")
    teleop(1)
    start = joints_of_drivers()
    mark = len(hal.console_out)
    for k in range(1, 151):
        f = k / 100.0 if k < 100 else 1.0
        q = [start[i] + (target[i] - start[i]) * f for i in range(4)]
        setpoint(seq, mdeg(q))
        seq += 1
        run(5, "towards %s" % (target,))
    got = replies(mark)
    bad = [x for x in got if x[1] == link.E_BAD_VALUE]
    check(len(bad) > 0, "the end pose %s refused %s" % (target, got[-1:]))
    check(margin(joints_of_drivers()) > 0, "stopped clear of %s" % (target,))

# ---- sequence numbers wrap: 2^30-1 does not block the ones after it ----
teleop(0)
run(20, "rest")
teleop(1)
q_now = mdeg(joints_of_drivers())
mark = len(hal.console_out)
for s in (0x3FFFFFFF - 1, 0x3FFFFFFF, 0, 1, 2):
    q_now[0] += 500
    setpoint(s, q_now)
    run(3, "wrap")
check(a.teleop.seq == 2 and not replies(mark), "after 2^30-1 the wrapped 0, 1, 2 are taken: seq %d, %s"
      % (a.teleop.seq, replies(mark)[:2]))
mark = len(hal.console_out)
setpoint(0x3FFFFFFF, q_now)
run(3, "stale")
got = replies(mark)
check(got and got[0][2] == "seq" and a.teleop.seq == 2, "2^30-1 after 2 is older: refused %s" % got[:1])

# ---- a backlog: 400 setpoints arrive at once; the old ones are dropped, not played back ----
teleop(0)
run(20, "rest")
teleop(1)
q0 = mdeg(joints_of_drivers())
mark = len(hal.console_out)
dropped0 = getattr(a.teleop, 'dropped', 0)
N = 400
for k in range(1, N + 1):
    q = list(q0)
    q[0] = q0[0] + 50 * k                # 20 deg in 400 small steps
    setpoint(seq, q)
    seq += 1
last_seq = seq - 1
ticks = 0
while a.teleop.seq != last_seq and ticks < N:
    tick("backlog")
    ticks += 1
applied = [f[1][3] for f in hal.frames(mark) if f[0] == link.T_TELEOP_STATE and f[1][1] == 1]
check(a.teleop.seq == last_seq, "the newest of the backlog is taken (seq %d of %d)" % (a.teleop.seq, last_seq))
check(ticks * 2 <= N, "the backlog drains in %d ticks for %d setpoints" % (ticks, N))
check(getattr(a.teleop, 'dropped', 0) - dropped0 >= N // 2, "older setpoints dropped: %d" % (getattr(a.teleop, 'dropped', 0) - dropped0))
check(len(applied) <= N // 2 + 2, "setpoints the servos were driven to: %d of %d" % (len(set(applied)), N))
result("backlog_ticks", ticks)

# ---- random hostile streams (seeded): anywhere in the joint limits, jumps, repeats, stale
# and wrapped sequence numbers, gaps past the deadman, re-arms ----
taken = 0
refused = 0
for seed in range(1, SEEDS + 1):
    rnd = Prng(seed)
    teleop(0)
    run(10, "seed %d rest" % seed)
    teleop(1)
    cur = joints_of_drivers()
    s = rnd.between(0, 0x3FFFFFFF)
    for k in range(60):
        kind = rnd.below(10)
        if kind < 4:        # anywhere in the joints' own ranges
            q = [rnd.between(int(arm.joint_span(i)[0] * 1000), int(arm.joint_span(i)[1] * 1000)) for i in range(4)]
        elif kind < 8:      # a small random step from the last one
            q = [max(-180000, min(180000, int(cur[i] * 1000) + rnd.between(-8000, 8000))) for i in range(4)]
        else:               # down towards the table: shoulder low, elbow and wrist folded
            q = [rnd.between(-90000, 90000), rnd.between(0, 30000), rnd.between(-180000, -60000),
                 rnd.between(-180000, 0)]
        cur = [v / 1000.0 for v in q]
        srk = rnd.below(10)
        if srk == 0:
            s = (s - rnd.between(1, 1000)) & 0x3FFFFFFF       # stale
        elif srk == 1:
            s = (s + rnd.between(0x10000000, 0x1FFFFFFF)) & 0x3FFFFFFF   # far ahead, wraps
        else:
            s = (s + 1) & 0x3FFFFFFF
        mark = len(hal.console_out)
        setpoint(s, q, rnd.between(0, 45000))
        gap = rnd.choice((1, 2, 5, 5, 5, 10, 30, 60))
        run(gap, "seed %d setpoint %d" % (seed, k))
        for rep in replies(mark):
            refused += 1
        if a.teleop.mode == 2:
            teleop(1)                    # re-arm after a deadman
    taken += a.teleop.seq != 0
result("unsafe_ticks", unsafe[0])
result("worst_clearance_um", int(worst[0] * 1000))
result("random_refused", refused)
finish()
