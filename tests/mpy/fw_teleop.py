# The firmware's teleop mode under the unix `micropython`, through the real loop (App.tick) with
# the stand-in HAL: enter/leave, setpoints followed through the servo drivers' limits, the
# deadman (no setpoint for > 200 ms -> the pulses stop changing within one tick), re-arming,
# refused setpoints, busy and fault interplay, the e-stop ending the mode, the rest pose saved at
# the end, and a heap_lock proof that a following tick with nothing to send allocates nothing.
#   micropython tests/mpy/fw_teleop.py FLASH_DIR
import json
import sys

import micropython

from surepick.shared_fsm import codes, link, fake_scenarios
from surepick.shared_fsm.config import Config
from surepick.firmware.hal.scripted import ScriptedHal
from surepick.firmware import app as app_mod
from checks import check, finish, result
import app_loop

FLASH = sys.argv[1]
hal = ScriptedHal(Config(), {})
a = app_mod.App(hal, root=FLASH)
hal.out = a.m.out
a.boot()
OFFSET = (90000, 0, 180000, 180000)      # joint -> servo angle (docs/conventions.md), written out here


def tick():
    app_loop.run(a, hal, 1)


def run(ticks):
    app_loop.run(a, hal, ticks)


def ask(ftype, rid, args=(), ticks=20):
    # -> (the REPLY's fields for rid, the other frames of those ticks)
    r, before, after = app_loop.ask(a, hal, ftype, rid, args, ticks)
    return r, before + after


def joints_now():
    # the servo drivers' positions as joint mdeg, from their servo angles
    return [a.servos[i].pos - OFFSET[i] for i in range(4)]


def states_in(frames):
    return [f[1] for f in frames if f[0] == link.T_TELEOP_STATE]


def notes_in(frames, reason):
    return [f[1] for f in frames if f[0] == link.T_EVENT and f[1][2] == codes.K_NOTE and f[1][5] == reason]


run(200)
# ---- entering ----
home = joints_now()
r, fr = ask(link.T_TELEOP, 1, (1,), ticks=2)
check(r is not None and r[1] == link.OK, "TELEOP on %s" % (r,))
check(r is not None and list(r[3:7]) == home and r[2] == 1, "the reply gives the held pose %s vs %s" % (r, home))
check(a.teleop.on == 1 and a.busy(), "teleop on makes the board busy")
check(len(notes_in(fr, codes.R_TELEOP_ON)) == 1, "a TELEOP_ON note")

# busy: jobs, calibration, config and HIL wait
r, _ = ask(link.T_JOB, 2, fake_scenarios.PICK + fake_scenarios.PLACE + (25000,), ticks=6)
check(r == (2, link.E_BUSY), "JOB in teleop %s" % (r,))
r, _ = ask(link.T_CALIBRATE, 3, (link.CAL_POT,), ticks=2)
check(r == (3, link.E_BUSY), "CALIBRATE in teleop %s" % (r,))
r, _ = ask(link.T_CONFIG_SET, 4, ("grasp_dwell_ms", 300), ticks=2)
check(r == (4, link.E_BUSY), "CONFIG_SET in teleop %s" % (r,))
r, _ = ask(link.T_HIL_MODE, 5, (link.HIL_LOCKSTEP,), ticks=2)
check(r == (5, link.E_BUSY), "HIL_MODE in teleop %s" % (r,))

# ---- following: base yaw +20 deg/s and jaw to 30 mm, one setpoint every 20 ms ----
seq = 0
rid = 10
q = list(home)
mark = len(hal.frames())
errors = []
for k in range(50):
    seq += 1
    rid += 1
    q[0] = home[0] + 400 * seq           # 20 deg/s at 50 Hz
    hal.send(link.setpoint(rid, seq, q, 30000))
    run(10)                              # 20 ms
    errors.append(abs(joints_now()[0] - q[0]))
fr = hal.frames()[mark:]
replies = [f for f in fr if f[0] == link.T_REPLY]
check(not replies, "taken setpoints get no REPLY %s" % replies[:3])
st = states_in(fr)
seqs = [s[3] for s in st if s[1] == 1]
check(len(seqs) >= 45 and seqs == sorted(seqs) and seqs[-1] == 50, "TELEOP_STATE carries the applied seq %s" % seqs[-5:])
check(max(errors[10:]) <= 500, "the base follows a 20 deg/s stream within 0.5 deg: worst %d mdeg" % max(errors[10:]))
result("follow_err_worst_mdeg", max(errors[10:]))
check(abs(a.motion.jaw_um - 30000) <= 2000 and a.m.out.jaw_um == 30000, "the jaw goes to 30 mm through the slew")
last = st[-1]
check(abs(last[4] - joints_now()[0]) <= 400 and last[8] >= 0, "TELEOP_STATE joints are the servo drivers' %s" % (last,))

