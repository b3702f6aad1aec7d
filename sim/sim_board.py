# The simulated board: the unchanged shared machine and motion planner, fed by the plant's
# pins and ADC channels through the same conversions the firmware's drivers make, writing PWM
# pulse widths through the same servo calibration, at the firmware's loop rate.
from surepick.shared_fsm import servo_cal
from surepick.shared_fsm.machine import Machine
from surepick.shared_fsm.motion import Motion
from surepick.shared_fsm.ticks import ticks_add

from .plant import ADC_CURRENT, ADC_POT, ADC_RAIL, PIN_BEAM, PIN_ESTOP, PIN_SWITCH

_POT_FILTER_SHIFT = 2        # IIR: filtered += (raw - filtered) / 4, as the firmware's pot driver
_RAIL_DIVIDER = 3
_CURRENT_CAL_READS = 16      # reads averaged by the current-offset calibration at rest


class SimBoard:
    def __init__(self, plant, cfg, start_ms=0, cals=servo_cal.DEFAULT_CALS,
                 current_counts_per_a=19859):
        self.plant = plant
        self.cfg = cfg
        self.cals = cals
        self.period = cfg.loop_period_ms
        self.now = start_ms
        self.machine = Machine(cfg)
        q = plant.joint_angles_mdeg()
        self.motion = Motion(cfg, q[:4], q[4])
        self.machine.out.jaw_um = q[4]
        self.pot_filtered = plant.read_u16(ADC_POT)
        self.current_offset = 1000
        self.current_counts_per_a = current_counts_per_a
        self.pulses = [0] * servo_cal.N_SERVOS
        self._last_setpoints = None
        self._write_pulses()

    def calibrate_current(self):
        # The firmware's "calibrate current" routine: average the idle reading as the zero.
        for _ in range(150 // self.period):   # let the servos settle first
            self.plant.advance(self.period)
            self.now = ticks_add(self.now, self.period)
        total = 0
        for _ in range(_CURRENT_CAL_READS):
            total += self.plant.read_u16(ADC_CURRENT)
            self.plant.advance(self.period)
            self.now = ticks_add(self.now, self.period)
        self.current_offset = total // _CURRENT_CAL_READS

    def read_inputs(self):
        p = self.plant
        inp = self.machine.inp
        raw = p.read_u16(ADC_POT)
        self.pot_filtered += (raw - self.pot_filtered) >> _POT_FILTER_SHIFT
        inp.pot_counts = self.pot_filtered
        inp.current_ma = (p.read_u16(ADC_CURRENT) - self.current_offset) * 1000 // self.current_counts_per_a
        inp.rail_mv = p.read_u16(ADC_RAIL) * 3300 * _RAIL_DIVIDER // 65535
        inp.switch_pressed = 1 - p.read_pin(PIN_SWITCH)   # pull-up: LOW = pressed
        inp.beam_broken = 1 - p.read_pin(PIN_BEAM)        # pull-up: LOW = beam broken
        inp.estop = p.read_pin(PIN_ESTOP)                 # NC contact: HIGH = stop

    def tick(self):
        # One loop period: inputs in, step, motion, outputs out, physics forward.
        m = self.machine
        self.read_inputs()
        m.step(self.now)
        self.motion.tick(self.now, m.out, m.inp)
        self._write_pulses()
        self.plant.advance(self.period)
        self.now = ticks_add(self.now, self.period)

    def _write_pulses(self):
        mo = self.motion
        key = (mo.joints[0], mo.joints[1], mo.joints[2], mo.joints[3], mo.jaw_um)
        if key == self._last_setpoints:
            return  # nothing moved: the servos keep the pulses they have
        self._last_setpoints = key
        for i in range(4):
            self.pulses[i] = servo_cal.pulse_us(self.cals[i], servo_cal.joint_to_servo_mdeg(i, mo.joints[i]))
        self.pulses[4] = servo_cal.pulse_us(self.cals[4], servo_cal.joint_to_servo_mdeg(4, mo.jaw_um))
        self.plant.set_pulses(self.pulses)
