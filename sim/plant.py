# The physical plant: the MuJoCo arm (generated from its description by sim/arm_model.py, plus
# one free part, an optional fixed obstacle and optional beam debris) behind the board's view of it: five PWM pulse widths in, read_u16 and
# read_pin out, time advanced in whole milliseconds. The state machine's sim HAL and the virtual
# board talk to this class only; ground truth for judging a run comes from truth().
import hashlib
import math

import mujoco

from surepick.shared_fsm import kinematics
from surepick.sim import arm_model
from surepick.sim.params import PlantParams
from surepick.sim.sensor_models import BreakBeam, CurrentSense, Microswitch, Pot, RailSense, noise_streams
from surepick.sim.servo_model import GRIPPER, N_SERVOS, Rail, ServoBank
from surepick.sim.truth import Truth

# The reference arm's bench layout in the world frame (mm; x forward, z up, table top z = 0),
# from its description (bench.*). Another arm's comes from its own Arm.bench.
_REF_BENCH = kinematics.REFERENCE.bench
SOURCE_XY_MM = (_REF_BENCH["pad_x_mm"], _REF_BENCH["pad_y_mm"])
SOURCE_HALF_MM = _REF_BENCH["pad_half_mm"]
SOURCE_TOP_Z_MM = _REF_BENCH["pad_top_mm"]
BIN_XY_MM = (_REF_BENCH["bin_x_mm"], _REF_BENCH["bin_y_mm"])
BIN_INNER_HALF_MM = _REF_BENCH["bin_inner_half_mm"]
BIN_FLOOR_Z_MM = _REF_BENCH["bin_floor_mm"]
BIN_WALL_TOP_MM = _REF_BENCH["bin_wall_top_mm"]
OBSTACLE_XY_MM = (140.0, 0.0)
OBSTACLE_SIZE_MM = (40.0, 40.0, 40.0)  # across the jaws, along the arm, height

# Free parts: shape, size (box: x y z; cylinder: diameter height; sphere: diameter), mass,
# friction coefficient. The pad-part contact uses sqrt(pad * part) friction, so a slippery part
# really is harder to hold.
PARTS = {
    "cube25": dict(shape="box", size_mm=(25.0, 25.0, 25.0), mass_g=20.0, friction=0.8),
    "cube25_heavy": dict(shape="box", size_mm=(25.0, 25.0, 25.0), mass_g=100.0, friction=0.8),
    "cube25_slippery": dict(shape="box", size_mm=(25.0, 25.0, 25.0), mass_g=100.0, friction=0.25),
    "cylinder": dict(shape="cylinder", size_mm=(24.0, 30.0), mass_g=30.0, friction=0.7),
    "sphere": dict(shape="sphere", size_mm=(25.0,), mass_g=15.0, friction=0.6),
    "block40": dict(shape="box", size_mm=(40.0, 25.0, 25.0), mass_g=60.0, friction=0.8),
    "block15": dict(shape="box", size_mm=(15.0, 15.0, 25.0), mass_g=12.0, friction=0.8),
}

# Pins and ADC channels (docs/conventions.md).
PIN_ESTOP = 13
PIN_SWITCH = 14
PIN_BEAM = 15
ADC_POT = 0
ADC_CURRENT = 1
ADC_RAIL = 2

_CHUNK_MS = 2  # the switch is sampled at least this often while physics runs
_FAULTS = ("switch_stuck", "beam_blocked", "pot_broken", "current_offset", "brownout", "estop",
           "push_part", "part_away", "part_in_jaw", "part_on_pad", "clear")
# Where a hand puts the part it takes off the bench (part_away): beside the arm's base, out of
# its work (m, in the base's frame; on the floor plane).
PART_AWAY_M = (-0.30, -0.30)
# Where a hand holds the part between the open jaws (part_in_jaw): its centre this far behind the
# finger tips along the fingers (m; a 25 mm part flush with the tips), square to the palm.
PART_IN_JAW_BACK_M = 0.0125


