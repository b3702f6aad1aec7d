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

from surepick.teleop.sample import Buttons, Sample, check_mark
from surepick.teleop.sources.base import PoseSource, SourceError

POSE_COLUMNS = ["m%d%d" % (i, j) for i in range(3) for j in range(4)]
CSV_COLUMNS = ["t"] + POSE_COLUMNS + ["clutch", "fine", "grip"]


def _pose(values, where):
    if values is None:
        return None
    if not isinstance(values, list) or len(values) != 12:
        raise SourceError("%s: pose must be a list of 12 numbers (3x4 row-major), got %r" % (where, values))
    out = []
    for v in values:
        if v is None:
            out.append(math.nan)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(float(v))
        else:
            raise SourceError("%s: pose entries must be numbers, got %r" % (where, v))
    return np.array(out).reshape(3, 4)


def _time(v, where, last):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise SourceError("%s: t must be a finite number of seconds, got %r" % (where, v))
    if last is not None and v < last:
        raise SourceError("%s: t=%g goes back in time (previous sample t=%g)" % (where, v, last))
    return float(v)


def read_jsonl(path):
    samples, last = [], None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            where = "%s:%d" % (path, n)
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
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
            last = _time(obj["t"], where, last)
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
    samples, last = [], None
    with open(path, newline="") as f:
        reader = csv.reader(f)
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
            last = _time(t, where, last)
            cells = row[1:13]
            if all(not c.strip() for c in cells):
                pose = None
            else:
                try:
                    pose = np.array([float(c) if c.strip() else math.nan for c in cells]).reshape(3, 4)
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
