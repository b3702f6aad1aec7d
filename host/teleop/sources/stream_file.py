# A recorded pose stream: what tests generate, what replays read, what a session can save.
#
# JSONL (the interface of issue 14): one object per line,
#   {"t": seconds, "pose": [12 numbers: 3x4 row-major, OpenVR frame (Y up, m)],
#    "buttons": {"clutch": bool, "fine": bool, "grip": 0..1}}
# "pose" may be missing or null (tracking lost) and may hold NaN (or null entries, read as NaN).
# An optional "mark" names a teach mark (sample.MARKS: pick, place, ..., next) made at that sample.
# CSV: a header row `t,m00,m01,m02,m03,m10,...,m23,clutch,fine,grip` (pose cells empty = lost;
# clutch/fine 0/1 or true/false), optionally a last `mark` column (empty: none).
# The whole file is read and checked when it is opened, so a bad line stops the run before the
# arm moves, with the file and line named; times must not go backwards.
import csv
import json
import math

import numpy as np

from surepick.host.teleop.sample import Buttons, Sample, check_mark
from surepick.host.teleop.sources.base import PoseSource, SourceError

POSE_COLUMNS = ["m%d%d" % (i, j) for i in range(3) for j in range(4)]
# Bounds (a stream file is read whole before the arm moves, and replayed tick by tick):
MAX_LINE_CHARS = 64 * 1024       # one sample is a few hundred characters
MAX_SAMPLES = 400000             # 74 minutes at 90 Hz
MAX_GAP_S = 60.0                 # between two samples: longer is a hole in the recording
MAX_SPAN_S = 4 * 3600.0          # first to last sample
MAX_POSE = 1000.0                # m: a pose entry (rotation or position) beyond this is not a hand
CSV_COLUMNS = ["t"] + POSE_COLUMNS + ["clutch", "fine", "grip"]


def _shown(v):
    t = repr(v)
    return t if len(t) <= 40 else t[:20] + "... (%d characters)" % len(t)


def _entry(v, where):
    # a pose entry: a number within +-MAX_POSE, or NaN / null (tracking lost)
    if v is None:
        return math.nan
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, int) and abs(v) > MAX_POSE):
        raise SourceError("%s: pose entries must be numbers (or null), got %s" % (where, _shown(v)))
    v = float(v)
    if math.isinf(v) or abs(v) > MAX_POSE:
        raise SourceError("%s: pose entries must lie within +-%g (NaN: lost), got %s" % (where, MAX_POSE, _shown(v)))
    return v


def _pose(values, where):
    if values is None:
        return None
    if not isinstance(values, list) or len(values) != 12:
        raise SourceError("%s: pose must be a list of 12 numbers (3x4 row-major), got %s" % (where, _shown(values)))
    return np.array([_entry(v, where) for v in values]).reshape(3, 4)


def _time(v, where, last, first):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, int) and abs(v) > 1e12) \
            or not math.isfinite(v):
        raise SourceError("%s: t must be a finite number of seconds, got %s" % (where, _shown(v)))
    if last is not None and v < last:
        raise SourceError("%s: t=%g goes back in time (previous sample t=%g)" % (where, v, last))
    if last is not None and v - last > MAX_GAP_S:
        raise SourceError("%s: t=%g is %g s after the previous sample (at most %g s: cut the file there)"
                          % (where, v, v - last, MAX_GAP_S))
    if first is not None and v - first > MAX_SPAN_S:
        raise SourceError("%s: the stream spans more than %g s: split it" % (where, MAX_SPAN_S))
    return float(v)


def _lines(path):
    # (line number, text) of a UTF-8 text file, bounded; SourceError names the line that is not
    with open(path, "rb") as f:
        n = 0
        while True:
            raw = f.readline(MAX_LINE_CHARS + 1)     # bounded: a line of gigabytes is not read whole
            if not raw:
                return
            n += 1
            where = "%s:%d" % (path, n)
            if len(raw) > MAX_LINE_CHARS:
                raise SourceError("%s: longer than %d characters: not a stream sample" % (where, MAX_LINE_CHARS))
            if n > MAX_SAMPLES + 1:
                raise SourceError("%s: more than %d samples: split the file" % (where, MAX_SAMPLES))
            try:
                yield n, where, raw.decode("utf-8")
            except UnicodeDecodeError:
                raise SourceError("%s: not UTF-8 text (a stream file is JSONL or CSV text)" % where) from None


