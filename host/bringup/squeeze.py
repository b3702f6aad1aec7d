"""The gripper's currents, for bring-up (the step after apply: the board runs the calibration and
pot found, so its jaw commands are true openings and its own stall watch backs the jaw off where
it really is). First the current sense's zero: the board's own `calibrate current` (CALIBRATE
CAL_CURRENT) with the jaw open, empty and still, so that every reading after it is the current
above the idle gripper's, as the firmware's checks take it (firmware/calibrate.py), whatever the
amplifier's offset. Then what the gripper servo draws through the board's current shunt (TELEMETRY
current_ma: the firmware's own reading of the ADC) with the jaw closed on nothing, squeezing the
part the person holds between the jaws (closed to the part's width less squeeze_um, as the
machine closes on it), and pressing on it far past (PRESS_MM inside it: the servo at its stall).
From them, the four settings the firmware judges the gripper's current by:

    current_grip_min_ma   the current check says "part" at or above it (shared_fsm/machine.py):
                          half-way between the closed-on-nothing current and the squeeze current
                          at the lowest rail the board works at (rail_low_mv), so that each side
                          keeps half the gap
    current_stall_ma      the stall watch (firmware/controller.py): the stall current at rail_low_mv,
                          less STALL_MARGIN
    current_crush_ma      the crush check in VERIFY (shared_fsm/machine.py: at or above it is CRUSH):
                          half-way from the squeeze current as read to current_stall_ma
    current_hold_limit_ma the holding check (above it for hold_overcurrent_ms is HOLD_OVERCURRENT):
                          a quarter of the way from the squeeze current as read to current_stall_ma

A servo's current at a given torque is its winding's: at stall, the rail over the winding's
resistance, so it is in proportion to the rail (the description's stall_ma_5v is the figure at
5 V, the whole supply current: the board reads above the idle gripper, so the servo model's
idle_ma is added back for it and taken off again for current_stall_ma). Below rail_low_mv the
board holds every motion (RAIL_LOW); a stall there must still reach the watch. STALL_MARGIN is
for the winding warming: copper's resistance rises 0.39 % per kelvin, so a motor 25 K warmer than
at bring-up (a gripper that has held parts for a while) draws about 9 % less at stall; 10 % below
covers it.

The crush check must tell the squeeze the machine closes with from a jaw driven to stall (a part
far wider than told, a fixture), and must fire on that stall before the stall watch does: so it
lies between the two, each where it is highest and lowest. The squeeze is taken as read, at the
bench's own rail (the rail bring-up runs at is above rail_low_mv; scaled down to it the squeeze
would read lower, and a threshold from that could trip on the squeeze at the bench's own rail);
the stall is current_stall_ma (its lowest: rail_low_mv, the winding warm). Half-way keeps half the
gap on each side, as current_grip_min_ma does one step down. The holding check must let a held
part be (the hold presses hold_squeeze_um inside the part against the squeeze's squeeze_um, so it
draws at most the squeeze current) and tell a grip straining towards stall: a quarter of the way
keeps it nearer the hold, under the crush line (it acts only after hold_overcurrent_ms, so it may
be tighter than the crush check, which acts at once). Each margin at least MIN_GAP_MA: a squeeze
within 4 x MIN_GAP_MA of current_stall_ma leaves no such value, and the step stops. The four are
then checked by the firmware's own Config (its bounds and its crush-above-grip rule) and written in
an order the board takes one at a time (settings())."""
from surepick.host.bringup.jog import GRIPPER, BringupStop, config_get

