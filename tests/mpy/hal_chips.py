# The Pico HAL (firmware/hal/rp2040.py) under the real micropython binary, on a board that
# reports the machine string given on the command line: a stand-in `machine` (below, first on the
# path) records what the HAL touches, and `sys` answers with that machine string. Prints one JSON
# line: the addresses written through mem32 at setup() and at wdt_stop(), the pin ids the LED and
# the inputs were made on, and the ADC ids.
#   micropython tests/mpy/hal_chips.py "Raspberry Pi Pico2 with RP2350"
import json
import sys

_real_sys = sys


class _Impl:
    def __init__(self, machine):
        self.name = "micropython"
        self.version = _real_sys.implementation.version
        self._machine = machine
        self._mpy = _real_sys.implementation._mpy


class _Sys:
    def __init__(self, machine):
        self.implementation = _Impl(machine)

    def __getattr__(self, name):
        return getattr(_real_sys, name)


sys.modules["sys"] = _Sys(sys.argv[1])

import machine  # noqa: E402  (the stand-in written by the test)
from surepick.firmware.hal import rp2040 as hal  # noqa: E402
from reference_pins import reference_pins  # noqa: E402


hal.setup(reference_pins())
at_setup = list(machine.writes)
del machine.writes[:]
hal.wdt_stop()
print(json.dumps({"setup_writes": at_setup, "stop_writes": list(machine.writes),
                  "outputs": machine.outputs, "inputs": machine.inputs, "adcs": machine.adcs,
                  "chip": hal.BOARD.chip, "board": hal.BOARD.key}))
