# The run record: one directory format that every way of running surepick writes (host sim,
# virtual board, hardware-in-the-loop, a recorded real board) and every analysis verb reads
# (replay, compare, fit). docs/run-record.md describes it; this module is its one definition.
#
#   RUN/run.json       metadata: kind, scenario, seed, versions, full config, plant params, ...
#   RUN/cycles.jsonl   one JSON object per cycle: job, outcome, board calibration, restarts
#   RUN/events.csv     the machine's event timeline (transitions, faults, notes)
#   RUN/ticks.csv      every loop tick: what the machine read and what it commanded
#
# load() never lets a traceback escape for a bad directory: every file is checked against
# records/record_schema.py before use, and every problem is a RunRecordError whose one line
# names the file, the line, the field and what was expected. require_ticks / require_jobs /
# require_scenario say what a verb needs beyond a valid record (a board recording has no ticks).
import csv
import io
import json
import os

import numpy as np

from surepick.shared_fsm import codes
from surepick.shared_fsm import states
from surepick.host.records import record_schema as schema
from surepick.host.user_error import BadInput

FORMAT = "surepick-run"
FORMAT_VERSION = 1
KINDS = schema.KINDS

RUN_JSON = "run.json"
CYCLES_JSONL = "cycles.jsonl"
EVENTS_CSV = "events.csv"
TICKS_CSV = "ticks.csv"
FILES = (RUN_JSON, CYCLES_JSONL, EVENTS_CSV, TICKS_CSV)

# The largest file of each kind a reader takes (checked before reading; a record is read whole,
# in about 7x its ticks.csv, docs/run-record.md). A host-sim cycle writes about 0.3 MB of ticks,
# 1 KB of cycles.jsonl and events.csv: 1 GiB of ticks is about 3,400 cycles.
MAX_BYTES = {RUN_JSON: 4 << 20, CYCLES_JSONL: 256 << 20, EVENTS_CSV: 256 << 20, TICKS_CSV: 1 << 30}


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


class RunRecordError(BadInput):
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
            w.writerows(event_rows(c, events[c]))
    _atomic(os.path.join(path, EVENTS_CSV), write_events)

    def write_ticks(f):
        f.write(",".join(TICK_COLUMNS) + "\n")
        for c in sorted(ticks):
            f.write(tick_lines(c, ticks[c]))
    _atomic(os.path.join(path, TICKS_CSV), write_ticks)
    # run.json last: its presence says the other files are complete.
    _atomic(os.path.join(path, RUN_JSON), lambda f: json.dump(meta, f, indent=1, sort_keys=True))
    return path


def _atomic(path, body):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        body(f)
    os.replace(tmp, path)


def event_rows(cycle, events):
    # events.csv rows of one cycle: kind, states and reason as names.
    return [(cycle, e[0], e[1], codes.KIND_NAMES[e[2]], states.name(e[3]), states.name(e[4]),
             codes.name(e[5])) + tuple(e[6:12]) for e in events]


def tick_lines(cycle, rows):
    prefix = "%d," % cycle
    return "".join(prefix + ",".join(map(str, r)) + "\n" for r in rows)


# ---- writing cycle by cycle (sim run, the virtual-board engine): nothing finished is lost ----------

