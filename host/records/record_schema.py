# What a valid run record holds, field by field (docs/run-record.md, "Fields and types"): the one
# table every verb's inputs are checked against before use. records/runrecord.py reads the files
# and calls these checks; each failure is one line naming the file, the field and what was
# expected, e.g.
#   RUN/run.json: cycles must be a whole number >= 0, got "many"
#   RUN/cycles.jsonl line 2: job.pick_um must be a list of 4 integers, got ["a", 0, 0, 0]
#   RUN/ticks.csv line 57: state must be a whole number 0..8, got 12
import math

from surepick.shared_fsm import codes
from surepick.shared_fsm.config import MAX_ATTEMPTS
from surepick.shared_fsm import states
from surepick.shared_fsm.config import FIELDS as CONFIG_FIELDS

CONFIG_RANGE = {f[0]: (f[2], f[3]) for f in CONFIG_FIELDS}    # the machine config's ranges, by name

KINDS = ("host-sim", "virtual-board", "rp2040", "hil", "board-recording")
SEED_MAX = (1 << 31) - 1          # seeds the simulator accepts (cli/options.py seed_arg too)
CYCLES_MAX = 10 ** 7
I30 = (1 << 30) - 1               # ticks and counters on the board: one small int on the RP2040


class FieldError(ValueError):
    # field: dotted name ("job.pick_um"); expected: what a valid value is; got: the value.
    def __init__(self, field, expected, got):
        super().__init__("%s must be %s, got %s" % (field, expected, shown(got)))
        self.field = field


def shown(v, limit=60):
    # A value as the user wrote it (JSON-ish), cut short.
    import json
    try:
        text = json.dumps(v)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ---- value checks: each returns None when fine, else the phrase of what was expected ----------

def whole(lo, hi):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            return "a whole number %s" % _span(lo, hi)
        return None
    return check


def _span(lo, hi):
    if hi >= I30 and lo == 0:
        return ">= 0"
    return "%d..%d" % (lo, hi)


def number(lo=-math.inf, hi=math.inf):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
            if lo == -math.inf:
                return "a finite number"
            return "a finite number " + ("%g..%g" % (lo, hi) if hi != math.inf else ">= %g" % lo)
        return None
    return check


def text(choices=None):
    def check(v):
        if not isinstance(v, str) or not v or (choices is not None and v not in choices):
            return "one of %s" % ", ".join(choices) if choices else "a non-empty string"
        return None
    return check


def _arm_name(v):
    # an arm description's name (shared_fsm/arm_check.py): letters, digits, _ - and .
    if isinstance(v, str) and 0 < len(v) <= 64 and v.isascii() and all(c.isalnum() or c in "_-." for c in v):
        return None
    return "an arm description's name: letters, digits, _ - and . (at most 64)"


def _arm_description(v):
    # a valid arm description (shared_fsm/arm_check.py's validator: it names the first bad field)
    from surepick.shared_fsm import arm as arm_mod
    try:
        arm_mod.validate(v)
    except arm_mod.ArmError as e:
        return "a valid arm description (%s)" % e
    return None


def name(v):
    # a name that is only a name: letters, digits, _ and -, at most 64 (never a path: no "/", no "..")
    if isinstance(v, str) and 0 < len(v) <= 64 and all(c.isalnum() or c in "_-" for c in v) and v.isascii():
        return None
    return "a name of letters, digits, _ and - (at most 64)"


def obj(v):
    return None if isinstance(v, dict) else "a JSON object"


def or_null(check):
    def c(v):
        if v is None:
            return None
        e = check(v)
        return None if e is None else e + " or null"
    return c


def equals(value):
    def check(v):
        return None if v == value and type(v) is type(value) else shown(value)
    return check


def pose(v):
    # [x_um, y_um, z_um, pitch_mdeg] as the link carries them
    if (not isinstance(v, list) or len(v) != 4
            or any(isinstance(x, bool) or not isinstance(x, int) for x in v)
            or any(abs(x) > 1000000 for x in v[:3]) or abs(v[3]) > 180000):
        return "a list of 4 integers [x_um, y_um, z_um, pitch_mdeg] (positions within 1 m, pitch within 180 deg)"
    return None


