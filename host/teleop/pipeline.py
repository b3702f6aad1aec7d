# The pose pipeline in two stages that share the latest target under a lock (reference design:
# a reader thread at the device rate, a control thread at a fixed rate):
#
#   HandStage.process(sample), per sample at the device rate:
#       Y-up -> Z-up (+ operator heading) -> outlier gate -> clutch / re-zero / scale (fine)
#       -> workspace clamp  => Cartesian target (mm, tool pitch) posted to HandMailbox
#   ControlStage.tick(), at the fixed control rate:
#       latest target -> low-pass (position) + nlerp (orientation) -> reachability clamp
#       -> IK (DLS on the MuJoCo model, seeded from the last solution; or the analytic one)
#       -> joint speed/acceleration limits
#       => Cartesian target + joint angles (deg) + jaw (um), for any target (sim now, a board
#          over the link later); the runner adds the servo feedforward (feedforward.py) to make
#          the joint setpoints it sends.
#
# Each step is its own small module (coord_frames, outlier, clutch, workspace, smoothing, reach, ik,
# joint_limits); this file only wires them and keeps what the log needs.
import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from surepick.shared_fsm import kinematics as kin
from surepick.host.teleop import coord_frames, reach
from surepick.host.teleop.clutch import Clutch
from surepick.host.teleop.ik import ArmModel, DlsIK
from surepick.host.teleop.joint_limits import JointLimiter
from surepick.host.teleop.outlier import ACCEPT, REANCHOR, OutlierGate
from surepick.host.teleop.quat import mat_to_wxyz, wxyz_to_mat
from surepick.host.teleop.smoothing import LowPass, OrientationFilter
from surepick.host.teleop.workspace import Workspace

JAW_OPEN_UM = 40000


@dataclass
class Settings:
    scale: float = 0.15              # hand -> arm (reference: 0.1-0.2 for a desktop arm)
    fine_divisor: float = 5.0        # the fine button divides the scale by this
    jump_m: float = 0.05             # outlier: a hand move larger than this between samples (before scaling)
    reacquire: int = 3               # outlier: agreeing samples that accept a persistent leap
    alpha: float = 0.3               # low-pass on position, nlerp weight on orientation (per control tick)
    heading_deg: float = -90.0       # operator's facing vs the arm: -90 = OpenVR forward -> arm +x
    follow_pitch: bool = True        # tool pitch follows the hand's pitch change
    ik: str = "dls"                  # "dls" (MuJoCo) or "analytic" (shared kinematics)
    control_hz: float = 100.0
    feedforward: bool = True         # servo feedforward (feedforward.py): gravity + damping torque
    lead_ms: float = 0.0             # extra setpoint lead (feedforward.py)
    jaw_open_um: int = JAW_OPEN_UM
    workspace: Workspace = field(default_factory=Workspace)
    arm: object = None               # the arm description's Arm (None: the reference arm)

    def check(self):
        if not self.scale > 0:
            raise ValueError("scale must be > 0")
        if not 0 < self.alpha <= 1:
            raise ValueError("alpha must be in (0, 1]")
        if not self.jump_m > 0:
            raise ValueError("jump must be > 0")
        if self.ik not in ("dls", "analytic"):
            raise ValueError("ik must be dls or analytic")
        if not self.control_hz >= 50:
            raise ValueError("the control rate must be at least 50 Hz (got %g)" % self.control_hz)
        arm = self.arm
        if arm is not None and not arm.free_pitch:
            fixed = ("its hand is kept level by the linkage" if arm.kind == "parallel"
                     else "it has no wrist servo: its tool follows the forearm")
            if self.follow_pitch:
                raise ValueError("%s is a %s arm: %s, so the tool pitch cannot follow the hand's; "
                                 "add --no-pitch (position only)" % (arm.name, arm.kind, fixed))
            if self.ik == "dls":
                raise ValueError("%s is a %s arm: the DLS solver moves a free wrist it does not have; "
                                 "use --ik analytic (its own kinematics, the board's)" % (arm.name, arm.kind))
            if self.feedforward:
                raise ValueError("%s is a %s arm: the servo feedforward models a serial chain; "
                                 "add --no-feedforward" % (arm.name, arm.kind))
        return self


@dataclass
class HandResult:
    seq: int
    t: float
    arrived: float                   # perf_counter when the sample reached the pipeline
    status: str                      # outlier verdict
    hand_m: object                   # converted hand position (Z-up m) or None
    hand_pitch: float
    target_mm: np.ndarray            # after clutch, scale, workspace clamp
    target_pitch: float
    ws_clamped: bool
    jaw_um: int
    clutch: bool
    fine: bool
    joint_jog_deg: object = None
    quit: bool = False
    jog_gen: int = 0                 # the joint-jog generation this target was computed after
    done_s: float = 0.0              # processing time of this stage
    mark: object = None              # the sample's teach mark (sample.MARKS) or None


