# The in-process simulator's board HAL (host only, never shipped): the controller's pins over a
# simulated world, with the virtual board's timing. Every input is sampled once per period (one
# read of every channel, as one lockstep exchange carries them, so the plant's per-channel noise
# streams advance exactly as they do for the virtual board); the PWM pulses reach the world when
# time moves on; before pwm_start the world's servos keep whatever pulses they had (a board that
# has not started its PWM does not drive them). The clock is the world's: ticks_ms() is plant
# time, sleep_ms() moves it on.
#
# world: anything with now_ms, read_inputs() -> (pot, current, rail read_u16 counts, e-stop,
# switch, beam pin levels) and exchange(pulses or None, state or None, advance_ms) -> a
# controller reset or None (sim/world.py World; engines/vboard.py's recorded world).
from .contract import RESET_HARD, RESET_POWER_ON, RESET_SOFT, RESET_UNKNOWN, RESET_WATCHDOG

_TICKS_MASK = 0x3FFFFFFF


class WorldPins:
    # The contract's constants, as the module-level HALs have them.
    RESET_UNKNOWN = RESET_UNKNOWN
    RESET_POWER_ON = RESET_POWER_ON
    RESET_WATCHDOG = RESET_WATCHDOG
    RESET_SOFT = RESET_SOFT
    RESET_HARD = RESET_HARD

    def __init__(self, world, uid="sim"):
        self.world = world
        self.uid = uid
        self.adc = [0, 0, 0]
        self.levels = {}
        self.pulses = [0, 0, 0, 0, 0]
        self.pwm_on = False
        self.state = None        # the machine state the engine reports with each exchange
        self.reset = None        # a controller reset the world asked for (the engine acts on it)
        self._slots = None
        # What the drivers call, bound straight to the latched values (C-level, no Python frame
        # per call: the drivers make 11 such calls a tick).
        self.read_u16 = self.adc.__getitem__
        self.read_pin = self.levels.__getitem__
        self.set_pulse_us = self.pulses.__setitem__

    # ---- setup and PWM ----

    def setup(self, pins):
        # The reading slots of this board's pin map: read_inputs() gives (pot, current, rail,
        # e-stop, switch, beam).
        self._slots = (pins.adc_pot, pins.adc_current, pins.adc_rail, pins.estop, pins.switch, pins.beam)
        self.levels.clear()
        for gpio in self._slots[3:]:
            self.levels[gpio] = 1
        self.sample()

    def pwm_start(self, pulses_us):
        self.pulses[:] = pulses_us
        self.pwm_on = True

    def pulse_us(self, index):
        return self.pulses[index]

    # ---- time ----

    def sample(self):
        pot_s, cur_s, rail_s, estop_g, switch_g, beam_g = self._slots
        adc = self.adc
        levels = self.levels
        adc[pot_s], adc[cur_s], adc[rail_s], estop, switch, beam = self.world.read_inputs()
        levels[estop_g] = 1 if estop else 0
        levels[switch_g] = 1 if switch else 0
        levels[beam_g] = 1 if beam else 0

    def advance(self, ms):
        # One exchange: this period's pulses out, the world moves on ms, the readings in
        # (sample(), inlined: this runs every period of every simulated cycle).
        world = self.world
        r = world.exchange(self.pulses if self.pwm_on else None, self.state, ms)
        if r is not None and self.reset is None:
            self.reset = r
        pot_s, cur_s, rail_s, estop_g, switch_g, beam_g = self._slots
        adc = self.adc
        levels = self.levels
        adc[pot_s], adc[cur_s], adc[rail_s], estop, switch, beam = world.read_inputs()
        levels[estop_g] = 1 if estop else 0
        levels[switch_g] = 1 if switch else 0
        levels[beam_g] = 1 if beam else 0

    def ticks_ms(self):
        return self.world.now_ms & _TICKS_MASK

    def ticks_us(self):
        return (self.world.now_ms * 1000) & _TICKS_MASK

    def cpu_us(self):
        return self.ticks_us()

    def ticks_add(self, t, d):
        return (t + d) & _TICKS_MASK

    def ticks_diff(self, a, b):
        return ((a - b + 0x20000000) & _TICKS_MASK) - 0x20000000

    def sleep_ms(self, ms):
        self.advance(ms)

    def wait_until_us(self, deadline_us):
        # The engine moves time on; a controller never waits here.
        pass

    # ---- the rest of the board ----

    def led(self, on):
        pass

    def wdt_start(self, timeout_ms):
        pass

    def wdt_feed(self):
        pass

    def wdt_stop(self):
        pass

    def guard_estop(self):
        pass

    def reset_cause(self):
        return RESET_POWER_ON       # every boot of a simulated board is a power-on

    def unique_id(self):
        return self.uid

    def console_read_byte(self):
        return -1

    def console_write(self, data):
        pass
