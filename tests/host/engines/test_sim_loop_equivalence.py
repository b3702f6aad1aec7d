# The 500 Hz loop's fast paths give exactly what the plain code gives: the firmware servo
# driver's tracking shortcut against the driver as it was before it (kept here as the reference),
# the plant's all-inputs read against one read_u16 / read_pin per channel, and the noise streams
# against plain block draws. Any drift here would change the event traces of seeded runs.
import random

import numpy as np
import pytest

from surepick.firmware import settings as fw_settings
from surepick.firmware.servo import Servo, isqrt
from surepick.shared_fsm import servo_cal
from surepick.shared_fsm.machine import Job
from surepick.sim import scenarios
from surepick.sim.plant import Plant
from surepick.sim.sensor_models import NoiseStream
from surepick.host.engines.inproc import SimulatedBoard, board_settings
from tests.support.period import PERIOD_MS, PERIOD_US

_SQRT1000_X1000 = 31623


class RefServo:
    # firmware/servo.py Servo.update before the tracking shortcut (verbatim logic).
    def __init__(self, hal, index, cal, speed_dps, accel_dps2, start_mdeg):
        self.hal = hal
        self.index = index
        self.cal = cal
        self.vmax = speed_dps * 1000
        self.accel = accel_dps2
        self.d_brake = speed_dps * speed_dps * 500 // accel_dps2
        self.pos = servo_cal.clamp_servo_mdeg(start_mdeg, cal[4])
        self.vel = 0
        self.rem = 0
        self.last_target = self.pos
        self.sq = 0
        self.pulse = servo_cal.pulse_us(cal, self.pos)
        self.enabled = 1

    def update(self, target, dt_ms):
        if dt_ms <= 0:
            return
        target = servo_cal.clamp_servo_mdeg(target, self.cal[4])
        if target == self.pos and target == self.last_target and self.vel == 0:
            return
        vt = (target - self.last_target) * 1000 // dt_ms
        self.last_target = target
        vmax = self.vmax
        if vt > vmax:
            vt = vmax
        elif vt < -vmax:
            vt = -vmax
        d = target - self.pos
        vdes = vt + self._closing_speed(d)
        if vdes > vmax:
            vdes = vmax
        elif vdes < -vmax:
            vdes = -vmax
        dv = self.accel * dt_ms
        v = self.vel
        if vdes > v + dv:
            v += dv
        elif vdes < v - dv:
            v -= dv
        else:
            v = vdes
        step = v * dt_ms + self.rem
        move = step // 1000
        self.rem = step - move * 1000
        pos = self.pos + move
        if (d >= 0 and pos >= target) or (d <= 0 and pos <= target):
            pos = target
            self.rem = 0
            if vt > self.vel + dv:
                v = self.vel + dv
            elif vt < self.vel - dv:
                v = self.vel - dv
            else:
                v = vt
        self.vel = v
        self.pos = pos
        p = servo_cal.pulse_us(self.cal, self.pos) if self.enabled else 0
        if p != self.pulse:
            self.pulse = p
            self.hal.set_pulse_us(self.index, p)

    def _closing_speed(self, d):
        if d == 0:
            return 0
        ad = d if d > 0 else -d
        if ad >= self.d_brake:
            return self.vmax if d > 0 else -self.vmax
        self.sq = isqrt(2 * self.accel * ad, self.sq)
        vc = self.sq * _SQRT1000_X1000 // 1000
        return vc if d > 0 else -vc


class Hal:
    def __init__(self):
        self.writes = []

    def set_pulse_us(self, index, us):
        self.writes.append((index, us))


def _targets(rng, start, n):
    # Planner-like ramps (the shortcut's case), holds, steps, jumps and out-of-range targets.
    t = start
    out = []
    while len(out) < n:
        kind = rng.random()
        k = rng.randint(1, 60)
        if kind < 0.45:
            rate = rng.choice((1, 7, 50, 120, 333, 480, 1000, 2500))
            rate *= rng.choice((-1, 1))
            for _ in range(k):
                t += rate
                out.append(t)
        elif kind < 0.65:
            out.extend([t] * k)
        elif kind < 0.85:
            t += rng.randint(-40000, 40000)
            out.extend([t] * k)
        elif kind < 0.95:
            t = rng.choice((-3000, 0, 180000, 185000, rng.randint(0, 180000)))
            out.extend([t] * k)
        else:
            for _ in range(k):
                out.append(t + rng.randint(-300, 300))
    return out[:n]


