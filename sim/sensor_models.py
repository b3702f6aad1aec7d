# What the board's pins and ADC channels read, computed from the physics (docs/conventions.md,
# "Pins and readings"). Deterministic: every noise source is its own numpy Generator stream
# spawned from the plant seed, so one channel's read count never shifts another's noise.
import itertools

import numpy as np

_NOISE_BLOCK = 4096


def quantise_u16(value):
    # 12-bit ADC reported by read_u16: raw12 << 4 with the top 4 bits repeated in the low nibble.
    raw12 = int(value * (1.0 / 16.0) + 0.5)
    if raw12 < 0:
        raw12 = 0
    elif raw12 > 4095:
        raw12 = 4095
    return (raw12 << 4) | (raw12 >> 8)


class NoiseStream:
    # Gaussian samples (sigma set by the sensor) drawn in blocks and served as Python floats:
    # a numpy call per read would cost more than the rest of the read. normal() is the C-level
    # __next__ of a chain over the blocks, so a read costs no Python frame; a block is drawn
    # (with the sigma of that moment) only when the previous one is used up.
    def __init__(self, seed_seq):
        self.rng = np.random.Generator(np.random.PCG64(seed_seq))
        self.sigma = 1.0
        self.normal = itertools.chain.from_iterable(self._blocks()).__next__

    def _blocks(self):
        while True:
            yield (self.rng.standard_normal(_NOISE_BLOCK) * self.sigma).tolist()

    def integers(self, low, high):
        return int(self.rng.integers(low, high))

    def bits(self, n):
        return self.rng.integers(0, 2, n).tolist()


def noise_streams(seed, names):
    children = np.random.SeedSequence(seed).spawn(len(names))
    return {name: NoiseStream(s) for name, s in zip(names, children)}


class Pot:
    # The gripper servo's own pot, wiper wired out to ADC0: reads the servo shaft angle.
    def __init__(self, p, noise):
        self.p = p
        self.noise = noise
        self.broken_rail = None  # None, or 0 / 1: a broken wire floats to a rail
        self._zero = p.closed_counts + p.offset_counts
        noise.sigma = p.noise_counts
        self._normal = noise.normal

    def read_u16(self, jaw_mm):
        if self.broken_rail is not None:
            return 65535 if self.broken_rail else 0
        return quantise_u16(self._zero + self.p.counts_per_mm * jaw_mm + self._normal())


class CurrentSense:
    # Shunt + amplifier on the gripper servo's supply, into ADC1 (1 V/A into 3.3 V full scale).
    # It reads the current the servo really draws, which itself sags with the rail.
    def __init__(self, p, noise):
        self.p = p
        self.noise = noise
        self.offset_error_counts = 0.0
        self._counts_per_ma = 0.001 * p.counts_per_a
        noise.sigma = p.noise_counts
        self._normal = noise.normal

    def read_u16(self, current_ma):
        v = (self.p.offset_counts + self.offset_error_counts + current_ma * self._counts_per_ma
             + self._normal())
        return quantise_u16(v)


class RailSense:
    # Servo rail through a divider into ADC2 (3.3 V full scale).
    def __init__(self, p, noise):
        self.p = p
        self.noise = noise
        self._counts_per_mv = 65535.0 / 3300.0 / p.divider
        noise.sigma = p.noise_counts
        self._normal = noise.normal

    def read_u16(self, rail_mv):
        return quantise_u16(rail_mv * self._counts_per_mv + self._normal())


class Microswitch:
    # Pressed by the sprung pad's travel (with hysteresis). Each physical change of state starts
    # 10-20 ms of contact bounce (random toggling); any ringing on top comes from the pad itself.
    # Pin level: pull-up, 0 = pressed.
    def __init__(self, p, noise):
        self.p = p
        self.noise = noise
        self.pressed = False
        self.bounce_until_ms = -1
        self.bounce_start_ms = 0
        self._bits = []
        self.stuck_level = None  # None, or the pin level a stuck switch reads

    def update(self, now_ms, travel_mm):
        # Called after every physics chunk (<= 2 ms apart).
        if self.pressed:
            if travel_mm < self.p.release_mm:
                self._change(now_ms, False)
        elif travel_mm >= self.p.trip_mm:
            self._change(now_ms, True)

    def _change(self, now_ms, pressed):
        self.pressed = pressed
        n = self.noise.integers(self.p.bounce_min_ms, self.p.bounce_max_ms + 1)
        self.bounce_start_ms = now_ms
        self.bounce_until_ms = now_ms + n
        self._bits = self.noise.bits(n)

    def level(self, now_ms):
        if self.stuck_level is not None:
            return self.stuck_level
        if now_ms < self.bounce_until_ms:
            return self._bits[now_ms - self.bounce_start_ms]
        return 0 if self.pressed else 1


class BreakBeam:
    # IR beam across the jaws: a ray from the emitter on the left finger to the receiver on the
    # right one. The fingers (geom group 3) and arm links (group 2) are not seen; parts, debris
    # and fixtures are. Pin level: pull-up, 0 = beam broken.
    def __init__(self, mujoco, model, data):
        self.m = model
        self.d = data
        self.emit = data.site_xpos[model.site("beam_emitter").id]
        self.recv = data.site_xpos[model.site("beam_receiver").id]
        self.groups = np.array([1, 1, 0, 0, 0, 0], dtype=np.uint8)
        self._ray = mujoco.mj_ray
        self._vec = np.zeros(3)
        self.blocked = False  # fault hook: something stuck in front of the receiver

    def broken(self):
        return self.level() == 0

    def level(self):
        if self.blocked:
            return 0
        np.subtract(self.recv, self.emit, self._vec)
        # vec is not normalised: a hit before the receiver has 0 <= x < 1.
        x = self._ray(self.m, self.d, self.emit, self._vec, self.groups, 1, -1, None)
        return 0 if 0.0 <= x < 1.0 else 1
