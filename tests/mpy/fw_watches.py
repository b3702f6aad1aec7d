# The controller's watches and its flash rule under the unix `micropython`, through the real loop
# (App.tick) with the stand-in HAL and hand-set readings:
#   W1 the gripper current at stall in IDLE: STALL after current_stall_ms, the jaw backed off to
#      the holding squeeze where the pot says; still at stall as long again: gripper PWM off
#   W2 the same with the pot broken: PWM off at once (there is no "where the jaw is" to back to)
#   W3 the servo rail sags during a move: RAIL_LOW within rail_low_ms, every setpoint frozen in that
#      tick; the rail stays low: the arm's PWM off (STALL); back to normal: nothing moves by itself
#   W4 a job sent before the arm has settled: its marker and its first move wait for the settle time
#   W5 a fault mid-move: no flash write until the arm has been still for flash_settle_ms
#   W6 the rail sags, comes back and sags again before anyone cleared RAIL_LOW: one event, one
#      fault counted (the same fault, still latched)
#   micropython tests/mpy/fw_watches.py BASE_DIR
import os
import sys

from surepick.shared_fsm import link, servo_cal, fake_scenarios
from surepick.shared_fsm.config import Config, reads_in
from surepick.shared_fsm.codes import K_FAULT, K_NOTE, F_STALL, F_RAIL_LOW, F_ABORTED, R_UNPOWERED
from surepick.shared_fsm.states import IDLE, APPROACH
from surepick.firmware.hal.scripted import ScriptedHal
from surepick.firmware import app as app_mod
from surepick.firmware import flashlog
from checks import check, finish, result

BASE = sys.argv[1]
cfg = Config()
JOB = fake_scenarios.PICK + fake_scenarios.PLACE + (25000,)


def pot_of(jaw_um):
    return cfg.pot_closed_counts + jaw_um * cfg.pot_counts_per_mm // 1000


def current_counts(ma):
    return 1000 + ma * 19859 // 1000


def rail_counts(mv):
    return mv * 65535 // 9900


def jaw_of_pulse(us):
    return servo_cal.servo_mdeg_from_pulse(servo_cal.DEFAULT_CAL, us) // 4


def fresh(name):
    d = BASE + "/" + name
    os.mkdir(d)
    hal = ScriptedHal(cfg, {})
    hal.sense_enabled = 0
    hal.log_pulses = 1
    a = app_mod.App(hal, root=d)
    hal.out = a.m.out
    hal.adc[0] = pot_of(30000)
    hal.adc[1] = current_counts(10)
    hal.adc[2] = rail_counts(5500)
    hal.levels[13] = 0
    hal.levels[14] = 1
    hal.levels[15] = 1
    a.boot()
    return a, hal, d


def tick(a, hal, n=1):
    for _ in range(n):
        a.tick(hal.ticks_ms())
        hal._advance(2)


def events(hal, kind, reason):
    return [f[1] for f in hal.frames() if f[0] == link.T_EVENT and f[1][2] == kind and f[1][5] == reason]


def send(a, hal, frame, ticks=8):
    hal.send(frame)
    tick(a, hal, ticks)


b = app_mod.settings_mod.Settings().board
STALL_MS = b["current_stall_ms"]
RAIL_MS = b["rail_low_ms"]
SETTLE_MS = b["flash_settle_ms"]
check(b["current_stall_ma"] < 700 and b["rail_low_mv"] > 4000, "defaults: stall %d mA, rail low %d mV"
      % (b["current_stall_ma"], b["rail_low_mv"]))

