# The per-user list of boards running on this machine that have no USB id to be found by: each
# virtual board (`surepick board`) and emulated RP2040 writes one JSON file into registry_dir()
# while it serves, naming its console address(es), its kind, flash and plant; `--port auto`
# (ports.py) reads them. A file whose process is gone is ignored and removed, so a board killed
# with SIGKILL never blocks auto. The directory is per user and per runtime dir
# ($XDG_RUNTIME_DIR), so tests with a private runtime dir see only their own boards.
import json
import os
import tempfile
from pathlib import Path


def registry_dir():
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / ("surepick-boards-%d" % os.getuid())


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # someone else's process with that pid: not ours to judge
        return True
    return True


def running_boards():
    """-> [dict] for every registered board whose process still runs (stale entries removed)."""
    d = registry_dir()
    out = []
    for p in sorted(d.glob("*.json")) if d.is_dir() else ():
        try:
            entry = json.loads(p.read_text())
            pid = int(entry["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue                 # half-written or foreign: not a board we can name
        if not _alive(pid):
            try:
                p.unlink()
            except OSError:
                pass
            continue
        out.append(entry)
    return out


class Registration:
    """One board listed while it serves: Registration({"console": [address], "kind": ...});
    remove() (or leaving the `with` block) takes it off the list."""

    def __init__(self, info):
        d = registry_dir()
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = d / ("%d-%d.json" % (os.getpid(), id(self)))
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(dict(info, pid=os.getpid())) + "\n")
        os.replace(tmp, self.path)   # a reader never sees half an entry

    def remove(self):
        try:
            self.path.unlink()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
