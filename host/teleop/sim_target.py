# The MuJoCo arm as a teleop target, driven by a simulated board in teleop mode: the firmware's
# own controller (firmware/controller.py, the in-process engine's SimulatedBoard) on the plant's
# pins, ticking at the board's loop period (the run's settings), with the firmware's teleop mode
# (firmware/teleop_mode.py) entered as `TELEOP 1` enters it. Each setpoint reaches that mode as a
# SETPOINT frame does: offered in the link duty of the board's next tick, checked there (joint
# limits, jaw range, the tool point above the table and off the base column), carried on at the
# stream's own speed, held by the deadman; the servo drivers run with teleop's speed and
# acceleration limits into the simulated servos. A hold is re-armed as the board target re-arms
# one (take_rebase). What it reports as "measured" is the tool point from the physics (the
# judge's view, for the tracking figures only): nothing here feeds it back.
import collections
import threading

import numpy as np

from surepick.host.engines.inproc import SimulatedBoard
from surepick.firmware import settings as fw_settings
from surepick.firmware import teleop_mode
from surepick.firmware.boot_recovery import jaw_um_of, pot_ok
from surepick.shared_fsm import codes, kinematics, servo_cal
from surepick.sim.plant import Plant
from surepick.host.teleop.board_target import MODES, joint_bounds_mdeg
from surepick.host.teleop.ik import ArmModel

JAW_MAX_UM = 45000


class BareWorld:
    """A bare plant as the board's world (firmware/hal/world_pins.py): no scenario, no faults, no
    judge; the pulses reach the servos and time moves on."""

    def __init__(self, plant, arm=None):
        self.plant = plant
        self.arm = arm                   # the board's /arm.json (None: none, the reference arm)
        self.read_inputs = plant.read_inputs

    @property
    def now_ms(self):
        return self.plant.now_ms

    def exchange(self, pulses, state, advance_ms):
        if pulses is not None:
            self.plant.set_pulses(pulses)
        if advance_ms:
            self.plant.advance(advance_ms)
        return None


class SimTarget:
    name = "sim"

    def __init__(self, plant=None, part="cube25", seed=0, arm_model=None, cfg_overrides=None, arm=None):
        # arm: the arm description's Arm (None: the reference): the plant is built from it and
        # the simulated board's /arm.json is it.
        self.kin = arm or kinematics.REFERENCE
        self._jmin, self._jmax = joint_bounds_mdeg(self.kin)     # as the board target sends them
        self.plant = plant if plant is not None else Plant(part=part, seed=seed, arm=arm)
        # The run's settings: the firmware's defaults and the machine config overrides given.
        self.settings = fw_settings.Settings(machine=cfg_overrides)
        self.period_ms = self.settings.cfg.loop_period_ms     # the board's loop period
        self.lock = threading.Lock()     # held while the physics moves (a viewer syncs under it)
        self.board = SimulatedBoard(BareWorld(self.plant, arm), self.settings)
        self.ctl = self.board.ctl
        self.refused = collections.Counter()   # the board's reasons for refused setpoints
        self.rearms = 0
        self.seq = 0
        self._pending = None             # (seq, q mdeg, jaw um): read in the next tick's link duty
        self._rebase = None
        self._enter()
        # The rest pose the board starts from (the configured home, as the firmware's stored pose).
        self.start_q_deg = self.commanded_deg()
        self.start_jaw_um = self.commanded_jaw_um()
        self.host_ms = self.board.now    # the host's clock: control periods need not be whole ticks
        # the tool point as the physics has it: through the serial model's FK, or (a kind without
        # a free wrist) through the arm's own FK of the plant's joint angles as its slots mean them
        self.arm = arm_model or (ArmModel(arm) if self.kin.free_pitch else None)
        self._qadr = None if self.arm is None else [self.plant.m.jnt_qposadr[self.plant.m.joint(n).id]
                                                     for n in ("base_yaw", "shoulder", "elbow", "wrist")]

    def _enter(self):
        self.ctl.load_teleop()
        err = self.ctl.teleop.enter(self.board.now)
        if err is not None:
            raise RuntimeError("the simulated board refused teleop mode: %r" % (err,))

    @property
    def now_ms(self):
        return self.plant.now_ms

    def command(self, q_deg, jaw_um):
        # The latest joint setpoints (deg) and jaw opening (um), sent as the board target sends
        # them (clamped to the joint limits and the jaw's range). -> their sequence number, or
        # None when the board holds after a deadman and is being re-armed (nothing goes).
        if self.ctl.teleop.mode == teleop_mode.HELD:
            return None
        q = [min(max(int(round(float(v) * 1000.0)), lo), hi) for v, lo, hi in zip(q_deg, self._jmin, self._jmax)]
        self.seq += 1
        self._pending = (self.seq, q, min(max(int(jaw_um), 0), JAW_MAX_UM))
        return self.seq

    def advance(self, ms):
        # ms of host time: the board ticks at its own period meanwhile (as many ticks as begin
        # before the host's clock reaches the end), the plant moving on between them.
        self.host_ms += ms
        with self.lock:
            while self.board.now < self.host_ms:
                self.board.step(self._link)

    def _link(self, now):
        # The tick's link duty: a waiting setpoint is offered; a held board is re-armed.
        tm = self.ctl.teleop
        if tm.mode == teleop_mode.HELD:
            self._enter()
            self.rearms += 1
            self._pending = None
            self._rebase = (self.commanded_deg(), self.commanded_jaw_um())
            return
        if self._pending is not None:
            seq, q, jaw = self._pending
            self._pending = None
            err = tm.offer(seq, q[0], q[1], q[2], q[3], jaw, now)
            if err is not None:
                self.refused[str(err[1][0])] += 1

    def take_rebase(self):
        # (joint deg, jaw um) of a re-armed board's held pose, once; else None.
        r, self._rebase = self._rebase, None
        return r

    def commanded_deg(self):
        # Where the servo drivers are sending each joint now (after their speed/accel limits).
        sv = self.ctl.servos
        return np.array([self.kin.joint_mdeg(i, sv[i].pos) / 1000.0 for i in range(4)])

    def commanded_jaw_um(self):
        return servo_cal.servo_to_joint_mdeg(servo_cal.GRIPPER, self.ctl.servos[4].pos)

    def jaw_measured_um(self):
        # The jaw opening as the board reads it (TELEOP_STATE's jaw): its filtered pot, through
        # the firmware's own conversion; None when the pot reads a rail.
        cfg = self.ctl.cfg
        counts = self.ctl.m.inp.pot_counts
        return jaw_um_of(counts, cfg) if pot_ok(counts, cfg) else None

    def measured(self):
        # The tool point the physics has now (x, y, z mm, pitch deg): for the tracking figures.
        if self.arm is None:
            return np.array(self.kin.forward(list(self.plant.truth()["joint_angles_deg"])))
        q = np.degrees(self.plant.d.qpos[self._qadr])
        return self.arm.fk(q)

    def summary(self):
        tm = self.ctl.teleop
        m = self.ctl.m
        return {"board_period_ms": self.period_ms, "board_mode": MODES.get(tm.mode), "board_deadmans": tm.deadmans,
                "board_refused": dict(self.refused), "board_rearms": self.rearms, "setpoints_sent": self.seq,
                "board_faults": [codes.name(m.fault)] if m.fault else []}

    def close(self):
        self.board.close()
