# The run record: one directory format that every way of running surepick writes (host sim,
# virtual board, hardware-in-the-loop, a recorded real board) and every analysis verb reads
# (replay, compare, fit). docs/run-record.md describes it; this module is its one definition.
#
#   RUN/run.json       metadata: kind, scenario, seed, versions, full config, plant params, ...
#   RUN/cycles.jsonl   one JSON object per cycle: job, outcome, board calibration, restarts
#   RUN/events.csv     the machine's event timeline (transitions, faults, notes)
#   RUN/ticks.csv      every loop tick: what the machine read and what it commanded
#
# load() never lets a traceback escape for a bad directory: every problem is a RunRecordError
# whose message names the file, the line or the column.
import csv
import io
import json
import os

import numpy as np

from surepick.shared_fsm import codes
from surepick.shared_fsm import states

FORMAT = "surepick-run"
FORMAT_VERSION = 1
KINDS = ("host-sim", "virtual-board", "rp2040", "hil", "board-recording")

RUN_JSON = "run.json"
CYCLES_JSONL = "cycles.jsonl"
EVENTS_CSV = "events.csv"
TICKS_CSV = "ticks.csv"
FILES = (RUN_JSON, CYCLES_JSONL, EVENTS_CSV, TICKS_CSV)

META_REQUIRED = ("format", "format_version", "kind", "scenario", "seed", "config", "loop_period_ms",
                 "cycles")
CYCLE_REQUIRED = ("cycle", "job", "outcome")

EVENT_COLUMNS = ("cycle", "seq", "t_ms", "kind", "from", "to", "reason", "attempt", "pot_counts",
                 "switch_pressed", "current_ma", "beam_broken", "present_mask")

# What the machine read (its Inputs, in order), then what it commanded (its Outputs after the
# step), the state after the step, the servo pulses written that tick, and the measured loop
# period (-1 when not measured, e.g. simulated time).
INPUT_COLUMNS = ("pot_counts", "switch_pressed", "current_ma", "beam_broken", "estop", "rail_mv",
                 "arrived_seq", "error_seq", "jaw_done")
OUTPUT_COLUMNS = ("move_seq", "move_kind", "move_gentle", "x_um", "y_um", "z_um", "pitch_mdeg",
                  "jaw_um", "hold")
PULSE_COLUMNS = ("pulse0_us", "pulse1_us", "pulse2_us", "pulse3_us", "pulse4_us")
TICK_COLUMNS = (("cycle", "life", "t_ms") + INPUT_COLUMNS + OUTPUT_COLUMNS + ("state",)
                + PULSE_COLUMNS + ("loop_us",))
TICK_INDEX = {name: i for i, name in enumerate(TICK_COLUMNS)}


class RunRecordError(Exception):
    # A run directory that cannot be read; the message is meant for the user as it is.
    pass


class RunRecord:
    # A loaded run: meta (dict), cycles (list of dicts), events {cycle: [12-int tuples]},
    # ticks (int64 array, one row per tick, TICK_COLUMNS) and per-cycle row ranges.
    def __init__(self, path, meta, cycles, events, ticks):
        self.path = path
        self.meta = meta
        self.cycles = cycles
        self.events = events
        self.ticks = ticks
        self._ranges = _cycle_ranges(ticks)

    @property
    def scenario(self):
        return self.meta["scenario"]

    def cycle_ticks(self, cycle):
        a, b = self._ranges.get(cycle, (0, 0))
        return self.ticks[a:b]

    def col(self, rows, name):
        return rows[:, TICK_INDEX[name]]


def _cycle_ranges(ticks):
    out = {}
    if len(ticks) == 0:
        return out
    c = ticks[:, 0]
    edges = np.flatnonzero(np.diff(c)) + 1
    starts = np.concatenate(([0], edges))
    ends = np.concatenate((edges, [len(c)]))
    for a, b in zip(starts.tolist(), ends.tolist()):
        out[int(c[a])] = (a, b)
    return out


# ---- writing ---------------------------------------------------------------------------------

