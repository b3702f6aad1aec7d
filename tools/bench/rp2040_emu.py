"""Emulation speed of the emulated RP2040 (host/engines/rp2040): the real MicroPython image in
rp2040js.

    .venv/bin/python tools/bench/rp2040_emu.py [--tiny] [--json FILE] [--uf2 FILE]

Reports, on this host:
  boot      emulated ms until the USB-CDC port enumerates, host wall and engine CPU seconds
  idle      host seconds per emulated second with the chip at its REPL prompt (lockstep, so the
            throttle does not hide the cost)
  busy      the same while a Python busy loop runs on the chip
  lockstep  host microseconds per 2 ms lockstep step at idle (one side-channel round trip)
  range     `for i in range(N): pass` in a function, timed on the chip with ticks_us (the probe
            in ../shared/rp2040 measured 310 ms for N = 100,000)
  mpremote  wall seconds of `mpremote connect ... exec "print(1+1)"` over the socket and the pty,
            `fs cp` and `fs cat` of a 4 KiB file (medians)
CPU figures are the engine process's own (process.cpuUsage), so they hold on a loaded host; wall
figures do not. --tiny runs each part briefly once, without the pty (what the tests run).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from surepick.host.engines.rp2040 import Chip, EmulatorError

BIN = Path(sys.executable).parent
MPREMOTE = str(BIN / "mpremote") if (BIN / "mpremote").exists() else "mpremote"

RANGE = ("import time\n"
         "def f(n):\n"
         "    for i in range(n):\n"
         "        pass\n"
         "t = time.ticks_us()\n"
         "f(%d)\n"
         "print(time.ticks_diff(time.ticks_us(), t))\n")

BUSY = ("def busy():\n"
        "    global n\n"
        "    n = 0\n"
        "    while True:\n"
        "        n += 1\n"
        "busy()\n")


def mpremote(address, *args):
    t = time.perf_counter()
    proc = subprocess.run([MPREMOTE, "connect", address, *args], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode:
        raise RuntimeError("mpremote %s: %s" % (" ".join(args), proc.stderr.strip()[-300:]))
    return time.perf_counter() - t, proc.stdout


def timed_run(chip, ms):
    s0 = chip.stats()
    w = time.perf_counter()
    chip.run(ms=ms)
    wall = time.perf_counter() - w
    s1 = chip.stats()
    emu = s1["emulated_s"] - s0["emulated_s"]
    cpu = s1["host_cpu_s"] - s0["host_cpu_s"]
    instr = s1["instructions"] - s0["instructions"]
    return {"emulated_s": round(emu, 4), "host_wall_s": round(wall, 3), "host_cpu_s": round(cpu, 3),
            "host_cpu_s_per_emulated_s": round(cpu / emu, 3),
            "host_wall_s_per_emulated_s": round(wall / emu, 3),
            "m_instructions_per_cpu_s": round(instr / cpu / 1e6, 2) if cpu else None}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="short runs, one repetition (for tests)")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--uf2", help="firmware image (default: as the engine finds it)")
    args = ap.parse_args(argv)
    run_ms = 200 if args.tiny else 3000
    reps = 1 if args.tiny else 5
    steps = 50 if args.tiny else 1000
    res = {"tiny": args.tiny}

    try:
        chip = Chip(args.uf2, throttle=False)
    except EmulatorError as e:
        print("rp2040_emu: %s" % e, file=sys.stderr)
        return 2
    w = time.perf_counter()
    chip.start()
    st = chip.stats()
    res["boot"] = {"usb_emulated_ms": round(st["usb_connected_at_ms"], 1),
                   "host_wall_s": round(time.perf_counter() - w, 2),
                   "engine_cpu_s": round(st["host_cpu_s"], 2)}
    try:
        # Idle at the REPL prompt (after a first mpremote exchange has settled the port).
        mpremote(chip.address, "exec", "print(1)")
        chip.lockstep(True)
        res["idle"] = timed_run(chip, run_ms)
        t = time.perf_counter()
        for _ in range(steps):
            chip.run(ms=2, pins={14: 0}, adc={0: 2000})
        res["lockstep"] = {"steps": steps,
                           "host_us_per_2ms_step": round((time.perf_counter() - t) / steps * 1e6, 1)}
        chip.lockstep(False)

        # mpremote over the socket, then over the pty
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "blob.txt"
            src.write_bytes(os.urandom(2048).hex().encode())
            res["mpremote"] = {"exec_socket_s": round(statistics.median(
                mpremote(chip.address, "exec", "print(1+1)")[0] for _ in range(reps)), 2)}
            res["mpremote"]["fs_cp_4k_s"] = round(statistics.median(
                mpremote(chip.address, "fs", "cp", str(src), ":blob.txt")[0] for _ in range(reps)), 2)
            res["mpremote"]["fs_cat_4k_s"] = round(statistics.median(
                mpremote(chip.address, "fs", "cat", ":blob.txt")[0] for _ in range(reps)), 2)

        n = 10000 if args.tiny else 100000
        res["range"] = {"n": n, "emulated_ms": int(mpremote(chip.address, "exec", RANGE % n)[1]) / 1000}

        # A busy Python loop: started without waiting, measured in lockstep, counted on the chip.
        mpremote(chip.address, "exec", "--no-follow", BUSY)
        time.sleep(0.2)
        chip.lockstep(True)
        res["busy"] = timed_run(chip, run_ms)
        chip.lockstep(False)
    finally:
        final = chip.close()
    if not args.tiny:  # a second chip, served on a pty
        with Chip(args.uf2, pty=True) as chip:
            mpremote(chip.address, "exec", "print(1)")
            res["mpremote"]["exec_pty_s"] = round(statistics.median(
                mpremote(chip.address, "exec", "print(1+1)")[0] for _ in range(reps)), 2)
    res["engine_report"] = final

    b, i, u = res["boot"], res["idle"], res["busy"]
    print("emulated RP2040 (rp2040js, MicroPython v1.28.0), %s" % ("tiny run" if args.tiny else "full run"))
    print("  boot to USB enumerated: %.1f emulated ms; %.2f s host wall, %.2f s engine CPU (incl. Node start)"
          % (b["usb_emulated_ms"], b["host_wall_s"], b["engine_cpu_s"]))
    for name, r in (("idle REPL", i), ("busy loop", u)):
        print("  %-10s %.4f host CPU s (%.4f wall s) per emulated s over %.2f emulated s; %s M instr/CPU s"
              % (name, r["host_cpu_s_per_emulated_s"], r["host_wall_s_per_emulated_s"], r["emulated_s"],
                 r["m_instructions_per_cpu_s"]))
    print("  lockstep: %.0f host us per 2 ms step (%d steps, idle chip)"
          % (res["lockstep"]["host_us_per_2ms_step"], steps))
    print("  for i in range(%d): pass  -> %.1f emulated ms on the chip" % (res["range"]["n"], res["range"]["emulated_ms"]))
    m = res["mpremote"]
    print("  mpremote exec: %.2f s socket, %s pty; fs cp 4 KiB %.2f s, fs cat %.2f s (medians of %d)"
          % (m["exec_socket_s"], "%.2f s" % m["exec_pty_s"] if "exec_pty_s" in m else "(not run)",
             m["fs_cp_4k_s"], m["fs_cat_4k_s"], reps))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
