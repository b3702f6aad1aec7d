# Firmware drivers under the unix `micropython` with a tiny stand-in HAL object: servo slew and
# acceleration limits, no snap on boot, e-stop latch and fail-safe wiring, current offset
# calibration, pot filter, no heap allocation in the per-tick calls. Prints "FAIL ..." for every
# broken expectation and "RESULT name value" figures; exit code 1 on any failure.
import micropython
from surepick.shared_fsm.servo_cal import pulse_us, DEFAULT_CAL
from surepick.firmware.servo import Servo, isqrt
from surepick.firmware.sensors import Pot, Current, Rail, Switch, EStop, CURRENT_IDLE, CURRENT_HOLDING, CURRENT_STALL
from checks import check, finish, result
from prng import Prng


class Hal:
    def __init__(self):
        self.pulses = [0, 0, 0, 0, 0]
        self.writes = 0
        self.adc = [0, 0, 0]
        self.pins = {13: 0, 14: 1, 15: 1}

    def set_pulse_us(self, i, us):
        self.pulses[i] = us
        self.writes += 1

    def read_u16(self, ch):
        return self.adc[ch]

    def read_pin(self, g):
        return self.pins[g]


# ---- isqrt ----
for n in (0, 1, 2, 3, 4, 15, 16, 17, 99, 100, 12345, 999999, 10 ** 9):
    r = isqrt(n)
    check(r * r <= n < (r + 1) * (r + 1), "isqrt(%d) = %d" % (n, r))
    r2 = isqrt(n, 7)
    check(r2 == r, "isqrt(%d, guess) = %d" % (n, r2))

# ---- servo: no snap on boot ----
hal = Hal()
start = 123456
sv = Servo(hal, 0, DEFAULT_CAL, 240, 2400, start)
check(sv.pulse == pulse_us(DEFAULT_CAL, start), "first pulse is the start pose")
sv.update(start, 2)
check(hal.writes == 0, "holding the start pose writes nothing")


def run_move(sv, target, ticks, dt=2):
    # -> (max |dv| per tick in mdeg/s, max speed mdeg/s, overshoot mdeg, ticks to arrive)
    prev_v = sv.vel
    max_dv = 0
    max_v = 0
    over = 0
    arrived = -1
    d0 = target - sv.pos
    for k in range(ticks):
        sv.update(target, dt)
        dv = abs(sv.vel - prev_v)
        prev_v = sv.vel
        if dv > max_dv:
            max_dv = dv
        if abs(sv.vel) > max_v:
            max_v = abs(sv.vel)
        if (d0 > 0 and sv.pos > target) or (d0 < 0 and sv.pos < target):
            over = max(over, abs(sv.pos - target))
        if arrived < 0 and sv.pos == target and sv.vel == 0:
            arrived = k
    return max_dv, max_v, over, arrived


# a big step: the worst a setpoint can do (boot pose -> far target)
sv = Servo(hal, 1, DEFAULT_CAL, 240, 2400, 30000)
max_dv, max_v, over, arrived = run_move(sv, 150000, 2000)
check(max_dv <= 2400 * 2, "servo accel limit: |dv| %d per 2 ms tick > %d" % (max_dv, 2400 * 2))
check(max_v <= 240000, "servo speed limit: %d mdeg/s" % max_v)
check(over == 0, "servo overshoot %d mdeg" % over)
check(arrived > 0, "servo arrived on the target")
# time-optimal trapezoid: 120 deg at 240 deg/s, 2400 deg/s^2 -> 0.6 s cruise + 0.1 s ramps = 0.6 s
check(arrived * 2 < 800, "servo arrival took %d ms" % (arrived * 2))
result("servo_step_arrive_ms", arrived * 2)
result("servo_step_max_dv", max_dv)
# and back down
max_dv, max_v, over, arrived = run_move(sv, 20000, 2000)
check(max_dv <= 4800 and over == 0 and arrived > 0, "servo step down: dv %d over %d" % (max_dv, over))

# tracking a ramp slower than the limits: no lag, no braking chatter
sv = Servo(hal, 2, DEFAULT_CAL, 240, 2400, 90000)
lag = 0
target = 90000
v = 0
for k in range(400):                      # 0.8 s: stays inside the 180 deg travel
    if v < 90000:
        v += 240 * 2                      # the planner's own 240 deg/s^2 ramp
    target += v * 2 // 1000
    sv.update(target, 2)
    if k > 10:
        lag = max(lag, abs(target - sv.pos))
check(lag <= 200, "ramp tracking lag %d mdeg" % lag)
result("servo_ramp_lag_mdeg", lag)

