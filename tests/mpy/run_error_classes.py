# The shared error classes must construct under MicroPython (no unbound ValueError.__init__ there).
from surepick.shared_fsm import kinematics
from surepick.shared_fsm.config import Config
try:
    kinematics.inverse(400, 0, 10, -90)
except ValueError as e:
    print("ok", e.code, e)
try:
    Config({"grasp_dwell_ms": -1})
except ValueError as e:
    print("ok", e.field, e)
# An unreachable move planned on the board comes back as error_seq, not an exception.
from surepick.shared_fsm.motion import Motion
from surepick.shared_fsm.machine import Inputs, Outputs
mo = Motion(Config(), [0, 45000, -60000, -75000], 20000)
out = Outputs()
inp = Inputs()
out.x_um, out.y_um, out.z_um, out.pitch_mdeg = 400000, 0, 10000, -90000
out.move_seq = 1
mo.tick(0, out, inp)
print("ok motion error_seq=%d %s" % (inp.error_seq, mo.error_text[:24]))
