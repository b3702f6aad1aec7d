# Two firmware details under the unix `micropython`:
#  1. framewriter.FrameWriter writes exactly the bytes of shared_fsm.link.encode() (TELEMETRY,
#     EVENT, FAULT frames with random in-range integers, negative and zero included), field by
#     field with add() and all at once from an int array with add_ints().
#  2. Ctrl-C (KeyboardInterrupt) in the middle of a job stops App.run with the servos holding
#     their last pulses (none goes to 0, the gripper does not open), the pose and the log saved,
#     the watchdog stopped, the e-stop guarded, and the exception passed on so mpremote gets the
#     REPL.
#   micropython tests/mpy/fw_misc.py FLASH_DIR
import os
import sys
from array import array

from surepick.shared_fsm import link, fake_scenarios
from surepick.shared_fsm.config import Config
from surepick.firmware.framewriter import FrameWriter
from surepick.firmware.hal.scripted import ScriptedHal

from surepick.firmware import app as app_mod
from checks import check, finish, result

FLASH = sys.argv[1]
seed = [12345]


def rnd(lo, hi):
    seed[0] = (seed[0] * 1103515245 + 12345) & 0x7FFFFFFF
    span = hi - lo + 1
    return lo + (seed[0] * 65537 + (seed[0] >> 7)) % span


w = FrameWriter()
same = 0
same_ints = 0
for n in range(600):
    ftype = (link.T_TELEMETRY, link.T_EVENT, link.T_FAULT)[n % 3]
    kinds = link.SCHEMA[ftype][2]
    vals = []
    for k in kinds:
        lo, hi = link.KIND_LO[k], link.KIND_HI[k]
        r = rnd(0, 9)
        vals.append(lo if r == 0 else (hi if r == 1 else (0 if r == 2 and lo <= 0 else rnd(lo, hi))))
    ref = link.encode(ftype, tuple(vals))
    w.begin(ftype)
    for v in vals:
        w.add(v)
    got = bytes(w.finish())
    if got == ref:
        same += 1
    else:
        check(False, "frame differs: %r vs %r" % (got, ref))
    # the same fields from an int array in one add_ints() call (how an EVENT record goes out)
    w.begin(ftype)
    w.add_ints(array("i", vals), len(vals))
    got = bytes(w.finish())
    if got == ref:
        same_ints += 1
    else:
        check(False, "add_ints frame differs: %r vs %r" % (got, ref))
result("frames_identical", same)
result("ints_identical", same_ints)

# ---- Ctrl-C mid-job ----
hal = ScriptedHal(Config(), {})
a = app_mod.App(hal, root=FLASH)
hal.out = a.m.out
st = {"n": 0, "pulses": None, "state": -1}


def on_tick(h):
    st["n"] += 1
    if st["n"] == 40:
        h.send(link.job(3, fake_scenarios.PICK, fake_scenarios.PLACE, 25000))
    if a.m.state == 6 and st["pulses"] is None:      # TRANSFER: carrying the part
        st["pulses"] = list(h.pulses)
        st["state"] = a.m.state
        raise KeyboardInterrupt


hal.on_tick = on_tick
got = 0
try:
    a.run()
except KeyboardInterrupt:
    got = 1
check(got == 1, "KeyboardInterrupt passed on")
check(st["pulses"] is not None and hal.pulses == st["pulses"], "pulses unchanged by Ctrl-C")
check(0 not in hal.pulses, "no servo went limp: %s" % hal.pulses)
check("rest.json" in os.listdir(FLASH), "pose saved at shutdown")
check("job.json" in os.listdir(FLASH), "the marker stays: the cycle was interrupted")
check(a.log.pending == 0, "log committed at shutdown")
check(hal.wdt_stopped == 1, "the watchdog stopped at Ctrl-C (no loop left to watch)")
check(hal.estop_guarded == 1, "the e-stop guarded at the REPL")
finish()