def part_spec(part):
    if part is None:
        return None
    if isinstance(part, str):
        if part not in PARTS:
            raise KeyError("unknown part %r (known: %s)" % (part, ", ".join(sorted(PARTS))))
        return dict(PARTS[part], name=part)
    spec = dict(part)
    for key in ("shape", "size_mm", "mass_g", "friction"):
        if key not in spec:
            raise KeyError("part spec needs %r" % key)
    spec.setdefault("name", "custom")
    return spec


def part_height_mm(spec):
    if spec["shape"] == "box":
        return spec["size_mm"][2]
    if spec["shape"] == "cylinder":
        return spec["size_mm"][1]
    return spec["size_mm"][0]


PART_HEIGHT_MM = {name: part_height_mm(s) for name, s in PARTS.items()}


def support_top_mm(x_mm, y_mm, bench=None):
    # The top of whatever stands at (x, y): the source pad, the bin's floor or the table.
    b = bench or _REF_BENCH
    if abs(x_mm - b["pad_x_mm"]) <= b["pad_half_mm"] and abs(y_mm - b["pad_y_mm"]) <= b["pad_half_mm"]:
        return b["pad_top_mm"]
    if abs(x_mm - b["bin_x_mm"]) <= b["bin_inner_half_mm"] and abs(y_mm - b["bin_y_mm"]) <= b["bin_inner_half_mm"]:
        return b["bin_floor_mm"]
    return 0.0


def build_spec(part=None, part_pose=None, obstacle=None, debris=False, params=None, arm=None, others=()):
    """The arm's generated model (sim/arm_model.py) with the scenario's objects added. others:
    more free parts, (part, (x_mm, y_mm, yaw_deg)) each, named part2, part3, ..."""
    params = params or PlantParams()
    arm = arm or kinematics.REFERENCE
    b = arm.bench
    spec = arm_model.arm_spec(arm)
    ps = part_spec(part)
    if ps is not None:
        if part_pose is None:
            part_pose = (b["pad_x_mm"], b["pad_y_mm"], None)
        arm_model.add_part(spec, ps, part_pose, params, support_top_mm(part_pose[0], part_pose[1], b),
                           part_height_mm(ps))
    for i, (other, pose) in enumerate(others or ()):
        po = part_spec(other)
        arm_model.add_part(spec, po, pose, params, support_top_mm(pose[0], pose[1], b), part_height_mm(po),
                           "part%d" % (i + 2))
    if obstacle:
        o = {"x_mm": OBSTACLE_XY_MM[0], "y_mm": OBSTACLE_XY_MM[1], "yaw_deg": None, "size_mm": OBSTACLE_SIZE_MM}
        if isinstance(obstacle, dict):
            o.update(obstacle)
        yaw = o["yaw_deg"]
        if yaw is None:
            yaw = math.degrees(math.atan2(o["y_mm"], o["x_mm"]))
        arm_model.add_obstacle(spec, o["x_mm"], o["y_mm"], yaw, o["size_mm"])
    if debris:
        arm_model.add_debris(spec)
    return spec


def build_xml(part=None, part_pose=None, obstacle=None, debris=False, params=None, arm=None):
    """The MJCF of build_spec (what `surepick arm model` writes, for MuJoCo's viewer)."""
    spec = build_spec(part, part_pose, obstacle, debris, params, arm)
    spec.compile()
    return spec.to_xml()


