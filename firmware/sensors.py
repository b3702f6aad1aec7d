# Input drivers: plain code over the HAL's read_u16 / read_pin, integer maths, no allocation
# in read(). Each is handed the HAL and its channel or pin (micropython-lib style), so the tests
# drive them with a stand-in object under the unix `micropython`.

from ..shared_fsm.compat import const, micropython

_FULL_SCALE = const(65535)
_VREF_MV = const(3300)

CURRENT_IDLE = const(0)
CURRENT_HOLDING = const(1)
CURRENT_STALL = const(2)


class Pot:
    # Gripper pot wiper on an ADC: filtered read_u16 counts (the shared machine converts them to
    # a jaw opening with pot_closed_counts / pot_counts_per_mm). First-order IIR in integers.
    def __init__(self, hal, adc, shift=2):
        self.hal = hal
        self.adc = adc
        self.shift = shift
        self.raw = 0
        self.value = -1            # -1: no reading yet; the first reading seeds the filter

    @micropython.native
    def read(self):
        r = self.hal.read_u16(self.adc)
        self.raw = r
        v = self.value
        if v < 0:
            v = r
        else:
            v += (r - v) >> self.shift
            if r > v and self.shift and (r - v) >> self.shift == 0:
                v += 1             # no dead zone: the filter reaches a constant input exactly
        self.value = v
        return v


class Current:
    # Gripper servo current through a shunt amplifier or an ACS712 on an ADC: mA after offset
    # calibration, filtered, with the holding and stall levels the app reports.
    def __init__(self, hal, adc, offset_counts, counts_per_a, shift=2, holding_ma=150, stall_ma=650):
        self.hal = hal
        self.adc = adc
        self.offset = offset_counts
        self.counts_per_a = counts_per_a
        self.shift = shift
        self.holding_ma = holding_ma
        self.stall_ma = stall_ma
        self.raw = 0
        self.filt = -1             # filtered counts
        self.ma = 0

    @micropython.native
    def read_ma(self):
        r = self.hal.read_u16(self.adc)
        self.raw = r
        f = self.filt
        if f < 0:
            f = r
        else:
            f += (r - f) >> self.shift
        self.filt = f
        self.ma = (f - self.offset) * 1000 // self.counts_per_a
        return self.ma

    def level(self):
        if self.ma >= self.stall_ma:
            return CURRENT_STALL
        if self.ma >= self.holding_ma:
            return CURRENT_HOLDING
        return CURRENT_IDLE

    def set_offset(self, counts):
        self.offset = counts


class Rail:
    # Servo rail through a resistive divider: mV. rail_mv = counts * 3300 * divider / 65535.
    def __init__(self, hal, adc, divider_milli=3000):
        self.hal = hal
        self.adc = adc
        self.scale = _VREF_MV * divider_milli // 1000   # mV at full scale
        self.mv = 0

    @micropython.native
    def read_mv(self):
        # 65535 * scale stays an RP2040 small int (< 2**30) for dividers up to 4.8; above, drop
        # 4 bits first (the ADC has 12 real bits anyway)
        r = self.hal.read_u16(self.adc)
        s = self.scale
        if s <= 16000:
            self.mv = r * s // _FULL_SCALE
        else:
            self.mv = (r >> 4) * s // (_FULL_SCALE >> 4)
        return self.mv


class Switch:
    # Active-low contact with a pull-up (finger microswitch, IR break-beam receiver): 1 when the
    # pin reads LOW. Debouncing belongs to the shared machine (it needs the raw bounce).
    def __init__(self, hal, gpio):
        self.hal = hal
        self.gpio = gpio
        self.value = 0

    @micropython.native
    def read(self):
        self.value = 1 - self.hal.read_pin(self.gpio)
        return self.value


class EStop:
    # Normally-closed e-stop to ground with a pull-up: HIGH means STOP, so a cut wire stops the
    # arm. Latched: one HIGH read trips it (no debounce on the safe side), and only reset()
    # clears it, and only after the contact has read closed for `reset_reads` reads in a row.
    def __init__(self, hal, gpio, reset_reads=3):
        self.hal = hal
        self.gpio = gpio
        self.reset_reads = reset_reads
        self.latched = 0
        self.closed_streak = 0
        self.trips = 0

    @micropython.native
    def read(self):
        if self.hal.read_pin(self.gpio):
            self.closed_streak = 0
            if not self.latched:
                self.latched = 1
                self.trips += 1
        elif self.closed_streak < self.reset_reads:
            self.closed_streak += 1
        return self.latched

    def reset(self):
        # -> True when released; False while the contact is still open (or not proven closed).
        if self.closed_streak >= self.reset_reads:
            self.latched = 0
        return not self.latched