@pytest.mark.parametrize("seed", range(12))
def test_servo_tracking_shortcut_matches_the_plain_driver(seed):
    rng = random.Random(seed)
    s = fw_settings.Settings()
    limits = [s.servo_limits(i) for i in range(5)] + [(60, 300), (400, 9000), (30, 100)]
    for speed, accel in limits:
        start = rng.randint(0, 180000)
        cal = rng.choice((servo_cal.DEFAULT_CAL, (600, 2400, 12, 1, 180000), (500, 2500, -20, 0, 270000)))
        ha, hb = Hal(), Hal()
        a = Servo(ha, 2, cal, speed, accel, start)
        b = RefServo(hb, 2, cal, speed, accel, start)
        for i, target in enumerate(_targets(rng, start, 1500)):
            dt = 2 if rng.random() < 0.9 else rng.choice((0, 1, 3, 20, -2))
            if i % 500 == 499:
                a.enabled = b.enabled = 1 - a.enabled
            a.update(target, dt)
            b.update(target, dt)
            state_a = (a.pos, a.vel, a.rem, a.last_target, a.pulse)
            state_b = (b.pos, b.vel, b.rem, b.last_target, b.pulse)
            assert state_a == state_b, (speed, accel, i, target, dt)
        assert ha.writes == hb.writes


class _Twin:
    # What the board sees as one plant is two plants with one seed, driven identically: one read
    # through read_inputs(), the other channel by channel; every tick's readings must agree.
    def __init__(self, **kw):
        self.a = Plant(**kw)
        self.b = Plant(**kw)
        self.ticks = 0
        self.seen = set()

    @property
    def now_ms(self):
        return self.a.now_ms

    def exchange(self, pulses, state, ms):
        # sim.world.World's exchange, without the judge: pulses out, time on.
        if pulses is not None:
            self.a.set_pulses(pulses)
            self.b.set_pulses(pulses)
        self.a.advance(ms)
        self.b.advance(ms)

    def inject(self, name, **kw):
        self.a.inject(name, **kw)
        self.b.inject(name, **kw)

    def joint_angles_mdeg(self):
        return self.a.joint_angles_mdeg()

    def read_inputs(self):
        fused = self.a.read_inputs()
        b = self.b
        single = (b.read_u16(0), b.read_u16(1), b.read_u16(2), b.read_pin(13), b.read_pin(14), b.read_pin(15))
        assert fused == single, (self.a.now_ms, fused, single)
        self.ticks += 1
        self.seen.add((fused[4], fused[5]))
        return fused


def test_plant_read_inputs_matches_one_read_per_channel_through_a_grasp_and_faults():
    sc = scenarios.get("nominal")
    setup = sc.setup(sc.resolve({}), scenarios.rng_for(4, 0))
    twin = _Twin(part=setup["part"], seed=4004, part_pose=setup["part_pose"])
    board = SimulatedBoard(twin, board_settings())
    board.calibrate_current()
    um = lambda pose: tuple(int(round(v * 1000)) for v in pose)
    pick = um(scenarios.pick_pose_mm(setup["part"], setup["part_width_mm"]))
    place = um(scenarios.place_pose_mm(setup["part"]))
    assert board.ctl.start_job(Job(pick, place, int(setup["part_width_mm"] * 1000))) == 0
    faults = {3600: ("current_offset", {"counts": 150}), 4200: ("brownout", {"duration_ms": 30}),
              4600: ("beam_blocked", {"on": True}), 4700: ("switch_stuck", {"level": 1}),
              4800: ("pot_broken", {"rail": 1}), 4900: ("clear", {}), 5000: ("estop", {"on": True})}
    while twin.a.now_ms < 5400:
        fault = faults.get(twin.a.now_ms)
        if fault is not None:
            twin.inject(fault[0], **fault[1])
        board.step()
    assert twin.ticks > 5000 // PERIOD_MS
    # The run went through a pressed switch and a broken beam, not only the open-jaw readings.
    assert (0, 0) in twin.seen and (1, 1) in twin.seen


def test_noise_stream_serves_the_same_draws_as_plain_blocks():
    seq = np.random.SeedSequence(77).spawn(2)
    ns = NoiseStream(seq[0])
    ns.sigma = 24.0
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(77).spawn(2)[0]))
    want = []
    for _ in range(3):
        want += (rng.standard_normal(4096) * 24.0).tolist()
    got = [ns.normal() for _ in range(len(want))]
    assert got == want