STEP = "gripper.current"
SETTINGS = ("current_grip_min_ma", "current_stall_ma", "current_crush_ma", "current_hold_limit_ma")
MACHINE_SETTINGS = ("current_grip_min_ma", "current_crush_ma", "current_hold_limit_ma")  # shared_fsm Config's
REF_MV = 5000.0               # the description's stall currents are at 5 V (servo_models stall_ma_5v)
STALL_MARGIN = 0.10           # see above: a winding 25 K warmer
SETTLED = 0.03                # the stall readings taken: those within this of the largest
# Two currents a check tells apart, at least this far apart: the squeeze and closed on nothing (at
# the lowest rail), the holding limit and the squeeze.
MIN_GAP_MA = 20
CRUSH_AT = 0.5                # current_crush_ma: this far from the squeeze to current_stall_ma
HOLD_AT = 0.25                # current_hold_limit_ma: this far (see above)
# The jaw pressing on the part is listened to for this long of the board's own time (TELEMETRY
# t_ms) after it got there, its move's own frames kept too: the firmware's current filter settles
# within about 0.1 s. The board's stall watch acts after current_stall_ms (1 s by default); a
# host slow to send the jaw back lets it, and bring-up keeps only the frames before it.
PRESS_MS = 500
PRESS_TIMEOUT_S = 30.0        # wall clock: the board sends telemetry at 10 Hz at least
_TICKS = 1 << 30              # the board's ms ticks wrap here (shared_fsm/ticks.py)
REST_S = 10.0                 # wall clock: the jaw comes to rest within this after its last move
ZERO_TIMEOUT_S = 10.0         # wall clock: the board's zeroing takes about 0.4 s of its own time
WIDE_MM = 10.0      # the jaw this much wider than the part, for the hand to put it in
# The jaw commanded this far inside the part to press on it: 60 servo deg on the reference jaw
# (4 deg per mm), three times its servo's proportional band (20 deg); the reference plant's jaw
# draws its stall current from 11.5 mm inside (tests/sim/test_standin.py presses at 15).
PRESS_MM = 15.0


def run(jog, operator, arm, say=print):
    """The step: the three readings, then the settings of them. -> {"empty", "squeezing", "stall":
    [mA, rail mV], "stall_ma_5v", and SETTINGS}; BringupStop with the way on when they cannot be
    the board's."""
    part_um = int(round(arm.bench["part_mm"] * 1000))
    squeeze_um = config_get(jog.c, "squeeze_um")
    bad = hold_refusal(squeeze_um, config_get(jog.c, "hold_squeeze_um"))
    if bad:
        raise BringupStop(bad)
    close = part_um - squeeze_um
    wide = min(part_um + int(WIDE_MM * 1000), int(arm.gripper["jaw_max_mm"] * 1000))
    shut = max(0, part_um - int(PRESS_MM * 1000))
    jog.leave()
    jog.safe()
    _q, jaw0 = jog.pose()
    # each move in one setpoint: the board's jaw speed (jaw_speed_um_s) is the machine's own
    jog.move(GRIPPER, wide, whole=True)
    jog.leave()
    _come_to_rest(jog)
    zero = _zero(jog.c)
    jog.move(GRIPPER, close, whole=True)
    empty = _reading(jog.listen_board())
    jog.move(GRIPPER, wide, whole=True)
    operator.hand("part-in-jaw")
    jog.move(GRIPPER, close, whole=True)
    squeezing = _reading(jog.listen_board())
    stall = _press(jog, shut, close, say)
    jog.move(GRIPPER, wide, whole=True)
    jog.leave()
    operator.hand("part-on-pad")
    jog.move(GRIPPER, jaw0, whole=True)
    jog.leave()
    _come_to_rest(jog)
    if stall is None:
        raise BringupStop("the gripper's current did not settle while it pressed on the part: was the part "
                          "held between the jaws? Then `surepick bringup --redo %s --apply`" % STEP)
    found = figures(empty, squeezing, stall, jog.rail_low_mv, idle_ma(arm))
    bad = problem(empty, squeezing, found, jog.rail_low_mv, config_get(jog.c, "current_holding_ma"))
    if bad:
        raise BringupStop(bad)
    out = {"zero_counts": zero, "empty": [int(round(v)) for v in empty],
           "squeezing": [int(round(v)) for v in squeezing], "stall": [int(round(v)) for v in stall]}
    out.update(found)
    return out


def idle_ma(arm):
    """The gripper servo's idle current (mA), its model's in the description: what it draws above
    the current sense's zero-current reading while the board zeroes on it."""
    return float(arm.servo_models[arm.servo(GRIPPER)["model"]]["idle_ma"])


def _zero(c):
    # The board's CAL_CURRENT: it waits for the gripper to be still, averages the sense and keeps
    # the mean as current_offset_counts (saved on the board) -> that value.
    from surepick.host.link.calibration import CalibrationRefused, calibrate
    why = "it sent no value"
    try:
        answer = calibrate(c, "current", ZERO_TIMEOUT_S)
    except CalibrationRefused as e:
        answer, why = (), str(e)
    if len(answer) < 2:
        raise BringupStop("the board did not zero its current sense (calibrate current): %s; then `surepick "
                          "bringup --redo %s --apply`" % (why, STEP))
    return int(answer[1])