def fault_name(v):
    if not isinstance(v, str):
        return "a fault name (%s)" % ", ".join(_FAULTS)
    return None if v in _FAULTS else "a fault name (%s)" % ", ".join(_FAULTS)


_FAULTS = tuple(codes.name(c) for c in range(codes.F_FIRST, codes.F_LAST + 1))


def check(table, d, prefix=""):
    # Check dict `d` against a table of (name, required, check). FieldError on the first problem.
    for name, required, chk in table:
        if name not in d:
            if required:
                raise FieldError(prefix + name, "present (%s)" % _describe(chk), None)
            continue
        e = chk(d[name])
        if e is not None:
            raise FieldError(prefix + name, e, d[name])


def _describe(chk):
    e = chk(_NOTHING)
    return e or "a value"


_NOTHING = object()


# ---- run.json ---------------------------------------------------------------------------------

def _config(v):
    if not isinstance(v, dict):
        return "a JSON object holding every field of the machine config"
    return None


META_FIELDS = (
    ("format", True, equals("surepick-run")),
    ("format_version", True, whole(1, 1)),
    ("kind", True, text(KINDS)),
    ("scenario", True, or_null(name)),
    ("params", False, obj),
    ("seed", True, or_null(whole(0, SEED_MAX))),
    ("versions", False, or_null(obj)),
    ("model_hash", False, or_null(text())),
    ("config", True, _config),
    ("config_source", False, text()),
    ("board_settings", False, or_null(obj)),
    ("plant_params", False, or_null(obj)),
    ("arm", False, lambda v: _arm_name(v)),     # the arm description's name (--arm); absent: the reference
    ("arm_description", False, lambda v: _arm_description(v)),   # the whole description the run's arm had
    ("arm_source", False, text()),              # a board recording: where its arm came from
    ("loop_period_ms", True, whole(*CONFIG_RANGE["loop_period_ms"])),
    ("cycles", True, whole(0, CYCLES_MAX)),
    ("created_utc", False, text()),
    ("source", False, or_null(obj)),
)


def check_meta(meta):
    # run.json as a whole: the table, then what depends on more than one field.
    if not isinstance(meta, dict):
        raise FieldError("run.json", "a JSON object", meta)
    check(META_FIELDS, meta)
    simulated = meta["kind"] != "board-recording"
    if simulated and meta["scenario"] is None:
        raise FieldError("scenario", "a scenario name (only a board recording has none)", None)
    if simulated and meta["seed"] is None:
        raise FieldError("seed", "a whole number 0..%d (only a board recording has none)" % SEED_MAX, None)
    # A scenario parameter is a number or, for a choice parameter (sim/scenarios.py: estop's
    # `state`), the name of one of its choices. Which names and ranges a scenario takes is
    # checked where a verb needs the scenario (runrecord.require_scenario).
    for k, v in (meta.get("params") or {}).items():
        if number()(v) is not None and text()(v) is not None:
            raise FieldError("params.%s" % k, "a finite number or a choice's name (a non-empty string)", v)
    check_config(meta["config"])
    d = meta.get("arm_description")
    if d is not None and d["name"] != meta.get("arm", "reference"):
        raise FieldError("arm", "the name of arm_description (%r)" % d["name"], meta.get("arm"))
    if meta["config"]["loop_period_ms"] != meta["loop_period_ms"]:
        raise FieldError("loop_period_ms", "the config's loop_period_ms (%d)" % meta["config"]["loop_period_ms"],
                         meta["loop_period_ms"])


def check_config(cfg):
    # The full machine config: every field of shared_fsm/config.py, each an integer in its
    # range, and the relations between fields (Config.update's own checks).
    from surepick.shared_fsm.config import Config, ConfigError
    for name, (lo, hi) in CONFIG_RANGE.items():
        if name not in cfg:
            raise FieldError("config.%s" % name, "present (a run record holds the full machine config)", None)
        e = whole(lo, hi)(cfg[name])
        if e is not None:
            raise FieldError("config.%s" % name, e, cfg[name])
    extra = sorted(k for k in cfg if k not in CONFIG_RANGE)
    if extra:
        raise FieldError("config.%s" % extra[0], "absent (not a machine config field)", cfg[extra[0]])
    try:
        Config(cfg)
    except ConfigError as e:
        raise FieldError("config.%s" % e.field, "consistent with the other fields (%s)" % e, cfg[e.field])