class Appender:
    """A run record written as each cycle finishes: its rows are appended to cycles.jsonl,
    events.csv and ticks.csv, then run.json is rewritten (atomically, last) with the new count.
    So at any moment the directory is a valid record of the cycles finished so far, and an
    interruption (Ctrl-C, a crash, a power cut) loses at most the cycle that was running; its
    partial rows are cut off by resume(). meta: run.json without format, format_version, cycles."""

    def __init__(self, path, meta):
        self.path = str(path)
        self.meta = dict(meta, format=FORMAT, format_version=FORMAT_VERSION, cycles=0)
        if self.meta.get("kind") not in KINDS:
            raise ValueError("run kind must be one of %s, got %r" % (", ".join(KINDS), self.meta.get("kind")))
        self.count = 0

    def start(self):
        # A fresh record: the headers, and a run.json of 0 cycles.
        os.makedirs(self.path, exist_ok=True)
        _atomic(os.path.join(self.path, CYCLES_JSONL), lambda f: None)
        _atomic(os.path.join(self.path, EVENTS_CSV), lambda f: f.write(",".join(EVENT_COLUMNS) + "\n"))
        _atomic(os.path.join(self.path, TICKS_CSV), lambda f: f.write(",".join(TICK_COLUMNS) + "\n"))
        self._write_meta()

    def resume(self, same=("kind", "scenario", "params", "seed", "config", "plant_params")):
        # Continue the record in self.path: -> cycles already finished. RunRecordError when it is
        # not the same run (the fields in `same` differ) or cannot be read. run.json is written
        # last for each cycle, so its count is what finished: whatever a run cut short left past
        # it (a torn last line, a cycle half written) is removed first, then the rest is checked
        # as any record is. Finished cycles are kept.
        if not os.path.exists(os.path.join(self.path, RUN_JSON)):
            self.start()
            return 0
        meta = _load_meta(self.path)
        for k in same:
            where = _first_difference(meta.get(k), json.loads(json.dumps(self.meta.get(k))), k)
            if where is not None:
                raise RunRecordError("%s holds another run: its %s is %s, this run's is %s (use --force to replace "
                                     "it, or another --out)" % (self.path, where[0], _short(where[1]), _short(where[2])))
        n = meta["cycles"]
        for name in FILES:
            if not os.path.isfile(os.path.join(self.path, name)):
                load(self.path, ticks=False)          # says what is missing
        _cut_jsonl(os.path.join(self.path, CYCLES_JSONL), n)
        for name in (EVENTS_CSV, TICKS_CSV):
            cut_csv_at_cycle(os.path.join(self.path, name), n)
        load(self.path, ticks=False)
        self.count = n
        for k in ("model_hash", "versions"):
            if meta.get(k) and not self.meta.get(k):
                self.meta[k] = meta[k]
        return n

    def add(self, cycle_row, events, ticks):
        c = cycle_row["cycle"]
        with open(os.path.join(self.path, TICKS_CSV), "a", newline="") as f:
            f.write(tick_lines(c, ticks))
        with open(os.path.join(self.path, EVENTS_CSV), "a", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(event_rows(c, events))
        with open(os.path.join(self.path, CYCLES_JSONL), "a") as f:
            f.write(json.dumps(cycle_row, sort_keys=True) + "\n")
        self.count += 1
        self._write_meta()

    def _write_meta(self):
        self.meta["cycles"] = self.count
        _atomic(os.path.join(self.path, RUN_JSON), lambda f: json.dump(self.meta, f, indent=1, sort_keys=True))


def _first_difference(a, b, path):
    # -> (dotted path, a's value, b's value) of the first place two JSON values differ, or None.
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            d = _first_difference(a.get(k), b.get(k), "%s.%s" % (path, k))
            if d is not None:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            d = _first_difference(x, y, "%s[%d]" % (path, i))
            if d is not None:
                return d
        return None
    return None if a == b and type(a) is type(b) or (a == b and not isinstance(a, bool)) else (path, a, b)


def _short(v):
    text = json.dumps(v, sort_keys=True)
    return text if len(text) < 80 else text[:77] + "..."


def _cut_jsonl(path, n):
    # Keep the first n whole lines of a JSON-lines file (a cycle cut short leaves more, or half a
    # line: one without its newline is never kept).
    with open(path, "rb") as f:
        data = f.read()
    lines = data[:data.rfind(b"\n") + 1].split(b"\n")[:-1]
    keep = b"".join(line + b"\n" for line in lines[:n])
    with open(path, "wb") as f:
        f.write(keep)


def cut_csv_at_cycle(path, n):
    # Truncate a CSV whose first column is the cycle (rows grouped in ascending order) before the
    # first row of cycle >= n, or a half-written last line.
    with open(path, "rb+") as f:
        f.readline()                    # header
        while True:
            at = f.tell()
            line = f.readline()
            if not line:
                return
            head = line.split(b",", 1)[0]
            if not line.endswith(b"\n") or not head.isdigit() or int(head) >= n:
                f.truncate(at)
                return


# ---- reading: every file checked against records/record_schema.py before use ------------------

def load(path, ticks=True):
    # -> RunRecord, or RunRecordError naming the file, the field and what was expected.
    # ticks=False skips ticks.csv (fast).
    path = str(path)
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
    known = {c["cycle"] for c in cycles}
    events = _load_events(path, known)
    arr = _load_ticks(path, known) if ticks else np.zeros((0, len(TICK_COLUMNS)), dtype=np.int64)
    rec = RunRecord(path, meta, cycles, events, arr)
    if ticks and meta["kind"] == "board-recording" and len(arr):
        raise RunRecordError("%s: a board recording has no per-tick trace, but %s has %d rows"
                             % (_file(path, TICKS_CSV), TICKS_CSV, len(arr)))
    if ticks and meta["kind"] != "board-recording":
        for c in cycles:
            if c["cycle"] not in rec._ranges:
                raise RunRecordError("%s has no rows for cycle %d listed in %s: a %s record has ticks for every "
                                     "cycle (truncated run?)" % (_file(path, TICKS_CSV), c["cycle"], CYCLES_JSONL,
                                                                 meta["kind"]))
    return rec


def _file(path, name):
    return os.path.join(path, name)


def _text_of(p):
    # The file's text, or RunRecordError when it is not UTF-8 text (binary data, a NUL byte) or
    # larger than its kind's bound (nothing of it read then).
    limit = MAX_BYTES[os.path.basename(p)]
    with open(p, "rb") as f:
        data = f.read(limit + 1) if os.fstat(f.fileno()).st_size <= limit else b""
        size = max(len(data), os.fstat(f.fileno()).st_size)
    if size > limit:
        raise RunRecordError("%s is %d MiB, larger than a run record's %s may be (%d MiB; a host-sim cycle "
                             "writes about 0.3 MiB of ticks): record fewer cycles per run"
                             % (p, size >> 20, os.path.basename(p), limit >> 20))
    nul = data.find(b"\0")
    if nul >= 0:
        raise RunRecordError("%s is not a text file (a NUL byte at offset %d): expected %s"
                             % (p, nul, _WHAT[os.path.basename(p)]))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RunRecordError("%s is not a text file (byte 0x%02x at offset %d is not UTF-8): expected %s"
                             % (p, data[e.start], e.start, _WHAT[os.path.basename(p)])) from None


_WHAT = {RUN_JSON: "one JSON object", CYCLES_JSONL: "one JSON object per line",
         EVENTS_CSV: "a CSV of events", TICKS_CSV: "a CSV of integers, one row per tick"}


def _whole_lines(p, text):
    # Every line of a record file ends in a newline (the writers end each one so). A file whose
    # end has none was cut mid-line (a power cut during a write): its last line's numbers may be
    # cut short yet still parse ("1500" read as "15"), so it is refused, never read as whole.
    if text and not text.endswith("\n"):
        raise RunRecordError("%s line %d is cut short (truncated: the file ends without its newline, a write cut mid-line; "
                             "its last number may be cut too): record the run again, or delete that line to read "
                             "the rest" % (p, text.count("\n") + 1))


def _json(text):
    # json.loads that refuses NaN and Infinity (not JSON; a NaN period must not slip through).
    def bad_constant(name):
        raise ValueError("%s is not a JSON number" % name)
    return json.loads(text, parse_constant=bad_constant)


def _load_meta(path):
    p = _file(path, RUN_JSON)
    try:
        meta = _json(_text_of(p))
    except json.JSONDecodeError as e:
        raise RunRecordError("%s is not valid JSON (line %d column %d: %s)" % (p, e.lineno, e.colno, e.msg))
    except ValueError as e:
        raise RunRecordError("%s is not valid JSON (%s)" % (p, e))
    if isinstance(meta, dict) and meta.get("format_version") not in (None, FORMAT_VERSION) \
            and meta.get("format") == FORMAT and isinstance(meta.get("format_version"), int):
        raise RunRecordError("%s: format version %r is not supported (this surepick reads %d)" % (
            p, meta["format_version"], FORMAT_VERSION))
    try:
        schema.check_meta(meta)
    except schema.FieldError as e:
        raise RunRecordError("%s: %s" % (p, e)) from None
    return meta


def _load_cycles(path, meta):
    p = _file(path, CYCLES_JSONL)
    cycles = []
    seen = set()
    text = _text_of(p)
    _whole_lines(p, text)
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            c = _json(line)
        except json.JSONDecodeError as e:
            raise RunRecordError("%s line %d is not valid JSON (%s; truncated file?)" % (p, n, e.msg))
        except ValueError as e:
            raise RunRecordError("%s line %d is not valid JSON (%s)" % (p, n, e))
        try:
            schema.check_cycle(c)
        except schema.FieldError as e:
            raise RunRecordError("%s line %d: %s" % (p, n, e)) from None
        if c["cycle"] in seen:
            raise RunRecordError("%s line %d: cycle must be a number not used before, got %d again" % (p, n, c["cycle"]))
        seen.add(c["cycle"])
        cycles.append(c)
    if len(cycles) != meta["cycles"]:
        raise RunRecordError("%s has %d cycles but run.json says %d (truncated run?)" % (p, len(cycles), meta["cycles"]))
    return cycles


def _check_header(p, header, expected):
    missing = [c for c in expected if c not in header]
    if missing:
        raise RunRecordError("%s is missing column%s %s (its header: %s)" % (
            p, "s" if len(missing) > 1 else "", ", ".join(missing), ",".join(header)[:200]))
    extra = [c for c in header if c not in expected]
    if extra:
        raise RunRecordError("%s has unknown column%s %s" % (p, "s" if len(extra) > 1 else "", ", ".join(extra)[:200]))
    if len(set(header)) != len(header):
        raise RunRecordError("%s has a column twice in its header" % p)


def _load_events(path, known):
    p = _file(path, EVENTS_CSV)
    out = {}
    text = _text_of(p)
    _whole_lines(p, text)
    try:
        rows = csv.reader(io.StringIO(text, newline=""))
        header = next(rows, None)
        if header is None:
            raise RunRecordError("%s is empty (no header line)" % p)
        _check_header(p, header, EVENT_COLUMNS)
        idx = {c: header.index(c) for c in EVENT_COLUMNS}
        for n, row in enumerate(rows, 2):
            if len(row) != len(header):
                raise RunRecordError("%s line %d has %d fields, expected %d (truncated file?)" % (
                    p, n, len(row), len(header)))
            try:
                cycle, e = schema.event_row(row, idx)
            except schema.FieldError as err:
                raise RunRecordError("%s line %d: %s" % (p, n, err)) from None
            if cycle not in known:
                raise RunRecordError("%s line %d: cycle must be one listed in %s, got %d" % (p, n, CYCLES_JSONL, cycle))
            out.setdefault(cycle, []).append(e)
    except csv.Error as e:
        raise RunRecordError("%s is not a readable CSV (%s)" % (p, e)) from None
    return out


def _load_ticks(path, known):
    p = _file(path, TICKS_CSV)
    text = _text_of(p)
    _whole_lines(p, text)
    nl = text.find("\n")
    header = (text if nl < 0 else text[:nl]).rstrip("\r").split(",")
    if header == [""]:
        raise RunRecordError("%s is empty (no header line)" % p)
    _check_header(p, header, TICK_COLUMNS)
    body = "" if nl < 0 else text[nl + 1:]
    if not body:
        return np.zeros((0, len(TICK_COLUMNS)), dtype=np.int64)
    try:
        arr = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.int64, ndmin=2)
    except (ValueError, OverflowError):
        raise RunRecordError(_first_bad_tick_cell(p, header, body)) from None
    if arr.shape[1] != len(header):
        raise RunRecordError("%s: rows have %d fields, header has %d" % (p, arr.shape[1], len(header)))
    bad = schema.check_tick_ranges(arr, header)
    if bad is not None:
        row, col, value, expected = bad
        raise RunRecordError("%s line %d: %s must be %s, got %d" % (p, row + 2, col, expected, value))
    order = [header.index(c) for c in TICK_COLUMNS]
    if order != list(range(len(TICK_COLUMNS))):
        arr = arr[:, order]
    stray = sorted(set(np.unique(arr[:, 0]).tolist()) - known)
    if stray:
        row = int(np.flatnonzero(arr[:, 0] == stray[0])[0])
        raise RunRecordError("%s line %d: cycle must be one listed in %s, got %d" % (p, row + 2, CYCLES_JSONL, stray[0]))
    return arr


