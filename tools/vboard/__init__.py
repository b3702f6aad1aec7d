# The virtual board: surepick's firmware files run by the real unix `micropython` binary and
# served on a pty or loopback TCP port so that mpremote and our tools see a Raspberry Pi Pico.
# Only the board HAL is replaced (override modules in hal_dir); see board.VirtualBoard.
from .board import (CRASH, DEFAULT_HAL_DIR, HARD, POWER_ON, PWRON_RESET, SOFT, WATCHDOG,
                    WDT_RESET, VirtualBoard)
from .interp import MicropythonNotFound, find_micropython
from .plant import make_plant_service

__all__ = [
    "VirtualBoard", "DEFAULT_HAL_DIR", "MicropythonNotFound", "find_micropython",
    "make_plant_service", "POWER_ON", "HARD", "WATCHDOG", "SOFT", "CRASH", "PWRON_RESET",
    "WDT_RESET",
]