# ---- cycles.jsonl -----------------------------------------------------------------------------

JOB_FIELDS = (
    ("pick_um", True, or_null(pose)),
    ("place_um", True, or_null(pose)),
    ("part_width_um", True, or_null(whole(1, 100000))),
    ("max_attempts", False, or_null(whole(0, MAX_ATTEMPTS))),
    ("t_ms", False, or_null(whole(0, I30))),
)

_INPUTS = ("pot_counts", "switch_pressed", "current_ma", "beam_broken", "estop", "rail_mv",
           "arrived_seq", "error_seq", "jaw_done")

RESTART_FIELDS = (
    ("life", True, whole(1, 1000)),
    ("t_ms", True, whole(0, I30)),
    ("jaw_um", False, or_null(whole(-1, 100000))),
    ("next_seq", False, whole(1, I30)),
    ("latched", False, or_null(fault_name)),
    ("inputs", False, or_null(obj)),
)

CYCLE_FIELDS = (
    ("cycle", True, whole(0, CYCLES_MAX)),
    ("job", True, obj),
    ("outcome", True, text()),
    ("seed", False, or_null(whole(0, SEED_MAX))),
    ("attempts", False, or_null(whole(0, 1000))),
    ("fsm_outcome", False, or_null(text())),
    ("fsm_fault", False, or_null(text())),
    ("fault_state", False, or_null(text())),
    ("judge_outcome", False, or_null(text())),
    ("judge_reason", False, or_null(text())),
    ("sim_ms", False, or_null(number(0))),
    ("wall_s", False, or_null(number(0))),
    ("initial_jaw_um", False, or_null(whole(0, 100000))),
    ("board_cal", False, or_null(obj)),
    ("restarts", False, or_null(lambda v: None if isinstance(v, list) else "a list")),
    ("judge", False, or_null(obj)),          # the judge's measures (sim/judge.py verdict details)
    ("loop", False, or_null(obj)),           # the loop's timing figures (engines/loopfigures.py)
)


def check_cycle(c):
    if not isinstance(c, dict):
        raise FieldError("the line", "a JSON object (one cycle)", c)
    check(CYCLE_FIELDS, c)
    check(JOB_FIELDS, c["job"], "job.")
    cal = c.get("board_cal") or {}
    if "current_offset_counts" in cal:
        e = or_null(number(0, 65535))(cal["current_offset_counts"])
        if e is not None:
            raise FieldError("board_cal.current_offset_counts", e, cal["current_offset_counts"])
    for i, r in enumerate(c.get("restarts") or []):
        if not isinstance(r, dict):
            raise FieldError("restarts[%d]" % i, "a JSON object", r)
        check(RESTART_FIELDS, r, "restarts[%d]." % i)
        for k, v in (r.get("inputs") or {}).items():
            if k not in _INPUTS or whole(-(1 << 31), (1 << 31) - 1)(v) is not None:
                raise FieldError("restarts[%d].inputs.%s" % (i, k), "one of the machine's inputs (%s) with an "
                                 "integer value" % ", ".join(_INPUTS), v)


# ---- events.csv -------------------------------------------------------------------------------

_KINDS = {k: i for i, k in enumerate(codes.KIND_NAMES)}
_STATES = {s: i for i, s in enumerate(states.NAMES)}
# Integer columns of events.csv: (column, lo, hi).
_EVENT_INTS = (("cycle", 0, CYCLES_MAX), ("seq", 0, I30), ("t_ms", 0, I30), ("attempt", 0, 255))
# The last five columns: readings, or for a search step (kind "search") what codes.SEARCH_FIELDS
# names, as (what it is, lo, hi).
_READING_INTS = (("pot_counts", 0, 65535), ("switch_pressed", 0, 1), ("current_ma", -(1 << 30), I30),
                 ("beam_broken", 0, 1), ("present_mask", 0, 15))
_SEARCH_INTS = (("x_um", -1000000, 1000000), ("y_um", -1000000, 1000000), ("z_um", -1000000, 1000000),
                ("beam_broken", 0, 1), ("value", -(1 << 30), I30))
