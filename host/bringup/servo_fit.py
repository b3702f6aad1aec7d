"""From marks to servo entries: where each mark was reached (the pulse the board drove) and what
the person saw there (the joint's angle on its mark) -> the servo's direction, its zero and its
pulse range, in the arm description's own fields (docs/arm-description.md, servos.NAME).

The entry written centres the pulse range on 1500 us and spans it so that the firmware's servo
degrees over it (the entry's travel_deg: 180, or 270 for a DS3218-270) are that many degrees of
this servo (servo_cal); the zero is the servo angle at joint 0 in that range. found.json says the
same in the stand-in's terms (sim/standin.py): direction, zero_deg, and range_deg, the degrees
this servo turns over the nominal 500..2500 us."""
import math

NOMINAL_SPAN_US = 2000
CENTRE_US = 1500
SERVO_DEG = 180.0          # a servo's travel when its entry does not say (arm_check's default)


def fit_line(points):
    """Least squares seen = a * pulse + b over [(pulse_us, seen_deg)] (at least two pulses)."""
    n = float(len(points))
    mp = sum(p for p, _ in points) / n
    ms = sum(s for _, s in points) / n
    sxx = sum((p - mp) ** 2 for p, _ in points)
    if sxx <= 0:
        raise ValueError("the marks were all reached at one pulse width: the servo did not move")
    a = sum((p - mp) * (s - ms) for p, s in points) / sxx
    return a, ms - a * mp


def found(mid, ends, gear=1.0, seen_zero_deg=0.0, travel_deg=SERVO_DEG):
    """mid: (pulse_us, seen deg) on the zero mark; ends: the two range marks' [(pulse_us, seen
    deg)] of one servo, seen in joint degrees (the gripper: its opening times its servo deg per
    mm); travel_deg: the servo's travel from min_us to max_us as its entry says.
    -> {"direction", "zero_deg", "range_deg", "span_us", "pulse_at_zero_us"}. The slope is
    the ends' alone (a load that sags both alike, as gravity either side of level, leaves it
    true), the zero the mid mark's on that slope (the rest pose, where the load is least)."""
    a, _b = fit_line(ends)
    b = mid[1] - a * mid[0]
    if a == 0:
        raise ValueError("the servo did not turn between the marks")
    direction = 1 if a > 0 else -1
    range_deg = abs(a) * gear * NOMINAL_SPAN_US
    p0 = (seen_zero_deg - b) / a
    span = travel_deg * NOMINAL_SPAN_US / range_deg
    lo = CENTRE_US - span / 2.0
    s = (p0 - lo) * travel_deg / span
    zero = s if direction > 0 else travel_deg - s
    return {"direction": direction, "zero_deg": zero, "range_deg": range_deg, "span_us": span,
            "pulse_at_zero_us": p0}


def servo_entry(entry, f, is_gripper):
    """The description's servo entry `entry` (a dict, its travel_deg kept) with what was found
    written in: min_us and max_us centred on 1500 us, direction, zero_deg; the gripper's zero (the
    firmware maps the jaw with no zero: servo angle = opening * deg per mm) goes into its trim_us
    instead."""
    out = dict(entry)
    span = int(round(f["span_us"]))
    lo = CENTRE_US - span // 2
    out["min_us"], out["max_us"] = lo, lo + span
    out["direction"] = f["direction"]
    if is_gripper:
        out["trim_us"] = int(round(f["direction"] * f["zero_deg"] * span / travel_of(entry)))
    else:
        out["trim_us"] = 0
        out["zero_deg"] = round(f["zero_deg"], 2)
    return out


def travel_of(entry):
    """A servo entry's travel (deg from min_us to max_us)."""
    return float(entry.get("travel_deg", SERVO_DEG))


def clip_joint(limits, zero_deg, gear=1.0, travel_deg=SERVO_DEG):
    """The joint's limits narrowed so its whole range maps inside the servo's travel
    (0..travel_deg servo degrees; the description's check): -> (min_deg, max_deg), rounded inward."""
    a = (0.0 - zero_deg) / gear
    b = (travel_deg - zero_deg) / gear
    lo, hi = min(a, b), max(a, b)
    return (max(limits[0], math.ceil(lo * 10.0) / 10.0), min(limits[1], math.floor(hi * 10.0) / 10.0))
