# The emulated chip's pins wired to one sim.world.World in lockstep emulated time. Each control
# period is one `run` of the chip (engine lockstep, README.md in this folder) and one
# World.exchange, in this order:
#
#   1. the readings of the world (World.read_inputs) go onto the chip's pads and ADC inputs:
#      e-stop, switch and beam pin levels, pot/current/rail as the 12-bit counts whose read_u16
#      the plant reported (the RP2040 returns c << 4 | c >> 8, the plant's own scaling);
#   2. the chip runs one period of emulated time (the firmware ticks once in it: its loop starts
#      ticks on the period grid of its clock, which is the chip's clock, so the windows and the
#      ticks line up);
#   3. the pulse widths its PWM slices show at the end of the window go to the world with the
#      machine state its EVENT frames last said (World.exchange(pulses, state, period)).
#
# The firmware runs its real hal/rp2040.py (machine.PWM/ADC/Pin) untouched. The engine's tap
# hands out, with every step, what the chip sent on its USB serial port (parsed into link
# frames here) and every ADC conversion it made (time, channel, counts), which is how the run
# record knows which period each tick read (ticks.csv is rebuilt from them by the shadow
# controller of engines/vboard.py).
from surepick.firmware import settings as fw_settings
from surepick.host.link.frames import FrameParser
from surepick.shared_fsm import kinematics, link, states

KEEP = 0xFFFF          # engines/world_service.py: a pulse the firmware never set
NO_STATE = 0xFF


def u16_of(c12):
    # what machine.ADC.read_u16() returns for a 12-bit conversion on the RP2040
    return (c12 << 4) | (c12 >> 8)


class Window:
    __slots__ = ("start_us", "end_us", "inputs", "pulses", "state", "serial", "conn")

    def __init__(self, start_us, end_us, inputs, pulses, state, serial, conn):
        self.start_us = start_us
        self.end_us = end_us
        self.inputs = inputs      # (pot, current, rail read_u16, e-stop, switch, beam) applied
        self.pulses = pulses      # at the end: [5 ints] (0 = no PWM on that pin) or None (none)
        self.state = state        # the machine state its EVENT frames had said by the end
        self.serial = serial      # bytes delivered to the chip as the window began
        self.conn = conn          # controller life (1, +1 per reset)


class WiredChip:
    """chip: a started Chip in lockstep; world: a sim.world.World (or a WorldService's world).

    step() runs one period. frames: every link frame the chip sent (host.link.frames.Frame);
    windows / conversions: kept when record=True (the run record's reconstruction)."""

    def __init__(self, chip, world, settings=None, record=False, on_frame=None, on_text=None, arm=None):
        self.chip = chip
        self.world = world
        self.settings = settings or fw_settings.Settings()
        self.period = self.settings.cfg.loop_period_ms
        p = self.settings.pins()
        self.pins = p
        # the servos are on the pins the arm description (the chip's /arm.json) gives them
        self.servo_pins = (arm or kinematics.REFERENCE).servo_pins()
        self.record = record
        self.on_frame = on_frame
        self.parser = FrameParser(on_text=on_text)
        self.frames = []
        self.windows = []
        self.conversions = []     # (t_us, channel, 12-bit counts)
        self.state = None         # the firmware machine's state, from its EVENT frames
        self.hello = None         # the HELLO frame of the current boot
        self.conn = 1
        self.resets = []          # ControllerReset objects the world raised
        self.time_base_us = 0     # chip time at the start of the current life (its timer's 0)
        st = chip.tap(True)
        self.t_us = st["t_us"]
        self.inputs = world.read_inputs()
        self.pwm_seen = False

    # ---- one period ----

    def step(self, serial=None):
        pot, cur, rail, estop, switch, beam = self.inputs
        p = self.pins
        st = self.chip.run(ms=self.period,
                           pins={p.estop: 1 if estop else 0, p.switch: 1 if switch else 0,
                                 p.beam: 1 if beam else 0},
                           adc={p.adc_pot: pot >> 4, p.adc_current: cur >> 4, p.adc_rail: rail >> 4},
                           serial=serial)
        start = self.t_us
        self.t_us = st["t_us"]
        if st.get("halted"):
            raise RuntimeError("the emulated RP2040 halted: %s" % st["halted"])
        out = st.get("serial_out") or ""
        if out:
            for f in self.parser.feed(out.encode("latin-1")):
                self._frame(f)
        if self.record:
            for t, ch, v in st.get("adc_log") or ():
                self.conversions.append((t, ch, v))
        pw = st["pulse_us"]
        raw = [pw.get(pin) for pin in self.servo_pins]
        if all(v is None for v in raw):
            pulses = None
        else:
            pulses = [0 if v is None else int(round(v)) for v in raw]
            self.pwm_seen = True
        # Before the firmware ever started its PWM the world's servos keep what they hold (as
        # for every engine); after a reset a chip without PWM leaves them limp.
        sent = pulses if pulses is not None or not self.pwm_seen else [0] * 5
        if self.record:
            self.windows.append(Window(start, self.t_us, self.inputs, pulses, self.state, serial, self.conn))
        reset = self.world.exchange(sent, self.state, self.period)
        if reset is not None:
            self._reset(reset)
        self.inputs = self.world.read_inputs()
        return st

    def _frame(self, f):
        self.frames.append(f)
        if f.ftype == link.T_EVENT:
            self.state = f.fields[4]
        elif f.ftype == link.T_HELLO:
            self.hello = f
        if self.on_frame is not None:
            self.on_frame(f)

    def _reset(self, reset):
        # The world cut the controller's power (a brownout): the servos are limp while it is
        # down; then the chip power-cycles (flash kept) and boots again.
        self.resets.append(reset)
        self.world.limp(reset.down_ms, self.period)
        self.chip.reset()
        self.state = None
        self.hello = None
        self.conn += 1
        self.time_base_us = self.t_us

    # ---- running until something happens ----

    def run_until(self, pred, max_ms, serial=None):
        """Step until pred() is true (checked after each step); -> True, or False after max_ms."""
        n = 0
        limit = (max_ms + self.period - 1) // self.period
        while n < limit:
            self.step(serial)
            serial = None
            n += 1
            if pred():
                return True
        return False

    def frames_since(self, k):
        return self.frames[k:]

    def state_name(self):
        return None if self.state is None else states.name(self.state)
