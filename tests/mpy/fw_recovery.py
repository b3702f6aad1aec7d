# Boot and recovery under the unix `micropython`: the plain decision functions of
# firmware/boot_recovery.py, then whole boots of firmware/app.py with the stand-in HAL and
# hand-set sensor readings: interrupted with a part held / not held (arm unpowered, gripper held
# where the pot says, nothing moving until an operator acts), the operator's RESCUE (place the
# held part gently, or bring the arm to rest), counting the interruption once, a clean boot
# commanding the stored rest pose, torn files.
#   micropython tests/mpy/fw_recovery.py BASE_DIR
# Prints "FAIL ..." per broken expectation, "RESULT name value"; exit code 1 on failure.
import os
import sys

from surepick.shared_fsm import link, servo_cal, kinematics
from surepick.shared_fsm.config import Config
from surepick.shared_fsm.codes import F_INTERRUPTED, K_NOTE, K_FAULT, R_PLACED, R_RESCUE, R_RESTED
from surepick.shared_fsm.states import IDLE
from surepick.firmware.hal.scripted import ScriptedHal, StopRun
from surepick.firmware import boot_recovery as rec
from surepick.firmware import app as app_mod
from checks import check, finish, result

BASE = sys.argv[1]
cfg = Config()
W = 25000
HOLD = cfg.hold_squeeze_um
closed = W - cfg.squeeze_um                      # 19 mm: closed on nothing
# ---- A. decisions ----
check(rec.assess_grip(24000, 1, 1, W, cfg) == rec.GRIP_HELD, "all three say held")
check(rec.assess_grip(24000, 0, 1, W, cfg) == rec.GRIP_HELD, "jaw + beam say held")
check(rec.assess_grip(closed, 1, 1, W, cfg) == rec.GRIP_HELD, "switch + beam, jaw closed: held")
check(rec.assess_grip(24000, 0, 0, W, cfg) == rec.GRIP_UNSURE, "jaw alone: unsure")
check(rec.assess_grip(closed, 1, 0, W, cfg) == rec.GRIP_UNSURE, "switch alone: unsure")
check(rec.assess_grip(closed, 0, 0, W, cfg) == rec.GRIP_EMPTY, "closed on nothing: empty")
check(rec.assess_grip(45000, 0, 0, W, cfg) == rec.GRIP_EMPTY, "wide open: empty")
check(rec.assess_grip(-1, 0, 0, W, cfg) == rec.GRIP_UNSURE, "pot broken, nothing else: unsure")
check(rec.assess_grip(-1, 1, 1, W, cfg) == rec.GRIP_HELD, "pot broken, switch + beam: held")
job = ((160000, -60000, 15500, -90000), (150000, 80000, 20500, -90000), W, 3)
mk = {"job": job, "counted": 0}
check(rec.decide(None) == rec.ACT_NORMAL, "no marker: normal")
check(rec.decide(mk) == rec.ACT_FAULT, "marker: fault, whatever is held")
check(rec.decide({"job": None, "counted": 0}) == rec.ACT_FAULT, "torn marker: fault")
check(rec.boot_jaw_um(None, 24000, 30000, True, -1, HOLD) == 30000, "clean boot: rest jaw")
check(rec.boot_jaw_um(mk, 24000, 40000, True, rec.GRIP_HELD, HOLD) == 24000 - HOLD,
      "interrupted, held: the holding squeeze where the pot says")
check(rec.boot_jaw_um(mk, 24000, 40000, True, rec.GRIP_UNSURE, HOLD) == 24000,
      "interrupted, unsure: the jaw stays exactly where it is")
check(rec.boot_jaw_um(mk, 24000, 40000, False, rec.GRIP_HELD, HOLD) == -1, "interrupted, pot broken: gripper left off")


# ---- B. whole boots ----
def fresh(name):
    d = BASE + "/" + name
    os.mkdir(d)
    return d


def pulses_of(q, jaw):
    out = []
    for i in range(4):
        out.append(servo_cal.pulse_us(servo_cal.DEFAULT_CAL, servo_cal.joint_to_servo_mdeg(i, q[i])))
    out.append(servo_cal.pulse_us(servo_cal.DEFAULT_CAL, servo_cal.joint_to_servo_mdeg(4, jaw)))
    return out


def pot_of(jaw_um):
    return cfg.pot_closed_counts + jaw_um * cfg.pot_counts_per_mm // 1000


def jaw_of_pulse(us):
    return servo_cal.servo_mdeg_from_pulse(servo_cal.DEFAULT_CAL, us) // 4


