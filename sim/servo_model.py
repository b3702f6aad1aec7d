# Hobby position servos and the rail that feeds them, as MuJoCo sees them.
#
# Each servo is a MuJoCo position actuator whose ctrl and length are servo-shaft angles (rad):
#   torque = clamp(kp * (ctrl - angle), +-stall(rail))   proportional band, saturating torque
#   joint damping d = stall / no-load speed              back-EMF: limits speed, V-independent
#   joint armature                                       gear-train inertia: rings after a stop
# so the whole servo runs inside mj_step. Python only acts once per PWM frame (20 ms, as a real
# servo only sees one pulse per frame): decode the pulse with the plant's own calibration, apply
# the deadband, scale the stall torque with the rail, and go limp on PWM-off or a brownout.
# Unpowered (pulse 0, a brownout reset) a servo makes no torque at all; its gear train still
# resists being turned: dry friction up to backdrive_torque_nm (MuJoCo frictionloss) plus a
# fraction of the viscous losses. A load above that friction back-drives the joint. (Powered,
# that friction is part of the fitted damping and band, so it is only switched in while limp.)
import math

import mujoco

from surepick.shared_fsm import servo_cal

N_SERVOS = servo_cal.N_SERVOS
GRIPPER = servo_cal.GRIPPER
_TORQUE_REF_MV = 4800.0   # datasheet torque and speed figures are at 4.8 V
_CURRENT_REF_MV = 5000.0  # stall current figures are at 5 V
_STALL_STILL_RAD_S = math.radians(10.0)
_GEAR_SOLREF = (0.004, 1.0)             # friction-loss constraint: twice the 2 ms step (the stiffest it gets)
_GEAR_SOLIMP = (0.99, 0.999, 0.001)


def servo_offset_rad(arm, index):
    # Actuator length = servo angle - offset: the joint angle for the arm, the servo angle itself
    # for the gripper (opening 0 = servo 0 deg).
    return 0.0 if index == GRIPPER else math.radians(arm.zero_mdeg(index) / 1000.0)


def jaw_m_per_rad(arm):
    # Gripper transmission: opening (m) = r * servo angle (rad); 4 deg/mm: 180 deg = 45 mm.
    return (180.0 / arm.gripper["servo_deg_per_mm"]) / 1000.0 / math.pi


class Rail:
    # Servo supply: nominal voltage behind a source resistance, plus a forced-brownout hook: the
    # rail sags linearly from where the load holds it to brownout_mv over sag_ms (a battery
    # failing under load, a supply cutting out behind its bulk capacitor), stays down for
    # duration_ms, then comes back.
    def __init__(self, p):
        self.p = p
        self.sag_from_ms = -1
        self.sag_ms = 0
        self.forced_until_ms = -1

    def force_brownout(self, now_ms, duration_ms, sag_ms=0):
        self.sag_from_ms = now_ms
        self.sag_ms = int(sag_ms)
        self.forced_until_ms = now_ms + int(sag_ms) + int(duration_ms)

    def forced(self, now_ms):
        return now_ms < self.forced_until_ms

    def mv(self, now_ms, total_ma):
        if now_ms < self.forced_until_ms:
            t = now_ms - self.sag_from_ms
            if t < self.sag_ms:
                held = self.p.nominal_mv - total_ma * self.p.source_mohm / 1000.0
                return held + (self.p.brownout_mv - held) * t / self.sag_ms
            return self.p.brownout_mv
        return self.p.nominal_mv - total_ma * self.p.source_mohm / 1000.0


