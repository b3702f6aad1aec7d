# Servo feedforward: what the joint setpoints need on top of the IK solution for a hobby servo
# to end up where IK says. A hobby servo is a proportional controller with a deadband and a
# saturating torque, seeing a new pulse once per 20 ms PWM frame: under a load it settles
# (torque / stiffness + deadband) short of its setpoint, and following a moving setpoint it lags
# by its frame and its own response. Measured on the simulated arm (tests/host/teleop): without this
# the tool sits 2-7 mm below its target at rest, from gravity alone.
#
#   torque    setpoint += tau / stiffness (+ the deadband, in the direction of the load), with
#             tau from the arm's model by inverse dynamics (mj_inverse) at the IK solutions'
#             position and speed: gravity and the servos' back-EMF damping. The inertia term is
#             off by default: from finite differences of 100 Hz solutions it overshot near
#             full stretch (measured: a vertical circle's worst error 9.6 -> 24 mm);
#   lead      setpoint += joint velocity * lead_ms: the age of the pulse a servo acts on.
#
# The servo figures are the reference build's nominal ones (sim/params.py defaults, the
# datasheet-level numbers of shared/HARDWARE.md), i.e. what a user's configuration says about its
# servos; never the simulated plant's own (possibly perturbed) values.
import numpy as np

from surepick.sim.params import PlantParams

# With the board carrying setpoints on at the stream's speed (firmware/teleop_mode.py) and the damping
# term above, extra lead only overshot in the measurements (tests/host/teleop), so none by default.
DEFAULT_LEAD_MS = 0.0


def nominal_servos():
    # (stiffness N*m/deg, deadband deg) per arm joint, from the nominal servo figures.
    out = []
    for s in PlantParams().servos[:4]:
        stiffness = s.stall_torque_nm_4v8 / s.band_deg
        deadband = s.deadband_us * s.travel_mdeg / 1000.0 / (s.max_us - s.min_us)
        out.append((stiffness, deadband))
    return out


class ServoFeedforward:
    def __init__(self, arm_model, control_hz, lead_ms=DEFAULT_LEAD_MS, torque=True, dynamics=True, inertia=False,
                 servos=None):
        self.arm = arm_model
        self.dt = 1.0 / float(control_hz)
        self.lead_s = float(lead_ms) / 1000.0
        self.torque = bool(torque)
        self.dynamics = bool(dynamics)
        self.inertia = bool(inertia)
        figs = servos or nominal_servos()
        self.stiffness = np.array([f[0] for f in figs])
        self.deadband = np.array([f[1] for f in figs])
        self._q1 = None           # the last two IK solutions, for velocity and acceleration
        self._qd1 = None
        self.last_offset = np.zeros(4)

    def reset(self):
        # Forget the last solutions (the arm was re-based elsewhere): no velocity from the jump.
        self._q1 = None
        self._qd1 = None

    def torque_offset(self, q_deg, qd=None, qdd=None):
        if qd is None or not self.dynamics:
            tau = self.arm.gravity_torque(q_deg)
        else:
            tau = self.arm.inverse_dynamics(q_deg, qd, qdd if self.inertia else np.zeros(4))
        # The load direction decides which edge of the deadband the shaft rests on; an unloaded
        # joint (|tau| tiny) gets no deadband push: it could rest on either edge.
        loaded = np.abs(tau) > 0.2 * self.stiffness * self.deadband
        return tau / self.stiffness + np.where(loaded, np.sign(tau) * self.deadband, 0.0)

    def resting(self, q_set_deg, rounds=8):
        # The pose whose setpoint at rest is q_set_deg (setpoint = pose + its static offset):
        # where a servo holding q_set_deg rests under its load. A session starts from there, so
        # the setpoint it sends at rest is the one the target holds (no drift session to session).
        q_set = np.asarray(q_set_deg, dtype=float)
        q = q_set.copy()
        if not self.torque:
            return q
        for _ in range(rounds):          # the offset changes slowly with the pose: a few rounds
            q = q_set - self.torque_offset(q)
        return q

    def __call__(self, q_ik_deg, ctrl=None):
        q = np.asarray(q_ik_deg, dtype=float)
        qd = qdd = None
        if self._q1 is not None:
            qd = (q - self._q1) / self.dt
            qdd = np.zeros(4) if self._qd1 is None else (qd - self._qd1) / self.dt
        out = q.copy()
        if self.torque:
            out += self.torque_offset(q, qd, qdd)
        if qd is not None:
            out += qd * self.lead_s
        self._q1, self._qd1 = q.copy(), qd
        self.last_offset = out - q
        return out