# ---- a following tick with nothing to send allocates nothing (heap locked) ----
seq += 1
rid += 1
q[0] += 400
hal.send(link.setpoint(rid, seq, q, 30000))
run(3)                                   # read, applied, reported
locked_ok = 0
locked_fail = 0
for k in range(8):
    a.teleop.next_beat = hal.ticks_ms() + 1000      # no heartbeat due in these ticks
    now = hal.ticks_ms()
    micropython.heap_lock()
    try:
        a.tick(now)
        locked_ok += 1
    except MemoryError:
        locked_fail += 1
    micropython.heap_unlock()
    hal._advance(2)
check(locked_fail == 0 and locked_ok == 8, "teleop ticks under heap_lock: %d ok, %d failed" % (locked_ok, locked_fail))
result("heap_locked_teleop_ticks_failed", locked_fail)

# ---- a jump in the stream: the arm keeps to a job's speed (teleop_mode: the rail) ----
vmax = min(a.settings.servo_limits(0)[0] * 1000, a.cfg.arm_speed_mdeg_s)   # mdeg/s
seq += 1
rid += 1
q[0] = q[0] - 60000                      # 60 deg at once
hal.send(link.setpoint(rid, seq, q, 30000))
worst = 0
prev = a.servos[0].pos
for k in range(80):                      # 1.6 s: 60 deg at 90 deg/s, with the ramps
    seq += 1
    rid += 1
    hal.send(link.setpoint(rid, seq, q, 30000))      # the same far setpoint, kept alive
    for _ in range(10):
        tick()
        p = a.servos[0].pos
        step = abs(p - prev)
        prev = p
        if step > worst:
            worst = step
