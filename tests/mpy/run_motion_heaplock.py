# Motion.tick() under micropython.heap_lock(): planning a move may allocate (once per move),
# advancing it every tick must not.  micropython tests/mpy/run_motion_heaplock.py
import sys

import micropython
from surepick.shared_fsm.config import Config
from surepick.shared_fsm.machine import Inputs, Outputs, MOVE_LINE, MOVE_FREE
from surepick.shared_fsm.motion import Motion
from surepick.shared_fsm import kinematics

q = [0, 0, 0, 0]
kinematics.inverse_mdeg(160000, -60000, 12500, -90000, q)
m = Motion(Config(), q, 20000)
out = Outputs()
inp = Inputs()
now = (1 << 30) - 2000
ticks = 0
for kind, z in ((MOVE_LINE, 72500), (MOVE_FREE, 80000)):
    out.move_kind = kind
    out.x_um, out.y_um, out.z_um, out.pitch_mdeg = (160000, -60000, z, -90000) if kind == MOVE_LINE else (150000, 80000, z, -90000)
    out.jaw_um = 40000
    out.move_seq += 1
    m.tick(now, out, inp)  # plans the move (may allocate)
    now = (now + 2) & ((1 << 30) - 1)
    while inp.arrived_seq != out.move_seq:
        micropython.heap_lock()
        try:
            m.tick(now, out, inp)
        except MemoryError:
            micropython.heap_unlock()
            print("HEAP-ALLOCATION in Motion.tick")
            sys.exit(3)
        micropython.heap_unlock()
        now = (now + 2) & ((1 << 30) - 1)
        ticks += 1
print("OK ticks=%d joints=%s jaw=%d" % (ticks, list(m.joints), m.jaw_um))
