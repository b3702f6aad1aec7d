# The simulated board: the unchanged shared machine and motion planner, fed and driven by the
# FIRMWARE's own drivers (firmware/sensors.py: pot filter, current offset and filter, rail,
# switch/beam polarity, latched e-stop; firmware/servo.py: calibration, slew and acceleration
# limits; firmware/calibrate.py: the current-offset routine; defaults from firmware/settings.py)
# through PlantPins, a stand-in HAL that sees the plant exactly as the virtual board's HAL sees it
# through the lockstep exchange (tools/plant_service.py): every input sampled once per tick, the
# pulses applied as the tick ends, the physics moved on one loop period. It boots as the firmware
# boots (inputs sensed for boot_sense_ms before any servo moves, servos started where the arm
# stands), so for one scenario and seed the firmware on the virtual board and this board make the
# same transitions at the same ticks (tests/test_fw_vs_sim_*.py).
from surepick.firmware import settings as fw_settings
from surepick.firmware.calibrate import Calibration
from surepick.firmware.sensors import Current, EStop, Pot, Rail, Switch
from surepick.firmware.servo import Servo, drive
from surepick.shared_fsm import link
from surepick.shared_fsm import servo_cal
from surepick.shared_fsm.machine import Machine
from surepick.shared_fsm.motion import Motion
from surepick.shared_fsm.ticks import ticks_add, ticks_diff

from surepick.sim.plant import ADC_CURRENT, ADC_POT, ADC_RAIL, PIN_BEAM, PIN_ESTOP, PIN_SWITCH

# The loop tick (plant ms) in which the board handles the current-calibration request: the
# virtual board's host sends CALIBRATE current while virtual time holds there
# (PlantService.hold_for_line_at), so both boards calibrate on the same samples.
CAL_AT_MS = 100


class PlantPins:
    # The board HAL's pin/ADC/PWM half over a Plant, with the virtual HAL's timing: readings are
    # latched once per tick (one read of every channel, as one exchange reply carries them, so
    # the plant's per-channel noise streams advance exactly as they do for the virtual board);
    # PWM pulses reach the plant when time moves on; before pwm_start the plant's servos keep
    # whatever pulses they had (a board that has not started its PWM does not drive them).
    def __init__(self, plant):
        self.plant = plant
        self.adc = [0, 0, 0]
        self.levels = {PIN_ESTOP: 0, PIN_SWITCH: 1, PIN_BEAM: 1}
        self.pulses = [0] * servo_cal.N_SERVOS
        self.pwm_on = False
        # What the drivers call (firmware/board_hal.py's names): read_u16(adc), read_pin(gpio),
        # set_pulse_us(index, us), bound straight to the latched values (C-level, no Python
        # frame per call: the drivers make 11 such calls a tick).
        self.read_u16 = self.adc.__getitem__
        self.read_pin = self.levels.__getitem__
        self.set_pulse_us = self.pulses.__setitem__
        # sim.plant.Plant reads every channel in one call; other plants (host/vboard_run.py's
        # RecordedPlant) are read channel by channel.
        self._read_all = getattr(plant, "read_inputs", None) or self._read_each
        self.sample()

    def _read_each(self):
        p = self.plant
        return (p.read_u16(ADC_POT), p.read_u16(ADC_CURRENT), p.read_u16(ADC_RAIL),
                p.read_pin(PIN_ESTOP), p.read_pin(PIN_SWITCH), p.read_pin(PIN_BEAM))

    def sample(self):
        adc = self.adc
        levels = self.levels
        adc[ADC_POT], adc[ADC_CURRENT], adc[ADC_RAIL], estop, switch, beam = self._read_all()
        levels[PIN_ESTOP] = 1 if estop else 0
        levels[PIN_SWITCH] = 1 if switch else 0
        levels[PIN_BEAM] = 1 if beam else 0

    def advance(self, ms):
        if self.pwm_on:
            self.plant.set_pulses(self.pulses)
        self.plant.advance(ms)
        self.sample()

    def pwm_start(self, pulses_us):
        self.pulses[:] = pulses_us
        self.pwm_on = True


