"""The firmware's arm kinematics (shared_fsm/arm.py) on the emulated RP2040, per kind.

    .venv/bin/python tools/bench/arm_kinematics.py [--n N] [--uf2 FILE] [--tiny]

Copies shared_fsm/{compat,arm,arm_check}.py (compiled for armv6m, as deploy ships them) and the presets'
descriptions to the emulated chip (the real MicroPython RP2040 image in rp2040js,
engines/rp2040), then times there, with ticks_us in emulated microseconds (a Pico at 125 MHz):
validate() of each description once (the import of its checks, arm_check, timed apart), and N
calls each of forward() and inverse() at the bench's pick pose, each loop from a collected heap. IK and FK run when a move is planned (a straight move solves one IK every
line_step_um: a 60 mm descent is 13), never per tick; the figures say what one planning costs
against the 4 ms loop period.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from surepick.host.arms import presets                     # noqa: E402
from surepick.host.source_tree import PACKAGE               # noqa: E402
from surepick.host.engines.rp2040 import Chip               # noqa: E402
from surepick.host.deploy.artifacts import find_mpy_cross  # noqa: E402
from surepick.shared_fsm import arm as arm_mod         # noqa: E402

BIN = Path(sys.executable).parent
MPREMOTE = str(BIN / "mpremote") if (BIN / "mpremote").exists() else "mpremote"

SCRIPT = """
import json, time, gc
import sys
sys.path.append('/b')
from surepick.shared_fsm import arm as A
t = time.ticks_us()
from surepick.shared_fsm import arm_check   # validate() imports it once: timed apart from every arm
print('IMPORT', time.ticks_diff(time.ticks_us(), t))
descs = json.load(open('/b/arms.json'))


def loops(k, q, pose):
    # %(n)d calls of k.forward(q), then of k.inverse(*pose) -> their us. Each loop starts from a
    # just-collected heap, so what a GC costs while it runs depends on its own calls' floats, not
    # on what ran before it (without, the first arm timed read 1.7x slow).
    gc.collect()
    t = time.ticks_us()
    for i in range(%(n)d):
        k.forward(q)
    tf = time.ticks_diff(time.ticks_us(), t)
    gc.collect()
    t = time.ticks_us()
    for i in range(%(n)d):
        k.inverse(*pose)
    return tf, time.ticks_diff(time.ticks_us(), t)


for name in sorted(descs):
    d = descs[name]
    gc.collect()
    t = time.ticks_us()
    a = A.validate(d)
    tv = time.ticks_diff(time.ticks_us(), t)
    b = a.bench
    pose = (b['pad_x_mm'], b['pad_y_mm'], b['pad_top_mm'] + b['part_mm'] / 2.0, b['pitch_deg'])
    tf, ti = loops(a, a.inverse(*pose), pose)
    print('ROW', name, a.kind, tv, tf, ti)
try:
    from surepick.shared_fsm import kin_other as K
except ImportError:
    K = None
if K is not None:
    pose = (160.0, -60.0, 15.5, -90.0)
    tf, ti = loops(K, K.inverse(*pose), pose)
    print('ROW', 'other', 'module', 0, tf, ti)
"""


def mpremote(address, *args):
    proc = subprocess.run([MPREMOTE, "connect", address, *args], capture_output=True, text=True, timeout=600)
    if proc.returncode:
        raise RuntimeError("mpremote %s: %s" % (" ".join(args[:2]), (proc.stdout + proc.stderr).strip()[-600:]))
    return proc.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50, help="calls of each of forward and inverse per arm")
    ap.add_argument("--other", metavar="KINEMATICS.py",
                    help="also time this module's inverse()/forward() at the reference pick pose, in the same "
                    "run (e.g. an older checkout's shared_fsm/kinematics.py)")
    ap.add_argument("--uf2", help="the MicroPython RPI_PICO image (default as engines/rp2040 finds it)")
    ap.add_argument("--tiny", action="store_true", help="3 calls each: only shows that the script runs")
    args = ap.parse_args()
    if args.tiny:
        args.n = 3
    descs = {n: arm_mod.validate(presets.get(n)).to_dict() for n in presets.names()}
    exe = find_mpy_cross()
    with tempfile.TemporaryDirectory() as tmp, Chip(args.uf2, throttle=False) as chip:
        tmp = Path(tmp)
        (tmp / "arms.json").write_text(json.dumps(descs))
        mpremote(chip.address, "fs", "mkdir", ":/b")
        for d in (":/b/surepick", ":/b/surepick/shared_fsm"):
            mpremote(chip.address, "fs", "mkdir", d)
        (tmp / "__init__.py").write_text("")
        mpremote(chip.address, "fs", "cp", str(tmp / "__init__.py"), ":/b/surepick/__init__.py")
        mpremote(chip.address, "fs", "cp", str(tmp / "__init__.py"), ":/b/surepick/shared_fsm/__init__.py")
        mods = [("compat", PACKAGE / "shared_fsm" / "compat.py"),
                ("arm", PACKAGE / "shared_fsm" / "arm.py"),
                ("arm_check", PACKAGE / "shared_fsm" / "arm_check.py")]
        if args.other:
            mods.append(("kin_other", Path(args.other)))
        for mod, src in mods:
            out = tmp / (mod + ".mpy")
            subprocess.run([exe, "-march=armv6m", "-s", "shared_fsm/%s.py" % mod, "-o", str(out),
                            str(src)], check=True)
            mpremote(chip.address, "fs", "cp", str(out), ":/b/surepick/shared_fsm/%s.mpy" % mod)
        mpremote(chip.address, "fs", "cp", str(tmp / "arms.json"), ":/b/arms.json")
        (tmp / "run.py").write_text(SCRIPT % {"n": args.n})
        out = mpremote(chip.address, "run", str(tmp / "run.py"))
    print("arm kinematics on the emulated RP2040 (emulated us, 125 MHz), %d calls each:" % args.n)
    imports = [line.split()[1] for line in out.splitlines() if line.startswith("IMPORT")]
    if imports:
        print("  import arm_check (once, in the first validate on a board): %.1f ms" % (int(imports[0]) / 1000.0))
    print("  %-14s %-15s %12s %12s %12s" % ("arm", "kind", "validate", "forward", "inverse"))
    rows = [line.split()[1:] for line in out.splitlines() if line.startswith("ROW")]
    for name, kind, tv, tf, ti in rows:
        print("  %-14s %-15s %9.1f ms %9.0f us %9.0f us" % (name, kind, int(tv) / 1000.0, int(tf) / args.n,
                                                           int(ti) / args.n))
    if len(rows) != len(descs) + (1 if args.other else 0):
        print(out)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
