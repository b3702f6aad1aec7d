# Named, parameterised, seeded scenarios for the simulator. A scenario says how to build the
# plant (which part, where, obstacles, plant parameters), which faults to inject and when, and
# the job the machine is given (where the operator *believes* the part is).
#
# Parameters: a number (default, min, max, help), or a name (default, choices, None, help),
# given on the command line as --param key=value. "state" parameters name one of the machine's
# states; the fault then lands at a random time in that state, drawn from the seed.
import math

from surepick.shared_fsm import kinematics, states
from surepick.shared_fsm.arm import Unreachable
from surepick.sim import seeds
from surepick.sim.plant import PARTS, SOURCE_XY_MM, PART_HEIGHT_MM, OBSTACLE_XY_MM, OBSTACLE_SIZE_MM

# Each parameter: (default, min, max, help) or (default, choices, None, help)
# The offset goes to 25 mm: the part's centre stays on the 60 mm pad (it may overhang the pad's
# edge), a sweep can show where the 45 mm jaw stops straddling a 25 mm cube (about 7.8 mm here:
# docs/sweeps.md) and where a part search stops finding it (docs/find-the-part.md).
_OFFSET = {"offset_mm": (8.0, 0.0, 25.0, "largest part offset from the taught pose, each axis (mm)"),
           "yaw_deg": (20.0, 0.0, 45.0, "largest part yaw (deg)")}
STATE_NAMES = states.NAMES

# Where in a state a "random time in that state" may land (ms after the board reported it), so
# that it lands before the state ends in a nominal cycle, with a few ticks to spare (measured and
# checked against a simulated cycle in tests/sim/test_scenarios.py: APPROACH 1456 ms on the first
# attempt, DESCEND 904, GRASP 550, VERIFY 6, LIFT 1656, TRANSFER 1984, PLACE 3112, RECOVER
# 1146-1170 ms). VERIFY lasts three reads; IDLE is the idle time after the cycle (before it, there
# is no job yet). PLACE: while the part is still held (lowered over the bin and settled; the jaw
# starts to open 1966 ms in): a press after that lands on a part the machine has let go of but not
# yet found placed (its check comes after the retreat): PLACE_RELEASE_WINDOW_MS aims there.
STATE_WINDOW_MS = {"IDLE": (0, 1000), "APPROACH": (0, 1300), "DESCEND": (0, 800), "GRASP": (0, 500),
                   "VERIFY": (0, 4), "LIFT": (0, 1500), "TRANSFER": (0, 1800), "PLACE": (0, 1900),
                   "RECOVER": (0, 1100)}
DEFAULT_PART = "cube25"                 # a scenario's part unless it names another (sim/plant.py PARTS)
FENCE_SIZE_MM = (60.0, 6.0, 12.0)      # part_at_fence's fence: across the jaws, along the arm, height
PLACE_RELEASE_WINDOW_MS = (1980, 3000)   # PLACE from the jaw's opening to just before PLACED
STALL_PRESS_WINDOW_MS = (280, 450)       # stall_on_fixture: GRASP with the gripper at stall (43 mm closing)
_STATE_PARAM = ("LIFT", STATE_NAMES, None, "the state the fault lands in, at a random time from the seed")


def state_trigger(name, rng, window=None):
    # ("state", NAME, ms into it[, visit]): a random moment inside the state, from the seed; in
    # IDLE, the idle time after the cycle (its second visit).
    lo, hi = window or STATE_WINDOW_MS[name]
    after = int(rng.uniform(lo, hi)) // 2 * 2          # even ms: the next tick at or after it
    if name == "IDLE":
        return ("state", name, after, 2)
    return ("state", name, after)


def is_choice(spec):
    return isinstance(spec[1], tuple)


def param_doc(spec):
    # A parameter as `surepick sim scenarios --json` shows it.
    if is_choice(spec):
        return {"default": spec[0], "choices": list(spec[1]), "help": spec[3]}
    return {"default": spec[0], "min": spec[1], "max": spec[2], "help": spec[3]}


