# A pick-and-place job as the host sends it (JOB, docs/protocol.md): poses in mm and degrees for
# people, um and mdeg on the link. Shared by `surepick job start` and the monitor's live view,
# which starts "the last job" sent to the port: the one remembered here when the board accepted it.
import json
import math
import os

from surepick.shared_fsm import link

# The reference cell (sim/plant.py layout): a 25 mm part on the source pad, released over the bin.
DEFAULT_PICK_MM = (160.0, -60.0, 15.5, -90.0)
DEFAULT_PLACE_MM = (150.0, 80.0, 20.5, -90.0)
DEFAULT_WIDTH_MM = 25.0


def parse_pose(text):
    # "X,Y,Z" or "X,Y,Z,PITCH" (mm, degrees; pitch -90 = pointing down) -> 4 floats.
    # ValueError with the expected form.
    try:
        v = [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError("a pose is X,Y,Z or X,Y,Z,PITCH in mm and degrees, got %r" % text) from None
    if len(v) == 3:
        v.append(-90.0)
    if len(v) != 4:
        raise ValueError("a pose is X,Y,Z or X,Y,Z,PITCH, got %r" % text)
    if not all(math.isfinite(x) for x in v):      # float() takes "inf" and "nan"
        raise ValueError("a pose is X,Y,Z or X,Y,Z,PITCH in finite mm and degrees, got %r" % text)
    return tuple(v)


class JobSpec:
    def __init__(self, pick=DEFAULT_PICK_MM, place=DEFAULT_PLACE_MM, width=DEFAULT_WIDTH_MM, attempts=None,
                 approach_um=None):
        self.pick = tuple(float(x) for x in pick)
        self.place = tuple(float(x) for x in place)
        self.width = float(width)
        self.attempts = None if attempts is None else int(attempts)
        # a job file's approach height: the board's approach_height_um from this job on, set by
        # the board only when it takes the job (a refused job changes nothing on it)
        self.approach_um = None if approach_um is None else int(approach_um)

    def link_args(self, board_attempts=None):
        # The JOB frame's fields after the request id. ValueError when the link cannot carry them.
        # The approach height is JOB's last field: with it, the attempts must be given
        # (board_attempts: the board's own max_attempts, when the job names none).
        if not all(math.isfinite(v) for v in self.pick + self.place + (self.width,)):
            raise ValueError("poses and the width must be finite numbers (mm, degrees), got %s" % self.text())
        um = [int(round(v * 1000)) for v in self.pick[:3]] + [int(round(self.pick[3] * 1000))]
        um += [int(round(v * 1000)) for v in self.place[:3]] + [int(round(self.place[3] * 1000))]
        um.append(int(round(self.width * 1000)))
        attempts = self.attempts
        if attempts is None and self.approach_um is not None:
            attempts = board_attempts
            if attempts is None:
                raise ValueError("a job with an approach height needs its attempts (or the board's max_attempts)")
        if attempts is not None:
            um.append(attempts)
        if self.approach_um is not None:
            um.append(self.approach_um)
        if link.check(link.T_JOB, [1] + um) != link.OK:
            raise ValueError("a value is outside what the link carries (poses within 1 m, "
                             "width 0.001-100 mm, attempts 1-9)")
        return um

    def text(self):
        f = lambda p: "(%g, %g, %g, pitch %g)" % p  # noqa: E731
        return "pick %s place %s width %g mm%s" % (
            f(self.pick), f(self.place), self.width,
            "" if self.attempts is None else ", %d attempts" % self.attempts)

    def as_dict(self):
        return {"pick": list(self.pick), "place": list(self.place), "width": self.width,
                "attempts": self.attempts}

    @classmethod
    def from_dict(cls, d):
        return cls(d["pick"], d["place"], d["width"], d.get("attempts"))


def _state_file():
    import platformdirs
    return os.path.join(platformdirs.user_state_dir("surepick", appauthor=False), "last_jobs.json")


def remember(port, spec):
    # The job the board on `port` accepted last; a failure to save is not the job's failure.
    from surepick.host.link.rundir import canonical_port
    path = _state_file()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            with open(path) as f:
                jobs = json.load(f)
            if not isinstance(jobs, dict):
                jobs = {}
        except (OSError, ValueError):
            jobs = {}
        jobs[canonical_port(port)] = spec.as_dict()
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(jobs, f)
        os.replace(tmp, path)
    except OSError:
        pass


def last_job(port):
    # -> the JobSpec last accepted by the board on `port`, or None
    from surepick.host.link.rundir import canonical_port
    try:
        with open(_state_file()) as f:
            d = json.load(f)[canonical_port(port)]
        return JobSpec.from_dict(d)
    except (OSError, ValueError, KeyError, TypeError):
        return None
