# Boot and recovery under the unix `micropython`: the plain decision functions of
# firmware/boot_recovery.py, then whole boots of firmware/app.py with the stand-in HAL and
# hand-set sensor readings: interrupted with a part held / not held, finishing the place,
# a clean boot commanding the stored rest pose, torn files.
#   micropython tests/mpy/fw_recovery.py BASE_DIR
# Prints "FAIL ..." per broken expectation, "RESULT name value"; exit code 1 on failure.
import os
import sys

from surepick.shared_fsm import link, servo_cal, kinematics
from surepick.shared_fsm.config import Config
from surepick.shared_fsm.codes import F_INTERRUPTED, K_NOTE, K_FAULT, R_PLACED
from surepick.firmware.hal.scripted import StandInHal, StopRun
from surepick.firmware import boot_recovery as rec
from surepick.firmware import app as app_mod
from checks import check, finish, result

BASE = sys.argv[1]
cfg = Config()
W = 25000
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
mk = {"job": job}
check(rec.decide(None, -1, 1) == rec.ACT_NORMAL, "no marker: normal")
check(rec.decide(mk, rec.GRIP_HELD, 1) == rec.ACT_FINISH, "held + job + allowed: finish")
check(rec.decide(mk, rec.GRIP_HELD, 0) == rec.ACT_FAULT, "held, finishing disabled: fault")
check(rec.decide(mk, rec.GRIP_EMPTY, 1) == rec.ACT_FAULT, "empty: fault")
check(rec.decide(mk, rec.GRIP_UNSURE, 1) == rec.ACT_FAULT, "unsure: fault")
check(rec.decide({"job": None}, rec.GRIP_HELD, 1) == rec.ACT_FAULT, "torn marker: fault")
check(rec.boot_jaw_um(None, 24000, 30000, True) == 30000, "clean boot: rest jaw")
check(rec.boot_jaw_um(mk, 24000, 40000, True) == 24000, "interrupted: the jaw stays where it is")
check(rec.boot_jaw_um(mk, 24000, 40000, False) == -1, "interrupted, pot broken: gripper left off")


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


def boot(name, held, marker=True, finish=0, extra_files=None, ticks=200, model=None, again=False):
    # again: boot once more on the flash an earlier boot(name) left (a soft reset)
    d = BASE + "/" + name if again else fresh(name)
    if not again:
        rec.write_rest_at(d, REST_Q, REST_JAW)
    if marker and not again:
        rec.write_marker_at(d, job)
    if finish:
        f = open(d + "/config.json", "w")
        f.write('{"version": 1, "board": {"recover_finish": 1}, "machine": {}}')
        f.close()
    for fname, text in (extra_files or {}).items():
        f = open(d + "/" + fname, "w")
        f.write(text)
        f.close()
    hal = StandInHal(cfg, {})
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
    state = {"n": 0}

    def on_tick(h):
        state["n"] += 1
        if model is not None:
            model(h, a)
        if state["n"] >= ticks:
            raise StopRun()

    hal.on_tick = on_tick
    try:
        a.run()
    except StopRun:
        pass
    return a, hal, d


def first_pulses(hal):
    out = [None] * 5
    for t, i, us in hal.pulse_log:
        if out[i] is None:
            out[i] = us
    return out


def max_step_per_tick(hal, index):
    last = None
    worst = 0
    for t, i, us in hal.pulse_log:
        if i == index:
            if last is not None:
                worst = max(worst, abs(us - last))
            last = us
    return worst


# B1: interrupted, part held, finishing disabled (the default): latch and hold
a, hal, d = boot("held_fault", held=True)
check(a.boot_action == rec.ACT_FAULT, "B1 action %d" % a.boot_action)
check(a.boot_grip == rec.GRIP_HELD, "B1 grip %d" % a.boot_grip)
check(a.m.fault == F_INTERRUPTED, "B1 fault %d" % a.m.fault)
fp = first_pulses(hal)
want = pulses_of(REST_Q, 0)
check(fp[:4] == want[:4], "B1 arm starts at the stored rest pose %s vs %s" % (fp[:4], want[:4]))
jaw_cmd = jaw_of_pulse(fp[4])
check(abs(jaw_cmd - 24000) < 500, "B1 gripper starts where the pot says (%d um), not at rest 45 mm" % jaw_cmd)
check(max(jaw_of_pulse(us) for t, i, us in hal.pulse_log if i == 4) < 25000, "B1 the gripper never opens")
check("job.json" in os.listdir(d), "B1 marker kept until a human clears the fault")
frames = hal.frames()
check(frames and frames[0][0] == link.T_HELLO, "B1 HELLO first")
faults = [f for f in frames if f[0] == link.T_EVENT and f[1][2] == K_FAULT and f[1][5] == F_INTERRUPTED]
check(len(faults) == 1, "B1 one INTERRUPTED fault event")
check(a.log.counters[2] >= 1, "B1 faults counter")
# a job is refused while faulted; clear it, then the marker goes (at rest)
hal.on_tick = None
hal.send(link.job(5, job[0], job[1], W))
hal.send(link.request(link.T_CLEAR_FAULT, 6))
for _ in range(60):
    a.tick(hal.ticks_ms())
    hal._advance(2)
