# For the pytest side: a stand-in for the rp2 port's `machine` module, as far as
# firmware/hal/rp2040.py touches it at import, in setup(), wdt_stop() and reset_cause(), for
# running that HAL under the unix `micropython` (whose own `machine` lacks these). It records
# the mem32 writes, which pin ids were made outputs and inputs and which ADCs were opened; a
# script sets `cause` to choose what reset_cause() answers. stand_in_dir() writes it where
# tests/support/mpy.py's path_first puts it ahead of everything.
SOURCE = """\
writes = []
outputs = []
inputs = []
adcs = []
PWRON_RESET = 1
WDT_RESET = 3
SOFT_RESET = 5
HARD_RESET = 6
cause = PWRON_RESET


class _Mem:
    def __setitem__(self, addr, value):
        writes.append([addr, value])


mem32 = _Mem()


class Pin:
    IN = 0
    OUT = 1
    PULL_UP = 1
    IRQ_RISING = 8

    def __init__(self, pin, mode=-1, pull=-1):
        (outputs if mode == Pin.OUT else inputs).append(pin)

    def value(self, v=None):
        return 1


class ADC:
    def __init__(self, pin):
        adcs.append(pin)

    def read_u16(self):
        return 0


def reset_cause():
    return cause
"""


def stand_in_dir(tmp_path):
    """A folder holding the stand-in machine.py (made once per tmp_path)."""
    d = tmp_path / "machine_stand_in"
    d.mkdir(exist_ok=True)
    (d / "machine.py").write_text(SOURCE)
    return d
