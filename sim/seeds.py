"""Every random stream's seed, from the seed and cycle index that name a run: the one derivation.

A run is named by (seed, cycle); anything random in it asks derive(stream, seed, cycle) for its
own stream, so two streams of one cycle never share numbers by accident and the same (seed,
cycle) always gives the same cycle, whichever engine runs it and whether it is resumed.

    derive = (seed * per_seed + cycle * per_cycle + offset), kept to `bits` bits when given

Each stream's constants are the ones its code used before this module existed, so every seeded
result (scenario set-ups, sensor noise, fit's stand-in) is the same as before:

    scenario      the scenario's draws (random.Random): part offsets, fault times, sag lengths
    sensor_noise  the plant's sensor noise (numpy SeedSequence, one child per channel)
    refit_noise   fit's re-simulations: other sensor noise than the record it fits
    stand_in      fit's hidden stand-in plant, from `surepick fit --stand-in SEED`
    power_cut     `surepick board --power-cut-random SEED`: when the cut comes
    bench_standin `surepick board --standin SEED`: the hidden servo calibration of an uncalibrated kit
    bench_standin_pot  ... and its gripper pot's hidden offset and gain (a stream of its own: the
                  servos' draws stay what they were)
    bench_standin_stall  ... and its gripper servo's hidden stall current (likewise)
    bench_standin_current  ... and its current sense's hidden zero (likewise)

The sensor-noise key repeats after 1000 cycles of one seed (seed S cycle 1000 is seed S+1 cycle
0); a run of more cycles shares noise between those pairs (its scenario draws still differ).
"""
import random

# stream -> (per_seed, per_cycle, offset, bits or None)
STREAMS = {
    "scenario": (1000003, 7919, 0, 32),
    "sensor_noise": (1000, 1, 0, None),
    "refit_noise": (1000, 1, 7919, None),
    "stand_in": (1, 0, 0x5EED, None),
    "power_cut": (1, 0, 0, None),
    "bench_standin": (1, 0, 0xB1D6, None),
    "bench_standin_pot": (1, 0, 0xB1D7, None),
    "bench_standin_stall": (1, 0, 0xB1D8, None),
    "bench_standin_current": (1, 0, 0xB1D9, None),
}


def derive(stream, seed, cycle=0):
    """The seed of `stream` for a run's seed and cycle index (KeyError for an unknown stream)."""
    per_seed, per_cycle, offset, bits = STREAMS[stream]
    v = int(seed) * per_seed + int(cycle) * per_cycle + offset
    return v & ((1 << bits) - 1) if bits else v


def rng(stream, seed, cycle=0):
    """A random.Random on that stream."""
    return random.Random(derive(stream, seed, cycle))