class Plant:
    def __init__(self, part="cube25", params=None, seed=0, part_pose=None, obstacle=None,
                 debris=False, start_limp=False, arm=None, others=()):
        self.arm = arm or kinematics.REFERENCE
        if params is None:
            params = PlantParams.for_arm(self.arm)
        elif isinstance(params, dict):
            params = PlantParams.merge(PlantParams.for_arm(self.arm), params)
        self.params = params
        self.seed = int(seed)
        self.part = part_spec(part)
        spec = build_spec(part, part_pose, obstacle, debris, params, self.arm, others)
        self._others = ["part%d" % (i + 2) for i in range(len(others or ()))]
        self.m = spec.compile()
        self._spec = spec          # its MJCF and the model's hash are made when first asked for
        self._hash = None
        self.d = mujoco.MjData(self.m)
        m, d = self.m, self.d
        self._apply_pad_params()
        self.servos = ServoBank(m, d, params, self.arm)
        self._jaw_mm_per_rad = self.servos.jaw_m_per_rad * 1000.0
        self._grip_act = self.servos.act_of[GRIPPER]      # the gripper's actuator (3 on a wrist-less arm)
        self.rail = Rail(params.rail)
        noise = noise_streams(self.seed, ("pot", "current", "rail", "switch"))
        self.pot = Pot(params.pot, noise["pot"])
        self.current = CurrentSense(params.current, noise["current"])
        self.rail_sense = RailSense(params.rail, noise["rail"])
        self.switch = Microswitch(params.switch, noise["switch"])
        self.beam = BreakBeam(mujoco, m, d)
        b = self.arm.bench
        self._truth = Truth(m, d, [b["bin_x_mm"] / 1000.0, b["bin_y_mm"] / 1000.0],
                            b["bin_inner_half_mm"] / 1000.0, b["bin_wall_top_mm"] / 1000.0,
                            arm_model.joint_slots(self.arm))
        self.estop = 0
        self._gripper_act = m.actuator("gripper").id
        self._pad_adr = m.jnt_qposadr[m.joint("pad_slide").id]
        # The model's physics step in whole ms, dividing the switch's sampling period.
        self._step_ms = int(round(m.opt.timestep * 1000.0))
        if self._step_ms < 1 or _CHUNK_MS % self._step_ms or abs(m.opt.timestep * 1000.0 - self._step_ms) > 1e-9:
            raise ValueError("arm model: the timestep must be a whole number of ms dividing %d ms, got %g s"
                             % (_CHUNK_MS, m.opt.timestep))
        self._act_length = d.actuator_length  # views into MjData, fetched once (hot path)
        self._qpos = d.qpos
        self._trip_m = params.switch.trip_mm / 1000.0
        self._release_m = params.switch.release_mm / 1000.0
        self._part_body = m.body("part").id if self.part is not None else -1
        self._push_until_ms = -1
        self.now_ms = 0
        self._set_home_pose()
        self.servos.hold_current_pose(d)
        if start_limp:
            self.servos.set_pulses([0] * N_SERVOS)
        self._last_rail_mv = params.rail.nominal_mv
        self._rail_ms = -1
        self._next_frame_ms = 0
        self._event()  # first PWM frame at t = 0

    # ---- model set-up -------------------------------------------------------------------
    def _apply_pad_params(self):
        m, p = self.m, self.params.pad
        j = m.joint("pad_slide").id
        dof = m.jnt_dofadr[j]
        m.jnt_stiffness[j] = p.stiffness_n_per_m
        m.qpos_spring[m.jnt_qposadr[j]] = -p.preload_mm / 1000.0
        m.jnt_range[j] = (0.0, p.travel_mm / 1000.0)
        m.dof_damping[dof] = p.damping_ns_per_m
        for g in ("pad_l", "face_r"):
            m.geom_friction[m.geom(g).id, 0] = p.friction
        for g in ("finger_l_plate", "finger_r_plate"):
            m.geom_friction[m.geom(g).id, 0] = p.finger_friction

    def _set_home_pose(self):
        m, d, p = self.m, self.d, self.params
        q = [math.radians(v) for v in p.home_deg]
        qpos = {"base_yaw": q[0], "shoulder": q[1], "elbow": q[2], "wrist": q[3]}
        if self.arm.kind == "parallel":
            # the elbow slot is the forearm's absolute angle; the passive wrist keeps the hand level
            qpos["elbow"] = q[2] - q[1]
            qpos["wrist"] = math.radians(self.arm.geo["hand_pitch_deg"]) - q[2]
        elif self.arm.kind == "serial_nowrist":
            del qpos["wrist"]
        for name, v in qpos.items():
            d.qpos[m.jnt_qposadr[m.joint(name).id]] = v
        half = p.home_jaw_mm / 2000.0
        d.qpos[m.jnt_qposadr[m.joint("finger_l").id]] = half
        d.qpos[m.jnt_qposadr[m.joint("finger_r").id]] = half
        mujoco.mj_forward(m, d)

    # ---- the board's outputs ------------------------------------------------------------
    def set_pulses(self, us):
        # Takes effect at the next PWM frame, as on a real servo.
        if len(us) != N_SERVOS:
            raise ValueError("set_pulses needs %d pulse widths, got %d" % (N_SERVOS, len(us)))
        self.servos.pulses[:] = us

    # ---- time ---------------------------------------------------------------------------
    def advance(self, ms):
        # Physics in chunks of <= 2 ms (the switch is sampled between chunks), cut at PWM frame
        # boundaries (servo update) and at the end of a push. Kept lean: this is the hot path
        # (mujoco.mj_step is looked up per call, so a benchmark can time it).
        if ms.__class__ is not int or ms < 1:
            if ms < 1 or ms != int(ms):
                raise ValueError("advance needs a whole number of ms >= 1, got %r" % (ms,))
            ms = int(ms)
        m, d = self.m, self.d
        step = mujoco.mj_step
        switch = self.switch
        trip_m, release_m = self._trip_m, self._release_m
        qpos = self._qpos
        pad = self._pad_adr
        step_ms = self._step_ms
        now = self.now_ms
        end = now + ms
        nxt = self._next_event_ms
        while now < end:
            if now >= nxt:
                self.now_ms = now
                self._event()
                nxt = self._next_event_ms
            stop = now + _CHUNK_MS
            if stop > end:
                stop = end
            if stop > nxt:
                stop = nxt
            n = stop - now
            if n == step_ms:
                step(m, d, 1)
            else:
                self._step_odd(step, n)
            now = stop
            # Switch sampling, inlined (Microswitch.update) to keep the loop cheap.
            if switch.pressed:
                if qpos[pad] < release_m:
                    switch.update(now, qpos[pad] * 1000.0)
            elif qpos[pad] >= trip_m:
                switch.update(now, qpos[pad] * 1000.0)
        self.now_ms = now
        self._rail_ms = -1  # the state changed: recompute the rail on the next read

    def _step_odd(self, step, ms):
        # A chunk that is not one physics step (an odd ms: a push or a PWM frame that ends on
        # one, a controller period that is not a multiple of the step): whole steps, then the
        # rest with the step shortened to it for that one step.
        m, d = self.m, self.d
        whole, rest = divmod(ms, self._step_ms)
        if whole:
            step(m, d, whole)
        if rest:
            m.opt.timestep = rest / 1000.0
            try:
                step(m, d, 1)
            finally:
                m.opt.timestep = self._step_ms / 1000.0

    def _event(self):
        now = self.now_ms
        if now == self._push_until_ms:
            self.d.xfrc_applied[self._part_body, :] = 0.0
        if now >= self._next_frame_ms:
            self._frame()
            self._next_frame_ms += self.servos.frame_ms
        nxt = self._next_frame_ms
        if now < self._push_until_ms < nxt:
            nxt = self._push_until_ms
        self._next_event_ms = nxt

    def _frame(self):
        self._last_rail_mv = self.rail.mv(self.now_ms, self.servos.total_current_ma(self.d))
        self.servos.frame_update(self.d, self.now_ms, self._last_rail_mv)
        self._rail_ms = -1

    # ---- the board's inputs -------------------------------------------------------------
    def jaw_servo_mm(self):
        # What the gripper's pot sees: the servo shaft angle as jaw opening (4 deg per mm).
        return self.d.actuator_length[self._grip_act] * self._jaw_mm_per_rad

    def rail_mv(self):
        # The rail sags with the current all five servos draw right now (cached until physics moves).
        if self._rail_ms != self.now_ms:
            self._rail_now_mv = self.rail.mv(self.now_ms, self.servos.total_current_ma(self.d))
            self._rail_ms = self.now_ms
        return self._rail_now_mv

    def read_inputs(self):
        # Every input at once, as the board's HAL samples them every tick: (pot, current, rail)
        # read_u16 counts and the (e-stop, switch, beam) pin levels, the very readings that
        # read_u16(ADC_POT), read_u16(ADC_CURRENT), read_u16(ADC_RAIL), read_pin(PIN_ESTOP),
        # read_pin(PIN_SWITCH), read_pin(PIN_BEAM) give (each channel has its own noise stream,
        # so the order of the reads changes nothing), without the per-channel dispatch.
        return (self.pot.read_u16(self._act_length.item(self._grip_act) * self._jaw_mm_per_rad),
                self.current.read_u16(self.servos.gripper_current_ma(self.d)),
                self.rail_sense.read_u16(self.rail_mv()),
                self.estop, self.switch.level(self.now_ms), self.beam.level())

    def read_u16(self, channel):
        if channel == ADC_POT or channel == 26:
            return self.pot.read_u16(self._act_length[self._grip_act] * self._jaw_mm_per_rad)
        if channel == ADC_CURRENT or channel == 27:
            return self.current.read_u16(self.servos.gripper_current_ma(self.d))
        if channel == ADC_RAIL or channel == 28:
            return self.rail_sense.read_u16(self.rail_mv())
        raise ValueError("no ADC channel %r (0 pot, 1 current, 2 rail)" % (channel,))

    def read_pin(self, gpio):
        if gpio == PIN_SWITCH:
            return self.switch.level(self.now_ms)
        if gpio == PIN_BEAM:
            return self.beam.level()
        if gpio == PIN_ESTOP:
            return self.estop
        raise ValueError("no input pin GP%r (13 e-stop, 14 switch, 15 beam)" % (gpio,))

    # ---- faults and scenario hooks ------------------------------------------------------
    def inject(self, name, **kw):
        if name == "switch_stuck":
            level = kw.get("level", 0)
            self.switch.stuck_level = None if level is None else int(level)
        elif name == "beam_blocked":
            self.beam.blocked = bool(kw.get("on", True))
        elif name == "pot_broken":
            rail = kw.get("rail", 0)
            self.pot.broken_rail = None if rail is None else int(rail)
        elif name == "current_offset":
            self.current.offset_error_counts = float(kw.get("counts", 0))
        elif name == "brownout":
            self.rail.force_brownout(self.now_ms, kw.get("duration_ms", 100), kw.get("sag_ms", 0))
            self._frame()  # the rail drops now, not at the next PWM frame
            self._rail_ms = -1
        elif name == "estop":
            self.estop = 1 if kw.get("on", True) else 0
        elif name == "push_part":
            if self._part_body < 0:
                raise ValueError("push_part needs a part")
            fx, fy, fz = kw.get("force_n", (0.0, 0.0, 0.0))
            self.d.xfrc_applied[self._part_body, :3] = (fx, fy, fz)
            self._push_until_ms = self.now_ms + int(kw.get("duration_ms", 50))
            self._event()
        elif name == "part_away":
            self._part_away()
        elif name == "part_in_jaw":
            self._part_in_jaw()
        elif name == "part_on_pad":
            self._part_on_pad()
        elif name == "clear":
            self.switch.stuck_level = None
            self.beam.blocked = False
            self.pot.broken_rail = None
            self.current.offset_error_counts = 0.0
            self.estop = 0
        else:
            raise ValueError("unknown fault %r (known: %s)" % (name, ", ".join(_FAULTS)))

    def _part_away(self):
        # A person lifts the part off the pad and sets it down out of the arm's way (bring-up's
        # dry cycle runs without it); reset-world puts it back.
        if self._part_body < 0:
            raise ValueError("part_away needs a part")
        m, d = self.m, self.d
        j = m.body_jntadr[self._part_body]
        q, v = m.jnt_qposadr[j], m.jnt_dofadr[j]
        d.qpos[q:q + 2] = PART_AWAY_M
        d.qvel[v:v + 6] = 0.0
        mujoco.mj_forward(m, d)

    def _part_in_jaw(self):
        # A person holds the part between the open jaws, square to them, and keeps holding it
        # (its weight taken by the hand, no other force: the jaws centre it as they close) so
        # that bring-up can close the jaw on it; part_on_pad (or reset-world) puts it back.
        if self._part_body < 0:
            raise ValueError("part_in_jaw needs a part")
        m, d = self.m, self.d
        b = self._part_body
        grip = m.body("gripper").id
        j = m.body_jntadr[b]
        q, v = m.jnt_qposadr[j], m.jnt_dofadr[j]
        along = d.xmat[grip].reshape(3, 3)[:, 0]          # the gripper's x: wrist to finger tips
        d.qpos[q:q + 3] = d.site_xpos[m.site("jaw_centre").id] - along * PART_IN_JAW_BACK_M
        d.qpos[q + 3:q + 7] = d.xquat[grip]
        d.qvel[v:v + 6] = 0.0
        d.xfrc_applied[b, :] = 0.0
        d.xfrc_applied[b, 2] = m.body_subtreemass[b] * -m.opt.gravity[2]
        mujoco.mj_forward(m, d)

    def _part_on_pad(self):
        # The hand puts the part back where it was spawned (on its pad) and lets go; the rest of
        # the world (a card in the beam, the e-stop) stays as it is.
        if self._part_body < 0:
            raise ValueError("part_on_pad needs a part")
        m, d = self.m, self.d
        b = self._part_body
        j = m.body_jntadr[b]
        q, v = m.jnt_qposadr[j], m.jnt_dofadr[j]
        d.qpos[q:q + 7] = m.qpos0[q:q + 7]
        d.qvel[v:v + 6] = 0.0
        d.xfrc_applied[b, :] = 0.0
        mujoco.mj_forward(m, d)

    # ---- ground truth -------------------------------------------------------------------
    def others_pos_mm(self):
        # Where the other free parts (part2, ...) are now, mm: ground truth, for the judge.
        return [[float(v) * 1000.0 for v in self.d.xpos[self.m.body(n).id]] for n in self._others]

    def truth(self):
        t = self._truth.read()
        t["now_ms"] = self.now_ms
        t["rail_mv"] = self.rail_mv()
        t["gripper_current_ma"] = self.servos.gripper_current_ma(self.d)
        t["gripper_torque_nm"] = float(self.d.actuator_force[self._gripper_act])
        t["switch_pressed"] = self.switch.pressed
        t["beam_broken_physical"] = self.beam.broken() if not self.beam.blocked else None
        t["servos_powered"] = list(self.servos.powered)
        t["servos_at_stall"] = self.servos.at_stall(self.d)
        return t

    def joint_angles_mdeg(self):
        # q0..q3 in mdeg and the jaw opening (servo side) in um: servo_cal's joint units.
        q = self._truth.joint_angles_deg()
        out = [int(round(v * 1000.0)) for v in q]
        out.append(int(round(self._truth.jaw_opening_mm() * 1000.0)))
        return out

    @property
    def xml(self):
        # The generated MJCF (a batch's cycle never asks: writing it costs as much as compiling).
        return self._spec.to_xml()

    def model_hash(self):
        if self._hash is None:
            self._hash = hashlib.sha256((self.xml + self.params.to_json()).encode()).hexdigest()
        return self._hash