def _come_to_rest(jog):
    # The jaw settled (the board takes a setting only with the arm at rest: busy.write_at_rest
    # asks again while it settles, but not while STATUS still says it moves).
    import time
    from surepick.host.link import busy
    from surepick.shared_fsm import link
    end = time.monotonic() + REST_S
    while time.monotonic() < end:
        st = busy.status(jog.c)
        if st is None or st.busy != link.BUSY_MOVING:
            return
        time.sleep(busy.POLL_S)


def _reading(frames):
    # the jaw at rest: the second half of a 1 s listen (the first may still see it come to rest)
    frames = frames[len(frames) // 2:]
    return mean(frames, "current_ma"), mean(frames, "rail_mv")


def _press(jog, shut, back, say):
    # The jaw to `shut` in one setpoint (the board's own jaw speed), its telemetry kept from then
    # until it is back at `back`: the board's stall watch (current_stall_ma for current_stall_ms)
    # may latch STALL meanwhile and back the jaw off, as it should; bring-up clears the STALL it
    # caused (no other fault) and reads only the frames before it.
    jog.record = frames = []
    try:
        try:
            jog.move(GRIPPER, shut, whole=True)
            _listen_board_ms(jog, PRESS_MS)
        except BringupStop:
            if not _stalled(jog, say):
                raise
    finally:
        jog.record = None
    try:
        jog.move(GRIPPER, back, whole=True)
    except BringupStop:
        if not _stalled(jog, say):
            raise
        jog.move(GRIPPER, back, whole=True)
    return stall_reading(frames)


def _listen_board_ms(jog, ms):
    # Telemetry until it spans `ms` of the board's own clock, or a fault is latched.
    import time
    first = None
    end = time.monotonic() + PRESS_TIMEOUT_S
    while time.monotonic() < end:
        for f in jog.listen(0.3):
            if first is None:
                first = f["t_ms"]
            if f.get("fault") or (f["t_ms"] - first) % _TICKS >= ms:
                return
    raise BringupStop("the board's telemetry did not cover %d ms in %.0f s: is it running? (surepick doctor)"
                      % (ms, PRESS_TIMEOUT_S))


def _stalled(jog, say):
    # The jaw's back-off ends first: teleop entered again mid-way would hold the jaw where its
    # driver then is, still pressing, and the watch would cut its PWM.
    _come_to_rest(jog)
    if not jog.clear_stall_fault():
        return False
    say("the board's stall watch backed the jaw off (current_stall_ma for current_stall_ms), as it should; "
        "cleared")
    return True


def mean(frames, key):
    return sum(f[key] for f in frames) / float(len(frames))


def stall_reading(frames):
    """The telemetry frames of the jaw pressing on the part (no fault latched) -> (mA, rail mV): the
    mean of those within SETTLED of the largest current (the current rising as the jaw closed is
    left out), or None when fewer than two are."""
    frames = [f for f in frames if not f.get("fault")]
    if not frames:
        return None
    top = max(f["current_ma"] for f in frames)
    near = [f for f in frames if f["current_ma"] >= top * (1.0 - SETTLED)]
    if len(near) < 2:
        return None
    return mean(near, "current_ma"), mean(near, "rail_mv")


def figures(empty, squeezing, stall, rail_low_mv, idle):
    """empty, squeezing, stall: (mA, rail mV) read above the idle gripper's `idle` mA -> {"stall_ma_5v"}
    (the whole supply current) and SETTINGS (whole mA above the idle gripper, as the board keeps
    and reads them)."""
    stall_5v = (stall[0] + idle) * REF_MV / stall[1]
    squeeze_low = squeezing[0] * rail_low_mv / squeezing[1]
    stall_ma = int((stall_5v * rail_low_mv / REF_MV - idle) * (1.0 - STALL_MARGIN))
    gap = stall_ma - squeezing[0]
    return {"stall_ma_5v": round(stall_5v, 1),
            "current_grip_min_ma": int(round((empty[0] + squeeze_low) / 2.0)),
            "current_stall_ma": stall_ma,
            "current_crush_ma": int(round(squeezing[0] + gap * CRUSH_AT)),
            "current_hold_limit_ma": int(round(squeezing[0] + gap * HOLD_AT))}


def problem(empty, squeezing, found, rail_low_mv, holding_ma):
    """One line naming why these currents cannot be the board's, with the way on, or None."""
    squeeze_low = squeezing[0] * rail_low_mv / squeezing[1]
    if squeeze_low - empty[0] < MIN_GAP_MA:
        return ("squeezing the part the gripper drew %.0f mA, closed on nothing %.0f mA: too close for the "
                "current check to tell them apart. Check the current shunt's wiring (docs/hardware.md), "
                "or squeeze harder (squeeze_um); then `surepick bringup --redo %s --apply`"
                % (squeezing[0], empty[0], STEP))
    if found["current_stall_ma"] <= squeezing[0]:
        return ("the gripper draws %.0f mA squeezing the part, and at stall on the lowest rail (%d mV) only "
                "about %d mA: holding a part would trip the stall watch. Squeeze less (squeeze_um), or use "
                "a stronger gripper servo; then `surepick bringup --redo %s --apply`"
                % (squeezing[0], rail_low_mv, found["current_stall_ma"], STEP))
    if found["current_stall_ma"] - squeezing[0] < MIN_GAP_MA / HOLD_AT:
        return ("the gripper draws %.0f mA squeezing the part, and at stall on the lowest rail (%d mV) about "
                "%d mA: too close for the crush and holding checks (current_crush_ma, current_hold_limit_ma) "
                "to tell a held part from a stall (at least %d mA apart). Squeeze less (squeeze_um), or use a "
                "stronger gripper servo; then `surepick bringup --redo %s --apply`"
                % (squeezing[0], rail_low_mv, found["current_stall_ma"], int(MIN_GAP_MA / HOLD_AT), STEP))
    if found["current_stall_ma"] <= holding_ma:
        return ("the gripper's stall current on the lowest rail (about %d mA) is not above the board's "
                "current_holding_ma %d: set that lower (surepick config set current_holding_ma N), then "
                "`surepick bringup --redo %s --apply`" % (found["current_stall_ma"], holding_ma, STEP))
    return config_refusal(found)


def hold_refusal(squeeze_um, hold_squeeze_um):
    """The holding limit stands on the hold pressing no harder than the squeeze read: one line with
    the way on when the board's hold_squeeze_um is deeper than its squeeze_um, or None."""
    if hold_squeeze_um <= squeeze_um:
        return None
    return ("the board's hold_squeeze_um %d is deeper than its squeeze_um %d: a held part would draw more than "
            "the squeeze bring-up reads, and current_hold_limit_ma cannot be set from it. Set it at most "
            "squeeze_um (surepick config set hold_squeeze_um N), then `surepick bringup --redo %s --apply`"
            % (hold_squeeze_um, squeeze_um, STEP))


def config_refusal(found):
    # The machine's settings found, as the firmware's own Config judges them (its bounds, and
    # current_crush_ma above current_grip_min_ma): one line with the way on, or None.
    from surepick.shared_fsm.config import Config, ConfigError
    try:
        Config({k: int(found[k]) for k in MACHINE_SETTINGS})
    except ConfigError as e:
        return ("the gripper's currents give settings the board would refuse (%s): check the current shunt's "
                "wiring (docs/hardware.md), then `surepick bringup --redo %s --apply`" % (e, STEP))
    return None


def settings(found, grip_min_now):
    """The board settings of what the step found, in the order the board takes them one at a time
    (grip_min_now: its current_grip_min_ma before): [(key, value)]. The board keeps
    current_crush_ma above current_grip_min_ma at every write: a crush line above the old grip
    threshold goes first, one at or under it after the new threshold."""
    keys = list(SETTINGS)
    if found["current_crush_ma"] > grip_min_now:
        keys.remove("current_crush_ma")
        keys.insert(0, "current_crush_ma")
    return [(k, int(found[k])) for k in keys]


def summary(r):
    """One line for the person: what gripper.current read and the settings it gives."""
    return ("the gripper's current, above the idle gripper's (the board's zero, current_offset_counts %d): "
            "closed on nothing %d mA, squeezing the part %d mA, at stall %d mA at %.2f V (%.0f mA at 5 V, "
            "its idle current with it); the board gets current_grip_min_ma %d (the current check's "
            "threshold), current_stall_ma %d (its stall watch, %d%% under the stall on the lowest rail), "
            "current_crush_ma %d (its crush check) and current_hold_limit_ma %d (its holding check)"
            % (r["zero_counts"], r["empty"][0], r["squeezing"][0], r["stall"][0], r["stall"][1] / 1000.0,
               r["stall_ma_5v"], r["current_grip_min_ma"], r["current_stall_ma"], int(round(STALL_MARGIN * 100)),
               r["current_crush_ma"], r["current_hold_limit_ma"]))