REST_Q = tuple(int(round(v * 1000)) for v in kinematics.inverse(150.0, 80.0, 80.5, -90.0))
REST_JAW = 45000
# Where the arm stood still when the reset came: 30 mm above the pick pose, mid-lift.
LIFT_XYZ = (160.0, -60.0, 45.5)


def make_app(d, held):
    hal = ScriptedHal(cfg, {})
    hal.sense_enabled = 0
    hal.log_pulses = 1
    a = app_mod.App(hal, root=d)
    hal.out = a.m.out
    jaw = 24000 if held else 45000
    hal.adc[0] = pot_of(jaw)
    hal.adc[1] = 1000 + 199
    hal.adc[2] = 36404
    hal.levels[14] = 0 if held else 1
    hal.levels[15] = 0 if held else 1
    hal.levels[13] = 0
    return a, hal


def boot(name, held, marker=True, extra_files=None, ticks=200, model=None, d=None):
    if d is None:
        d = fresh(name)
        rec.write_rest_at(d, REST_Q, REST_JAW)
        if marker:
            rec.write_marker_at(d, job)
        for fname, text in (extra_files or {}).items():
            f = open(d + "/" + fname, "w")
            f.write(text)
            f.close()
    a, hal = make_app(d, held)
    state = {"n": 0}

    def on_tick(h):
        state["n"] += 1
        if model is not None:
            model(h, a)
        if state["n"] >= ticks:
            raise StopRun()

    hal.run_app(a, on_tick)
    return a, hal, d


def run(a, hal, ticks, model=None):
    hal.on_tick = None
    for _ in range(ticks):
        a.tick(hal.ticks_ms())
        hal._advance(2)
        if model is not None:
            model(hal, a)


def ask(a, hal, ftype, rid, args=(), ticks=20, model=None):
    mark = len(hal.frames())
    hal.send(link.request(ftype, rid, args))
    run(a, hal, ticks, model)
    for f in hal.frames()[mark:]:
        if f[0] == link.T_REPLY and f[1][0] == rid:
            return f[1]
    return None


def first_pulses(hal):
    out = [None] * 5
    for t, i, us in hal.pulse_log:
        if out[i] is None:
            out[i] = us
    return out


def max_step_per_tick(hal, index, since=0):
    last = None
    worst = 0
    for t, i, us in hal.pulse_log:
        if i == index and t >= since:
            if last is not None and us and last:
                worst = max(worst, abs(us - last))
            last = us
    return worst


def notes(hal):
    return [f[1][5] for f in hal.frames() if f[0] == link.T_EVENT and f[1][2] == K_NOTE]


# B1: interrupted with a part held: INTERRUPTED latched, arm unpowered, gripper at the holding
# squeeze where the pot says, nothing moves (however long), the marker stays
a, hal, d = boot("held", held=True, ticks=2500)
check(a.boot_action == rec.ACT_FAULT, "B1 action %d" % a.boot_action)
check(a.boot_grip == rec.GRIP_HELD, "B1 grip %d" % a.boot_grip)
check(a.m.fault == F_INTERRUPTED and a.arm_off and a.m.holding, "B1 fault %d arm_off %d holding %d"
      % (a.m.fault, a.arm_off, a.m.holding))
fp = first_pulses(hal)
check(fp[:4] == [0, 0, 0, 0], "B1 the arm servos stay unpowered: %s" % fp[:4])
check(abs(jaw_of_pulse(fp[4]) - (24000 - HOLD)) < 500,
      "B1 gripper at the holding squeeze where the pot says (%d um)" % jaw_of_pulse(fp[4]))
check(len(hal.pulse_log) == 5, "B1 no servo moved in 5 s: %d pulse writes" % len(hal.pulse_log))
check("job.json" in os.listdir(d), "B1 marker kept")
frames = hal.frames()
check(frames and frames[0][0] == link.T_HELLO, "B1 HELLO first")
faults = [f for f in frames if f[0] == link.T_EVENT and f[1][2] == K_FAULT and f[1][5] == F_INTERRUPTED]
check(len(faults) == 1, "B1 one INTERRUPTED fault event")
check(a.log.counters[1] == 1 and a.log.counters[2] == 1, "B1 counted once: cycles_failed %d faults %d"
      % (a.log.counters[1], a.log.counters[2]))
