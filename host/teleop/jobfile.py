# The job file (docs/job-file.md): what `surepick teach` records and what `surepick job start
# --job` and `surepick sim run --job` run. One JSON object:
#
#   {"format": "surepick-job", "version": 1,
#    "pick":  {"x_mm": .., "y_mm": .., "z_mm": .., "pitch_deg": ..},   jaw centre at the part
#    "place": {...},                                                     jaw centre to release at
#    "part_width_mm": 25.0,
#    "approach_height_mm": 60.0,     optional: the machine's approach/lift height (board config)
#    "max_attempts": 3,              optional: 1..9 (else the board's max_attempts)
#    "taught": {...},                optional: how it was taught (free form, never read back)
#    "pick_pattern": {...}, "place_pattern": {...}, "part_ready": {...}}   optional: for a
#                                    production run (`surepick job run`, docs/production-run.md)
#
# Checked as a whole before anything moves, every problem named by its pose and what is wrong:
# reachability with the shared analytic kinematics (the board's own) at each pose and at the
# approach height above it, the fingers' clearance above the table, the jaw's range, the
# approach height and attempts within the bounds the board enforces.
import json
import math
import os
from dataclasses import dataclass, field

from surepick.shared_fsm import kinematics as kin
from surepick.shared_fsm import link
from surepick.shared_fsm.config import Config, FIELDS as CONFIG_FIELDS
from surepick.host.user_error import BadInput

FORMAT = "surepick-job"
VERSION = 1
POSES = ("pick", "place")
POSE_KEYS = ("x_mm", "y_mm", "z_mm", "pitch_deg")
TOP_KEYS = ("format", "version", "pick", "place", "part_width_mm", "approach_height_mm", "max_attempts",
            "taught", "pick_pattern", "place_pattern", "part_ready")
# A pattern walks slots from its pose (the job's pick or place, the first slot): "pose" is that
# one pose every cycle (a feeder's pad), "tray" a grid of nx by ny slots, pitch_x_mm apart along
# x and pitch_y_mm along y (row by row along x), each used once; "bin" the same, its grid (if
# given) drop spots used in turn for ever (a bin never fills: the parts spread instead of piling).
PATTERN_KINDS = ("pose", "bin", "tray")
PATTERN_KEYS = ("kind", "pitch_x_mm", "pitch_y_mm", "nx", "ny")
READY_MODES = ("none", "wait", "check")     # run_codes.READY_NONE, READY_WAIT, READY_CHECK
READY_KEYS = ("mode", "wait_ms")
MAX_SLOTS = 255                             # the board's bound (firmware/production.py)
# The gripper's pads and finger plates reach FINGER_TIP_MM beyond the jaw centre along the tool
# axis and FINGER_HALF_MM either side of it across (the reference arm's description: gripper
# finger_tip_mm and half its finger_height_mm; tests/host/teleop check these against the model).
FINGER_TIP_MM = kin.REFERENCE.gripper["finger_tip_mm"]
FINGER_HALF_MM = kin.REFERENCE.gripper["finger_height_mm"] / 2.0
TABLE_CLEARANCE_MM = 1.0        # the lowest finger point stays this far above the table
PITCH_TOLERANCE_DEG = 0.5       # an arm that sets its own tool pitch: a pose's pitch within this of it
ATTEMPTS_MIN = link.KIND_LO[link.K_TRIES]
ATTEMPTS_MAX = link.KIND_HI[link.K_TRIES]
_BOUNDS = {f[0]: (f[2], f[3]) for f in CONFIG_FIELDS}


class JobFileError(BadInput, ValueError):
    """A job file that cannot run: `problems` lists each one, naming its pose."""

    def __init__(self, where, problems):
        self.where = where
        self.problems = list(problems)
        super().__init__("%s: %s" % (where, "; ".join(self.problems)))


@dataclass
class Pose:
    x_mm: float
    y_mm: float
    z_mm: float
    pitch_deg: float = -90.0

    def as_tuple(self):
        return (self.x_mm, self.y_mm, self.z_mm, self.pitch_deg)

    def to_dict(self):
        return {k: round(float(v), 3) for k, v in zip(POSE_KEYS, self.as_tuple())}

    def um(self):
        # (x_um, y_um, z_um, pitch_mdeg) as the JOB frame carries it
        return tuple(int(round(v * 1000)) for v in self.as_tuple())


