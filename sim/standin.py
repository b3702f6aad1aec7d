"""The stand-in bench: an uncalibrated kit in the simulator (`surepick board --standin SEED`).

Its servos are not mounted the way the arm description says: each carries a hidden zero offset
(up to +-ZERO_MAX_DEG), a direction (+1 or -1) and a pulse range (the degrees it turns over the
nominal 500..2500 us: its travel_deg, 180 or 270, +- RANGE_MAX_FRACTION), all drawn from SEED. They live only in the
plant's own servo calibration (sim/params.py ServoParams: min_us, max_us, trim_us, inverted: how
the simulated servo turns a pulse into an angle), the ground-truth side: the firmware and an
operator never see them. A board running the description unchanged drives a mis-calibrated arm,
as a real uncalibrated kit would be driven.

The truth is said in the description's own terms, so that what a bring-up writes can be compared
with it field by field: a description entry with direction D, zero_deg Z and the pulse range
centred on 1500 us spanning 2000 * T / R us (trim 0; T its travel_deg) drives this servo exactly
right.

The gripper's servo draws its own stall current: the description's stall_ma_5v off by up to
+-STALL_MAX_FRACTION (hobby servos of one model differ that much; a board's stall watch set for
the datasheet's figure may never see a weaker one stall), drawn from SEED on a stream of its own.
The truth gives it as the gripper's stall_ma_5v, the description's term.

The gripper's pot is not the firmware's default either: its reading at jaw 0 mm is off by up
to +-POT_OFFSET_MAX_COUNTS and its counts per mm by up to +-POT_GAIN_MAX_FRACTION (the plant's
PotParams offset_counts and counts_per_mm), drawn from SEED on a stream of their own, so the
servos' draws are the same as without it. The truth says it in the board settings' terms
(pot_closed_counts, pot_counts_per_mm: jaw um = (counts - closed) * 1000 / per_mm).

The current sense's zero (its reading with no current through the shunt) is off the board's
default by up to +-CURRENT_ZERO_MAX_MA too (an amplifier's input offset, a shunt's tolerance),
drawn on a stream of its own. The truth gives the plant's reading at 0 mA (offset_counts); the
board's `calibrate current` zeroes on the idle gripper, which draws its servo's idle_ma above it.

    truth(seed, arm) -> {"servos": {name: {"zero_deg", "direction", "range_deg"}},
                         "pot": {"closed_counts", "counts_per_mm"}, "current": {"offset_counts"}}
                        (the gripper's entry also "stall_ma_5v")
    plant_params(seed, arm) -> PlantParams with those servos, that pot, that current sense and that
                               stall current
    bench_part(arm) -> the part a scenario's default 25 mm cube becomes on this bench: the
                       description's own (bench.part_mm, bench.part_g), as a maker's bench has it
"""
import math

from surepick.shared_fsm import arm as arm_mod
from surepick.sim import scenarios, seeds
from surepick.sim.params import PlantParams
from surepick.sim.plant import PARTS
from surepick.sim.servo_model import servo_offset_rad

ZERO_MAX_DEG = 15.0          # hidden zero offset, each side
RANGE_MAX_FRACTION = 0.10    # hidden pulse range, each side of the nominal
NOMINAL_SPAN_US = 2000       # 500..2500 us: the description's default pulse range
CENTRE_US = 1500
POT_OFFSET_MAX_COUNTS = 1500     # the pot's reading at jaw 0 mm, each side (1.4 mm at 1067 counts/mm)
POT_GAIN_MAX_FRACTION = 0.08     # its counts per mm, each side
STALL_MAX_FRACTION = 0.25        # the gripper servo's stall current, each side of its model's
# The current sense's zero, each side: an op-amp's input offset of 0.5 mV at gain 20 over the
# reference's 50 mOhm shunt is 10 mA (docs/hardware.md); twice that.
CURRENT_ZERO_MAX_MA = 20.0


def _draws(seed, n):
    # One (offset deg, direction, range fraction) per servo, in slot order, from the seed alone.
    rng = seeds.rng("bench_standin", seed)
    out = []
    for _ in range(n):
        offset = rng.uniform(-ZERO_MAX_DEG, ZERO_MAX_DEG)
        direction = -1 if rng.random() < 0.5 else 1
        out.append((offset, direction, 1.0 + rng.uniform(-RANGE_MAX_FRACTION, RANGE_MAX_FRACTION)))
    return out