def write(path, meta, cycles, events, ticks):
    # meta: dict (format fields are filled in); cycles: list of dicts; events: {cycle: [tuples]};
    # ticks: {cycle: [rows without the cycle column]}. Each file is written to a temporary name
    # and renamed, so a crash never leaves a half-written file under the real name.
    os.makedirs(path, exist_ok=True)
    meta = dict(meta)
    meta["format"] = FORMAT
    meta["format_version"] = FORMAT_VERSION
    meta["cycles"] = len(cycles)
    if meta.get("kind") not in KINDS:
        raise ValueError("run kind must be one of %s, got %r" % (", ".join(KINDS), meta.get("kind")))
    _atomic(os.path.join(path, CYCLES_JSONL), lambda f: [f.write(json.dumps(c, sort_keys=True) + "\n") for c in cycles])

    def write_events(f):
        w = csv.writer(f, lineterminator="\n")
        w.writerow(EVENT_COLUMNS)
        for c in sorted(events):
            for e in events[c]:
                w.writerow((c, e[0], e[1], codes.KIND_NAMES[e[2]], states.name(e[3]), states.name(e[4]),
                            codes.name(e[5])) + tuple(e[6:12]))
    _atomic(os.path.join(path, EVENTS_CSV), write_events)

    def write_ticks(f):
        f.write(",".join(TICK_COLUMNS) + "\n")
        for c in sorted(ticks):
            prefix = "%d," % c
            f.write("".join(prefix + ",".join(map(str, r)) + "\n" for r in ticks[c]))
    _atomic(os.path.join(path, TICKS_CSV), write_ticks)
    # run.json last: its presence says the other files are complete.
    _atomic(os.path.join(path, RUN_JSON), lambda f: json.dump(meta, f, indent=1, sort_keys=True))
    return path


def _atomic(path, body):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        body(f)
    os.replace(tmp, path)


# ---- reading ---------------------------------------------------------------------------------

def load(path, ticks=True):
    # -> RunRecord, or RunRecordError naming what is wrong. ticks=False skips ticks.csv (fast).
    if not os.path.isdir(path):
        raise RunRecordError("%s: not a run directory (it does not exist or is not a directory)" % path)
    missing = [f for f in FILES if not os.path.isfile(os.path.join(path, f))]
    if missing:
        present = sorted(os.listdir(path))
        raise RunRecordError("%s: incomplete run record: missing %s (found: %s). A run record needs %s; "
                             "see docs/run-record.md" % (path, ", ".join(missing), ", ".join(present) or "nothing",
                                                         ", ".join(FILES)))
    meta = _load_meta(path)
    cycles = _load_cycles(path, meta)
    events = _load_events(path)
    arr = _load_ticks(path) if ticks else np.zeros((0, len(TICK_COLUMNS)), dtype=np.int64)
    rec = RunRecord(path, meta, cycles, events, arr)
    if ticks:
        for c in cycles:
            if c["cycle"] not in rec._ranges:
                raise RunRecordError("%s: %s has no rows for cycle %d listed in %s (truncated run?)" % (
                    path, TICKS_CSV, c["cycle"], CYCLES_JSONL))
    return rec


def _load_meta(path):
    p = os.path.join(path, RUN_JSON)
    try:
        with open(p) as f:
            meta = json.load(f)
    except json.JSONDecodeError as e:
        raise RunRecordError("%s is not valid JSON (line %d column %d: %s)" % (p, e.lineno, e.colno, e.msg))
    except UnicodeDecodeError:
        raise RunRecordError("%s is not a text file" % p)
    if not isinstance(meta, dict):
        raise RunRecordError("%s must hold a JSON object" % p)
    missing = [k for k in META_REQUIRED if k not in meta]
    if missing:
        raise RunRecordError("%s lacks %s" % (p, ", ".join(missing)))
    if meta["format"] != FORMAT:
        raise RunRecordError("%s: format is %r, expected %r" % (p, meta["format"], FORMAT))
    if meta["format_version"] != FORMAT_VERSION:
        raise RunRecordError("%s: format version %r is not supported (this surepick reads %d)" % (
            p, meta["format_version"], FORMAT_VERSION))
    if meta["kind"] not in KINDS:
        raise RunRecordError("%s: kind %r is not one of %s" % (p, meta["kind"], ", ".join(KINDS)))
    if not isinstance(meta["config"], dict):
        raise RunRecordError("%s: config must be an object" % p)
    return meta


