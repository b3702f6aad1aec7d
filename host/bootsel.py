# A Pico held in BOOTSEL mode: its boot ROM shows a USB drive (RPI-RP2 for an RP2040, RP2350 for
# an RP2350) with an INFO_UF2.TXT whose "Board-ID:" line names the chip, and flashes whatever UF2
# file is copied onto it. This module finds such drives where operating systems mount them, says
# which chip each belongs to, and reads a UF2 file's blocks (the UF2 format: microsoft/uf2
# README.md; family ids: microsoft/uf2 utils/uf2families.json, also pico-sdk's picotool).
# Host only.
import os
import struct
from pathlib import Path

INFO_FILE = "INFO_UF2.TXT"
ROOTS_ENV = "SUREPICK_BOOTSEL_ROOTS"     # extra folders whose subfolders may be drives (os.pathsep list)

# Board-ID of the boot ROM's drive -> the chip
BOARD_IDS = {"RPI-RP2": "RP2040", "RP2350": "RP2350"}

# UF2 family ids: what each chip's boot ROM accepts. The RP2350 takes ARM and RISC-V images, and
# "absolute" blocks (a block pico-sdk 2.x puts first in an RP2350 image, erratum RP2350-E10).
FAMILY_RP2040 = 0xE48BFF56
FAMILY_ABSOLUTE = 0xE48BFF57
FAMILY_RP2350_ARM_S = 0xE48BFF59
FAMILY_RP2350_RISCV = 0xE48BFF5A
CHIP_FAMILIES = {
    "RP2040": ({FAMILY_RP2040}, {FAMILY_RP2040}),
    "RP2350": ({FAMILY_RP2350_ARM_S, FAMILY_RP2350_RISCV}, {FAMILY_ABSOLUTE, FAMILY_RP2350_ARM_S, FAMILY_RP2350_RISCV}),
}   # chip -> (families one of which the image must carry, families it may carry)

_MAGIC0, _MAGIC1, _MAGIC_END = 0x0A324655, 0x9E5D5157, 0x0AB16F30
_FLAG_NOT_MAIN_FLASH = 0x00000001
_FLAG_FAMILY = 0x00002000
BLOCK = 512


class Drive:
    def __init__(self, path, board_id, model):
        self.path = Path(path)
        self.board_id = board_id
        self.model = model
        self.chip = BOARD_IDS.get(board_id)

    def __repr__(self):
        return "Drive(%s, %s)" % (self.path, self.board_id)

    @property
    def text(self):
        return "%s (the %s boot drive of an %s)" % (self.path, self.board_id, self.chip)


def read_info(folder):
    # -> {key: value} of the folder's INFO_UF2.TXT, or None when it has none
    try:
        text = (Path(folder) / INFO_FILE).read_text(errors="replace")
    except OSError:
        return None
    info = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            info[key.strip()] = value.strip()
    return info


def drive_at(folder):
    # -> a Drive when the folder is a Pico's boot drive (RPI-RP2 or RP2350), else None
    info = read_info(folder)
    if info is None or info.get("Board-ID") not in BOARD_IDS:
        return None
    return Drive(folder, info["Board-ID"], info.get("Model", ""))


def _candidates():
    # Folders where an operating system mounts a USB drive, and the mount points it lists.
    roots = [r for r in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if r]
    user = os.environ.get("USER") or os.environ.get("USERNAME") or ""
    roots += ["/media/" + user, "/run/media/" + user, "/media", "/mnt", "/Volumes"]
    seen = []
    for root in roots:
        try:
            for entry in os.scandir(root):
                if entry.is_dir() and entry.path not in seen:
                    seen.append(entry.path)
        except OSError:
            continue
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 2 and parts[2] in ("vfat", "msdos", "fuseblk"):
                    p = parts[1].replace("\\040", " ")
                    if p not in seen:
                        seen.append(p)
    except OSError:
        pass
    if os.name == "nt":
        seen += ["%s:\\" % c for c in "DEFGHIJKLMNOPQRSTUVWXYZ"]
    return seen


def find_drives():
    # -> [Drive] of every Pico boot drive mounted now
    out = []
    for folder in _candidates():
        d = drive_at(folder)
        if d is not None:
            out.append(d)
    return out


def note():
    # One sentence for an error about a board that does not answer, when a boot drive is mounted
    # (the board is in BOOTSEL mode, so no MicroPython runs); "" when none is.
    drives = find_drives()
    if not drives:
        return ""
    d = drives[0]
    plain, wireless = ("pico", "pico_w") if d.chip == "RP2040" else ("pico2", "pico2_w")
    more = " (and %d more)" % (len(drives) - 1) if len(drives) > 1 else ""
    return ("a Pico in BOOTSEL mode is mounted at %s%s: it runs no MicroPython until one is copied "
            "onto it: `surepick install-micropython --board %s --drive %s` (--board %s for a W board)"
            % (d.text, more, plain, d.path, wireless))


class Uf2Error(ValueError):
    pass


def uf2_families(data):
    # -> {family id: number of blocks} of a UF2 image; raises Uf2Error for anything that is not
    # one whole UF2 file (wrong size, bad magic, a block missing).
    if not data or len(data) % BLOCK:
        raise Uf2Error("not a UF2 file: %d bytes is not a whole number of 512-byte blocks" % len(data))
    families = {}
    counted = {}
    for i in range(0, len(data), BLOCK):
        m0, m1, flags, _addr, size, block_no, blocks, family = struct.unpack_from("<8I", data, i)
        end, = struct.unpack_from("<I", data, i + BLOCK - 4)
        if m0 != _MAGIC0 or m1 != _MAGIC1 or end != _MAGIC_END:
            raise Uf2Error("not a UF2 file: block %d has no UF2 magic numbers" % (i // BLOCK))
        if size > 476 or block_no >= blocks:
            raise Uf2Error("a damaged UF2 file: block %d says %d bytes, number %d of %d"
                           % (i // BLOCK, size, block_no, blocks))
        if flags & _FLAG_NOT_MAIN_FLASH:
            continue
        fam = family if flags & _FLAG_FAMILY else None
        families[fam] = families.get(fam, 0) + 1
        counted.setdefault((fam, blocks), set()).add(block_no)
    for (fam, blocks), numbers in counted.items():
        if len(numbers) != blocks:
            raise Uf2Error("an incomplete UF2 file: %d of the %d blocks of family %s"
                           % (len(numbers), blocks, "0x%08x" % fam if fam is not None else "(none)"))
    return families


def check_image_for(chip, data):
    # Raises Uf2Error unless the UF2 image is one the chip's boot ROM takes as its program.
    families = set(uf2_families(data))
    need, allowed = CHIP_FAMILIES[chip]
    stray = families - allowed
    if stray or not families & need:
        others = [c for c, (n, _) in CHIP_FAMILIES.items() if families & n]
        raise Uf2Error("this UF2 image is for %s, not for the %s this drive belongs to"
                       % (others[0] if others else "another chip (families %s)"
                          % ", ".join("0x%08x" % f if f is not None else "none" for f in sorted(families, key=str)),
                          chip))