class Scenario:
    def __init__(self, name, help, params=None, part=DEFAULT_PART, expect=("placed",), check=None):
        self.name = name
        self.check = check       # callable(values) raising ValueError for a bad combination
        self.help = help
        self.params = dict(params or {})
        self.part = part
        self.expect = expect     # outcomes that are a correct answer for this scenario

    def resolve(self, overrides):
        # Defaults plus validated overrides; unknown or out-of-range values raise ValueError.
        values = {k: v[0] for k, v in self.params.items()}
        for k, v in (overrides or {}).items():
            if k not in self.params:
                known = ", ".join(sorted(self.params)) or "none"
                raise ValueError("scenario '%s' has no parameter '%s' (its parameters: %s)" % (self.name, k, known))
            spec = self.params[k]
            if is_choice(spec):
                if v not in spec[1]:
                    raise ValueError("parameter '%s' must be one of %s, got %r" % (k, ", ".join(spec[1]), v))
                values[k] = v
                continue
            lo, hi = spec[1], spec[2]
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise ValueError("parameter '%s' must be a number, got %r" % (k, v))
            if not lo <= v <= hi:
                raise ValueError("parameter '%s' = %g is outside %g..%g" % (k, v, lo, hi))
            values[k] = v
        if self.check is not None:
            self.check(values)
        return values

    def setup(self, values, rng, arm=None):
        # Returns a dict: plant kwargs, injections [(trigger, fault, kwargs)], job poses. The
        # source pad is the arm's (its description's bench; the reference arm's by default).
        part = self.part
        pad = _pad_xy(arm)
        x, y = pad
        yaw = rng.uniform(-2.0, 2.0)
        x += rng.uniform(-0.5, 0.5)
        y += rng.uniform(-0.5, 0.5)
        s = {"part": part, "part_pose": None, "obstacle": None, "debris": False,
             "injections": [], "part_width_mm": part_width_mm(part), "params": None, "pick_mm": None}
        if "offset_mm" in values:
            off = values["offset_mm"]
            x = pad[0] + rng.uniform(-off, off)
            y = pad[1] + rng.uniform(-off, off)
            yaw = rng.uniform(-values["yaw_deg"], values["yaw_deg"])
        # yaw is relative to the jaws, which face the base axis at this spot
        s["part_pose"] = (x, y, math.degrees(math.atan2(y, x)) + yaw)
        _customise(self.name, s, values, rng, pad, arm)
        return s


def _fixture(arm):
    # The stall scenarios' fixture: (obstacle for the plant, taught width mm, pick pose mm). The
    # reference's 40 mm block at (140, 0) taught as 32 mm, where the arm reaches it and its jaw
    # opens around it; otherwise a block on the arm's own pad sized to its jaw (10 mm narrower
    # than the jaw opens, taught 8 mm narrower than it is).
    pick = (OBSTACLE_XY_MM[0], OBSTACLE_XY_MM[1], OBSTACLE_SIZE_MM[2] / 2.0, -90.0)
    if arm is None:
        return True, 32.0, pick
    try:
        arm.inverse(*pick)
        reached = True
    except Unreachable:
        reached = False
    if reached and arm.gripper["jaw_max_mm"] >= OBSTACLE_SIZE_MM[0] + 5.0:
        return True, 32.0, pick
    b = arm.bench
    w = arm.gripper["jaw_max_mm"] - 10.0
    h = b["part_mm"]
    obstacle = {"x_mm": b["pad_x_mm"], "y_mm": b["pad_y_mm"], "yaw_deg": None,
                "size_mm": (w, b["part_mm"], b["pad_top_mm"] + h)}
    return obstacle, w - 8.0, (b["pad_x_mm"], b["pad_y_mm"], b["pad_top_mm"] + h / 2.0, b["pitch_deg"])


def _pad_xy(arm):
    if arm is None:
        return SOURCE_XY_MM
    return (arm.bench["pad_x_mm"], arm.bench["pad_y_mm"])


def _on_pad(pad, r_mm, c_mm):
    # A point r mm further from the base than the pad centre and c mm across the jaws (where the
    # left finger opens to) -> world (x, y) mm.
    x, y = pad
    n = math.hypot(x, y)
    ux, uy = x / n, y / n
    return x + r_mm * ux - c_mm * uy, y + r_mm * uy + c_mm * ux


