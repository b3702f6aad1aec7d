# One hobby servo: setpoint (servo angle, mdeg) -> pulse width through the shared per-servo
# calibration, with a last-line speed AND acceleration limit. The motion planner already plans
# bounded profiles; this limit is what stops a snap anyway: the first command after boot, a
# fault that freezes the setpoint, a config change, a bug upstream. Hobby servos have no speed
# control and ring after a sudden stop, so the driver brakes before its target.
#
# Integer maths only, sized for the RP2040's 31-bit small ints (no heap in update()):
#   position mdeg (0..180000), velocity mdeg/s, acceleration deg/s^2 (= mdeg/s per ms).
from ..shared_fsm.servo_cal import pulse_us, clamp_servo_mdeg   # host: surepick.firmware

from ..shared_fsm.compat import const, micropython

_SQRT1000_X1000 = const(31623)   # sqrt(1000) * 1000: v = sqrt(2 a d) with a in deg/s^2


@micropython.native
def isqrt(n, guess=0):
    # floor(sqrt(n)) by Newton's method; a guess near the answer (the last one) makes it 1-3 steps
    if n <= 0:
        return 0
    x = guess if guess > 0 else n
    x = (x + n // x) >> 1           # from here on x >= floor(sqrt(n)) and only falls
    while True:
        y = (x + n // x) >> 1
        if y >= x:
            return x
        x = y


class Servo:
    def __init__(self, hal, index, cal, speed_dps, accel_dps2, start_mdeg):
        self.hal = hal
        self.index = index
        self.cal = cal
        self.vmax = speed_dps * 1000          # mdeg/s
        self.accel = accel_dps2               # deg/s^2 == (mdeg/s) per ms
        # Closer than this to the target, braking decides the speed (v^2 = 2 a d).
        self.d_brake = speed_dps * speed_dps * 500 // accel_dps2
        # Never snap: the driver starts where it is told the servo already is.
        self.pos = clamp_servo_mdeg(start_mdeg, cal[4])
        self.vel = 0
        self.rem = 0                          # sub-mdeg remainder of the position integration
        self.last_target = self.pos
        self.sq = 0                           # last isqrt, the next one's starting guess
        self.pulse = pulse_us(cal, self.pos)
        self.enabled = 1

    def reset(self, mdeg):
        # Re-anchor without moving (boot, after the pose is known); does not touch the PWM.
        self.pos = clamp_servo_mdeg(mdeg, self.cal[4])
        self.vel = 0
        self.rem = 0
        self.last_target = self.pos
        self.pulse = pulse_us(self.cal, self.pos)

    @micropython.native
    def update(self, target, dt_ms):
        # Advance one loop tick towards `target` (servo mdeg) and write the pulse. Called for
        # every servo every tick: the braking speed, the clamp and the pulse write are inlined.
        if dt_ms <= 0:
            return
        pos = self.pos
        if target == pos and target == self.last_target and self.vel == 0:
            return  # at rest on a still target: nothing to integrate, the pulse is written
        if target < 0 or target > self.cal[4]:
            target = clamp_servo_mdeg(target, self.cal[4])
            if target == pos and target == self.last_target and self.vel == 0:
                return
        # The target's own speed: tracking a moving setpoint must not look like "brake now".
        vt = (target - self.last_target) * 1000 // dt_ms
        self.last_target = target
        vmax = self.vmax
        if vt > vmax:
            vt = vmax
        elif vt < -vmax:
            vt = -vmax
        dv = self.accel * dt_ms
        v0 = self.vel
        # Tracking: the target's own speed within the acceleration limit. The closing speed
        # below only adds speed towards the target, so if this one already reaches or crosses
        # it, so does the full one, and the result is the same: sit on the target, moving on
        # with it (the usual case while following the planner; isqrt is then not needed).
        if vt > v0 + dv:
            vtrack = v0 + dv
        elif vt < v0 - dv:
            vtrack = v0 - dv
        else:
            vtrack = vt
        d = target - pos
        move = (vtrack * dt_ms + self.rem) // 1000
        if (d >= 0 and pos + move >= target) or (d <= 0 and pos + move <= target):
            self.rem = 0
            v = vtrack
            pos = target
        else:
            # Plus the signed speed that closes the gap d and can still stop on it: sqrt(2 a |d|),
            # capped at vmax (the last isqrt is the next one's starting guess).
            if d > 0:
                if d >= self.d_brake:
                    vdes = vt + vmax
                else:
                    self.sq = isqrt(2 * self.accel * d, self.sq)
                    vdes = vt + self.sq * _SQRT1000_X1000 // 1000
            elif d < 0:
                if -d >= self.d_brake:
                    vdes = vt - vmax
                else:
                    self.sq = isqrt(2 * self.accel * -d, self.sq)
                    vdes = vt - self.sq * _SQRT1000_X1000 // 1000
            else:
                vdes = vt
            if vdes > vmax:
                vdes = vmax
            elif vdes < -vmax:
                vdes = -vmax
            if vdes > v0 + dv:
                v = v0 + dv
            elif vdes < v0 - dv:
                v = v0 - dv
            else:
                v = vdes
            step = v * dt_ms + self.rem
            move = step // 1000
            self.rem = step - move * 1000
            pos += move
            if (d >= 0 and pos >= target) or (d <= 0 and pos <= target):
                # Reached or crossed: sit on the target and move on with it, within the accel limit.
                pos = target
                self.rem = 0
                v = vtrack
        self.vel = v
        self.pos = pos
        if self.enabled:
            # servo_cal.pulse_us(cal, pos), inlined: on the chip each call costs 10-20 us, and this
            # runs for every moving servo every tick (tests/mpy/fw_drivers.py holds the two equal)
            cal = self.cal
            t = cal[4]
            s = 0 if pos < 0 else (t if pos > t else pos)
            if cal[3]:
                s = t - s
            p = cal[0] + s * (cal[1] - cal[0]) // t + cal[2]
        else:
            p = 0
        if p != self.pulse:
            self.pulse = p
            self.hal.set_pulse_us(self.index, p)

    def stop(self, unit_mdeg=1):
        # Stop where the driver is now, with no braking run-out (an e-stop's jaw: light, and a
        # closing jaw must not close further). The position lands on a whole setpoint unit of the
        # caller's (the jaw's um) whose pulse is the one already driven, so the PWM does not
        # change. -> that position (mdeg).
        pos = self.pos - self.pos % unit_mdeg
        if self.enabled and pulse_us(self.cal, pos) != self.pulse:
            pos += unit_mdeg           # the pulse's step lies below: the unit above keeps it
        self.pos = pos
        self.vel = 0
        self.rem = 0
        self.last_target = pos
        p = pulse_us(self.cal, pos) if self.enabled else 0
        if p != self.pulse:            # (pulse steps narrower than a unit: a calibration typo)
            self.pulse = p
            self.hal.set_pulse_us(self.index, p)
        return pos

    def limp(self):
        # PWM off. Only for an explicit request: a limp arm falls and a limp gripper may open.
        self.enabled = 0
        self.pulse = 0
        self.hal.set_pulse_us(self.index, 0)


@micropython.native
def drive(servos, joints, jaw_um, dt_ms, zero):
    # The motion planner's setpoints (joint mdeg, jaw um) -> servo angles -> pulses, one loop
    # tick. Arm.servo_mdeg inlined for an ungeared arm (zero: Arm.servo_zero; no tuple per
    # call). The firmware's loop and the host simulator (sim/sim_board.py) both drive their
    # servos through this (a geared arm through servo_geared.drive).
    servos[0].update(joints[0] + zero[0], dt_ms)
    servos[1].update(joints[1] + zero[1], dt_ms)
    servos[2].update(joints[2] + zero[2], dt_ms)
    servos[3].update(joints[3] + zero[3], dt_ms)
    servos[4].update(jaw_um * 4, dt_ms)