check(rec.read_marker_at(d)["counted"] == 1, "B1 the marker says the interruption is counted")
# a job is refused while faulted; after a clear, still refused: the part may be mid-air
r = ask(a, hal, link.T_JOB, 5, job[0] + job[1] + (W,))
# E_FAULTED names the fault, the state it latched in (the boot latches it in IDLE) and the attempt
check(r == (5, link.E_FAULTED, F_INTERRUPTED, IDLE, 0), "B1 job refused while faulted: %s" % (r,))
r = ask(a, hal, link.T_CLEAR_FAULT, 6)
check(r == (6, link.OK), "B1 clear fault %s" % (r,))
r = ask(a, hal, link.T_JOB, 7, job[0] + job[1] + (W,))
check(r == (7, link.E_STATE, "holding"), "B1 job refused while a part is held: %s" % (r,))
# RESCUE needs to know where the unpowered arm is, and a part to place
r = ask(a, hal, link.T_RESCUE, 8, (link.RESCUE_PLACE, link.NEAR_SETPOINT))
check(r == (8, link.E_STATE, "arm_unpowered"), "B1 rescue without a pose: %s" % (r,))
r = ask(a, hal, link.T_RESCUE, 9, (7, link.NEAR_PICK))
check(r == (9, link.E_BAD_VALUE, "action"), "B1 rescue with a bad action: %s" % (r,))
r = ask(a, hal, link.T_RESCUE, 10, (link.RESCUE_PLACE, link.NEAR_GIVEN))
check(r == (10, link.E_BAD_VALUE, "pose"), "B1 NEAR_GIVEN without a pose: %s" % (r,))
check(len(hal.pulse_log) == 5, "B1 still nothing moved: %d pulse writes" % len(hal.pulse_log))
check("job.json" in os.listdir(d), "B1 marker kept while the part is held")

# B1b: a second reset before anyone acted: latched again, but not logged or counted again
a, hal, d = boot("held", held=True, ticks=300, d=d)
check(a.m.fault == F_INTERRUPTED and a.arm_off, "B1b latched again")
faults = [f for f in hal.frames() if f[0] == link.T_EVENT and f[1][2] == K_FAULT]
check(faults == [], "B1b no second INTERRUPTED event: %s" % faults)
check(a.log.counters[1] == 1 and a.log.counters[2] == 1 and a.log.counters[3] == 2,
      "B1b counters %s" % (list(a.log.counters),))

# B2: the operator measured the jaw 30 mm above the pick pose and asks for the place: the arm is
# powered exactly there, then only gentle moves: up, over the bin, down, open there, retreat
log = {"open_xyz": None, "released": 0}


def held_part(h, app):
    # the gripper's pot follows its command but stops on the part (24 mm) until commanded open
    cmd = jaw_of_pulse(h.pulses[4]) if h.pulses[4] else 24000
    if not log["released"] and cmd > W + 1000:
        log["released"] = 1
        q = [v / 1000.0 for v in app.motion.joints]
        log["open_xyz"] = kinematics.forward(q)[:3]
    if log["released"]:
        h.adc[0] = pot_of(cmd)
        h.levels[14] = 1
        h.levels[15] = 1
    else:
        h.adc[0] = pot_of(24000 if cmd < 24000 else cmd)


mark = len(hal.pulse_log)
t_rescue = hal.now
at = (int(LIFT_XYZ[0] * 1000), int(LIFT_XYZ[1] * 1000), int(LIFT_XYZ[2] * 1000), -90000)
r = ask(a, hal, link.T_RESCUE, 11, (link.RESCUE_PLACE, link.NEAR_GIVEN) + at, ticks=4, model=held_part)
check(r == (11, link.OK), "B2 rescue accepted: %s" % (r,))
lift_q = [int(round(v * 1000)) for v in kinematics.inverse(LIFT_XYZ[0], LIFT_XYZ[1], LIFT_XYZ[2], -90.0)]
first = {}
for t, i, us in hal.pulse_log[mark:]:
    if i < 4 and i not in first:
        first[i] = us
check([first.get(i) for i in range(4)] == pulses_of(lift_q, 0)[:4],
      "B2 the arm is powered exactly at the measured pose: %s" % ([first.get(i) for i in range(4)],))
run(a, hal, 9000, held_part)
check(a.m.fault == 0 and a.rescue_op is None and not a.m.holding and not a.arm_off,
      "B2 done: fault %d holding %d arm_off %d" % (a.m.fault, a.m.holding, a.arm_off))
x = log["open_xyz"]
check(x is not None and abs(x[2] - 20.5) < 1.5 and abs(x[0] - 150.0) < 1.5 and abs(x[1] - 80.0) < 1.5,
      "B2 opened only at the place pose, over the bin: %s" % (x,))
n = notes(hal)
check(R_RESCUE in n and R_PLACED in n, "B2 RESCUE and PLACED noted: %s" % n)
check(a.log.counters[0] == 0 and a.log.counters[1] == 1, "B2 still counted once, as failed: %s"
      % (list(a.log.counters),))