class HandMailbox:
    # The latest hand-stage result and the last commanded pose, under one lock.
    def __init__(self):
        self.lock = threading.Lock()
        self.latest = None
        self.commanded = None        # (pos_mm, pitch_deg, jog generation)
        self.pending_jog = None

    def post(self, result):
        with self.lock:
            self.latest = result
            if result.joint_jog_deg is not None:
                j = np.asarray(result.joint_jog_deg, dtype=float)
                self.pending_jog = j if self.pending_jog is None else self.pending_jog + j

    def take(self):
        with self.lock:
            jog, self.pending_jog = self.pending_jog, None
            return self.latest, jog

    def set_commanded(self, pos_mm, pitch_deg, jog_gen):
        with self.lock:
            self.commanded = (np.asarray(pos_mm, dtype=float).copy(), float(pitch_deg), int(jog_gen))

    def get_commanded(self):
        with self.lock:
            return self.commanded


class HandStage:
    def __init__(self, settings, shared):
        self.s = settings
        self.shared = shared
        self.gate = OutlierGate(settings.jump_m, settings.reacquire)
        self.clutch = Clutch(settings.scale, settings.fine_divisor, settings.follow_pitch)
        self.seq = 0
        self.ws_clamps = 0
        self._jog_seen = 0

    def process(self, sample, arrived=None):
        t0 = time.perf_counter()
        arrived = t0 if arrived is None else arrived
        s = self.s
        commanded = self.shared.get_commanded()
        if self.clutch.target_mm is None or commanded[2] != self._jog_seen:
            # Start-up, or the arm was jogged joint by joint: hold (and re-zero on) where it is now.
            self._jog_seen = commanded[2]
            self.clutch.hold(commanded[0], commanded[1])
        hand_m, hand_pitch = None, math.nan
        if sample.pose is not None:
            r, t = coord_frames.pose_from_list(sample.pose)
            r, t = coord_frames.yup_to_zup(r, t)
            r, t = coord_frames.apply_heading(r, t, s.heading_deg)
        else:
            r = t = None
        status = self.gate.check(r, t)
        if status in (ACCEPT, REANCHOR):
            hand_m = t
            hand_pitch = coord_frames.pitch_of(r, coord_frames.CONTROLLER_FORWARD, coord_frames.CONTROLLER_RIGHT)
        b = sample.buttons
        target, pitch = self.clutch.update(hand_m, hand_pitch, b.clutch, b.fine, commanded[0], commanded[1],
                                           reanchor=(status == REANCHOR))
        target, pitch, clamped = s.workspace.clamp(target, pitch)
        self.ws_clamps += clamped
        jaw = int(round(s.jaw_open_um * (1.0 - b.grip)))
        self.seq += 1
        res = HandResult(self.seq, sample.t, arrived, status, hand_m, hand_pitch, target, pitch, clamped, jaw,
                         b.clutch, b.fine, sample.joint_jog_deg, sample.quit, self._jog_seen)
        res.mark = sample.mark
        res.done_s = time.perf_counter() - t0
        self.shared.post(res)
        return res


@dataclass
class ControlResult:
    tick: int
    hand: object                     # the HandResult used (None before the first sample)
    filtered_mm: np.ndarray
    filtered_pitch: float
    target_mm: np.ndarray            # the commanded Cartesian target (reachable)
    target_pitch: float
    reach_clamped: bool
    reach_reason: str
    q_ik_deg: np.ndarray
    ik_iters: int
    ik_resid_mm: float
    ik_check_deg: float              # largest joint difference DLS vs analytic
    jaw_um: int
    rate_limited: bool = False       # the joints could not go as fast: target = where they can be
    done_s: float = 0.0


