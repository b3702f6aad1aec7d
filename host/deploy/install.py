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
import json
import os
import subprocess
import time

from surepick.host.deploy.artifacts import Artifact, BuildStats, build, find_mpy_cross, mpy_cross_version
from surepick.host.deploy.errors import DeployError
from surepick.host.deploy.raw_repl import RawReplBoard

MIN_MICROPYTHON = (1, 22)
MANIFEST = "/surepick-manifest.json"
CONFIG_FILE = "/config.json"
TEMP_SUFFIX = ".sp-new"
_SLACK_BLOCKS = 4                      # littlefs metadata, directory blocks, the manifest


class Result:
    def __init__(self):
        self.micropython = None  # MicropythonInfo: what the board runs
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
    from surepick.host import __version__
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
        from surepick.host.source_tree import PACKAGE
        r = subprocess.run(["git", "-C", str(PACKAGE), "describe", "--always", "--dirty"],
                           capture_output=True, text=True, timeout=5)
        return r.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


ARM_FILE = "/arm.json"


def deploy(port, source=False, src_root=None, progress=None, wait_hello=True, hello_timeout=15.0,
           connect_timeout=6, cache=True, force=False, rest_timeout=None, on_build=None, arm_json=None,
           replace_servo_settings=False):
    # -> Result. Raises DeployError with a message for the user, BoardBusy (a LinkError) when the
    # arm is busy and not `force` (or would not come to rest). When a link hub serves the port,
    # the deploy goes through the hub's raw console (the hub's other clients wait).
    # on_build(i, n, board path) before each file is built (compiling is the slow part of a
    # --no-cache deploy). arm_json: the arm description to ship as /arm.json (arms.files.
    # compact_json); None leaves the board's own /arm.json as it is.
    from surepick.host.link.hub_client import raw_console
    try:
        _check_idle(port, force, rest_timeout, progress or (lambda msg: None))
        with raw_console(port, "surepick deploy") as console:
            return _deploy(console, source, src_root, progress, wait_hello, hello_timeout,
                           connect_timeout, cache, on_build, arm_json, replace_servo_settings)
    except DeployError:
        raise
    except Exception as e:
        import serial
        from mpremote.transport import TransportError
        if isinstance(e, (serial.SerialException, TransportError, OSError)):
            raise DeployError("the link to %s failed mid-deploy: %s; run deploy again (files "
                              "already copied are kept, nothing is half-installed)" % (port, e)) from None
        raise


def _check_idle(port, force, rest_timeout, say):
    # Ask the firmware over the link, before anything interrupts it (mpremote's Ctrl-C and soft
    # reset would stop a job mid-air, and the reset turns the servo PWM off): a board in a state
    # where that would move, release or unpower the arm (a job, teleop, a part held, the arm away
    # from rest: host/board_state.py) is refused unless `force`, which aborts what runs and waits
    # until the arm is at rest (host/link/busy.py). No answer: no firmware, nothing to stop.
    from surepick.host.link import busy
    from surepick.host.link import hub_client
    from surepick.host.link.client import LinkClient
    from surepick.host.link.errors import LinkError
    try:
        client = LinkClient(port, hub=hub_client.USE, name="surepick deploy").open()
    except LinkError:
        return                   # connect() says why in a moment, in deploy's words
    try:
        st = busy.check_safe_to_stop(client, "deploying", force, rest_timeout or busy.REST_TIMEOUT_S, say,
                                     port=port)
        if st is None:
            say("no firmware answers on the link: nothing to interrupt")
    except busy.BoardBusy:
        raise
    except LinkError:
        return                   # the port is taken or went away: connect() says so
    finally:
        client.close()