replies = [f[1] for f in hal.frames() if f[0] == link.T_REPLY]
check((5, link.E_FAULTED, F_INTERRUPTED, 0, 0) in replies,
      "B1 job refused while faulted, naming the fault, the state it latched in and the attempt: %s" % replies)
check((6, link.OK) in replies, "B1 clear fault OK: %s" % replies)
check("job.json" not in os.listdir(d), "B1 marker cleared after the fault was cleared")

# B2: interrupted, nothing held
a, hal, d = boot("empty_fault", held=False)
check(a.boot_action == rec.ACT_FAULT and a.boot_grip == rec.GRIP_EMPTY, "B2 %d %d" % (a.boot_action, a.boot_grip))
check(a.m.fault == F_INTERRUPTED, "B2 fault latched")
check(abs(jaw_of_pulse(first_pulses(hal)[4]) - 45000) < 500, "B2 gripper stays where it is")

# B2b: the marker stays until a human clears the fault, so every soft reset finds it again:
# the fault is latched at every boot, but logged and counted once (at its first discovery)
a, hal, d = boot("soft_resets", held=False)
counters = list(a.log.counters)
for _ in range(3):
    a, hal, d = boot("soft_resets", held=False, again=True)
    check(a.m.fault == F_INTERRUPTED, "B2b fault latched again after a soft reset")
faults = [f for f in hal.frames() if f[0] == link.T_EVENT and f[1][2] == K_FAULT]
check(len(faults) == 1, "B2b the live view still sees the latched fault: %d EVENT frames" % len(faults))
check(a.log.counters[1] == counters[1] == 1, "B2b cycles_failed counted once: %d, %d" % (counters[1], a.log.counters[1]))
check(a.log.counters[2] == counters[2] == 1, "B2b faults counted once: %d, %d" % (counters[2], a.log.counters[2]))
check(a.log.counters[3] == counters[3] + 3, "B2b boots counted: %d -> %d" % (counters[3], a.log.counters[3]))
logged = [r for seq, rt, r in a.log.read_since(0, 1000) if rt == 2]
check(len(logged) == 1 and logged[0][5] == F_INTERRUPTED, "B2b one INTERRUPTED record in the flash log: %s" % logged)

# B3: interrupted, held, finishing enabled: carry the part to the place pose, open, retreat
log = {"open_z": None, "released": 0}


def held_part(h, app):
    # the gripper's pot follows its command but stops on the part (24 mm) until commanded open
    cmd = jaw_of_pulse(h.pulses[4]) if h.pulses[4] else 24000
    if not log["released"] and cmd > W + 1000:
        log["released"] = 1
        q = [v / 1000.0 for v in app.motion.joints]
        log["open_z"] = kinematics.forward(q)[2]
        log["open_xy"] = kinematics.forward(q)[:2]
    if log["released"]:
        h.adc[0] = pot_of(cmd)
        h.levels[14] = 1
        h.levels[15] = 1
    else:
        h.adc[0] = pot_of(24000 if cmd < 24000 else cmd)


a, hal, d = boot("held_finish", held=True, finish=1, ticks=8000, model=held_part)
check(a.boot_action == rec.ACT_FINISH, "B3 action %d" % a.boot_action)
check(a.m.fault == 0, "B3 no fault: %d" % a.m.fault)
check(a.finisher is None, "B3 finisher done")
check(log["open_z"] is not None and abs(log["open_z"] - 20.5) < 1.5,
      "B3 opened only at the place pose: z %s" % log["open_z"])
check(log["open_z"] is not None and abs(log["open_xy"][0] - 150.0) < 1.5 and abs(log["open_xy"][1] - 80.0) < 1.5,
      "B3 opened over the bin: %s" % (log.get("open_xy"),))
notes = [f[1][5] for f in hal.frames() if f[0] == link.T_EVENT and f[1][2] == K_NOTE]
check(F_INTERRUPTED in notes and R_PLACED in notes, "B3 notes %s" % notes)
check(a.log.counters[0] == 1, "B3 cycles_ok %d" % a.log.counters[0])
check("job.json" not in os.listdir(d), "B3 marker cleared")
fp = first_pulses(hal)
check(abs(jaw_of_pulse(fp[4]) - (24000 - cfg.hold_squeeze_um)) < 500,
      "B3 grip firmed to measured - hold_squeeze: %d" % jaw_of_pulse(fp[4]))
# gentle all the way: no servo pulse jumps more than a few us per tick
worst = max(max_step_per_tick(hal, i) for i in range(4))
check(worst <= 3, "B3 arm pulse step per tick %d us" % worst)
result("finish_arm_pulse_step_us", worst)
result("finish_virtual_ms", a.stats.ticks * 2)

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
d2 = fresh("torn_rest")
f = open(d2 + "/rest.json", "w")
f.write("{\"joints_mdeg\": [1, 2]")
f.close()
q, jaw, stored = rec.read_rest_at(d2)
check(q == rec.HOME_JOINTS_MDEG and not stored, "B5 torn rest -> home pose")

finish()
