# The virtual board: surepick's firmware files run by the real unix `micropython` binary and
# served on a pty or loopback TCP port so that mpremote and our tools see a Raspberry Pi Pico.
# The firmware picks its virtual HAL itself (surepick.firmware.hal.virtual); a plant is attached
# by the caller (engines/vboard_world.py builds one for a scenario). See board.VirtualBoard.
from surepick.host.vboard.board import (CRASH, HARD, POWER_ON, PWRON_RESET, SOFT, WATCHDOG,
                                   WDT_RESET, VirtualBoard)
from surepick.host.vboard.interp import MicropythonNotFound, find_micropython

__all__ = [
    "VirtualBoard", "MicropythonNotFound", "find_micropython", "POWER_ON", "HARD", "WATCHDOG",
    "SOFT", "CRASH", "PWRON_RESET", "WDT_RESET",
]