def _deploy(port, source, src_root, progress, wait_hello, hello_timeout, connect_timeout, cache=True,
            on_build=None, arm_json=None, replace_servo_settings=False):
    from surepick.firmware import manifest
    say = progress or (lambda msg: None)
    t0 = time.monotonic()
    res = Result()
    target = RawReplBoard(port)
    target.connect(connect_timeout)
    try:
        info = target.info()
        res.micropython = info
        if info.impl != "micropython":
            raise DeployError("the board on %s runs %s, not MicroPython" % (port, info.impl))
        if info.version[:2] < MIN_MICROPYTHON:
            raise DeployError("the board runs MicroPython %s; surepick needs %d.%d or newer: update "
                              "it (https://micropython.org/download/RPI_PICO/)"
                              % ((info.version_text,) + MIN_MICROPYTHON))
        if not info.has_sha256:
            raise DeployError("the board's MicroPython has no hashlib.sha256; cannot compare files")
        say("board: MicroPython %s on %s, .mpy v%d.%d%s, %.1f KB free"
            % (info.version_text, info.board_text, info.mpy_major, info.mpy_minor,
               " " + info.march if info.march else "", info.free_bytes / 1024))
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
        config_new, config_moved = None, []
        if arm_json is not None:
            # the old servo settings in /config.json, settled before anything is written
            from surepick.host.deploy import servo_settings
            from surepick.shared_fsm import arm as arm_mod
            config_new, config_moved, err = servo_settings.plan(
                target.read_text(CONFIG_FILE), arm_mod.validate(json.loads(arm_json)), replace_servo_settings)
            if err:
                raise DeployError(err)
        bs = BuildStats()
        arts = build(src_root, source, exe, cache=cache, stats=bs, march=info.march, on_file=on_build)
        if arm_json is not None:
            arts = sorted(arts + [Artifact(ARM_FILE, arm_json.encode(), None)], key=lambda a: a.board_path)
        res.compiled, res.cached = bs.compiled, bs.cached
        say("built %d files (%s, %.1f KB%s)" % (
            len(arts), "source" if source else "mpy v%d.%d" % mpy, sum(a.size for a in arts) / 1024,
            "" if source else "; %d compiled, %d from the cache" % (bs.compiled, bs.cached)))
        dirs_on_board = manifest.board_dirs()
        paths = [a.board_path for a in arts]
        hashes, listing = target.hashes(paths + [MANIFEST], dirs_on_board + ["/"])
        old_manifest = None
        if hashes.get(MANIFEST):
            try:
                old_manifest = json.loads(target.read_text(MANIFEST) or "null")
            except ValueError:
                old_manifest = None
        changed = [a for a in arts if hashes.get(a.board_path) != a.sha256]
        res.unchanged = [a.board_path for a in arts if a not in changed]
        # Stale: deployed last time and no longer shipped, twins that shadow, leftover temps.
        stale = set(_twins(paths, listing))
        if old_manifest and isinstance(old_manifest.get("files"), dict):
            # the arm description stays until a deploy ships another (it is the board's, not the firmware's)
            stale |= {p for p in old_manifest["files"] if p not in paths and p != ARM_FILE and _on_board(p, listing)}
        for d, names in listing.items():
            stale |= {d.rstrip("/") + "/" + n for n in names or () if n.endswith(TEMP_SUFFIX)}
        stale = sorted(stale)
        manifest = manifest_for(arts, info, source, mpy)
        if config_new is not None:
            _settle_config(target, config_new, config_moved, say)
        if not changed and not stale and old_manifest and old_manifest.get("files") == manifest["files"]:
            say("nothing changed: all %d files on the board already match; nothing copied"
                % len(arts))
            return _finish(target, res, wait_hello, hello_timeout, say, t0)
        # Room for every temp file next to the old one, checked before anything is written.
        need = sum(_blocks(a.size, info.block_size) for a in changed) + _SLACK_BLOCKS
        if need > info.free_blocks:
            raise DeployError("not enough flash on the board: the changed files need about %.1f KB, "
                              "%.1f KB is free; delete files (mpremote fs rm) or deploy fewer"
                              % (need * info.block_size / 1024, info.free_bytes / 1024))
        target.mkdirs(dirs_on_board)
        total = sum(a.size for a in changed)
        done = 0
        for i, a in enumerate(changed):
            say("[%d/%d] %s (%.1f KB)" % (i + 1, len(changed), a.board_path, a.size / 1024))
            target.write(a.board_path + TEMP_SUFFIX, a.data)
            done += a.size
        temps = [a.board_path + TEMP_SUFFIX for a in changed]
        if temps:
            got, _ = target.hashes(temps, [])
            bad = [a.board_path for a in changed if got.get(a.board_path + TEMP_SUFFIX) != a.sha256]
            if bad:
                raise DeployError("files arrived damaged on the board: %s (nothing installed; "
                                  "run deploy again)" % ", ".join(bad))
        # The manifest goes first: while files are being swapped the board has none, so
        # nothing claims a version that is only half installed.
        target.install([(a.board_path + TEMP_SUFFIX, a.board_path) for a in changed], stale,
                      remove_first=[MANIFEST])
        target.write(MANIFEST + TEMP_SUFFIX, json.dumps(manifest, indent=1, sort_keys=True).encode())
        target.install([(MANIFEST + TEMP_SUFFIX, MANIFEST)], [])
        # Check what is now installed: every target holds its new content, no temp is left.
        after, _ = target.hashes(paths + temps, [])
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
        return _finish(target, res, wait_hello, hello_timeout, say, t0)
    finally:
        target.close()


def _settle_config(target, text, moved, say):
    # /config.json without the servo settings the description now holds: written beside it and
    # renamed over it (a power cut leaves the old file or the new one). Not a shipped file: the
    # manifest never lists it, so no later deploy takes it for stale.
    from surepick.host.deploy import servo_settings
    target.write(CONFIG_FILE + TEMP_SUFFIX, text.encode())
    target.install([(CONFIG_FILE + TEMP_SUFFIX, CONFIG_FILE)], [])
    say("config: took the old servo settings out of %s, the arm description holds them now: %s" % (
        CONFIG_FILE, ", ".join("%s = %s (%s = %s)" % (k, json.dumps(old), servo_settings.description_field(k),
                                                      json.dumps(want)) for k, old, want in moved)))


def _removed_text(removed):
    if not removed:
        return ""
    if len(removed) <= 4:
        return ", removed stale %s" % ", ".join(removed)
    return ", removed %d stale files (%s, ...)" % (len(removed), ", ".join(removed[:3]))


def _finish(target, res, wait_hello, hello_timeout, say, t0):
    # Entering the raw REPL stopped the firmware: always reset so it runs again.
    say("soft reset%s" % ("; waiting for the firmware's hello ..." if wait_hello else ""))
    t_reset = time.monotonic()
    hello, text = target.reset_and_wait_hello(hello_timeout if wait_hello else 0.3)
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