class ServoBank:
    # The arm's servo slots (base, shoulder, elbow, wrist, gripper: the board's five PWM
    # channels). Owns the actuator rows, damping and armature of the model. A slot the kind has
    # no servo for (a parallel or wrist-less arm's wrist) has no actuator: its pulse is ignored,
    # it draws nothing and is never powered.
    def __init__(self, model, data, params, arm):
        from surepick.sim import arm_model       # (arm_model imports this module)
        self.m = model
        self.jaw_m_per_rad = jaw_m_per_rad(arm)
        self.p = params
        self.servos = params.servos
        self.frame_ms = int(params.servo_frame_ms)
        names = arm_model.servo_slots(arm)
        self.act_of = [None if n is None else model.actuator(n).id for n in names]
        present = [a for a in self.act_of if a is not None]
        # Actuators are declared in slot order (sim/arm_model.py); the fast paths rely on it.
        if present != list(range(model.nu)):
            raise ValueError("arm model: actuators must be declared in servo order, got ids %r" % (self.act_of,))
        self.missing = [i for i in range(N_SERVOS) if self.act_of[i] is None]
        # What each servo moves: the DOFs whose damping/armature/friction it owns (the gripper
        # drives two finger slides), or a fixed tendon (a parallel arm's elbow servo sets the
        # forearm's absolute angle through the linkage: its losses act on that angle).
        self.gear = [1.0] * N_SERVOS
        self.dofs = []
        self.tendon = [None] * N_SERVOS
        for i, n in enumerate(names):
            if n is None or i == GRIPPER:
                self.dofs.append([])
                continue
            a = self.act_of[i]
            self.gear[i] = float(model.actuator_gear[a, 0])
            tid = model.actuator_trnid[a, 0]
            if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_TENDON:
                self.tendon[i] = tid
                self.dofs.append([])
            else:
                self.dofs.append([model.jnt_dofadr[tid]])
        self.dofs[GRIPPER] = [model.jnt_dofadr[model.joint(n).id] for n in ("finger_l", "finger_r")]
        self.offset_rad = [servo_offset_rad(arm, i) for i in range(N_SERVOS)]
        self.stall_nm_4v8 = [s.stall_torque_nm_4v8 for s in self.servos]
        # Current = idle + k * |torque|; k is the motor's torque constant, the same at any rail.
        self.ma_per_nm = [(s.stall_ma_5v * _TORQUE_REF_MV / _CURRENT_REF_MV - s.idle_ma) / s.stall_torque_nm_4v8
                          for s in self.servos]
        self.idle_ma = [s.idle_ma for s in self.servos]
        self.deadband_rad = [math.radians(s.deadband_us * s.travel_mdeg / 1000.0 / (s.max_us - s.min_us))
                             for s in self.servos]
        self.cals = [s.cal() for s in self.servos]
        self.damping_full = []
        for i, s in enumerate(self.servos):
            no_load_rad_s = math.radians(60.0) / s.speed_s_per_60deg_4v8
            self.damping_full.append(s.stall_torque_nm_4v8 / no_load_rad_s)
        self.backdrive_nm = [s.backdrive_torque_nm for s in self.servos]
        self._configure_model()
        self.pulses = [0] * N_SERVOS
        self.target_rad = [None] * N_SERVOS      # the last decoded target of each servo...
        self._target_pulse = [None] * N_SERVOS   # ...and the pulse width it was decoded from
        self.powered = [False] * N_SERVOS       # electronics running and receiving pulses
        self.reset_until_ms = -1                 # servos limp until then after a brownout
        self.torque_scale = 1.0                  # rail / 4.8 V, as last applied
        self._forcerange = model.actuator_forcerange
        self._force = data.actuator_force  # a view into MjData, fetched once (hot path)
        self._refresh_current_gains()

    def _configure_model(self):
        m = self.m
        for i, s in enumerate(self.servos):
            a = self.act_of[i]
            if a is None:
                continue
            kp = s.stall_torque_nm_4v8 / math.radians(s.band_deg)
            m.actuator_gainprm[a, 0] = kp
            m.actuator_biasprm[a, 1] = -kp
            m.actuator_biasprm[a, 2] = 0.0
            m.actuator_forcelimited[a] = 1
            # Shaft inertia and back-EMF damping, moved to what the servo drives. The gripper's
            # shaft angle is opening / r with both slides moving: each slide sees 2 * X / r**2;
            # a geared joint sees gear**2 * X.
            g2 = self.gear[i] * self.gear[i]
            if i == GRIPPER:
                k = 2.0 / (self.jaw_m_per_rad ** 2)
                for dof in self.dofs[i]:
                    m.dof_armature[dof] = s.armature_kgm2 * k
                    m.dof_damping[dof] = self.damping_full[i] * k
            elif self.tendon[i] is not None:
                t = self.tendon[i]
                m.tendon_armature[t] = s.armature_kgm2 * g2
                m.tendon_damping[t] = self.damping_full[i] * g2
                m.tendon_solref_fri[t] = _GEAR_SOLREF
                m.tendon_solimp_fri[t, :3] = _GEAR_SOLIMP
            else:
                m.dof_armature[self.dofs[i][0]] = s.armature_kgm2 * g2
                m.dof_damping[self.dofs[i][0]] = self.damping_full[i] * g2
            # A gear train does not creep below its breakaway torque: a stiff friction-loss
            # constraint (MuJoCo's default soft one lets a loaded joint slide ~1.5 deg/s).
            for dof in self.dofs[i]:
                m.dof_solref[dof] = _GEAR_SOLREF
                m.dof_solimp[dof, :3] = _GEAR_SOLIMP
            self._set_friction(i, True)   # every servo starts unpowered (self.powered)
        self._damping_scale = [1.0] * N_SERVOS

    def set_pulses(self, pulses_us):
        self.pulses = [int(u) for u in pulses_us]

    def hold_current_pose(self, data):
        # Start-up convenience: behave as if the board were already sending the current pose.
        for i in range(N_SERVOS):
            a = self.act_of[i]
            if a is None:
                continue
            s_mdeg = int(round(math.degrees(data.actuator_length[a] + self.offset_rad[i]) * 1000.0))
            self.pulses[i] = servo_cal.pulse_us(self.cals[i], s_mdeg)

    def pulse_to_target_rad(self, i, pulse_us):
        s_mdeg = servo_cal.servo_mdeg_from_pulse(self.cals[i], pulse_us)
        return math.radians(s_mdeg / 1000.0) - self.offset_rad[i]

    def frame_update(self, data, now_ms, rail_mv):
        # Once per PWM frame: decide power, target and torque limit for every servo.
        if rail_mv < self.p.rail.reset_mv:
            self.reset_until_ms = now_ms + self.p.rail.servo_reset_ms
        in_reset = now_ms < self.reset_until_ms
        scale = max(rail_mv, 0.0) / _TORQUE_REF_MV
        self.torque_scale = scale
        ctrl = data.ctrl
        length = data.actuator_length.tolist()
        fr = self._forcerange
        act_of = self.act_of
        for i in range(N_SERVOS):
            a = act_of[i]                    # slot i's actuator (i itself on a serial arm)
            if a is None:
                continue                     # no servo in this slot: its pulse moves nothing
            pulse = int(self.pulses[i])
            on = pulse > 0 and not in_reset
            if on != self.powered[i]:
                self._set_damping(i, 1.0 if on else self.p.limp_damping_fraction)
                self._set_friction(i, not on)
                self.powered[i] = on
                self._refresh_current_gains()
            if not on:
                fr[a, 0] = 0.0
                fr[a, 1] = 0.0
                ctrl[a] = length[a]
                continue
            if pulse != self._target_pulse[i]:     # decoded once per new pulse width
                self._target_pulse[i] = pulse
                self.target_rad[i] = self.pulse_to_target_rad(i, pulse)
            target = self.target_rad[i]
            err = target - length[a]
            db = self.deadband_rad[i]
            # Inside the deadband the amplifier is off: hold where the shaft is this frame.
            if err > db:
                ctrl[a] = target - db
            elif err < -db:
                ctrl[a] = target + db
            else:
                ctrl[a] = length[a]
            tau = self.stall_nm_4v8[i] * scale
            fr[a, 0] = -tau
            fr[a, 1] = tau

    def _set_damping(self, i, fraction):
        base = self.damping_full[i] * fraction
        if i == GRIPPER:
            k = 2.0 / (self.jaw_m_per_rad ** 2)
            for dof in self.dofs[i]:
                self.m.dof_damping[dof] = base * k
        elif self.tendon[i] is not None:
            self.m.tendon_damping[self.tendon[i]] = base * (self.gear[i] * self.gear[i])
        else:
            self.m.dof_damping[self.dofs[i][0]] = base * (self.gear[i] * self.gear[i])

    def _set_friction(self, i, limp):
        # Gear-train dry friction of an unpowered servo, at the DOFs it drives: the gripper's
        # shaft torque reaches each finger slide as a force torque / r.
        f = self.backdrive_nm[i] if limp else 0.0
        if i == GRIPPER:
            for dof in self.dofs[i]:
                self.m.dof_frictionloss[dof] = f / self.jaw_m_per_rad
        elif self.tendon[i] is not None:
            self.m.tendon_frictionloss[self.tendon[i]] = f * self.gear[i]
        else:
            self.m.dof_frictionloss[self.dofs[i][0]] = f * self.gear[i]

    def _refresh_current_gains(self):
        # Unpowered servos draw nothing: fold that into per-servo gains once per power change.
        self._k = [self.ma_per_nm[i] if self.powered[i] else 0.0 for i in range(N_SERVOS)]
        self._idle = [self.idle_ma[i] if self.powered[i] else 0.0 for i in range(N_SERVOS)]
        self._idle_total = sum(self._idle)

    def slot_values(self, row):
        # A per-actuator row of MjData (force, velocity, ...) as a per-slot list: 0.0 in a slot
        # that has no servo (a serial arm's actuators are its slots: the row as it is).
        f = row.tolist()
        for i in self.missing:
            f.insert(i, 0.0)
        return f

    def currents_ma(self, data):
        # Per-servo supply current from the torque each one is producing right now.
        f = self.slot_values(self._force)
        return [self._idle[i] + self._k[i] * abs(f[i]) for i in range(N_SERVOS)]

    def gripper_current_ma(self, data):
        return self._idle[GRIPPER] + self._k[GRIPPER] * abs(self._force.item(self.act_of[GRIPPER]))

    def total_current_ma(self, data):
        f = self.slot_values(self._force)
        k = self._k
        return (self._idle_total + k[0] * abs(f[0]) + k[1] * abs(f[1]) + k[2] * abs(f[2])
                + k[3] * abs(f[3]) + k[4] * abs(f[4]))

    def stall_currents_ma(self, rail_mv):
        # Per servo: the supply current it draws held at stall with the rail at rail_mv (its
        # stall torque scales with the rail, its current with the torque: the law above).
        scale = max(rail_mv, 0.0) / _TORQUE_REF_MV
        return [self.idle_ma[i] + self.ma_per_nm[i] * self.stall_nm_4v8[i] * scale for i in range(N_SERVOS)]

    def stall_torque_nm(self, i):
        return self.stall_nm_4v8[i] * self.torque_scale

    def at_stall(self, data):
        # Per servo: powered, its torque at (90% of) the rail's stall limit, and its shaft
        # nearly still (< 10 deg/s: a servo accelerating at full torque is not stalled).
        f = self.slot_values(self._force)
        v = self.slot_values(data.actuator_velocity)
        lims = self.slot_values(self._forcerange[:, 1])
        powered = self.powered
        return [bool(powered[a] and lims[a] > 0.0 and abs(f[a]) >= 0.9 * lims[a]
                     and abs(v[a]) < _STALL_STILL_RAD_S) for a in range(N_SERVOS)]