# pulses stay in the calibrated range whatever the target
sv = Servo(hal, 3, (600, 2400, 10, 1, 180000), 300, 3000, 0)
for tgt in (-50000, 250000, 90000):
    for _ in range(500):
        sv.update(tgt, 2)
        check(600 + 10 <= sv.pulse <= 2400 + 10, "pulse %d out of range" % sv.pulse)
check(sv.pos == 90000, "inverted servo reaches 90 deg")

# limp is explicit only
sv.limp()
check(hal.pulses[3] == 0 and sv.pulse == 0, "limp writes pulse 0")

# the pulse update() writes is servo_cal.pulse_us of where the driver is (update inlines it), for
# calibrations of every kind (inverted, trimmed, 270-degree travel) and targets that jump mid-move,
# leave the travel, and come at uneven ticks
rng = Prng(25)
worst = 0
for case in range(40):
    travel = (180000, 270000)[rng.below(2)]
    cal = (400 + rng.below(600), 1800 + rng.below(800), rng.below(201) - 100, rng.below(2), travel)
    sv = Servo(hal, case % 5, cal, 60 + rng.below(400), 500 + rng.below(5000), rng.below(travel + 1))
    hal.pulses[case % 5] = sv.pulse          # what the boot's pwm_start writes
    for step in range(300):
        if step % 37 == 0:
            tgt = rng.below(travel + 60001) - 30000
        sv.update(tgt, 1 + rng.below(8))
        want = pulse_us(cal, sv.pos)
        if sv.pulse != want or hal.pulses[case % 5] != want:
            worst += 1
check(worst == 0, "update wrote a pulse other than pulse_us(cal, pos) %d times" % worst)

