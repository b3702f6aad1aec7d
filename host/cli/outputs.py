# Where a verb writes, checked before any work starts: an output directory that is a file, or
# sits under one, or cannot be written, or already holds another run, is found in the first
# second, not after minutes of simulating or fitting. Runs never mix: a directory that holds
# another run is refused (naming what is there) unless the verb was asked to --resume it or to
# --force (clear it first); and a directory has one writer at a time (own_dir: a second `sim
# run|batch|sweep` into it, --resume and --force included, is refused with the owner's pid).
import json
import os
import sys
import time

from surepick.host.user_error import USAGE
from surepick.host.cli.errors import CommandError, cannot

# What a run leaves in its --out: the run record, sim run's report, a batch's files.
RUN_FILES = ("run.json", "cycles.jsonl", "events.csv", "ticks.csv", "report.json", "trajectory.csv",
             "summary.json", "batch.json")


def check_writable_dir(path, flag="--out"):
    # Create `path` (and its parents) if needed and prove it can take a file. CommandError (usage).
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        raise CommandError("cannot use %s %s: it is a file, not a directory" % (flag, path)) from None
    except OSError as e:
        raise cannot("use " + flag, path, e) from None
    _prove_writable(path, path, flag)


def check_writable_file(path, flag="--out"):
    # `path` will be written as a whole file later: its directory must exist and take a file,
    # and `path` must not be a directory. Nothing is left behind. CommandError (usage).
    if os.path.isdir(path):
        raise CommandError("cannot use %s %s: it is a directory; give a file name" % (flag, path))
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        what = "is a file" if os.path.exists(parent) else "does not exist"
        raise CommandError("cannot use %s %s: its directory %s %s" % (flag, path, parent, what))
    _prove_writable(parent, path, flag)


def _prove_writable(directory, path, flag):
    # Write and remove an empty file in `directory`: CommandError naming `flag path` if it fails.
    probe = os.path.join(directory, ".surepick-write-test-%d" % os.getpid())
    try:
        with open(probe, "w") as f:
            f.write("")
        os.remove(probe)
    except OSError as e:
        raise cannot("use " + flag, path, e) from None


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


OWNER_FILE = ".surepick-owner"
_owned = {}          # real path -> the open owner file whose lock this process holds until it ends


def own_dir(path, flag="--out"):
    # Make this process the one writer of the directory `path` (which exists) until it ends: an
    # exclusive POSIX record lock (fcntl.lockf) on DIR/.surepick-owner, which names the owner (pid,
    # command, start). Such a lock belongs to a process: the kernel drops it when the process dies
    # however it dies, and forked workers do not inherit it, so a lock left by a crash is free and
    # taken over (saying whose it was). Held by a live process: CommandError naming it.
    import fcntl
    real = os.path.realpath(path)
    if real in _owned:
        return
    name = os.path.join(path, OWNER_FILE)
    try:
        f = open(name, "a+")
    except OSError as e:
        raise cannot("use " + flag, path, e) from None
    f.seek(0)
    before = f.read()
    try:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        raise CommandError("%s %s is being written by %s: two runs into one directory would mix their "
                           "cycles; wait for it to end (then --resume continues it), stop it, or choose another "
                           "directory" % (flag, path, _owner_text(before)), USAGE) from None
    f.seek(0)
    f.truncate()
    f.write(json.dumps({"pid": os.getpid(), "command": " ".join(["surepick"] + sys.argv[1:]),
                        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}) + "\n")
    f.flush()
    if not _owned:
        import atexit
        atexit.register(_release_all)
    _owned[real] = f
    if before.strip():
        print("%s %s: took it over from %s, which is no longer running" % (flag, path, _owner_text(before)),
              file=sys.stderr, flush=True)


def _release_all():
    # A run that ends (done, refused, Ctrl-C) empties its owner files: only one a process left
    # behind by dying still names it, and the next writer says it took that one over.
    for f in _owned.values():
        try:
            f.seek(0)
            f.truncate()
            f.close()
        except OSError:
            pass
    _owned.clear()


def _owner_text(text):
    # "pid 4242 (surepick sim batch ..., since 2026-...)" from an owner file's line
    try:
        d = json.loads(text)
        return "pid %d (%s, since %s)" % (d["pid"], d.get("command", "?"), d.get("started", "?"))
    except (ValueError, KeyError, TypeError):
        return "another process (its owner file %s is unreadable)" % OWNER_FILE


def prepare_run_dir(path, resume=False, force=False, flag="--out", can_resume=True):
    # Before any work. -> "new", "resume" or "cleared". A directory holding another run's files
    # is refused unless resume (the caller continues it) or force (its run files are removed);
    # one written by another process is refused whatever the flags (own_dir).
    if os.path.exists(path) and not os.path.isdir(path):
        raise CommandError("cannot use %s %s: it is a file, not a directory" % (flag, path))
    check_writable_dir(path, flag)
    own_dir(path, flag)
    found = run_files_in(path)
    state = "new"
    if found and force:
        for n in found:
            try:
                os.remove(os.path.join(path, n))
            except OSError as e:
                raise cannot("clear %s %s:" % (flag, path), n, e) from None
        state = "cleared"
    elif found and resume:
        state = "resume"
    elif found:
        shown = ", ".join(found[:6]) + (" ..." if len(found) > 6 else "")
        raise CommandError("%s %s already holds %s (%s): %s--force to clear it first, or choose another "
                           "directory" % (flag, path, describe_run(path), shown,
                                          "add --resume to continue it, " if can_resume else "add "),
                           USAGE)
    elif resume:
        state = "new"        # nothing to resume: a fresh run
    return state
