# `surepick install-micropython --board B [--drive DIR] [--uf2 FILE --sha256 HEX]`: MicroPython onto
# a Pico in BOOTSEL mode (host/micropython_install.py does the work).
from surepick.host.user_error import OK

HELP = """\
A Pico held in BOOTSEL mode while it is plugged in shows a USB drive: RPI-RP2 (Pico, Pico W) or
RP2350 (Pico 2, Pico 2 W). This copies the MicroPython image pinned for --board onto that drive
(found where the system mounts drives, or --drive FOLDER); the board flashes it and restarts into
MicroPython, then `surepick deploy` puts the firmware on it. The image is downloaded once into the
user cache and copied only when its SHA256 is the pinned one and its UF2 blocks are for the
drive's chip: on any mismatch nothing is copied. The drive cannot tell a W board from the plain one
of the same chip: say which you have (a W board's LED is on its radio chip and needs its image).

--uf2 FILE copies an image you downloaded yourself, checked against --sha256 (or the pinned
checksum). The pinned table is host/micropython_images.json ($SUREPICK_MICROPYTHON_IMAGES
names another one)."""


def add_arguments(parser):
    import argparse
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (parser.description or "") + "\n\n" + HELP
    parser.add_argument("--board", required=True, choices=("pico", "pico_w", "pico2", "pico2_w"),
                        help="the board you have")
    parser.add_argument("--drive", metavar="FOLDER", help="where the boot drive is mounted (default: found)")
    parser.add_argument("--uf2", metavar="FILE", help="a local MicroPython image instead of the pinned download")
    parser.add_argument("--sha256", metavar="HEX", help="the checksum --uf2 must have (default: the pinned one)")


def run(args):
    from surepick.host.micropython_install import install
    from surepick.host.cli.progress import Status

    with Status("install-micropython") as status:
        def progress(got, total):
            status.update("downloading %.0f KB%s" % (got / 1024, " of %.0f KB" % (total / 1024) if total else ""))

        def say(msg):
            status.close()
            print(msg, flush=True)
        res = install(args.board, drive=args.drive, uf2=args.uf2, sha256=args.sha256, say=say,
                      progress=progress)          # an InstallError is a failure (exit 1)
    print("MicroPython %s for %s copied onto %s: the board flashes it and restarts (its drive goes "
          "away); then `surepick deploy --port auto`" % (res.version or "", res.board, res.drive.path), flush=True)
    return OK
