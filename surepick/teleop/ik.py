# Inverse kinematics for the 4-DoF arm: position of the jaw centre plus tool pitch; the base yaw
# follows from the position. Two solvers that must agree (tests/teleop/test_ik.py):
#   analytic  the shared closed form (shared_fsm/kinematics.py), what the board runs;
#   DLS       damped least squares on the MuJoCo model of the arm (sim/arm.xml): mj_jac for the
#             Jacobian and mj_forward (never mj_step: kinematics only, no dynamics, no velocity)
#             inside the iterations, seeded from the last solution so a stream of nearby targets
#             converges in a few iterations.
# Joint angles are in degrees in the shared convention (docs/conventions.md).
import math

import mujoco
import numpy as np

from surepick.shared_fsm import kinematics as kin
from surepick.sim.plant import ARM_XML_PATH
from surepick.teleop import frames

ARM_JOINTS = ("base_yaw", "shoulder", "elbow", "wrist")
TOOL_SITE = "jaw_centre"


def analytic(pos_mm, pitch_deg):
    x, y, z = (float(v) for v in pos_mm)
    return kin.inverse(x, y, z, float(pitch_deg))


class ArmModel:
    # The arm's MJCF on its own MjData: never the plant's, so solving moves no physics.
    def __init__(self, xml_path=ARM_XML_PATH):
        self.m = mujoco.MjModel.from_xml_path(xml_path)
        self.d = mujoco.MjData(self.m)
        m = self.m
        jids = [m.joint(n).id for n in ARM_JOINTS]
        self.qadr = np.array([m.jnt_qposadr[j] for j in jids])
        self.dofs = np.array([m.jnt_dofadr[j] for j in jids])
        self.lo = np.array([m.jnt_range[j][0] for j in jids])
        self.hi = np.array([m.jnt_range[j][1] for j in jids])
        self.site = m.site(TOOL_SITE).id
        self.site_body = m.site_bodyid[self.site]
        self._jacp = np.zeros((3, m.nv))
        self._jacr = np.zeros((3, m.nv))

    def set_q(self, q_deg):
        self.d.qpos[self.qadr] = np.radians(np.asarray(q_deg, dtype=float))

    def tool(self):
        # (position m, pitch deg) of the tool site for the current kinematics.
        r = self.d.site_xmat[self.site].reshape(3, 3)
        return self.d.site_xpos[self.site].copy(), frames.pitch_of(r, frames.TOOL_FORWARD, frames.TOOL_RIGHT)

    def fk(self, q_deg):
        # MuJoCo's forward kinematics: (x, y, z mm, pitch deg).
        self.set_q(q_deg)
        mujoco.mj_kinematics(self.m, self.d)
        p, pitch = self.tool()
        return np.concatenate([p * 1000.0, [pitch]])

    def inverse_dynamics(self, q_deg, qd_deg_s, qdd_deg_s2):
        # Joint torques (N*m) the servos must produce for this motion: inertia (links and the
        # servos' gear trains, the model's armature), gravity, and the servos' own back-EMF
        # damping (the model's joint damping), from mj_inverse.
        m, d = self.m, self.d
        self.set_q(q_deg)
        d.qvel[:] = 0.0
        d.qacc[:] = 0.0
        d.qvel[self.dofs] = np.radians(np.asarray(qd_deg_s, dtype=float))
        d.qacc[self.dofs] = np.radians(np.asarray(qdd_deg_s2, dtype=float))
        mujoco.mj_inverse(m, d)
        return d.qfrc_inverse[self.dofs].copy()

    def gravity_torque(self, q_deg):
        # Joint torques (N*m) that hold the arm still against gravity at q (qfrc_bias at rest).
        self.set_q(q_deg)
        self.d.qvel[:] = 0.0
        mujoco.mj_forward(self.m, self.d)
        return self.d.qfrc_bias[self.dofs].copy()


class DlsIK:
    # Damped least squares: dq = J^T (J J^T + lambda^2 I)^-1 e on the 4x4 task
    # (x, y, z in m; pitch in rad times PITCH_WEIGHT_M, so 1 rad weighs like 10 cm).
    PITCH_WEIGHT_M = 0.1

    def __init__(self, model=None, damping=0.01, max_iter=30, tol_mm=0.01, tol_deg=0.01):
        self.arm = model or ArmModel()
        self.damping = float(damping)
        self.max_iter = int(max_iter)
        self.tol_m = tol_mm / 1000.0
        self.tol_rad = math.radians(tol_deg)
        self.last_iters = 0

    def solve(self, pos_mm, pitch_deg, seed_deg):
        # -> (q_deg, iterations, position residual mm, pitch residual deg)
        arm, m, d = self.arm, self.arm.m, self.arm.d
        target = np.asarray(pos_mm, dtype=float) / 1000.0
        pitch_t = math.radians(pitch_deg)
        q = np.radians(np.asarray(seed_deg, dtype=float))
        q = np.clip(q, arm.lo, arm.hi)
        lam2 = self.damping ** 2
        w = self.PITCH_WEIGHT_M
        it = 0
        while True:
            d.qpos[arm.qadr] = q
            mujoco.mj_forward(m, d)
            p, pitch = arm.tool()
            e_pos = target - p
            e_pitch = (pitch_t - math.radians(pitch) + math.pi) % (2.0 * math.pi) - math.pi   # -181 deg is +179
            if (np.linalg.norm(e_pos) <= self.tol_m and abs(e_pitch) <= self.tol_rad) or it >= self.max_iter:
                break
            mujoco.mj_jac(m, d, arm._jacp, arm._jacr, p, arm.site_body)
            yaw = q[0]
            lateral = np.array([math.sin(yaw), -math.cos(yaw), 0.0])   # +pitch turns about this
            jac = np.vstack([arm._jacp[:, arm.dofs], w * (lateral @ arm._jacr[:, arm.dofs])])
            err = np.concatenate([e_pos, [w * e_pitch]])
            dq = jac.T @ np.linalg.solve(jac @ jac.T + lam2 * np.eye(4), err)
            q = np.clip(q + dq, arm.lo, arm.hi)
            it += 1
        self.last_iters = it
        return np.degrees(q), it, float(np.linalg.norm(e_pos) * 1000.0), abs(math.degrees(e_pitch))