def _customise(name, s, values, rng, pad, arm=None):
    if name == "part_shifted":
        x, y, yaw = s["part_pose"]        # the seed's jitter, then the shift
        s["part_pose"] = (x + values["dx_mm"], y + values["dy_mm"], yaw + values["yaw_deg"])
    elif name == "two_parts":
        # Both off the taught pose: the part the judge follows 6 mm out and 3 mm across, another
        # 28 mm in and 14 mm across (30 mm apart, centre to centre: a gap of 5 mm or more)
        dx, dy = s["part_pose"][0] - pad[0], s["part_pose"][1] - pad[1]
        x, y = _on_pad(pad, 6.0, -3.0)
        s["part_pose"] = (x + dx, y + dy, math.degrees(math.atan2(y, x)))
        x2, y2 = _on_pad(pad, -28.0, 14.0)
        s["others"] = [(s["part"], (x2 + dx, y2 + dy, math.degrees(math.atan2(y2, x2))))]
    elif name == "part_at_fence":
        # A 12 mm high fence (a fixed stop, lower than the part) 60 mm long across the jaws, just
        # outside the pad centre, and the part pushed against it from the base's side
        x, y = _on_pad(pad, 14.0, 4.0)
        jx, jy = s["part_pose"][0] - pad[0], s["part_pose"][1] - pad[1]
        s["part_pose"] = (x + jx * 0.2, y + jy * 0.2, math.degrees(math.atan2(y, x)))
        fx, fy = _on_pad(pad, 14.0 + 12.5 + 3.0 + 0.2, 4.0)
        s["obstacle"] = {"x_mm": fx, "y_mm": fy, "size_mm": FENCE_SIZE_MM}
    elif name == "tray":
        _tray(s, values, rng)
    elif name == "feeder":
        _feeder(s, values, rng, pad)
    elif name == "part_missing":
        s["part"] = None
    elif name == "part_late":
        # The part is on the table beside the pad and a feeder pushes it onto the pad after
        # the first attempt has missed it. The default push stops the part within 1 mm of the
        # pad's centre (0.33 N slid it 18 mm past; docs/arm-description.md, "A finger that lands
        # on the part").
        x, y = pad
        s["part_pose"] = (x, y - 17.0, math.degrees(math.atan2(y - 17.0, x)))
        s["injections"].append((("state", "RECOVER", 300), "push_part",
                                {"force_n": (0.0, values["push_n"], 0.0), "duration_ms": 60}))
    elif name == "knocked_over":
        # the part is bumped sideways while the gripper descends onto it
        s["injections"].append((("state", "DESCEND", 100), "push_part",
                                {"force_n": (values["push_n"], values["push_n"] * 0.5, 0.0), "duration_ms": 40}))
    elif name == "switch_stuck_open":
        s["injections"].append((("at", 0), "switch_stuck", {"level": 1}))   # pin HIGH: never pressed
    elif name == "switch_stuck_closed":
        s["injections"].append((("at", 0), "switch_stuck", {"level": 0}))   # pin LOW: always pressed
    elif name == "beam_debris":
        s["debris"] = True
    elif name == "pot_wire_broken":
        when = ("at", int(values["at_ms"]))
        if values["state"] != "none":
            when = state_trigger(values["state"], rng, _window(values))
        s["injections"].append((when, "pot_broken", {"rail": int(values["rail"])}))
    elif name == "estop":
        st = values["state"]
        if st == "RECOVER":
            s["part"] = None              # every attempt misses: RECOVER is visited for sure
            s["part_pose"] = None
        s["injections"].append((state_trigger(st, rng, _window(values)), "estop", {"on": True}))
    elif name in ("servo_stall", "stall_on_fixture"):
        # The taught part is a 32 mm block, but a fixed 40 mm fixture stands there: the gripper
        # closes on something it cannot squeeze and the servo stalls.
        s["part"] = None
        s["part_pose"] = None
        s["obstacle"], s["part_width_mm"], s["pick_mm"] = _fixture(arm)
        if name == "stall_on_fixture":
            # ... and the e-stop is pressed while it squeezes at stall: the arm holds, the gripper
            # stalled. The current reaches the stall level about 160 ms into GRASP (measured): the
            # e-stop stops the jaw where its driver is, so a press before that leaves it short of
            # a stall (tests/sim/test_scenarios.py presses at the window's start).
            s["injections"].append((state_trigger("GRASP", rng, STALL_PRESS_WINDOW_MS), "estop", {"on": True}))
    elif name == "brownout_mid_lift":
        sag = values["sag_ms"]
        if sag < 0:
            sag = rng.uniform(*SAG_MS)    # from the seed
        after = values["after_ms"]
        if after < 0:
            after = rng.uniform(*LIFT_MS)  # from the seed: mostly with the part in the air
        s["injections"].append((("state", "LIFT", int(after) // 2 * 2), "brownout",
                                {"duration_ms": int(values["duration_ms"]), "sag_ms": int(sag) // 2 * 2}))


def _window(values):
    # A window given with the parameters (another arm's states: engines/acceptance.py), or None:
    # the state's own (STATE_WINDOW_MS).
    if values["window_to_ms"] >= 0:
        return values["window_from_ms"], values["window_to_ms"]
    return None


# tray: 15 by 15 by 25 mm blocks (the beam, 15 mm above the finger tips, needs the height) in a grid of slots on the table, slot i at origin + (i % nx, i // nx) * pitch,
# the order a production run walks them (docs/production-run.md). Two rows of six straddle y = 0
# between the pad and the bin, where x is the arm's radial direction: the open fingers (45 mm
# less the margin, pads 6 mm thick) reach across y, 10 mm either way along x, so the rows along x
# sit closer than the columns across. The row nearer the bin comes first: a part carried to the
# bin from the far row would pass low over the near row's parts.
TRAY_ORIGIN_MM = (170.0, 17.0)
TRAY_PITCH_MM = (-22.0, -34.0)
TRAY_GRID = (6, 2)
TRAY_PART = "block15"
# where the run lets each part go: over the bin, the part's bottom 26.5 mm up (the parts
# already in it stay clear), with a 45 mm approach (60 mm above that is out of reach); the jaw
# centre grips a part 13.5 mm up (the finger tips 10 mm below it clear the pad's 3 mm top where a
# finger reaches over it)
TRAY_PLACE_MM = (126.0, 58.0, 40.0, -90.0)
# ... the first of 2 by 3 drop spots 18 mm apart in the bin (as many as the arm reaches there),
# used in turn: ten parts dropped at one spot pile up into the fingers (RELEASE_FAILED)
TRAY_DROP_PITCH_MM = 18.0
TRAY_DROPS = (2, 3)
TRAY_PICK_Z_MM = 13.5
# the board's open_margin_um for a tray run: the jaw opens 6 mm wider than the part (21 mm, the
# fingers 16.5 mm either side), clear of the neighbouring slots 34 mm away
TRAY_OPEN_MARGIN_UM = 6000
TRAY_APPROACH_MM = 45.0


def tray_slots_mm(arm=None):
    # The tray's slot centres (x, y) in the order a run walks them.
    nx, ny = TRAY_GRID
    return [(TRAY_ORIGIN_MM[0] + (i % nx) * TRAY_PITCH_MM[0], TRAY_ORIGIN_MM[1] + (i // nx) * TRAY_PITCH_MM[1])
            for i in range(nx * ny)]


def tray_job(arm=None):
    # The job file (docs/job-file.md) that runs the tray into the bin: one attempt a slot.
    x, y = TRAY_ORIGIN_MM
    return {"format": "surepick-job", "version": 1,
            "pick": {"x_mm": x, "y_mm": y, "z_mm": TRAY_PICK_Z_MM, "pitch_deg": -90.0},
            "approach_height_mm": TRAY_APPROACH_MM,
            "place": dict(zip(("x_mm", "y_mm", "z_mm", "pitch_deg"), TRAY_PLACE_MM)),
            "part_width_mm": part_width_mm(TRAY_PART), "max_attempts": 1,
            "pick_pattern": {"kind": "tray", "pitch_x_mm": TRAY_PITCH_MM[0], "pitch_y_mm": TRAY_PITCH_MM[1],
                             "nx": TRAY_GRID[0], "ny": TRAY_GRID[1]},
            "place_pattern": {"kind": "bin", "pitch_x_mm": TRAY_DROP_PITCH_MM, "pitch_y_mm": TRAY_DROP_PITCH_MM,
                              "nx": TRAY_DROPS[0], "ny": TRAY_DROPS[1]}}


def _tray(s, values, rng):
    # Which slots are empty is drawn from the seed; the judge follows the first part, the world
    # reports where every other one ends (others).
    slots = tray_slots_mm()
    empty = sorted(rng.sample(range(len(slots)), int(values["empty"])))
    parts = []
    for i, (x, y) in enumerate(slots):
        if i not in empty:
            parts.append((x + rng.uniform(-0.5, 0.5), y + rng.uniform(-0.5, 0.5),
                          math.degrees(math.atan2(y, x)) + rng.uniform(-2.0, 2.0)))
    s["part"] = TRAY_PART
    s["part_width_mm"] = part_width_mm(TRAY_PART)
    s["part_pose"] = parts[0]
    s["others"] = [(TRAY_PART, p) for p in parts[1:]]
    s["tray_empty"] = empty
    # the chute under the bin (sim/chute.py) sets each part at rest there on a shelf out of reach
    s["tray_chute"] = {"shelf_xy_mm": [(TRAY_SHELF_MM[0] - i * FEEDER_STASH_PITCH_MM, TRAY_SHELF_MM[1])
                                       for i in range(len(parts))]}
    s["pick_mm"] = (TRAY_ORIGIN_MM[0], TRAY_ORIGIN_MM[1], TRAY_PICK_Z_MM, -90.0)   # one cycle: slot 0


# tray: where the chute sets the parts taken from the bin, out of the arm's reach (behind its base)
TRAY_SHELF_MM = (-300.0, -200.0)


# feeder: where the stash of parts waits, out of the arm's reach (behind its base), one every
# FEEDER_STASH_PITCH_MM in rows of 10
FEEDER_STASH_MM = (-300.0, 200.0)
FEEDER_STASH_PITCH_MM = 40.0


def _feeder(s, values, rng, pad):
    # The part on the pad and a stash of the rest; each later arrival: its delay after the pad
    # emptied, whether it comes, its offset from the pad centre and turn, drawn from the seed.
    n = int(values["parts"])
    off = values["arrival_offset_mm"]
    lo, hi = values["delay_min_ms"], values["delay_max_ms"]
    # stash spot 0 is the first part's, once it is back from the bin
    stash = [(FEEDER_STASH_MM[0] - (i % 10) * FEEDER_STASH_PITCH_MM, FEEDER_STASH_MM[1] + (i // 10) * FEEDER_STASH_PITCH_MM)
             for i in range(n)]
    s["others"] = [(s["part"], (x, y, 0.0)) for x, y in stash[1:]]
    draws = []
    while len([d for d in draws if d[1]]) < values["arrivals"]:
        draws.append((int(rng.uniform(lo, hi)) // 2 * 2, rng.random() >= values["missing"],
                      rng.uniform(-off, off), rng.uniform(-off, off), rng.uniform(-2.0, 2.0)))
    s["feeder"] = {"draws": draws, "pad_xy_mm": pad, "stash_xy_mm": stash}


def _check_window(values):
    lo, hi = values["window_from_ms"], values["window_to_ms"]
    if hi >= 0 and hi - lo < 2:
        raise ValueError("window_from_ms (%g) must be at least one tick (2 ms) below window_to_ms (%g)" % (lo, hi))


SCENARIOS = {}
_WINDOW_PARAMS = {
    "window_from_ms": (0.0, 0.0, 60000.0, "with window_to_ms: the fault lands this many ms into the state at the "
                       "earliest"),
    "window_to_ms": (-1.0, -1.0, 60000.0, "... and before this many (-1: the state's own window, which ends "
                     "before the state does in the reference arm's nominal cycle)")}


def _add(sc):
    SCENARIOS[sc.name] = sc


_add(Scenario("nominal", "a 25 mm 20 g cube where it was taught (+-0.5 mm jitter)"))
_add(Scenario("part_offset", "the part is off its taught pose by up to offset_mm and yaw_deg", _OFFSET))
_add(Scenario("part_missing", "no part on the pad", expect=("GRASP_FAILED",)))
_add(Scenario("part_shifted", "the part off its taught pose by exactly dx_mm, dy_mm (world axes) and turned yaw_deg "
              "(+-0.5 mm, +-2 deg from the seed)",
              {"dx_mm": (12.0, -25.0, 25.0, "shift along x (mm)"), "dy_mm": (-12.0, -25.0, 25.0, "shift along y (mm)"),
               "yaw_deg": (0.0, -45.0, 45.0, "turn against the jaws (deg)")}))
_add(Scenario("two_parts", "two 25 mm cubes on the pad, neither where taught; the judge follows the one nearer the "
              "taught pose (any grasp of the other counts as not placed)"))
_add(Scenario("part_at_fence", "the part pushed against a 12 mm high fence beyond it, 17 mm off its taught pose"))
_add(Scenario("part_late", "the part arrives on the pad (pushed by a feeder) after the first try",
              {"push_n": (0.26, 0.0, 5.0, "feeder push force (N, 60 ms) from 17 mm off the pad centre")},
              expect=("placed", "GRASP_FAILED", "SENSOR_DISAGREE")))
_add(Scenario("slippery", "a 100 g cube with friction 0.25", part="cube25_slippery",
              expect=("placed", "DROPPED", "GRASP_FAILED", "SENSOR_DISAGREE")))
_add(Scenario("heavy", "a 100 g cube", part="cube25_heavy", expect=("placed", "DROPPED")))
_add(Scenario("cylinder", "a 24 mm cylinder, 30 g", part="cylinder"))
_add(Scenario("sphere", "a 25 mm sphere, 15 g", part="sphere",
              expect=("placed", "GRASP_FAILED", "SENSOR_DISAGREE", "DROPPED")))
_add(Scenario("knocked_over", "the part is bumped sideways while the gripper descends",
              {"push_n": (3.0, 0.0, 10.0, "bump force (N, 40 ms)")},
              expect=("placed", "GRASP_FAILED", "SENSOR_DISAGREE", "DROPPED")))
_add(Scenario("switch_stuck_open", "the finger microswitch never closes", expect=("SENSOR_DISAGREE",)))
_add(Scenario("switch_stuck_closed", "the finger microswitch is always pressed", expect=("SENSOR_DISAGREE",)))
_add(Scenario("beam_debris", "a flake of debris sits in the IR beam", expect=("SENSOR_DISAGREE",)))
_add(Scenario("pot_wire_broken", "the pot wiper wire breaks: the ADC reads a rail",
              {"at_ms": (0.0, 0.0, 20000.0, "when the wire breaks (ms after start), unless state is given"),
               "rail": (0.0, 0.0, 1.0, "0: reads 0 V, 1: reads 3.3 V"),
               "state": ("none", ("none",) + STATE_NAMES, None,
                         "break at a random time in this state, from the seed (none: at at_ms)"),
               **_WINDOW_PARAMS},
              expect=("SENSOR_FAULT",), check=_check_window))
_add(Scenario("servo_stall", "the gripper closes on a fixed 40 mm fixture taught as a 32 mm part",
              expect=("CRUSH", "MOTION_TIMEOUT")))
_add(Scenario("stall_on_fixture", "servo_stall, and the e-stop is pressed while the gripper squeezes the "
              "fixture: the arm holds with the gripper at stall until the stall watch backs it off",
              expect=("ESTOP",)))
_add(Scenario("estop", "the e-stop is pressed at a random time (from the seed) in one state; in RECOVER "
              "with no part on the pad, in IDLE after the cycle",
              dict({"state": _STATE_PARAM}, **_WINDOW_PARAMS),
              expect=("ESTOP", "placed"), check=_check_window))
SAG_MS = (5.0, 80.0)     # brownout_mid_lift's rail sag, drawn from the seed unless given
LIFT_MS = (100.0, 1200.0)  # ... and when in LIFT it starts (a gentle lift takes about 1.6 s)
_add(Scenario("brownout_mid_lift", "the servo rail sags and browns out during the lift; the controller "
              "restarts at the bottom of the sag",
              {"after_ms": (-1.0, -1.0, 2000.0, "ms into LIFT when the rail starts to sag; -1: 100..1200 ms "
                            "from the seed"),
               "duration_ms": (300.0, 10.0, 3000.0, "how long the rail is down"),
               "sag_ms": (-1.0, -1.0, 500.0, "how long the rail takes to fall (ms); -1: 5..80 ms from the seed")},
              expect=("RAIL_LOW", "INTERRUPTED")))

_add(Scenario("tray", "a tray of 12 slots of 15 mm blocks (25 mm tall) on the table (2 by 6), `empty` of them empty (which ones "
              "from the seed); a production run with tray_job() walks them into the bin",
              {"empty": (2.0, 0.0, 6.0, "empty slots")}, part=TRAY_PART, expect=("placed", "GRASP_FAILED")))

_add(Scenario("feeder", "a feeder sets a 25 mm cube on the pad a while after each pick (delays from the seed), some "
              "arrivals missing, each up to arrival_offset_mm off the pad's centre; a part at rest in the bin goes "
              "back to the feeder (a chute); for a production run",
              {"parts": (8.0, 2.0, 100.0, "parts in the feeder's loop (a part at rest in the bin goes back to it)"),
               "arrivals": (2000.0, 1.0, 100000.0, "parts the feeder sets down on the pad, the first one not counted"),
               "missing": (0.15, 0.0, 0.9, "share of arrivals that do not come"),
               "arrival_offset_mm": (3.0, 0.0, 8.0, "largest offset of an arrival from the pad centre, each axis (mm)"),
               "delay_min_ms": (300.0, 0.0, 60000.0, "shortest wait from the pad emptying to the next arrival"),
               "delay_max_ms": (2500.0, 0.0, 60000.0, "longest wait")}))

FAULT_SCENARIOS = ("part_missing", "switch_stuck_open", "switch_stuck_closed", "beam_debris",
                   "pot_wire_broken", "servo_stall", "stall_on_fixture", "estop", "brownout_mid_lift")


def get(name):
    if name not in SCENARIOS:
        raise ValueError("unknown scenario '%s'; valid scenarios: %s" % (name, ", ".join(sorted(SCENARIOS))))
    return SCENARIOS[name]


def place_pose_mm(part, arm=None):
    # Where the jaw centre goes to release: over the bin centre, part bottom 5 mm above the
    # floor, at the bench's pitch (the arm's description; the reference arm's by default).
    b = (arm or kinematics.REFERENCE).bench
    h = PART_HEIGHT_MM[part] if part else b["part_mm"]
    return (b["bin_x_mm"], b["bin_y_mm"], b["bin_floor_mm"] + h / 2.0 + 5.0, b["pitch_deg"])


def pick_pose_mm(part, width_mm, arm=None):
    # Where the operator taught the pick: the pad centre, jaw centre at the part's mid-height.
    b = (arm or kinematics.REFERENCE).bench
    h = PART_HEIGHT_MM[part] if part else width_mm
    return (b["pad_x_mm"], b["pad_y_mm"], b["pad_top_mm"] + h / 2.0, b["pitch_deg"])


def part_width_mm(part):
    # Width across the jaws the operator enters for the job (a part's y size; 25 mm default).
    if part is None:
        return 25.0
    size = PARTS[part]["size_mm"]
    return size[1] if len(size) > 2 else size[0]


def rng_for(seed, cycle):
    # The scenario's draws for a run's seed and cycle (sim/seeds.py).
    return seeds.rng("scenario", seed, cycle)


def describe():
    lines = []
    for name in sorted(SCENARIOS):
        sc = SCENARIOS[name]
        lines.append("%-20s %s" % (name, sc.help))
        for k, (d, lo, hi, h) in sorted(sc.params.items()):
            if isinstance(lo, tuple):
                lines.append("    %s=%s (%s)  %s" % (k, d, "|".join(lo), h))
            else:
                lines.append("    %s=%g (%g..%g)  %s" % (k, d, lo, hi, h))
        lines.append("    correct outcomes: %s" % ", ".join(sc.expect))
    return "\n".join(lines)