def hidden_cals(seed, arm):
    """-> [(name, slot, (min_us, max_us, trim_us, inverted), truth entry)] for every servo of the
    arm. The truth entry is computed back from the integer calibration the plant runs, so it is
    exactly what the plant does, not the draw before rounding."""
    names = list(arm.servo_names)
    slots = [i for i in range(len(names) - 1)] + [arm_mod.GRIPPER]
    out = []
    for (name, slot, (offset, direction, fraction)) in zip(names, slots, _draws(seed, len(names))):
        nominal_zero = math.degrees(servo_offset_rad(arm, slot))   # the plant's own zero
        travel = float(arm.servo(slot)["travel_deg"])    # the plant decodes over this (ServoParams)
        span = int(round(NOMINAL_SPAN_US / fraction))
        lo = CENTRE_US - span // 2
        hi = lo + span
        # The plant decodes (pulse - trim - min) * travel / span, mirrored when inverted, and
        # takes the description's zero off it: a trim of D * offset * span / travel moves the
        # servo angle at which the joint is at 0 by the offset, on the side the direction gives.
        trim = int(round(direction * offset * span / travel))
        zero = nominal_zero + direction * trim * travel / span
        entry = {"zero_deg": round(zero, 4), "direction": direction,
                 "range_deg": round(travel * NOMINAL_SPAN_US / span, 4)}
        out.append((name, slot, (lo, hi, trim, 1 if direction < 0 else 0), entry))
    return out


def hidden_pot(seed, arm):
    """-> (offset_counts, counts_per_mm) of the plant's pot: the arm's own model, off by a draw."""
    rng = seeds.rng("bench_standin_pot", seed)
    offset = round(rng.uniform(-POT_OFFSET_MAX_COUNTS, POT_OFFSET_MAX_COUNTS), 1)
    gain = 1.0 + rng.uniform(-POT_GAIN_MAX_FRACTION, POT_GAIN_MAX_FRACTION)
    pot = arm.sensors["pot"]
    return pot["offset_counts"] + offset, round(pot["counts_per_mm"] * gain, 2)


def hidden_stall_ma_5v(seed, arm):
    """-> the gripper servo's stall current at 5 V (mA): its model's, off by a draw."""
    rng = seeds.rng("bench_standin_stall", seed)
    model = arm.servo_models[arm.servo(arm_mod.GRIPPER)["model"]]
    return round(model["stall_ma_5v"] * (1.0 + rng.uniform(-STALL_MAX_FRACTION, STALL_MAX_FRACTION)), 1)


def hidden_current_zero(seed, arm):
    """-> offset_counts of the plant's current sense (its reading at 0 mA): the arm's own, off by a
    draw of up to CURRENT_ZERO_MAX_MA at its counts per A."""
    rng = seeds.rng("bench_standin_current", seed)
    cur = arm.sensors["current"]
    ma = rng.uniform(-CURRENT_ZERO_MAX_MA, CURRENT_ZERO_MAX_MA)
    return round(cur["offset_counts"] + ma * cur["counts_per_a"] / 1000.0, 1)


def truth(seed, arm):
    offset, per_mm = hidden_pot(seed, arm)
    servos = {name: entry for name, _slot, _cal, entry in hidden_cals(seed, arm)}
    servos["gripper"] = dict(servos["gripper"], stall_ma_5v=hidden_stall_ma_5v(seed, arm))
    return {"servos": servos,
            "pot": {"closed_counts": round(arm.sensors["pot"]["closed_counts"] + offset, 2),
                    "counts_per_mm": per_mm},
            "current": {"offset_counts": hidden_current_zero(seed, arm)}}


def bench_part(arm):
    """The description's part: a cube of bench.part_mm and bench.part_g with the default part's
    friction (a part spec, sim/plant.py part_spec), or None when that is the default part."""
    spec = PARTS[scenarios.DEFAULT_PART]
    mm, g = float(arm.bench["part_mm"]), float(arm.bench["part_g"])
    if spec["shape"] == "box" and spec["size_mm"] == (mm, mm, mm) and spec["mass_g"] == g:
        return None
    return {"shape": "box", "size_mm": (mm, mm, mm), "mass_g": g, "friction": spec["friction"],
            "name": "bench_part"}


def plant_params(seed, arm):
    """The plant of the arm with the stand-in's hidden servo calibrations and pot."""
    p = PlantParams.for_arm(arm)
    for _name, slot, cal, _entry in hidden_cals(seed, arm):
        s = p.servos[slot]
        s.min_us, s.max_us, s.trim_us, s.inverted = cal
    p.pot.offset_counts, p.pot.counts_per_mm = hidden_pot(seed, arm)
    p.current.offset_counts = hidden_current_zero(seed, arm)
    p.servos[arm_mod.GRIPPER].stall_ma_5v = hidden_stall_ma_5v(seed, arm)
    return p