@dataclass
class Job:
    pick: Pose
    place: Pose
    part_width_mm: float
    approach_height_mm: object = None        # float or None: the board's own setting
    max_attempts: object = None              # int or None: the board's own setting
    taught: dict = field(default_factory=dict)
    pick_pattern: object = None              # Pattern or None: the one pose
    place_pattern: object = None
    ready: object = None                     # (mode index, wait ms) or None: pick at once

    def slots(self, side):
        # The poses a run visits on `side` ("pick" or "place"), in order.
        pose = getattr(self, side)
        pat = getattr(self, side + "_pattern")
        if pat is None:
            return [pose]
        return [Pose(pose.x_mm + (i % pat.nx) * pat.pitch_x_mm, pose.y_mm + (i // pat.nx) * pat.pitch_y_mm,
                     pose.z_mm, pose.pitch_deg) for i in range(pat.nx * pat.ny)]

    def to_dict(self):
        d = {"format": FORMAT, "version": VERSION, "pick": self.pick.to_dict(), "place": self.place.to_dict(),
             "part_width_mm": round(float(self.part_width_mm), 3)}
        if self.approach_height_mm is not None:
            d["approach_height_mm"] = round(float(self.approach_height_mm), 3)
        if self.max_attempts is not None:
            d["max_attempts"] = int(self.max_attempts)
        if self.taught:
            d["taught"] = self.taught
        for name in ("pick_pattern", "place_pattern"):
            if getattr(self, name) is not None:
                d[name] = getattr(self, name).to_dict()
        if self.ready is not None:
            d["part_ready"] = {"mode": READY_MODES[self.ready[0]], "wait_ms": self.ready[1]}
        return d

    def link_job(self):
        # -> (pick um/mdeg, place um/mdeg, width um, attempts or None): the JOB frame's fields
        return self.pick.um(), self.place.um(), int(round(self.part_width_mm * 1000)), self.max_attempts

    def config_overrides(self):
        # The machine config this job needs besides the JOB frame.
        if self.approach_height_mm is None:
            return {}
        return {"approach_height_um": int(round(self.approach_height_mm * 1000))}


MAX_FILE_BYTES = 64 * 1024     # a job file is a few hundred bytes
MAX_MM = 1e6                   # no length or angle in a job comes near this


@dataclass
class Pattern:
    kind: str
    pitch_x_mm: float = 0.0
    pitch_y_mm: float = 0.0
    nx: int = 1
    ny: int = 1

    def to_dict(self):
        return {"kind": self.kind, "pitch_x_mm": self.pitch_x_mm, "pitch_y_mm": self.pitch_y_mm,
                "nx": self.nx, "ny": self.ny}

    def grid_um(self):
        # (dx_um, dy_um, nx, ny) as the RUN frame carries it
        return (int(round(self.pitch_x_mm * 1000)), int(round(self.pitch_y_mm * 1000)), self.nx, self.ny)


def _pattern(d, name, problems):
    if not isinstance(d, dict):
        problems.append("%s: must be an object with %s" % (name, ", ".join(PATTERN_KEYS)))
        return None
    unknown = sorted(set(d) - set(PATTERN_KEYS))
    if unknown:
        problems.append("%s: unknown key(s) %s (known: %s)" % (name, ", ".join(unknown), ", ".join(PATTERN_KEYS)))
    kind = d.get("kind")
    if kind not in PATTERN_KINDS:
        problems.append("%s.kind: must be one of %s, got %r" % (name, ", ".join(PATTERN_KINDS), kind))
        return None
    if kind == "pose" or (kind == "bin" and not set(d) & set(PATTERN_KEYS[1:])):
        extra = sorted(set(d) & set(PATTERN_KEYS[1:]))
        if extra:
            problems.append("%s: a pose has no %s (a tray or a bin has)" % (name, ", ".join(extra)))
        return Pattern(kind)
    vals = {}
    for k in PATTERN_KEYS[1:]:
        v = d.get(k)
        if k in ("nx", "ny"):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                problems.append("%s.%s: must be a whole number 1 or more, got %r" % (name, k, v))
                return None
        elif not _number(v):
            problems.append("%s.%s: must be a finite number, got %r" % (name, k, v))
            return None
        vals[k] = v
    if vals["nx"] * vals["ny"] > MAX_SLOTS:
        problems.append("%s: %d slots; a tray holds at most %d" % (name, vals["nx"] * vals["ny"], MAX_SLOTS))
        return None
    return Pattern(kind, float(vals["pitch_x_mm"]), float(vals["pitch_y_mm"]), vals["nx"], vals["ny"])


def _ready(d, problems):
    if not isinstance(d, dict) or sorted(set(d) - set(READY_KEYS)):
        problems.append("part_ready: must be an object with mode (%s) and wait_ms" % "|".join(READY_MODES))
        return None
    mode = d.get("mode")
    if mode not in READY_MODES:
        problems.append("part_ready.mode: must be one of %s, got %r" % (", ".join(READY_MODES), mode))
        return None
    wait = d.get("wait_ms", 0)
    if isinstance(wait, bool) or not isinstance(wait, int) or not 0 <= wait <= link.KIND_HI[link.K_U30]:
        problems.append("part_ready.wait_ms: must be a whole number of ms 0..%d, got %r" % (link.KIND_HI[link.K_U30], wait))
        return None
    return (READY_MODES.index(mode), wait)


def _number(v):
    # a finite number within +-MAX_MM (a 400-digit integer does not even convert to a float)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return abs(v) <= MAX_MM if isinstance(v, int) else (math.isfinite(v) and abs(v) <= MAX_MM)


def _pose(d, name, problems):
    if not isinstance(d, dict):
        problems.append("%s: must be an object with %s" % (name, ", ".join(POSE_KEYS)))
        return None
    unknown = sorted(set(d) - set(POSE_KEYS))
    if unknown:
        problems.append("%s: unknown key(s) %s (known: %s)" % (name, ", ".join(unknown), ", ".join(POSE_KEYS)))
    vals = []
    for k in POSE_KEYS:
        if k not in d:
            if k == "pitch_deg":
                vals.append(-90.0)
                continue
            problems.append("%s.%s: missing" % (name, k))
            return None
        if not _number(d[k]):
            problems.append("%s.%s: must be a finite number, got %s" % (name, k, _shown(d[k])))
            return None
        vals.append(float(d[k]))
    if not -180.0 <= vals[3] <= 180.0:
        problems.append("%s.pitch_deg: %g is outside -180..180" % (name, vals[3]))
        return None
    return Pose(*vals)


def from_dict(d, where="job file"):
    # -> a Job, checked (check() below); JobFileError lists every problem.
    problems = []
    if not isinstance(d, dict):
        raise JobFileError(where, ["must hold one JSON object"])
    if d.get("format") != FORMAT:
        problems.append("format: must be %r, got %r" % (FORMAT, d.get("format")))
    if type(d.get("version")) is not int or d.get("version") != VERSION:     # not 1.0, not true
        problems.append("version: this surepick reads version %d, got %r" % (VERSION, d.get("version")))
    unknown = sorted(set(d) - set(TOP_KEYS))
    if unknown:
        problems.append("unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(TOP_KEYS)))
    poses = {}
    for name in POSES:
        if name not in d:
            problems.append("%s: missing" % name)
        else:
            poses[name] = _pose(d[name], name, problems)
    width = d.get("part_width_mm")
    if width is None:
        problems.append("part_width_mm: missing")
    elif not _number(width):
        problems.append("part_width_mm: must be a finite number, got %s" % (_shown(width),))
        width = None
    approach = d.get("approach_height_mm")
    if approach is not None and not _number(approach):
        problems.append("approach_height_mm: must be a finite number, got %s" % (_shown(approach),))
        approach = None
    attempts = d.get("max_attempts")
    if attempts is not None and (isinstance(attempts, bool) or not isinstance(attempts, int)):
        problems.append("max_attempts: must be a whole number %d..%d, got %s" % (ATTEMPTS_MIN, ATTEMPTS_MAX,
                                                                               _shown(attempts)))
        attempts = None
    taught = d.get("taught", {})
    if not isinstance(taught, dict):
        problems.append("taught: must be an object")
        taught = {}
    patterns = {name: _pattern(d[name], name, problems) if name in d else None
                for name in ("pick_pattern", "place_pattern")}
    ready = _ready(d["part_ready"], problems) if "part_ready" in d else None
    if ready is not None and ready[0] == READY_MODES.index("check") and patterns["pick_pattern"] is not None \
            and patterns["pick_pattern"].kind == "tray":
        problems.append("part_ready: mode check tries again at one pick pose; a tray's empty slot is skipped instead")
    if problems or poses.get("pick") is None or poses.get("place") is None or width is None:
        raise JobFileError(where, problems or ["incomplete"])
    job = Job(poses["pick"], poses["place"], float(width), None if approach is None else float(approach),
              attempts, taught, patterns["pick_pattern"], patterns["place_pattern"], ready)
    problems = check(job)
    if problems:
        raise JobFileError(where, problems)
    return job


def lowest_finger_z_mm(pose, arm=None):
    # The lowest point of the fingers for a jaw-centre pose: the tips FINGER_TIP_MM along the tool
    # axis, the plates' edges FINGER_HALF_MM across it (in the vertical plane of the arm); an arm
    # given: its gripper's figures.
    tip, half = ((FINGER_TIP_MM, FINGER_HALF_MM) if arm is None
                 else (arm.gripper["finger_tip_mm"], arm.gripper["finger_height_mm"] / 2.0))
    p = math.radians(pose.pitch_deg)
    return pose.z_mm + tip * math.sin(p) - half * abs(math.cos(p))


def check(job, cfg=None, arm=None):
    # -> [problem, ...] (empty: the job can run). Each problem names its pose. arm: the arm
    # description's Arm the job is for (None: the reference arm).
    cfg = cfg or Config()
    k = arm or kin.REFERENCE
    problems = []
    lo, hi = _BOUNDS["approach_height_um"]
    approach_um = cfg.approach_height_um
    if job.approach_height_mm is not None:
        approach_um = int(round(job.approach_height_mm * 1000))
        if not lo <= approach_um <= hi:
            problems.append("approach_height_mm: %g is outside %g..%g (the board's approach_height_um bounds)"
                            % (job.approach_height_mm, lo / 1000.0, hi / 1000.0))
            approach_um = cfg.approach_height_um
    for side in POSES:
        slots = job.slots(side)
        for i, pose in enumerate(slots):
            name = side if len(slots) == 1 else "%s slot %d" % (side, i)
            problems += _pose_problems(pose, name, approach_um, k)
    w_um = int(round(job.part_width_mm * 1000))
    if not 1 <= w_um <= cfg.jaw_max_um:
        problems.append("part_width_mm: %g is outside the jaw's range 0.001..%g mm"
                        % (job.part_width_mm, cfg.jaw_max_um / 1000.0))
    if job.max_attempts is not None and not ATTEMPTS_MIN <= job.max_attempts <= ATTEMPTS_MAX:
        problems.append("max_attempts: %s is outside %d..%d" % (_shown(job.max_attempts), ATTEMPTS_MIN, ATTEMPTS_MAX))
    return problems


def _shown(v):
    # a value as a problem quotes it: never thousands of digits
    t = repr(v)
    return t if len(t) <= 40 else t[:20] + "... (%d characters)" % len(t)


def _pose_problems(pose, name, approach_um, k):
    # Reachable by the arm k, with a pitch its kind can hold, reachable approach_um above, the
    # fingers clear of the table.
    try:
        q = k.inverse(*pose.as_tuple())
    except kin.Unreachable as e:
        return ["%s: %s" % (name, e)]
    if not k.free_pitch:
        # the kind sets the tool's pitch (a level hand, a fixed wrist): a pose asking another
        # one cannot be held (its IK solves the position only)
        held = k.forward(q)[3]
        if abs(held - pose.pitch_deg) > PITCH_TOLERANCE_DEG:
            return ["%s: pitch %.1f deg, but %s is a %s arm whose tool pitch it cannot choose: "
                    "there it is %.1f deg (write that pitch)" % (name, pose.pitch_deg, k.name, k.kind, held)]
    problems = []
    above = Pose(pose.x_mm, pose.y_mm, pose.z_mm + approach_um / 1000.0, pose.pitch_deg)
    try:
        k.inverse(*above.as_tuple())
    except kin.Unreachable as e:
        problems.append("%s: the approach %.1f mm above it: %s" % (name, approach_um / 1000.0, e))
    low = round(lowest_finger_z_mm(pose, k), 6)     # no float dust at the exact edge
    if low < k.min_z_mm + TABLE_CLEARANCE_MM:
        problems.append("%s: the fingers would reach %.1f mm above the table (at z %.1f mm, pitch %.0f deg); "
                        "they must stay %.0f mm clear" % (name, low - k.min_z_mm, pose.z_mm, pose.pitch_deg,
                                                          TABLE_CLEARANCE_MM))
    return problems


def load(path):
    # -> a checked Job; JobFileError (naming the file) for anything wrong, OSError text included.
    # Bounded: at most MAX_FILE_BYTES read, UTF-8, nesting as deep as the parser's stack allows.
    where = str(path)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise JobFileError(where, ["cannot read it: %s" % (e.strerror or e)]) from None
    if len(data) > MAX_FILE_BYTES:
        raise JobFileError(where, ["larger than %d bytes: not a job file" % MAX_FILE_BYTES])
    try:
        d = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise JobFileError(where, ["not UTF-8 text"]) from None
    except RecursionError:
        raise JobFileError(where, ["nests too deep to be a job file"]) from None
    except ValueError as e:
        raise JobFileError(where, ["not JSON (%s)" % e]) from None
    return from_dict(d, where)


def save(job, path):
    # Written whole under a temporary name, then renamed: an interrupted save leaves no half file.
    text = json.dumps(job.to_dict(), indent=1) + "\n"
    tmp = "%s.tmp" % path
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
