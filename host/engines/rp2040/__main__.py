# python -m surepick.host.engines.rp2040: an emulated Pico on a pty or a loopback port until Ctrl-C.
import argparse
import signal
import sys
import threading

from surepick.host.engines.rp2040.chip import Chip, EmulatorError


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m surepick.host.engines.rp2040",
                                 description="Run the MicroPython RP2040 firmware in the rp2040js "
                                             "emulator and serve its USB serial port.")
    ap.add_argument("--uf2", help="firmware image (default: $SUREPICK_RP2040_UF2, then "
                                  "../shared/rp2040/firmware.uf2 next to the checkout)")
    ap.add_argument("--bootrom", help="RP2040 B1 bootrom, .bin or bootrom.mjs "
                                      "(default: $SUREPICK_RP2040_BOOTROM, then ../shared/rp2040/probe/)")
    ap.add_argument("--flash", help="whole-flash image to start from (the UF2 is written over it)")
    ap.add_argument("--save-flash", help="write the whole flash here on exit")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--pty", action="store_true", help="serve on a new pty instead of TCP")
    where.add_argument("--listen", default="127.0.0.1:0", help="loopback HOST:PORT (default: a free port)")
    ap.add_argument("--no-throttle", action="store_true",
                    help="let emulated time run ahead of the wall clock when the chip idles")
    ap.add_argument("--no-flash-timing", action="store_true",
                    help="do not charge flash erase/program times to the emulated clock")
    args = ap.parse_args(argv)
    try:
        chip = Chip(args.uf2, bootrom=args.bootrom, flash=args.flash, save_flash=args.save_flash,
                    pty=args.pty, listen=args.listen, throttle=not args.no_throttle,
                    flash_timing=not args.no_flash_timing,
                    log=lambda line: print(line, file=sys.stderr)).start()
    except EmulatorError as e:
        print("surepick-rp2040: %s" % e, file=sys.stderr)
        return 2
    usb = chip.stats()["usb_connected_at_ms"]
    print("surepick-rp2040: serving on %s (USB up at %.0f emulated ms)" % (chip.address, usb or 0),
          flush=True)
    listed = _list_in_registry(chip, args)    # `--port auto` finds it, like a virtual board
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    try:
        while not stop.wait(0.5):
            if not chip.running:
                print("surepick-rp2040: the engine stopped: %s" % chip.log_tail(3), file=sys.stderr)
                return 1
    finally:
        if listed is not None:
            listed.remove()
    chip.close()
    return 0


def _list_in_registry(chip, args):
    # The per-user board registry `surepick board` lists itself in (vboard/registry.py),
    # entry kind "emulated RP2040".
    from surepick.host.vboard.registry import Registration
    return Registration({"console": [chip.address], "kind": "emulated RP2040", "flash": args.flash})


if __name__ == "__main__":
    sys.exit(main())
