# The wiring checks `surepick doctor` makes from the board's own readings, over the link only: it
# listens to the TELEMETRY the firmware sends anyway and asks for a few settings; nothing stops the
# firmware, nothing moves. Each check names the pin, what the reading says and the fix
# (docs/hardware.md, "Wiring", has the wiring they refer to).
#
#   readings(client, seconds)        -> Readings: the telemetry frames of a short listen, and the
#                                       settings the checks compare against
#   check(readings, port)            -> [(level, topic, text, fix)]: every wiring problem found
#
# Checked only at rest (no job running); the beam and the current only with the machine IDLE and
# no fault latched (then the jaw is empty and still).
from surepick.shared_fsm import link, states

OK, WARN, FAIL = "OK", "WARN", "FAIL"
LISTEN_S = 1.5
SETTINGS = ("pin_estop", "pin_beam", "adc_pot", "adc_current", "adc_rail", "pot_valid_min_counts",
            "pot_valid_max_counts", "current_holding_ma", "rail_low_mv", "rail_divider_milli")
ADC_GPIO0 = 26
VREF_MV = 3300
RAIL_MAX_MV = 7400          # above this no hobby servo rail is plausible (HV servos: 7.4 V at most)
RAIL_SATURATED = 0.98       # of the ADC's full scale: the divider is missing or its bottom leg open
RAIL_NONE_MV = 500          # below this no servo rail reaches the divider at all


class Readings:
    def __init__(self, frames, values, busy):
        self.frames = frames        # [telemetry dict]
        self.values = values        # {setting: int}
        self.busy = busy


def telemetry(frame):
    return dict(zip(link.SCHEMA[link.T_TELEMETRY][3], frame.fields))


def readings(client, seconds=LISTEN_S):
    # The board's readings: a STATUS (it says whether a job runs) and the telemetry of `seconds`.
    frames = []
    st = client.request(link.T_STATUS, (), 3.0, collect=(link.T_TELEMETRY,))
    frames += [telemetry(f) for f in st.frames]
    busy = bool((list(st.payload) + [0, 0, 0])[2])
    import time
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        f = client.wait_for(link.T_TELEMETRY, max(0.0, end - time.monotonic()))
        if f is not None:
            frames.append(telemetry(f))
    values = {}
    for key in SETTINGS:
        r = client.request(link.T_CONFIG_GET, (key,), 2.0)
        if r.ok and len(r.payload) > 1:
            values[key] = r.payload[1]
    return Readings(frames, values, busy)


def _median(xs):
    s = sorted(xs)
    return s[len(s) // 2]


def check(r, port):
    # -> [(level, topic, text, fix)]
    v = r.values
    if not r.frames:
        return [(WARN, "wiring", "no telemetry came in %.1f s: the wiring was not checked" % LISTEN_S,
                 "`surepick config set telemetry_hz 10 --port %s`, then doctor again" % port)]
    if r.busy:
        return [(WARN, "wiring", "a job is running: the wiring is checked only at rest",
                 "run `surepick doctor --port %s` again when the arm is at rest" % port)]
    out = []
    for one in (_estop, _pot, _rail, _beam, _current):
        found = one(r.frames, v, port)
        if found:
            out.append(found)
    if not out:
        out.append((OK, "wiring", "e-stop closed, pot, current zero, rail and beam read plausibly "
                                  "(%d readings)" % len(r.frames), None))
    return out


def _at_rest_empty(frames):
    # IDLE, no fault: the jaw holds nothing and nothing moves
    return all(f["state"] == states.IDLE and not f["fault"] for f in frames)


def _estop(frames, v, port):
    if not all(f["estop"] for f in frames):
        return None
    gp = v.get("pin_estop", 13)
    return (FAIL, "estop", "the e-stop input GP%d reads open (STOP) in every reading" % gp,
            "release the e-stop; if it is released, its auxiliary normally-closed contact or a wire to GP%d "
            "or ground is open, or the wire is on a normally-open contact: GP%d must read low through "
            "the closed contact (docs/hardware.md, The emergency stop)" % (gp, gp))


def _pot(frames, v, port):
    lo, hi = v.get("pot_valid_min_counts", 1000), v.get("pot_valid_max_counts", 64000)
    pot = _median([f["pot_counts"] for f in frames])
    if lo <= pot <= hi:
        return None
    gp = ADC_GPIO0 + v.get("adc_pot", 0)
    side = "0 V" if pot < lo else "3.3 V"
    return (FAIL, "pot", "the gripper pot on GP%d reads %d counts, stuck at the %s rail (valid %d..%d)"
            % (gp, pot, side, lo, hi),
            "the wiper wire is off or touches the pot's %s end: check the wire from the servo's pot wiper "
            "to GP%d and the servo's own supply; then `surepick calibrate pot --port %s`"
            % ("ground" if pot < lo else "supply", gp, port))


def _rail(frames, v, port):
    mv = _median([f["rail_mv"] for f in frames])
    div = v.get("rail_divider_milli", 3000)
    full = VREF_MV * div // 1000
    gp = ADC_GPIO0 + v.get("adc_rail", 2)
    if mv >= full * RAIL_SATURATED:
        return (FAIL, "rail", "the servo rail on GP%d reads %.2f V, the ADC's full scale: the divider is "
                              "missing or its bottom resistor is open, and the rail may be driving GP%d "
                              "above 3.3 V" % (gp, mv / 1000.0, gp),
                "power off and fit the divider (docs/hardware.md, Sensor front ends): rail + to the top "
                "resistor, the bottom one to AGND, the midpoint to GP%d" % gp)
    if mv < RAIL_NONE_MV:
        return (FAIL, "rail", "the servo rail on GP%d reads %.2f V: no servo supply reaches the divider" % (gp, mv / 1000.0),
                "switch the servo supply on; check the divider's top resistor, its wire to the rail and the "
                "e-stop's main contact (open while pressed)")
    low = v.get("rail_low_mv", 4200)
    if mv < low or mv > RAIL_MAX_MV:
        return (WARN, "rail", "the servo rail on GP%d reads %.2f V at rest, outside what a hobby servo "
                              "rail is (%.1f..%.1f V): the divider does not match rail_divider_milli %d, "
                              "or the supply is wrong" % (gp, mv / 1000.0, low / 1000.0, RAIL_MAX_MV / 1000.0, div),
                "measure the rail with a multimeter; if it reads right, set the divider ratio: "
                "`surepick config set rail_divider_milli N --port %s` (N = 1000 x (top + bottom) / bottom)" % port)
    return None


def _beam(frames, v, port):
    if not _at_rest_empty(frames) or not all(f["beam_broken"] for f in frames):
        return None
    gp = v.get("pin_beam", 15)
    return (WARN, "beam", "the IR beam on GP%d reads broken in every reading with the jaw empty" % gp,
            "look for something between the jaws; the receiver needs its + on 3.3 V and the emitter must "
            "face it; a receiver without power holds GP%d low" % gp)


def _current(frames, v, port):
    if not _at_rest_empty(frames):
        return None
    ma = _median([f["current_ma"] for f in frames])
    limit = max(50, v.get("current_holding_ma", 150) // 2)
    if -limit <= ma <= limit:
        return None
    gp = ADC_GPIO0 + v.get("adc_current", 1)
    return (WARN, "current", "the gripper current on GP%d reads %d mA with the jaw empty and still (idle "
                             "is about 10 mA): the sense's zero has drifted from current_offset_counts" % (gp, ma),
            "`surepick calibrate current --port %s` with the gripper still; if it drifts again, check the "
            "amplifier's supply and its ground to AGND" % port)