def _first_bad_tick_cell(p, header, body):
    # The error path only: find the first cell that is not an integer, for the message.
    for n, line in enumerate(body.split("\n"), 2):
        if not line:
            continue
        cells = line.rstrip("\r").split(",")
        if len(cells) != len(header):
            return "%s line %d has %d fields, expected %d (truncated file?)" % (p, n, len(cells), len(header))
        for col, cell in zip(header, cells):
            try:
                v = int(cell)
            except ValueError:
                return "%s line %d: %s must be a whole number, got %s" % (p, n, col, schema.shown(cell))
            if not -(1 << 63) <= v < (1 << 63):
                return "%s line %d: %s must be a whole number %d..%d, got %d" % (
                    p, n, col, schema.TICK_RANGES[col][0], schema.TICK_RANGES[col][1], v)
    return "%s: unreadable rows" % p


def validate(path):
    # -> None when the run record loads, else the error message.
    try:
        load(path)
    except RunRecordError as e:
        return str(e)
    return None


# ---- what each verb needs beyond a valid record --------------------------------------------------

_HAS_TICKS = "a sim, virtual-board or HIL record"


def require_ticks(rec, verb):
    # RunRecordError when the record has no per-tick trace (a board recording): `verb` cannot use it.
    if len(rec.ticks):
        return
    why = ("a board recording has no per-tick trace" if rec.meta["kind"] == "board-recording"
           else "the record holds no ticks")
    raise RunRecordError("%s has no rows: %s; %s needs %s" % (_file(rec.path, TICKS_CSV), why, verb, _HAS_TICKS))