def read_jsonl(path):
    samples, last, first = [], None, None
    for n, where, line in _lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except RecursionError:
            raise SourceError("%s: nests too deep to be a sample" % where) from None
        except ValueError as e:
            raise SourceError("%s: not JSON (%s)" % (where, e)) from None
        if not isinstance(obj, dict):
            raise SourceError("%s: each line must be one JSON object" % where)
        unknown = set(obj) - {"t", "pose", "buttons", "mark"}
        if unknown:
            raise SourceError("%s: unknown key(s) %s (known: t, pose, buttons, mark)"
                              % (where, ", ".join(sorted(unknown))))
        if "t" not in obj:
            raise SourceError("%s: missing t" % where)
        last = _time(obj["t"], where, last, first)
        first = last if first is None else first
        try:
            buttons = Buttons.from_dict(obj.get("buttons"), where + ": buttons")
            mark = check_mark(obj.get("mark"), where + ": mark")
        except ValueError as e:
            raise SourceError(str(e)) from None
        samples.append(Sample(last, _pose(obj.get("pose"), where), buttons, mark=mark))
    return samples


def _flag(text, where, name):
    t = text.strip().lower()
    if t in ("1", "true"):
        return True
    if t in ("0", "false", ""):
        return False
    raise SourceError("%s: %s must be 0/1 or true/false, got %r" % (where, name, text))


def read_csv(path):
    samples, last, first = [], None, None
    reader = csv.reader(line for _, _, line in _lines(path))
    header = next(reader, None)
    cols = [h.strip() for h in header] if header is not None else None
    if cols not in (CSV_COLUMNS, CSV_COLUMNS + ["mark"]):
        raise SourceError("%s:1: the header must be %s (then optionally ,mark)" % (path, ",".join(CSV_COLUMNS)))
    for n, row in enumerate(reader, 2):
        where = "%s:%d" % (path, n)
        if not row:
            continue
        if len(row) != len(cols):
            raise SourceError("%s: %d cells, expected %d" % (where, len(row), len(cols)))
        try:
            t = float(row[0])
        except ValueError:
            raise SourceError("%s: t must be a number, got %r" % (where, row[0])) from None
        last = _time(t, where, last, first)
        first = last if first is None else first
        cells = row[1:13]
        if all(not c.strip() for c in cells):
            pose = None
        else:
            try:
                pose = np.array([_entry(float(c), where) if c.strip() else math.nan for c in cells]).reshape(3, 4)
            except ValueError:
                raise SourceError("%s: pose cells must be numbers (or nan, or all empty)" % where) from None
        try:
            grip = float(row[15]) if row[15].strip() else 0.0
            buttons = Buttons.from_dict({"clutch": _flag(row[13], where, "clutch"),
                                         "fine": _flag(row[14], where, "fine"), "grip": grip}, where)
            mark = check_mark(row[16].strip() or None, where + ": mark") if len(row) > 16 else None
        except ValueError as e:
            raise SourceError(str(e) if where in str(e) else "%s: %s" % (where, e)) from None
        samples.append(Sample(last, pose, buttons, mark=mark))
    return samples


def write_jsonl(path, samples):
    # NaN is written as the NaN literal Python's json reads back (the stream format allows NaN).
    with open(path, "w") as f:
        for s in samples:
            obj = {"t": s.t}
            if s.pose is not None:
                obj["pose"] = np.asarray(s.pose, dtype=float).reshape(12).tolist()
            obj["buttons"] = s.buttons.to_dict()
            if s.mark is not None:
                obj["mark"] = s.mark
            f.write(json.dumps(obj) + "\n")


def write_csv(path, samples):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        marks = any(s.mark is not None for s in samples)
        w.writerow(CSV_COLUMNS + (["mark"] if marks else []))
        for s in samples:
            pose = [""] * 12 if s.pose is None else ["%r" % float(v) for v in np.asarray(s.pose).reshape(12)]
            b = s.buttons
            w.writerow(["%r" % s.t] + pose + [int(b.clutch), int(b.fine), "%r" % b.grip]
                       + ([s.mark or ""] if marks else []))


class StreamFileSource(PoseSource):
    realtime = False
    rate_hz = None

    def __init__(self, path):
        self.path = str(path)
        self.name = "file:" + self.path
        low = self.path.lower()
        try:
            if low.endswith(".csv"):
                self.samples = read_csv(self.path)
            elif low.endswith(".jsonl") or low.endswith(".json") or low.endswith(".ndjson"):
                self.samples = read_jsonl(self.path)
            else:
                raise SourceError("%s: a stream file ends in .jsonl or .csv (or use --source openvr|spacemouse|keyboard)"
                                  % self.path)
        except OSError as e:
            raise SourceError("cannot read %s: %s" % (self.path, e.strerror or e)) from None
        if not self.samples:
            raise SourceError("%s holds no samples" % self.path)
        ts = [s.t for s in self.samples]
        span = ts[-1] - ts[0]
        self.rate_hz = (len(ts) - 1) / span if span > 0 else None

    def __iter__(self):
        return iter(self.samples)