check("job.json" not in os.listdir(d), "B2 marker cleared once nothing is held and the arm is at rest")
worst = max(max_step_per_tick(hal, i, t_rescue) for i in range(4))
check(worst <= 3, "B2 gentle all the way: arm pulse step per tick %d us" % worst)
result("rescue_arm_pulse_step_us", worst)
r = ask(a, hal, link.T_JOB, 12, job[0] + job[1] + (W,), ticks=6)
check(r == (12, link.OK), "B2 jobs are accepted again: %s" % (r,))

# B3: interrupted with nothing held: the jaw stays where it is (no squeeze), arm unpowered;
# RESCUE rest with the arm where it last stood still (the stored rest pose): powered there
# exactly (no jump), then gently to above the place pose; jobs accepted again
a, hal, d = boot("empty", held=False, ticks=300)
check(a.boot_action == rec.ACT_FAULT and a.boot_grip == rec.GRIP_EMPTY, "B3 %d %d" % (a.boot_action, a.boot_grip))
check(a.m.fault == F_INTERRUPTED and not a.m.holding and a.arm_off, "B3 fault latched, nothing held, arm off")
check(abs(jaw_of_pulse(first_pulses(hal)[4]) - 45000) < 500, "B3 gripper stays where it is")
r = ask(a, hal, link.T_CLEAR_FAULT, 1)
r = ask(a, hal, link.T_JOB, 2, job[0] + job[1] + (W,))
check(r == (2, link.E_STATE, "arm_unpowered"), "B3 job refused with the arm unpowered: %s" % (r,))
r = ask(a, hal, link.T_RESCUE, 3, (link.RESCUE_PLACE, link.NEAR_REST))
check(r == (3, link.E_STATE, "not_holding"), "B3 nothing to place: %s" % (r,))
mark = len(hal.pulse_log)
r = ask(a, hal, link.T_RESCUE, 4, (link.RESCUE_REST, link.NEAR_REST), ticks=1)
check(r == (4, link.OK), "B3 rescue rest: %s" % (r,))
first = {}
for t, i, us in hal.pulse_log[mark:]:
    if i < 4 and i not in first:
        first[i] = us
check([first.get(i) for i in range(4)] == pulses_of(REST_Q, 0)[:4], "B3 powered exactly at the stored rest pose")
run(a, hal, 4000)
check(a.rescue_op is None and a.m.fault == 0 and R_RESTED in notes(hal), "B3 rested: %s" % notes(hal))
q = [v / 1000.0 for v in a.motion.joints]
xyz = kinematics.forward(q)
check(abs(xyz[0] - 150.0) < 1.0 and abs(xyz[1] - 80.0) < 1.0 and abs(xyz[2] - 80.5) < 1.0,
      "B3 rests above the place pose: %s" % (xyz,))
check("job.json" not in os.listdir(d), "B3 marker cleared")
r = ask(a, hal, link.T_JOB, 5, job[0] + job[1] + (W,), ticks=6)
check(r == (5, link.OK), "B3 jobs accepted again: %s" % (r,))

# B4: clean boot: the stored rest pose is commanded first, exactly, and nothing moves
a, hal, d = boot("clean", held=False, marker=False)
check(a.boot_action == rec.ACT_NORMAL and a.m.fault == 0, "B4 normal boot")
fp = first_pulses(hal)
check(fp == pulses_of(REST_Q, REST_JAW), "B4 first pulses are the rest pose: %s" % fp)
check(len(hal.pulse_log) == 5, "B4 nothing moved after: %d pulse writes" % len(hal.pulse_log))

# B5: torn files: a garbage marker is still an interruption; garbage rest -> home; bad config
a, hal, d = boot("torn", held=True, marker=False,
                 extra_files={"job.json": '{"pick": [1, 2', "config.json": "{not json"})
check(a.boot_action == rec.ACT_FAULT and a.m.fault == F_INTERRUPTED, "B5 torn marker latches")
check(a.settings.load_error != "", "B5 bad config reported")
r = ask(a, hal, link.T_RESCUE, 1, (link.RESCUE_PLACE, link.NEAR_PICK))
check(r == (1, link.E_STATE, "no_job"), "B5 no job to place with: %s" % (r,))
d2 = fresh("torn_rest")
f = open(d2 + "/rest.json", "w")
f.write("{\"joints_mdeg\": [1, 2]")
f.close()
q, jaw, stored = rec.read_rest_at(d2)
check(q == rec.HOME_JOINTS_MDEG and not stored, "B5 torn rest -> home pose")

finish()