class ControlStage:
    def __init__(self, settings, shared, start_q_deg, start_jaw_um, arm_model=None):
        self.s = settings
        self.shared = shared
        self.kin = settings.arm or kin.REFERENCE     # the arm's own kinematics (the board's)
        # the MuJoCo model for DLS and the feedforward: a serial arm's (Settings.check refuses
        # both for the kinds without a free wrist)
        self.arm = arm_model or (ArmModel(settings.arm) if self.kin.free_pitch else None)
        self.dls = DlsIK(self.arm) if self.arm is not None else None
        self.q = np.asarray(start_q_deg, dtype=float).copy()
        x, y, z, pitch = self.kin.forward(list(self.q))
        self.target_mm = np.array([x, y, z])
        self.target_pitch = pitch
        self.goal_mm, self.goal_pitch = self.target_mm.copy(), pitch    # the reachable goal (pre joint limits)
        self.jaw_um = int(start_jaw_um)
        self.pos_filter = LowPass(settings.alpha)
        self.rot_filter = OrientationFilter(settings.alpha)
        self.pos_filter.reset(self.target_mm)
        self.rot_filter.reset(self._tool_quat(self.target_mm, pitch))
        self.ticks = 0
        self.reach_clamps = 0
        self.rate_limits = 0
        self.limiter = JointLimiter(self.q, settings.control_hz, arm=self.kin)
        self.jog_gen = 0
        self.shared.set_commanded(self.target_mm, self.target_pitch, self.jog_gen)

    @staticmethod
    def _tool_quat(pos_mm, pitch_deg):
        yaw = math.degrees(math.atan2(pos_mm[1], pos_mm[0]))
        return mat_to_wxyz(coord_frames.tool_rotation(yaw, pitch_deg))

    def tick(self):
        t0 = time.perf_counter()
        hand, jog = self.shared.take()
        if jog is not None:
            self._jog(jog)
        if hand is not None:
            self.jaw_um = hand.jaw_um
        if hand is None or hand.jog_gen != self.jog_gen:
            goal_mm, goal_pitch = self.goal_mm, self.goal_pitch       # nothing newer than the jog yet
        else:
            goal_mm, goal_pitch = hand.target_mm, hand.target_pitch
        f_mm = self.pos_filter.update(goal_mm)
        f_q = self.rot_filter.update(self._tool_quat(goal_mm, goal_pitch))
        f_pitch = coord_frames.pitch_of(wxyz_to_mat(f_q), coord_frames.TOOL_FORWARD, coord_frames.TOOL_RIGHT)
        try:
            pos, pitch, q_an, clamped, reason = reach.nearest_reachable(f_mm, f_pitch, (self.target_mm, self.target_pitch),
                                                                        arm=self.kin)
        except reach.NotReachable as e:
            # Nothing reachable to move to (the last pose itself fails the reach margin after a
            # joint-limited step): hold the joints where they are, and say so.
            pos, pitch, q_an, clamped, reason = self.target_mm, self.target_pitch, list(self.q), True, "hold: %s" % e
        self.reach_clamps += clamped
        if self.s.ik == "dls":
            q, iters, resid, _ = self.dls.solve(pos, pitch, self.q)
        else:
            q, iters, resid = np.asarray(q_an, dtype=float), 0, 0.0
        check = float(np.max(np.abs(np.asarray(q) - np.asarray(q_an))))
        goal_mm, goal_pitch = np.asarray(pos, dtype=float), float(pitch)
        self.goal_mm, self.goal_pitch = goal_mm, goal_pitch
        q_lim, limited = self.limiter.step(q)
        if limited:      # the joints cannot go there this fast: command where they can be
            q = q_lim
            x, y, z, pitch = self.kin.forward(list(q))
            pos = np.array([x, y, z])
            self.rate_limits += 1
        q = np.asarray(q, dtype=float)
        self.q = q
        self.target_mm, self.target_pitch = np.asarray(pos, dtype=float), float(pitch)
        # The clutch re-zeroes on the reachable goal, not on a pose the joint limiter is still
        # moving through: the arm goes on to the goal, and a joint jog is never cut short.
        self.shared.set_commanded(goal_mm, goal_pitch, self.jog_gen)
        self.ticks += 1
        res = ControlResult(self.ticks, hand, f_mm, f_pitch, self.target_mm.copy(), self.target_pitch, clamped, reason,
                            self.q.copy(), iters, resid, check, self.jaw_um, limited)
        res.done_s = time.perf_counter() - t0
        return res

    def rebase(self, q_deg):
        # The arm is somewhere else than this stage last commanded (a board that held after a
        # deadman and was re-armed): start again from there, filters and limiter included, and
        # make the hand stage re-zero on it (as after a joint jog), so nothing jumps.
        q = np.asarray(q_deg, dtype=float)
        x, y, z, pitch = self.kin.forward(list(q))
        pos = np.array([x, y, z])
        self.target_mm, self.target_pitch = pos, pitch
        self.goal_mm, self.goal_pitch = pos.copy(), pitch
        self.pos_filter.reset(pos)
        self.rot_filter.reset(self._tool_quat(pos, pitch))
        self.limiter.reset(q)
        self.q = q.copy()
        self.jog_gen += 1
        self.shared.set_commanded(self.goal_mm, self.goal_pitch, self.jog_gen)

    def _jog(self, jog_deg):
        # Joint jog: move the joints directly (within their limits) and make the result the new
        # target, filters included, so the Cartesian path picks up from there without a jump.
        lo = np.array([j["min_deg"] for j in self.kin.joints] + [0.0] * (4 - len(self.kin.joints)))
        hi = np.array([j["max_deg"] for j in self.kin.joints] + [0.0] * (4 - len(self.kin.joints)))
        q = np.clip(self.q + np.asarray(jog_deg, dtype=float), lo, hi)
        x, y, z, pitch = self.kin.forward(list(q))
        pos = np.array([x, y, z])
        try:
            self.kin.check_limits(list(q))       # coupled limits too
            reach.solve(pos, pitch, arm=self.kin)
        except kin.Unreachable:
            return          # a jog into the table or the base column is refused
        self.target_mm, self.target_pitch = pos, pitch
        self.goal_mm, self.goal_pitch = pos, pitch
        self.pos_filter.reset(pos)
        self.rot_filter.reset(self._tool_quat(pos, pitch))
        self.q = q
        self.jog_gen += 1

