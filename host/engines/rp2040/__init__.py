# The emulated RP2040 engine: the real MicroPython RP2040 image in rp2040js (node/), driven from
# Python (chip.py). Protocol and usage: README.md in this folder.
from surepick.host.engines.rp2040.chip import Chip, EmulatorError, FirmwareMissing, find_uf2

__all__ = ["Chip", "EmulatorError", "FirmwareMissing", "find_uf2"]
