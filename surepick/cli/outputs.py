# Where a verb writes, checked before any work starts: an output directory that is a file, or
# sits under one, or cannot be written, or already holds another run, is found in the first
# second, not after minutes of simulating or fitting. Runs never mix: a directory that holds
# another run is refused (naming what is there) unless the verb was asked to --resume it or to
# --force (clear it first).
import os

from surepick.cli import exitcodes
from surepick.cli.errors import CommandError

# What a run leaves in its --out: the run record, sim run's report, a batch's files.
RUN_FILES = ("run.json", "cycles.jsonl", "events.csv", "ticks.csv", "report.json", "trajectory.csv",
             "summary.json", "batch.json")


def _why(e):
    return e.strerror or str(e)


def check_writable_dir(path, flag="--out"):
    # Create `path` (and its parents) if needed and prove it can take a file. CommandError (usage).
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        raise CommandError("cannot use %s %s: it is a file, not a directory" % (flag, path)) from None
    except OSError as e:
        raise CommandError("cannot use %s %s: %s" % (flag, path, _why(e))) from None
    probe = os.path.join(path, ".surepick-write-test-%d" % os.getpid())
    try:
        with open(probe, "w") as f:
            f.write("")
        os.remove(probe)
    except OSError as e:
        raise CommandError("cannot use %s %s: %s" % (flag, path, _why(e))) from None


def check_writable_file(path, flag="--out"):
    # `path` will be written as a whole file later: its directory must exist and take a file,
    # and `path` must not be a directory. Nothing is left behind. CommandError (usage).
    if os.path.isdir(path):
        raise CommandError("cannot use %s %s: it is a directory; give a file name" % (flag, path))
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        what = "is a file" if os.path.exists(parent) else "does not exist"
        raise CommandError("cannot use %s %s: its directory %s %s" % (flag, path, parent, what))
    probe = os.path.join(parent, ".surepick-write-test-%d" % os.getpid())
    try:
        with open(probe, "w") as f:
            f.write("")
        os.remove(probe)
    except OSError as e:
        raise CommandError("cannot use %s %s: %s" % (flag, path, _why(e))) from None


def run_files_in(path):
    # -> the names in `path` that belong to a run (run record, report, plots, batch files).
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return []
    return [n for n in names if n in RUN_FILES or (n.startswith("cycle_") and n.endswith(".png"))
            or n.endswith(".tmp")]


def describe_run(path):
    # One phrase for what run an --out holds ("a host-sim run of nominal, seed 0, 2 cycles").
    import json
    for name in ("run.json", "report.json", "summary.json"):
        p = os.path.join(path, name)
        try:
            with open(p) as f:
                d = json.load(f)
        except (OSError, ValueError):
            continue
        if not isinstance(d, dict):
            continue
        if name == "summary.json":
            return "a batch of %s cycles" % d.get("count", "?")
        kind = d.get("kind", "host-sim")
        cycles = d.get("cycles")
        n = len(cycles) if isinstance(cycles, list) else cycles
        if d.get("scenario") is None:
            return "a %s of %s cycle(s)" % (kind, n)
        return "a %s run of %s, seed %s, %s cycle(s)" % (kind, d.get("scenario"), d.get("seed"), n)
    if os.path.exists(os.path.join(path, "cycles.jsonl")):
        return "an unfinished run (cycles.jsonl without run.json or summary.json)"
    return "files of another run"


def prepare_run_dir(path, resume=False, force=False, flag="--out", can_resume=True):
    # Before any work. -> "new", "resume" or "cleared". A directory holding another run's files
    # is refused unless resume (the caller continues it) or force (its run files are removed).
    if os.path.exists(path) and not os.path.isdir(path):
        raise CommandError("cannot use %s %s: it is a file, not a directory" % (flag, path))
    found = run_files_in(path)
    state = "new"
    if found and force:
        for n in found:
            try:
                os.remove(os.path.join(path, n))
            except OSError as e:
                raise CommandError("cannot clear %s %s: %s: %s" % (flag, path, n, _why(e))) from None
        state = "cleared"
    elif found and resume:
        state = "resume"
    elif found:
        shown = ", ".join(found[:6]) + (" ..." if len(found) > 6 else "")
        raise CommandError("%s %s already holds %s (%s): %s--force to clear it first, or choose another "
                           "directory" % (flag, path, describe_run(path), shown,
                                          "add --resume to continue it, " if can_resume else "add "),
                           exitcodes.USAGE)
    elif resume:
        state = "new"        # nothing to resume: a fresh run
    check_writable_dir(path, flag)
    return state