# no allocation in update (heap locked), across moves
sv = Servo(hal, 4, DEFAULT_CAL, 500, 8000, 10000)
k = 0
ok = 0                                  # globals exist before the lock (a new one allocates)
micropython.heap_lock()
try:
    while k < 400:                      # no range(): it would allocate its iterator
        sv.update(10000 + (k // 100) * 40000, 2)
        k += 1
    ok = 1
except MemoryError:
    ok = 0
micropython.heap_unlock()
check(ok, "servo.update allocated")

# ---- e-stop: latched, fail-safe ----
hal = Hal()
es = EStop(hal, 13, reset_reads=3)
check(es.read() == 0, "closed contact: run")
hal.pins[13] = 1                  # contact opens (or the wire is cut): HIGH
check(es.read() == 1, "one HIGH read trips")
hal.pins[13] = 0
check(es.read() == 1, "latched after the contact closes again")
check(not es.reset(), "reset refused before 3 closed reads")  # only 1 closed read so far
es.read()
es.read()
check(es.reset() and es.read() == 0, "reset after 3 closed reads")
hal.pins[13] = 1
es.read()
hal.pins[13] = 0
es.read()
hal.pins[13] = 1
es.read()
hal.pins[13] = 0
es.read()
es.read()
check(not es.reset(), "a flickering contact does not reset")
check(es.trips == 2, "trips counted: %d" % es.trips)
# a cut wire: the pull-up holds the pin HIGH forever
hal.pins[13] = 1
cut = EStop(hal, 13)
for _ in range(10):
    cut.read()
check(cut.latched and not cut.reset(), "a cut wire stops and cannot be reset")

# ---- switch, beam: active low ----
sw = Switch(hal, 14)
hal.pins[14] = 0
check(sw.read() == 1, "switch LOW = pressed")
hal.pins[14] = 1
check(sw.read() == 0, "switch HIGH = released")

# ---- current: offset calibration -> mA, levels ----
hal = Hal()
cur = Current(hal, 1, offset_counts=1000, counts_per_a=19859, shift=0, holding_ma=150, stall_ma=650)
hal.adc[1] = 1000 + 19859 // 10   # 100 mA with the nominal offset
check(abs(cur.read_ma() - 100) <= 1, "100 mA at offset 1000: %d" % cur.ma)
check(cur.level() == CURRENT_IDLE, "100 mA is idle")
hal.adc[1] = 1300                 # the amplifier's real zero drifted to 1300: idle reads 15 mA
check(cur.read_ma() == 15, "drifted offset reads %d mA" % cur.ma)
cur.set_offset(1300)              # what CALIBRATE current stores
check(cur.read_ma() == 0, "after calibration idle reads 0: %d" % cur.ma)
hal.adc[1] = 1300 + 19859 * 2 // 10
check(abs(cur.read_ma() - 200) <= 1 and cur.level() == CURRENT_HOLDING, "200 mA holding")
hal.adc[1] = 1300 + 19859 * 7 // 10
check(cur.read_ma() >= 650 and cur.level() == CURRENT_STALL, "700 mA stall")

# ---- pot: filter ----
hal = Hal()
pot = Pot(hal, 0, shift=2)
hal.adc[0] = 20000
check(pot.read() == 20000, "first read seeds the filter")
hal.adc[0] = 40000
vals = [pot.read() for _ in range(60)]
mono = all(vals[i] <= vals[i + 1] for i in range(len(vals) - 1))
check(mono, "step response is monotone")
check(vals[-1] == 40000, "filter reaches a constant input exactly: %d" % vals[-1])
check(vals[0] == 25000, "first step is 1/4 of the way: %d" % vals[0])
k90 = 0
while vals[k90] < 38000:
    k90 += 1
result("pot_90pct_ticks", k90 + 1)
# noise: alternating +-400 around 30000 shrinks to under 1/3
hal.adc[0] = 30000
for _ in range(50):
    pot.read()
spread_lo = 65535
spread_hi = 0
for k in range(200):
    hal.adc[0] = 30400 if k & 1 else 29600
    v = pot.read()
    if k > 20:
        spread_lo = min(spread_lo, v)
        spread_hi = max(spread_hi, v)
check(spread_hi - spread_lo < 800 // 3, "filtered spread %d" % (spread_hi - spread_lo))
result("pot_noise_spread", spread_hi - spread_lo)
# downwards to a rail (broken wire) also settles exactly
hal.adc[0] = 0
for _ in range(80):
    pot.read()
check(pot.value == 0, "pot reaches the 0 rail: %d" % pot.value)

# ---- rail ----
hal = Hal()
rail = Rail(hal, 2, 3000)
hal.adc[2] = 65535
check(rail.read_mv() == 9900, "full scale x3 = 9900 mV: %d" % rail.mv)
hal.adc[2] = 36404
check(abs(rail.read_mv() - 5499) <= 1, "5.5 V: %d" % rail.mv)
rail = Rail(hal, 2, 10000)
hal.adc[2] = 65535
check(abs(rail.read_mv() - 33000) <= 5, "divider 10: %d" % rail.mv)

# ---- no allocation in the per-tick reads ----
hal = Hal()
pot = Pot(hal, 0)
cur = Current(hal, 1, 1000, 19859)
rail = Rail(hal, 2)
es = EStop(hal, 13)
sw = Switch(hal, 14)
k = 0
micropython.heap_lock()
try:
    while k < 100:
        k += 1
        hal.adc[0] = k * 100
        pot.read()
        cur.read_ma()
        rail.read_mv()
        es.read()
        sw.read()
        cur.level()
    ok = 1
except MemoryError:
    ok = 0
micropython.heap_unlock()
check(ok, "sensor reads allocated")

# ---- the arm's joint -> servo map in the loop: ungeared and geared (EEZYbot's base, 2.0497) ----
from surepick.firmware.servo import drive
from surepick.firmware.servo_geared import drive as drive_geared
# EEZYbot MK2's description (meisben/easyEEZYbotARM): base servo = 91.726 + 2.0497 q, elbow 135 + q
zero = (91726, 0, 135000, 0)
gear = (2050, 1000, 1000, 1000)             # Arm.servo_gear: the gear in thousandths
q = [20000, 60000, -30000, 0]
want = (91.726 + 2.0497 * 20.0, 60.0, 135.0 - 30.0, 0.0)   # degrees, from the description
hal = Hal()
svs = [Servo(hal, i, DEFAULT_CAL, 240, 2400, 90000) for i in range(5)]
micropython.heap_lock()
try:
    for _ in range(400):
        drive_geared(svs, q, 10000, 10, zero, gear)
    ok = 1
except MemoryError:
    ok = 0
micropython.heap_unlock()
check(ok, "drive_geared allocated")
for i in range(4):
    check(abs(svs[i].pos - want[i] * 1000) <= 10, "geared drive: servo %d at %d mdeg, want %.3f deg"
          % (i, svs[i].pos, want[i]))
svs = [Servo(hal, i, DEFAULT_CAL, 240, 2400, 90000) for i in range(5)]
for _ in range(400):
    drive(svs, q, 10000, 10, (90000, 0, 90000, 0))     # MeArm's zeros: base 90, elbow 90
check([sv.pos for sv in svs[:4]] == [110000, 60000, 60000, 0], "drive: %r" % ([sv.pos for sv in svs[:4]],))

finish()
