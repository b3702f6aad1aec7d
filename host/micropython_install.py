# MicroPython onto a Pico in BOOTSEL mode: the pinned image for the board (micropython_images.json:
# URL and SHA256 per board, data, not code), downloaded once into the user cache by one function
# (download), checked (its SHA256, and that its UF2 blocks are for the drive's chip) and copied
# onto the boot drive, which flashes it and restarts the board. Nothing is copied unless every
# check passed. Host only.
import hashlib
import json
import os
import re
from pathlib import Path

from surepick.host import bootsel
from surepick.host.source_tree import package_file
from surepick.host.user_error import Failure

IMAGES_ENV = "SUREPICK_MICROPYTHON_IMAGES"     # another table (a mirror, a test)
CACHE_ENV = "SUREPICK_UF2_CACHE"
DEFAULT_TABLE = package_file("host", "micropython_images.json")


class InstallError(Failure):
    pass


def load_table(path=None):
    # -> (table dict, its path). Every entry checked: a bad table is one clear line.
    p = Path(path or os.environ.get(IMAGES_ENV) or DEFAULT_TABLE)
    try:
        t = json.loads(p.read_text())
        images = t["images"]
        for board, e in images.items():
            if e.get("chip") not in bootsel.CHIP_FAMILIES:
                raise ValueError("%s: chip must be one of %s" % (board, ", ".join(bootsel.CHIP_FAMILIES)))
            if not isinstance(e.get("url"), str) or not e["url"]:
                raise ValueError("%s: url must be a non-empty string" % board)
            h = e.get("sha256")
            if h is not None and not re.fullmatch(r"[0-9a-f]{64}", str(h)):
                raise ValueError("%s: sha256 must be 64 lower-case hex digits or null" % board)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise InstallError("the MicroPython image table %s is unusable: %s" % (p, e)) from None
    return t, p


def cache_dir():
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    import platformdirs
    return Path(platformdirs.user_cache_dir("surepick", appauthor=False)) / "micropython"


def download(url, dest, progress=None):
    # The one function that reaches the network: url -> dest (written whole, then renamed).
    # progress(bytes so far, total or None).
    import urllib.error
    import urllib.request
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as r, open(tmp, "wb") as f:
            total = r.headers.get("Content-Length") if hasattr(r, "headers") else None
            total = int(total) if total and str(total).isdigit() else None
            got = 0
            while True:
                chunk = r.read(65536)
                if not chunk:
                    break
                f.write(chunk)
                got += len(chunk)
                if progress:
                    progress(got, total)
        os.replace(tmp, dest)
    except (urllib.error.URLError, OSError, ValueError) as e:
        tmp.unlink(missing_ok=True)
        raise InstallError("cannot download %s: %s" % (url, getattr(e, "reason", None) or e)) from None
    return dest


def sha256_of(data):
    return hashlib.sha256(data).hexdigest()


def pick_drive(drive=None):
    # -> the bootsel.Drive to flash: the folder given, or the one mounted
    if drive is not None:
        d = bootsel.drive_at(drive)
        if d is None:
            raise InstallError("%s is not a Pico's boot drive (no INFO_UF2.TXT naming RPI-RP2 or RP2350): "
                               "hold BOOTSEL while you plug the Pico in, and give the folder it is mounted at"
                               % drive)
        return d
    found = bootsel.find_drives()
    if not found:
        raise InstallError("no Pico in BOOTSEL mode is mounted: hold its BOOTSEL button while you plug it in "
                           "(an RPI-RP2 or RP2350 drive appears), then run this again, or give --drive FOLDER")
    if len(found) > 1:
        raise InstallError("several Picos are in BOOTSEL mode (%s): choose one with --drive"
                           % ", ".join(str(d.path) for d in found))
    return found[0]


class Result:
    def __init__(self, drive, board, path, sha256, version, source):
        self.drive = drive
        self.board = board
        self.path = path           # the file written on the drive
        self.sha256 = sha256
        self.version = version
        self.source = source       # where the image came from (a URL, the cache, a file)


def install(board, drive=None, uf2=None, sha256=None, table=None, say=None, progress=None):
    # Copy MicroPython for `board` (a key of the table: pico, pico_w, pico2, pico2_w) onto the boot
    # drive. uf2: a local image instead of the pinned download; sha256: the checksum it must have
    # (default: the table's). Raises InstallError, with nothing copied, on any mismatch.
    say = say or (lambda msg: None)
    t, table_path = load_table(table)
    images = t["images"]
    if board not in images:
        raise InstallError("no MicroPython image for board %r in %s (boards: %s)"
                           % (board, table_path, ", ".join(sorted(images))))
    entry = images[board]
    d = pick_drive(drive)
    if d.chip != entry["chip"]:
        raise InstallError("--board %s is an %s board, but the drive at %s is an %s's (%s): choose the board "
                           "you have" % (board, entry["chip"], d.path, d.chip, d.board_id))
    want = (sha256 or entry.get("sha256") or "").lower() or None
    if sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", want):
        raise InstallError("--sha256 must be 64 hex digits")
    if uf2 is not None:
        try:
            data = Path(uf2).read_bytes()
        except OSError as e:
            raise InstallError("cannot read %s: %s" % (uf2, e.strerror or e)) from None
        source = str(uf2)
        if want is None:
            raise InstallError("no checksum to check %s against: this surepick pins none for %s; give "
                               "--sha256 of the image you trust" % (uf2, board))
    else:
        if want is None:
            raise InstallError("this surepick pins no checksum for the %s image (%s): download it yourself, "
                               "check it, and run again with --uf2 FILE --sha256 HEX" % (board, entry["url"]))
        data, source = _pinned_image(entry, want, say, progress)
    got = sha256_of(data)
    if got != want:
        raise InstallError("checksum mismatch: %s has SHA256 %s, expected %s; nothing was copied"
                           % (source, got, want))
    try:
        bootsel.check_image_for(d.chip, data)
    except bootsel.Uf2Error as e:
        raise InstallError("%s: %s; nothing was copied" % (source, e)) from None
    name = Path(entry["url"]).name if uf2 is None else Path(uf2).name
    target = d.path / name
    say("copying %s (%.0f KB, SHA256 %s...) onto %s" % (name, len(data) / 1024, got[:16], d.text))
    _copy_onto(target, data, d)
    return Result(d, board, target, got, t.get("micropython"), source)


def _pinned_image(entry, want, say, progress):
    # -> (bytes, where from): the cached download when its checksum holds, else a new download
    cached = cache_dir() / Path(entry["url"]).name
    try:
        data = cached.read_bytes()
        if sha256_of(data) == want:
            return data, "%s (cached)" % cached
        cached.unlink()                      # damaged or stale: fetch it again
    except OSError:
        pass
    say("downloading %s" % entry["url"])
    download(entry["url"], cached, progress)
    data = cached.read_bytes()
    if sha256_of(data) != want:
        cached.unlink(missing_ok=True)       # never keep an image that failed its check
    return data, entry["url"]


def _copy_onto(target, data, drive):
    # The boot ROM flashes the blocks as they arrive and restarts the board after the last one:
    # the drive may vanish before the file is closed, which is how a good copy ends.
    try:
        with open(target, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        if bootsel.drive_at(drive.path) is None:
            return
        raise InstallError("copying onto %s failed: %s" % (drive.path, e.strerror or e)) from None