class SimBoard:
    """plant: sim.plant.Plant; cfg: the machine's Config. Constructing it powers the board up:
    the inputs are sensed for boot_sense_ms of plant time before the servos start where the arm
    stands (the firmware's boot with no interrupted cycle)."""

    def __init__(self, plant, cfg, start_ms=0, cals=None, current_counts_per_a=None):
        self.plant = plant
        self.cfg = cfg
        self.settings = fw_settings.Settings()        # the firmware's board defaults
        b = self.settings.board
        if current_counts_per_a is not None:
            b["current_counts_per_a"] = int(current_counts_per_a)
        self.cals = tuple(cals) if cals is not None else tuple(self.settings.servo_cal(i) for i in range(5))
        self.period = cfg.loop_period_ms
        self.now = start_ms
        self.hal = PlantPins(plant)                   # power on: the first sample
        self.machine = self.m = Machine(cfg)
        self.pot = Pot(self.hal, ADC_POT, b["pot_filter_shift"])
        self.current = Current(self.hal, ADC_CURRENT, b["current_offset_counts"], b["current_counts_per_a"],
                               b["current_filter_shift"], b["current_holding_ma"], b["current_stall_ma"])
        self.rail = Rail(self.hal, ADC_RAIL, b["rail_divider_milli"])
        self.switch = Switch(self.hal, PIN_SWITCH)
        self.beam = Switch(self.hal, PIN_BEAM)
        self.estop = EStop(self.hal, PIN_ESTOP, b["estop_reset_reads"])
        self.cal = None
        self._requests = []
        q = plant.joint_angles_mdeg()      # where the arm stands: the firmware's stored rest pose
        self._boot_sense(b["boot_sense_ms"])
        self._start_servos(q)
        self.last_ms = self.now
        self.machine.now = self.now

    # ---- boot (firmware/app.py App.boot, no interrupted cycle) ----

    def _boot_sense(self, sense_ms):
        # Look before moving: inputs only, no PWM yet.
        for _ in range(sense_ms // self.period + 1):
            self.read_inputs()
            self._advance()

    def _start_servos(self, q):
        # Each servo starts exactly where the arm stands: no snap (firmware App._start_servos).
        servos = []
        for i in range(servo_cal.N_SERVOS):
            speed, accel = self.settings.servo_limits(i)
            servos.append(Servo(self.hal, i, self.cals[i], speed, accel, servo_cal.joint_to_servo_mdeg(i, q[i])))
        self.servos = servos
        self.hal.pwm_start([s.pulse for s in servos])
        self.motion = Motion(self.cfg, q[:4], q[4])
        self.machine.out.jaw_um = q[4]

    # ---- the loop (firmware/app.py App.tick, same order) ----

    def read_inputs(self):
        inp = self.machine.inp
        inp.pot_counts = self.pot.read()
        inp.current_ma = self.current.read_ma()
        inp.rail_mv = self.rail.read_mv()
        inp.switch_pressed = self.switch.read()
        inp.beam_broken = self.beam.read()
        inp.estop = self.estop.read()

    def tick(self):
        # One loop period: inputs, step, calibration, motion, servos, link requests, then the
        # plant moves on one period and is sampled for the next tick.
        now = self.now
        dt = ticks_diff(now, self.last_ms)
        self.last_ms = now
        m = self.machine
        self.read_inputs()
        m.step(now)
        if self.cal is not None:
            self.cal.step(self, now)
        motion = self.motion
        motion.tick(now, m.out, m.inp)
        drive(self.servos, motion.joints, motion.jaw_um, dt)
        while self._requests:                 # the link phase: requests handled this tick
            self._requests.pop(0)(now)
        self._advance()

    def _advance(self):
        self.hal.advance(self.period)
        self.now = ticks_add(self.now, self.period)

    @property
    def pulses(self):
        return self.hal.pulses

    # ---- current-offset calibration (firmware/calibrate.py, CAL_CURRENT) ----

    @property
    def current_offset(self):
        return self.current.offset

    @current_offset.setter
    def current_offset(self, counts):
        self.current.offset = int(counts)

    def calibrate_current(self, at_ms=CAL_AT_MS):
        # The firmware's routine, handled in the tick at at_ms as the virtual board handles the
        # host's CALIBRATE request, run to its end: the idle gripper's current becomes the zero.
        while ticks_diff(self.now, at_ms) < 0:
            self.tick()
        self._requests.append(self._start_calibration)
        self.tick()
        while self.cal is not None:
            self.tick()
        return self.current.offset

    def _start_calibration(self, now):
        c = Calibration(link.CAL_CURRENT, 0)
        err = c.start(self, now)
        if err:
            raise RuntimeError("current calibration refused: %r" % (err,))
        self.cal = c

    def calibration_done(self, cal, code, payload):
        # Called by the Calibration (as App.calibration_done): apply the persisted value.
        self.cal = None
        if code != link.OK:
            raise RuntimeError("current calibration failed: %s %r" % (code, payload))
        self.current.offset = self.settings.board["current_offset_counts"]
