# Runs INSIDE the virtual board's `micropython`, never under CPython. A virtual board started as a
# given Pico model (`surepick board --model pico2`) reports what that board's MicroPython reports:
# its machine string (sys.implementation._machine; the unix port's built-in os takes no uname) and
# the native-code architecture in sys.implementation._mpy, so host tools (deploy, doctor) that
# identify the chip see that chip. It also stands in for the chip's peripheral registers behind machine.mem32: a
# write applies the block's atomic aliases (+0x1000 XOR, +0x2000 SET, +0x3000 CLR) and is told to
# the supervisor (a marker), which keeps the registers across soft resets as the chip does and
# lets a test see which address a tool wrote. sys.platform stays the unix port's: the firmware
# still runs on the virtual board's own HAL.
import sys as _sys

import vboard_settings as _vs

_PERIPHERALS = (0x40000000, 0x60000000)     # APB and AHB blocks: the ones with atomic aliases


class _Implementation:
    def __init__(self, real, machine, mpy):
        self.name = real.name
        self.version = real.version
        self._machine = machine
        self._mpy = mpy
        self._build = getattr(real, "_build", "")

    def __repr__(self):
        return "(name='%s', version=%r, _machine='%s', _mpy=%d)" % (self.name, self.version,
                                                                  self._machine, self._mpy)


class _Sys:
    # `import sys` answers with this one (sys.modules holds it): the model's implementation,
    # everything else the real module's.
    def __init__(self, real, implementation):
        self.implementation = implementation
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)


class Registers:
    # machine.mem32 for the model's chip: a register file, not the host's memory.
    def __init__(self, values):
        self.values = dict(values)

    def __getitem__(self, addr):
        lo, hi = _PERIPHERALS
        if lo <= addr < hi:
            addr &= ~0x3000
        return self.values.get(addr, 0)

    def __setitem__(self, addr, value):
        value &= 0xFFFFFFFF
        lo, hi = _PERIPHERALS
        reg, alias = addr, 0
        if lo <= addr < hi:
            reg, alias = addr & ~0x3000, addr & 0x3000
        old = self.values.get(reg, 0)
        if alias == 0x1000:
            new = old ^ value
        elif alias == 0x2000:
            new = old | value
        elif alias == 0x3000:
            new = old & ~value
        else:
            new = value
        self.values[reg] = new
        _sys.stdout.write("\x1b_vboard:reg:%x:%x\x1b\\" % (addr, value))


def install():
    # -> the Registers for machine.mem32, or None (no model: the unix port as it is).
    machine = getattr(_vs, "MACHINE", None)
    if not machine:
        return None
    impl = _Implementation(_sys.implementation, machine, _vs.MPY)
    _sys.modules["sys"] = _Sys(_sys, impl)
    return Registers(_vs.REGISTERS)
