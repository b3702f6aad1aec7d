# RUN's schema on a board (link.load_run_frame): the firmware's main loop under `micropython` with
# the scripted stand-in HAL; a RUN_STATUS, then a RUN (built by the host, hex in argv[2]) that the
# board refuses with E_BAD_VALUE "grid". Prints "RESULT name value" and "REPLY rid code payload".
#   micropython tests/mpy/fw_run_frame.py FLASH_DIR RUN_HEX
import sys

from surepick.shared_fsm import link, fake_scenarios
from surepick.shared_fsm.config import Config
from surepick.firmware.hal.scripted import ScriptedHal, StopRun
from surepick.firmware import app as app_mod
from checks import result

flash = sys.argv[1]
run_frame = bytes([int(sys.argv[2][i:i + 2], 16) for i in range(0, len(sys.argv[2]), 2)])
spec = fake_scenarios.find("nominal")
hal = ScriptedHal(Config(spec[2]), spec[1])
a = app_mod.App(hal, root=flash)
hal.out = a.m.out


def on_tick(h):
    if h.ticks == 40:
        result("schema_at_boot", 1 if link.T_RUN in link.SCHEMA else 0)
        h.send(link.request(link.T_RUN_STATUS, 3))
    elif h.ticks == 80:
        result("schema_after_status", 1 if link.T_RUN in link.SCHEMA else 0)
        h.send(run_frame)
    elif h.ticks == 120:
        result("schema_after_run", 1 if link.T_RUN in link.SCHEMA else 0)
        result("production_loaded", 1 if "surepick.firmware.production" in sys.modules else 0)
        raise StopRun()


hal.run_app(a, on_tick)
for ftype, fields in hal.frames():
    if ftype == link.T_REPLY:
        print("REPLY", fields[0], fields[1], " ".join([str(v) for v in fields[2:]]))
