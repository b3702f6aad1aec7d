# The shared error classes must construct under MicroPython (no unbound ValueError.__init__ there).
import sys
sys.path.insert(0, sys.argv[1])
from shared_fsm import kinematics
from shared_fsm.config import Config, ConfigError
try:
    kinematics.inverse(400, 0, 10, -90)
except ValueError as e:
    print("ok", e.code, e)
try:
    Config({"grasp_dwell_ms": -1})
except ValueError as e:
    print("ok", e.field, e)
