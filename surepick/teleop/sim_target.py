# The MuJoCo arm as a teleop target. It behaves like the board will in teleop mode: joint
# setpoints arrive at the control rate, and the board's loop drives each servo towards the latest one
# through the firmware's own servo driver (firmware/servo.py: calibration, speed and acceleration
# limits, the board's default limits from firmware/settings.py), whose pulse widths go to the
# simulated servos (sim/plant.py). What it reports as "measured" is the tool point from the
# physics (the judge's view, for the tracking figures only): nothing here feeds it back.
import threading

import numpy as np

from surepick.firmware import settings as fw_settings
from surepick.firmware.boot_recovery import jaw_um_of, pot_ok
from surepick.firmware.servo import Servo, drive
from surepick.shared_fsm import servo_cal
from surepick.sim.plant import ADC_POT, Plant
from surepick.teleop.ik import ArmModel

BOARD_TICK_MS = 2


class _PulseOut:
    # The HAL's PWM half, as the drivers call it.
    def __init__(self):
        self.pulses = [0] * servo_cal.N_SERVOS

    def set_pulse_us(self, index, us):
        self.pulses[index] = us


class SimTarget:
    name = "sim"

    def __init__(self, plant=None, part="cube25", seed=0, arm_model=None):
        self.plant = plant if plant is not None else Plant(part=part, seed=seed)
        p = self.plant.params
        # The rest pose the board starts from (the configured home, as the firmware's stored pose).
        self.start_q_deg = np.array(p.home_deg, dtype=float)
        self.start_jaw_um = int(round(p.home_jaw_mm * 1000.0))
        st = fw_settings.Settings()
        self._cfg = st.cfg
        self.hal = _PulseOut()
        q_mdeg = [int(round(v * 1000.0)) for v in self.start_q_deg] + [self.start_jaw_um]
        self.servos = []
        for i in range(servo_cal.N_SERVOS):
            speed, accel = st.servo_limits(i)
            self.servos.append(Servo(self.hal, i, st.servo_cal(i), speed, accel,
                                     servo_cal.joint_to_servo_mdeg(i, q_mdeg[i])))
        self.hal.pulses[:] = [s.pulse for s in self.servos]
        self.plant.set_pulses(self.hal.pulses)
        self.setpoint_mdeg = q_mdeg[:4]
        self.jaw_um = self.start_jaw_um
        self._vel = [0.0] * 4           # mdeg per ms of the setpoint stream
        self._cmd_ms = None
        self._span_ms = 0
        self.arm = arm_model or ArmModel()
        self.lock = threading.Lock()     # held while the physics moves (a viewer syncs under it)
        self._qadr = [self.plant.m.jnt_qposadr[self.plant.m.joint(n).id]
                      for n in ("base_yaw", "shoulder", "elbow", "wrist")]

    @property
    def now_ms(self):
        return self.plant.now_ms

    def command(self, q_deg, jaw_um):
        # The latest joint setpoints (deg) and jaw opening (um).
        new = [int(round(float(v) * 1000.0)) for v in q_deg]
        now = self.plant.now_ms
        dt = now - self._cmd_ms if self._cmd_ms is not None else 0
        # Between two setpoints the loop carries the target on at the stream's own speed (for at
        # most one interval): the servo driver's braking logic then sees a moving target, as it
        # does from the motion planner, instead of a step it brakes into and waits after.
        self._vel = [(a - b) / dt for a, b in zip(new, self.setpoint_mdeg)] if 0 < dt <= 100 else [0.0] * 4
        self._cmd_ms = now
        self._span_ms = dt if 0 < dt <= 100 else 0
        self.setpoint_mdeg = new
        self.jaw_um = int(jaw_um)

    def advance(self, ms):
        # ms of board time: the loop drives the servos, the plant moves on.
        if ms % BOARD_TICK_MS:
            raise ValueError("advance in whole board ticks of %d ms, got %r" % (BOARD_TICK_MS, ms))
        with self.lock:
            self._advance(ms)

    def _advance(self, ms):
        joints = list(self.setpoint_mdeg)
        for _ in range(ms // BOARD_TICK_MS):
            ahead = min(self.plant.now_ms - self._cmd_ms, self._span_ms) if self._cmd_ms is not None else 0
            for i in range(4):
                joints[i] = self.setpoint_mdeg[i] + int(self._vel[i] * ahead)
            drive(self.servos, joints, self.jaw_um, BOARD_TICK_MS)
            self.plant.set_pulses(self.hal.pulses)
            self.plant.advance(BOARD_TICK_MS)

    def commanded_deg(self):
        # Where the servo drivers are sending each joint now (after their speed/accel limits).
        return np.array([servo_cal.servo_to_joint_mdeg(i, self.servos[i].pos) / 1000.0 for i in range(4)])

    def commanded_jaw_um(self):
        return servo_cal.servo_to_joint_mdeg(servo_cal.GRIPPER, self.servos[4].pos)

    def jaw_measured_um(self, reads=8):
        # The jaw opening as a board reads it: the gripper's pot (the plant's sensor model, with its
        # noise), a few reads averaged as the firmware's filter does, through the firmware's own
        # conversion at the default calibration. None when the pot reads a rail.
        cfg = self._cfg
        with self.lock:
            counts = sum(self.plant.read_u16(ADC_POT) for _ in range(reads)) // reads
        return jaw_um_of(counts, cfg) if pot_ok(counts, cfg) else None

    def measured(self):
        # The tool point the physics has now (x, y, z mm, pitch deg): for the tracking figures.
        q = np.degrees(self.plant.d.qpos[self._qadr])
        return self.arm.fk(q)

    def close(self):
        pass
