# The virtual board's e-stop guard (firmware/hal/virtual.py, after Ctrl-C) against a stand-in
# bench (vboard_io, from the pytest side) whose exchange lets "REPL code" write a pulse while the
# plant is being asked, as the REPL's thread does during the socket wait. Prints the pulses the
# plant was given at each guard step and what the HAL reads back, as JSON, for pytest to judge.
import json

import vboard_io
from surepick.firmware.hal import virtual as h
from reference_pins import reference_pins


h.setup(reference_pins())
h.pwm_start([1500, 1400, 1300, 1200, 1100])
vboard_io.sent.clear()
vboard_io.repl_writes = True        # from now on a REPL write lands during every exchange
h._guard_step(5)                    # not pressed yet
vboard_io.estop = 1                 # pressed: the next exchange reads it
h._guard_step(5)
for i in range(3):                  # held: REPL code keeps writing, through the HAL too
    h.set_pulse_us(0, 1700 + i)
    h._guard_step(5)
print(json.dumps({"sent": vboard_io.sent, "read_back": [h.pulse_us(i) for i in range(5)]}))