_TAIL = tuple(c[0] for c in _READING_INTS)


def event_row(row, header_index):
    # One events.csv row (strings) -> (cycle, 12-int event tuple); FieldError naming the column.
    v = {}
    for col, lo, hi in _EVENT_INTS:
        v[col] = _int_cell(row[header_index[col]], col, lo, hi)
    kind = row[header_index["kind"]]
    if kind not in _KINDS:
        raise FieldError("kind", "one of %s" % ", ".join(codes.KIND_NAMES), kind)
    if _KINDS[kind] == codes.K_SEARCH:
        for col, (what, lo, hi) in zip(_TAIL, _SEARCH_INTS):
            v[col] = _int_cell(row[header_index[col]], "%s (%s of a search row)" % (col, what), lo, hi)
    else:
        for col, lo, hi in _READING_INTS:
            v[col] = _int_cell(row[header_index[col]], col, lo, hi)
    st = []
    for col in ("from", "to"):
        s = row[header_index[col]]
        if s not in _STATES:
            raise FieldError(col, "a state name (%s)" % ", ".join(states.NAMES), s)
        st.append(_STATES[s])
    reason = row[header_index["reason"]]
    try:
        code = codes.code_of(reason)
    except ValueError:
        raise FieldError("reason", "a reason or fault name of shared_fsm/codes.py", reason) from None
    return v["cycle"], (v["seq"], v["t_ms"], _KINDS[kind], st[0], st[1], code, v["attempt"], v["pot_counts"],
                        v["switch_pressed"], v["current_ma"], v["beam_broken"], v["present_mask"])


def _int_cell(s, col, lo, hi):
    try:
        n = int(s)
    except ValueError:
        raise FieldError(col, "a whole number %s" % _span(lo, hi), s) from None
    if not lo <= n <= hi:
        raise FieldError(col, "a whole number %s" % _span(lo, hi), n)
    return n


# ---- ticks.csv --------------------------------------------------------------------------------
# Ranges per column. -1 in a command or arrival column means "not known" (a HIL record: the board
# does not send its commands over the link); loop_us -1 means not measured.
TICK_RANGES = {
    "cycle": (0, CYCLES_MAX), "life": (0, 1000), "t_ms": (0, I30),
    "pot_counts": (0, 65535), "switch_pressed": (0, 1), "current_ma": (-(1 << 30), I30),
    "beam_broken": (0, 1), "estop": (0, 1), "rail_mv": (0, 65535),
    "arrived_seq": (-1, I30), "error_seq": (-1, I30), "jaw_done": (-1, 1),
    "move_seq": (-1, I30), "move_kind": (-1, 3), "move_gentle": (-1, 1),
    "x_um": (-1000000, 1000000), "y_um": (-1000000, 1000000), "z_um": (-1000000, 1000000),
    "pitch_mdeg": (-180000, 180000), "jaw_um": (-1, 100000), "hold": (-1, 1),
    "state": (0, states.N_STATES - 1),
    "pulse0_us": (0, 65535), "pulse1_us": (0, 65535), "pulse2_us": (0, 65535), "pulse3_us": (0, 65535),
    "pulse4_us": (0, 65535), "loop_us": (-1, I30),
}


def check_tick_ranges(arr, columns):
    # arr: int64 array in `columns` order -> None, or (row index, column, value, expected).
    import numpy as np
    for i, col in enumerate(columns):
        lo, hi = TICK_RANGES[col]
        bad = np.flatnonzero((arr[:, i] < lo) | (arr[:, i] > hi))
        if len(bad):
            return int(bad[0]), col, int(arr[bad[0], i]), "a whole number %s" % _span(lo, hi)
    c = arr[:, columns.index("cycle")]
    back = np.flatnonzero(np.diff(c) < 0)
    if len(back):
        k = int(back[0]) + 1
        return k, "cycle", int(c[k]), "grouped by cycle in ascending order (cycle %d came before)" % int(c[k - 1])
    life = arr[:, columns.index("life")]
    back = np.flatnonzero((np.diff(life) < 0) & (np.diff(c) == 0))
    if len(back):
        k = int(back[0]) + 1
        return k, "life", int(life[k]), "non-decreasing within a cycle (life %d came before)" % int(life[k - 1])
    return None