def _load_cycles(path, meta):
    p = os.path.join(path, CYCLES_JSONL)
    cycles = []
    with open(p) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                c = json.loads(line)
            except json.JSONDecodeError as e:
                raise RunRecordError("%s line %d is not valid JSON (%s; truncated file?)" % (p, n, e.msg))
            if not isinstance(c, dict):
                raise RunRecordError("%s line %d must be a JSON object" % (p, n))
            missing = [k for k in CYCLE_REQUIRED if k not in c]
            if missing:
                raise RunRecordError("%s line %d lacks %s" % (p, n, ", ".join(missing)))
            cycles.append(c)
    if len(cycles) != meta["cycles"]:
        raise RunRecordError("%s has %d cycles but run.json says %d (truncated run?)" % (p, len(cycles), meta["cycles"]))
    return cycles


def _check_header(p, header, expected):
    missing = [c for c in expected if c not in header]
    if missing:
        raise RunRecordError("%s is missing column%s %s (its header: %s)" % (
            p, "s" if len(missing) > 1 else "", ", ".join(missing), ",".join(header)))
    extra = [c for c in header if c not in expected]
    if extra:
        raise RunRecordError("%s has unknown column%s %s" % (p, "s" if len(extra) > 1 else "", ", ".join(extra)))


def _load_events(path):
    p = os.path.join(path, EVENTS_CSV)
    out = {}
    kinds = {k: i for i, k in enumerate(codes.KIND_NAMES)}
    names = {s: i for i, s in enumerate(states.NAMES)}
    with open(p, newline="") as f:
        r = csv.reader(f)
        header = next(r, None)
        if header is None:
            raise RunRecordError("%s is empty (no header line)" % p)
        _check_header(p, header, EVENT_COLUMNS)
        idx = [header.index(c) for c in EVENT_COLUMNS]
        for n, row in enumerate(r, 2):
            if len(row) != len(header):
                raise RunRecordError("%s line %d has %d fields, expected %d (truncated file?)" % (
                    p, n, len(row), len(header)))
            v = [row[i] for i in idx]
            try:
                e = (int(v[1]), int(v[2]), kinds[v[3]], names[v[4]], names[v[5]], codes.code_of(v[6]),
                     int(v[7]), int(v[8]), int(v[9]), int(v[10]), int(v[11]), int(v[12]))
                out.setdefault(int(v[0]), []).append(e)
            except (KeyError, ValueError) as err:
                raise RunRecordError("%s line %d: bad value (%s)" % (p, n, err))
    return out


def _load_ticks(path):
    p = os.path.join(path, TICKS_CSV)
    with open(p, newline="") as f:
        header = f.readline().rstrip("\r\n").split(",")
        if header == [""]:
            raise RunRecordError("%s is empty (no header line)" % p)
        _check_header(p, header, TICK_COLUMNS)
        body = f.read()
    if body and not body.endswith("\n"):
        raise RunRecordError("%s ends in the middle of a line (truncated file?)" % p)
    if not body:
        return np.zeros((0, len(TICK_COLUMNS)), dtype=np.int64)
    try:
        arr = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.int64, ndmin=2)
    except ValueError as e:
        raise RunRecordError("%s: unreadable row (%s)" % (p, str(e).splitlines()[0]))
    if arr.shape[1] != len(header):
        raise RunRecordError("%s: rows have %d fields, header has %d" % (p, arr.shape[1], len(header)))
    order = [header.index(c) for c in TICK_COLUMNS]
    if order != list(range(len(TICK_COLUMNS))):
        arr = arr[:, order]
    return arr


def validate(path):
    # -> None when the run record loads, else the error message (for `surepick replay --check`).
    try:
        load(path)
    except RunRecordError as e:
        return str(e)
    return None


# ---- helpers shared by the analysis verbs -------------------------------------------------------

def event_text(e):
    return "%s %s>%s %s" % (codes.KIND_NAMES[e[2]], states.name(e[3]), states.name(e[4]), codes.name(e[5]))