check(worst * 1000 // 2 <= vmax, "a 60 deg jump: fastest step %d mdeg per 2 ms, limit %d mdeg/s" % (worst, vmax))
check(abs(joints_now()[0] - q[0]) <= 5, "...and it gets there %d vs %d" % (joints_now()[0], q[0]))
result("jump_speed_mdeg_s", worst * 500)

# ---- refused setpoints ----
bad = (("joint_limit", [q[0], q[1], 5000, q[3]], 30000, 1),
       ("joint_limit", [95000, q[1], q[2], q[3]], 30000, 1),
       ("jaw", q, 46000, 1),
       ("below_table", [0, 10000, -20000, -80000], 30000, 1),
       ("seq", q, 30000, 0))
for why, qq, jaw, fresh in bad:
    rid += 1
    if fresh:
        seq += 1
    r, _ = ask(link.T_SETPOINT, rid, (seq if fresh else a.teleop.seq,) + tuple(qq) + (jaw,), ticks=3)
    check(r is not None and r[1] == link.E_BAD_VALUE and r[2] == why, "refused %s: %s" % (why, r))
check(a.teleop.refused == len(bad), "refused counted %d" % a.teleop.refused)

# ---- deadman: the stream stops while the arm is still on its way ----
# One far setpoint (base 80 deg away, jaw to 0: about 350 and 500 ms of travel at the servo and
# jaw limits), then nothing: 200 ms after it was applied everything must stop where it is.
seq += 1
rid += 1
far = [q[0] + 80000, q[1], q[2], q[3]]
hal.log_pulses = 1
del hal.pulse_log[:]
mark = len(hal.frames())
hal.send(link.setpoint(rid, seq, far, 0))
run(300)
fr = hal.frames()[mark:]
applied = [s[0] for s in states_in(fr) if s[3] == seq and s[1] == 1]
check(len(applied) >= 1, "the far setpoint was applied")
t_applied = applied[0] if applied else 0
changes = [e[0] for e in hal.pulse_log if e[0] - t_applied > 0]
last_change = max(changes) if changes else t_applied
held_after = last_change - t_applied
check(a.teleop.mode == 2 and a.teleop.deadmans == 1, "deadman: held (mode %d)" % a.teleop.mode)
check(180 <= held_after <= 200 + 2, "pulses stop changing %d ms after the last setpoint was applied" % held_after)
check(abs(joints_now()[0] - far[0]) > 10000 and a.motion.jaw_um > 5000,
      "held where it was, short of the far setpoint (base %d vs %d, jaw %d)" % (joints_now()[0], far[0], a.motion.jaw_um))
result("deadman_hold_ms", held_after)
check(len(notes_in(fr, codes.R_DEADMAN)) == 1, "a DEADMAN note")
held = [s for s in states_in(fr) if s[1] == 2]
check(held and held[0][2] == 1, "TELEOP_STATE mode 2 why 1")
hal.log_pulses = 0
rid += 1
seq += 1
r, _ = ask(link.T_SETPOINT, rid, (seq,) + tuple(q) + (20000,), ticks=3)
check(r is not None and r[1] == link.E_STATE and r[2] == "held", "a setpoint while held %s" % (r,))
pose = joints_now()
rid += 1
r, _ = ask(link.T_TELEOP, rid, (1,), ticks=2)
check(r is not None and r[1] == link.OK and r[2] == 1 and list(r[3:7]) == pose, "re-armed at the held pose %s" % (r,))
rid += 1
seq += 1
r, _ = ask(link.T_SETPOINT, rid, (seq,) + tuple(pose) + (20000,), ticks=3)
check(r is None, "following again %s" % (r,))

# ---- the e-stop ends the mode ----
mark = len(hal.frames())
hal.estop_override = 1
for _ in range(5):
    seq += 1
    rid += 1
    hal.send(link.setpoint(rid, seq, pose, 20000))
    run(3)
fr = hal.frames()[mark:]
check(a.teleop.on == 0 and a.m.fault == codes.F_ESTOP, "e-stop: teleop off, ESTOP latched")
ends = [s for s in states_in(fr) if s[1] == 0]
check(ends and ends[0][2] == 2, "TELEOP_STATE why 2 (fault) %s" % ends[:1])
rid += 1
r, _ = ask(link.T_TELEOP, rid, (1,), ticks=2)
check(r is not None and r[1] == link.E_STATE and r[2] == "estop", "no teleop with the e-stop pressed %s" % (r,))
hal.estop_override = 0
run(10)
rid += 1
r, _ = ask(link.T_CLEAR_FAULT, rid, ticks=5)
rid += 1
r, _ = ask(link.T_TELEOP, rid, (1,), ticks=2)
check(r is not None and r[1] == link.OK, "teleop again after the fault was cleared %s" % (r,))

# ---- the gripper at stall in teleop: the stall watch's back-off stands ----
# The shunt held at 700 mA (above current_stall_ma 600) for longer than current_stall_ms (1 s):
# STALL, teleop ends, and the jaw is sent to the holding squeeze inside where its pot says it is
# (jaw um = (pot - 8000) * 1000 // 1067, less hold_squeeze_um 2000: docs/conventions.md), not
# frozen at its driver (still pressing), and its PWM stays on.
hal.sense_enabled = 0
pot = hal.adc[hal.pins.adc_pot]
hal.adc[hal.pins.adc_current] = 1000 + 700 * 19859 // 1000
for _ in range(700):
    run(1)
    if a.m.fault:
        break
want = (pot - 8000) * 1000 // 1067 - 2000
check(a.m.fault == codes.F_STALL and a.teleop.on == 0, "stall in teleop: STALL, teleop off (%d)" % a.m.fault)
check(a.motion.jaw_um == want and a.m.out.jaw_um == want, "the jaw backed off to %d, not frozen: %d" % (want, a.motion.jaw_um))
check(a.servos[4].enabled == 1, "the gripper's PWM stays on after the back-off")
hal.sense_enabled = 1
run(10)
rid += 1
r, _ = ask(link.T_CLEAR_FAULT, rid, ticks=5)
rid += 1
r, _ = ask(link.T_TELEOP, rid, (1,), ticks=2)
check(r is not None and r[1] == link.OK, "teleop again after the stall was cleared %s" % (r,))

# ---- leaving: the pose is held, and saved as the rest pose at rest ----
seq += 1
rid += 1
target = [pose[0] - 2000, pose[1], pose[2], pose[3]]
hal.send(link.setpoint(rid, seq, target, 25000))
run(100)
rid += 1
r, _ = ask(link.T_TELEOP, rid, (0,), ticks=2)
check(r is not None and r[1] == link.OK and r[2] == 0, "TELEOP off %s" % (r,))
held = joints_now()
run(300)
check(joints_now() == held and not a.busy(), "leaving holds the pose")
rest = json.loads(open(FLASH + "/rest.json").read())
check(rest["joints_mdeg"] == held, "the rest pose saved at rest %s vs %s" % (rest, held))
rid += 1
r, _ = ask(link.T_TELEOP, rid, (0,), ticks=2)
check(r == (rid, link.E_STATE, "not_teleop"), "leaving when off %s" % (r,))
rid += 1
r, _ = ask(link.T_SETPOINT, rid, (seq + 1,) + tuple(held) + (20000,), ticks=3)
check(r is not None and r[1] == link.E_STATE and r[2] == "not_teleop", "a setpoint when off %s" % (r,))

# ---- ABORT leaves too; a job refuses the mode ----
rid += 1
ask(link.T_TELEOP, rid, (1,), ticks=2)
rid += 1
r, _ = ask(link.T_ABORT, rid, ticks=2)
check(r == (rid, link.OK) and a.teleop.on == 0 and a.m.fault == 0, "ABORT leaves teleop without a fault %s" % (r,))
rid += 1
r, _ = ask(link.T_JOB, rid, fake_scenarios.PICK + fake_scenarios.PLACE + (25000,), ticks=5)
check(r == (rid, link.OK), "a job %s" % (r,))
rid += 1
r, _ = ask(link.T_TELEOP, rid, (1,), ticks=2)
check(r == (rid, link.E_BUSY), "no teleop during a job %s" % (r,))
finish()