def require_jobs(rec, verb, cycles=None):
    # RunRecordError naming the first chosen cycle whose job has no poses (a board's log does
    # not carry them).
    for c in rec.cycles:
        if cycles is not None and c["cycle"] not in cycles:
            continue
        j = c["job"]
        if j["pick_um"] is None or j["place_um"] is None or j["part_width_um"] is None:
            raise RunRecordError("%s: cycle %d's job has no pick/place poses or part width (%s); %s needs them"
                                 % (_file(rec.path, CYCLES_JSONL), c["cycle"],
                                    "a board's log does not carry them" if rec.meta["kind"] == "board-recording"
                                    else "job.pick_um, job.place_um or job.part_width_um is null", verb))


def require_scenario(rec, verb):
    # RunRecordError when the record's scenario is not one this surepick can simulate.
    from surepick.sim import scenarios
    name = rec.meta["scenario"]
    if name is None:
        raise RunRecordError("%s: scenario is null (a board recording does not know the cell's scenario); %s needs "
                             "a scenario to build the plant" % (_file(rec.path, RUN_JSON), verb))
    try:
        scenarios.get(name).resolve(rec.meta.get("params") or {})
    except ValueError as e:
        raise RunRecordError("%s: %s" % (_file(rec.path, RUN_JSON), e)) from None


# ---- helpers shared by the analysis verbs -------------------------------------------------------

def event_text(e):
    return "%s %s>%s %s" % (codes.KIND_NAMES[e[2]], states.name(e[3]), states.name(e[4]), codes.name(e[5]))