# ---- W1: stall in IDLE ----
a, hal, d = fresh("w1")
tick(a, hal, 50)
t0 = hal.now
hal.adc[1] = current_counts(700)
tick(a, hal, STALL_MS // 2 - 10)
check(a.m.fault == 0, "W1 no STALL before current_stall_ms")
tick(a, hal, 30)
st = events(hal, K_FAULT, F_STALL)
check(len(st) == 1 and a.m.fault == F_STALL, "W1 STALL latched: %s" % st)
lag = hal.ticks_diff(st[0][1], t0) - STALL_MS if st else -1
check(0 <= lag <= 20, "W1 STALL %d ms after current_stall_ms (filter lag)" % lag)
result("stall_detect_lag_ms", lag)
check(a.m.out.jaw_um == 30000 - cfg.hold_squeeze_um and a.motion.jaw_um == a.m.out.jaw_um,
      "W1 jaw backed off to the holding squeeze where the pot says: cmd %d setpoint %d"
      % (a.m.out.jaw_um, a.motion.jaw_um))
tick(a, hal, 200)
check(abs(jaw_of_pulse(hal.pulses[4]) - (30000 - cfg.hold_squeeze_um)) < 300, "W1 the pulse follows: %d um"
      % jaw_of_pulse(hal.pulses[4]))
check(hal.pulses[4] != 0, "W1 still powered after the back-off")
tick(a, hal, STALL_MS // 2)
check(hal.pulses[4] == 0 and not a.servos[4].enabled, "W1 still at stall: gripper PWM off")
check(len(events(hal, K_NOTE, R_UNPOWERED)) == 1, "W1 UNPOWERED noted once")
hal.adc[1] = current_counts(10)
tick(a, hal, 100)
check(hal.pulses[4] == 0 and len(events(hal, K_FAULT, F_STALL)) == 1, "W1 no more events, gripper stays off")
send(a, hal, link.request(link.T_CLEAR_FAULT, 3))
check(a.m.fault == 0 and hal.pulses[4] == 0, "W1 a clear leaves the gripper off (a RESCUE powers it)")
send(a, hal, link.request(link.T_RESCUE, 4, (link.RESCUE_RELEASE, link.NEAR_SETPOINT)), 20)
check(a.servos[4].enabled and hal.pulses[4] != 0, "W1 RESCUE release powers the gripper where the pot says")

# ---- W2: stall with the pot broken: PWM off at the first stage ----
a, hal, d = fresh("w2")
tick(a, hal, 50)
hal.adc[0] = 0
hal.adc[1] = current_counts(700)
tick(a, hal, STALL_MS // 2 + 20)
check(a.m.fault == F_STALL and hal.pulses[4] == 0, "W2 pot broken: STALL and PWM off at once (fault %d, pulse %d)"
      % (a.m.fault, hal.pulses[4]))

# ---- W3: the rail sags while the arm moves ----
a, hal, d = fresh("w3")
tick(a, hal, SETTLE_MS // 2 + 10)
send(a, hal, link.job(5, fake_scenarios.PICK, fake_scenarios.PLACE, 25000))
check(a.m.state == APPROACH, "W3 moving (state %d)" % a.m.state)
tick(a, hal, 100)
moving = list(hal.pulses)
tick(a, hal, 1)
check(hal.pulses[:4] != moving[:4], "W3 the arm is moving before the sag")
hal.adc[2] = rail_counts(4000)
t0 = hal.now
n = 0
while a.m.fault == 0 and n < 20:
    tick(a, hal, 1)
    n += 1
ev = events(hal, K_FAULT, F_RAIL_LOW)
check(len(ev) == 1 and a.m.fault == F_RAIL_LOW, "W3 RAIL_LOW latched: %s" % ev)
# rail_low_ms counts like debounce_ms: low reads spanning it, one loop period each (1 at 4 ms)
check(n == reads_in(RAIL_MS, a.cfg.loop_period_ms), "W3 RAIL_LOW on read %d, want %d at %d ms"
      % (n, reads_in(RAIL_MS, a.cfg.loop_period_ms), a.cfg.loop_period_ms))
check(hal.ticks_diff(ev[0][1], t0) <= RAIL_MS + a.cfg.loop_period_ms if ev else False, "W3 within rail_low_ms + one tick: %d ms"
      % (hal.ticks_diff(ev[0][1], t0) if ev else -1))
frozen = list(a.motion.joints)
jaw = a.motion.jaw_um
tick(a, hal, 50)
check(list(a.motion.joints) == frozen and a.motion.jaw_um == jaw, "W3 every setpoint frozen in that tick")
tick(a, hal, STALL_MS // 2)
check(a.arm_off and hal.pulses[:4] == [0, 0, 0, 0], "W3 the rail stayed low: arm PWM off %s" % (hal.pulses[:4],))
check(len(events(hal, K_FAULT, F_STALL)) == 1, "W3 STALL latched")
hal.adc[2] = rail_counts(5500)
mark = len(hal.pulse_log)
tick(a, hal, 500)
check(len(hal.pulse_log) == mark, "W3 the rail came back: nothing moves by itself")
send(a, hal, link.request(link.T_CLEAR_FAULT, 6))
send(a, hal, link.job(7, fake_scenarios.PICK, fake_scenarios.PLACE, 25000), 10)
r = [f[1] for f in hal.frames() if f[0] == link.T_REPLY and f[1][0] == 7]
check(r == [(7, link.E_STATE, "arm_unpowered")], "W3 jobs refused until a RESCUE: %s" % r)

# ---- W4: a job before the arm settled waits for the settle time (marker first) ----
a, hal, d = fresh("w4")
tick(a, hal, 10)
send(a, hal, link.job(5, fake_scenarios.PICK, fake_scenarios.PLACE, 25000), 4)
r = [f[1] for f in hal.frames() if f[0] == link.T_REPLY and f[1][0] == 5]
check(r == [(5, link.OK)], "W4 job accepted: %s" % r)
check(a.m.state == IDLE and "job.json" not in os.listdir(d) and a.busy(), "W4 waits: no marker, no move yet")
since = -1
while a.m.state == IDLE and hal.ticks_diff(hal.now, a.still_since) < 2 * SETTLE_MS:
    since = hal.ticks_diff(hal.now, a.still_since)     # at the start of the tick
    tick(a, hal, 1)
check(a.m.state == APPROACH and "job.json" in os.listdir(d), "W4 started with its marker on flash")
check(SETTLE_MS <= since <= SETTLE_MS + 4, "W4 started %d ms after the arm came to rest" % since)

# ---- W5: a fault mid-move: flash only once the arm has been still flash_settle_ms ----
tick(a, hal, 200)
writes = []
send(a, hal, link.request(link.T_ABORT, 8), 2)
check(a.m.fault == F_ABORTED, "W5 aborted mid-move")
t_abort = hal.now
for _ in range(SETTLE_MS):
    a.tick(hal.ticks_ms())
    if a.flash_tick:
        writes.append((hal.now, hal.ticks_diff(hal.now, a.still_since)))
    hal._advance(2)
check(writes, "W5 the frozen pose and the log were written once at rest")
check(all(w[1] >= SETTLE_MS for w in writes), "W5 every flash write came after %d ms still: %s" % (SETTLE_MS, writes))
result("first_write_after_fault_ms", hal.ticks_diff(writes[0][0], t_abort) if writes else -1)

# ---- W6: a rail that sags again while RAIL_LOW is still latched is the same fault ----
a, hal, d = fresh("w6")
tick(a, hal, SETTLE_MS // 2 + 10)
faults0 = a.log.counters[flashlog.C_FAULTS]
for _ in range(3):
    hal.adc[2] = rail_counts(4000)
    tick(a, hal, 3)
    hal.adc[2] = rail_counts(5500)
    tick(a, hal, 20)
tick(a, hal, 50)
check(a.m.fault == F_RAIL_LOW, "W6 RAIL_LOW latched (fault %d)" % a.m.fault)
ev = events(hal, K_FAULT, F_RAIL_LOW)
check(len(ev) == 1, "W6 three sags before a clear: one RAIL_LOW event, got %d" % len(ev))
check(a.log.counters[flashlog.C_FAULTS] - faults0 == 1, "W6 counted once: %d" % (a.log.counters[flashlog.C_FAULTS] - faults0))
send(a, hal, link.request(link.T_CLEAR_FAULT, 9))
hal.adc[2] = rail_counts(4000)
tick(a, hal, 3)
check(len(events(hal, K_FAULT, F_RAIL_LOW)) == 2, "W6 after a clear a new sag is a new event")

finish()
