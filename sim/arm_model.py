"""The MuJoCo model of an arm, generated from its description with mujoco.MjSpec.

    spec = arm_spec(arm)                 # the arm, the table, the source pad and the bin
    add_part(spec, part_spec, pose, params); add_obstacle(spec, o); add_debris(spec)
    model = spec.compile(); xml = spec.to_xml()

Units: SI (m, kg, s), joint ranges in degrees (compiler degree). Frames (docs/conventions.md):
x forward, z up, table top z = 0; the arm's joints turn about -Y of their body, so a positive
angle lifts the link; the tool's x axis points along the gripper, y is the closing direction.

What each kind adds (shared_fsm/arm.py explains the joint slots):
  serial          hinges base_yaw, shoulder, elbow, wrist; a position servo on each
  serial_nowrist  no wrist hinge: the gripper body is fixed to the forearm at wrist_fixed_deg
  parallel        hinges shoulder, elbow (relative) and a passive wrist; two fixed tendons:
                  forearm_abs = shoulder + elbow (the forearm's absolute angle, what the elbow
                  servo drives through the linkage) and hand_level = shoulder + elbow + wrist,
                  held at 0 by a tendon equality (the parallelogram keeps the hand level)
Names the simulator relies on: actuators base, shoulder, elbow, [wrist,] gripper in servo
order; sites jaw_centre, wrist_point, tip_l, tip_r, beam_emitter, beam_receiver; joints
finger_l, finger_r, pad_slide; geoms pad_l, face_r, finger_l_plate, finger_r_plate.

Compile-time servo damping and armature are the servo models' figures rounded to 3 significant
digits (the servo model, sim/servo_model.py, writes the exact ones before the first step): the
compiled model's constraint weights come from them, and the rounding is what keeps the reference
arm's compiled model equal to the hand-written model it replaced.
"""
import math

import mujoco

from surepick.sim.servo_model import jaw_m_per_rad

# Looks only (no collisions; group 2 is ignored by the IR beam ray): link radii and servo boxes.
_LINK_RGBA = [0.25, 0.3, 0.4, 1.0]
_FIXTURE_RGBA = [0.7, 0.6, 0.45, 1.0]
_FINGER = dict(group=3, friction=[0.5, 0.005, 0.0001], rgba=[0.8, 0.8, 0.8, 1.0], priority=1,
               solref=[0.004, 1.0], solimp=[0.95, 0.99, 0.001, 0.5, 2.0])
_PAD = dict(group=3, friction=[1.2, 0.005, 0.0001], rgba=[0.15, 0.15, 0.15, 1.0], priority=1,
            solref=[0.004, 1.0], solimp=[0.95, 0.99, 0.001, 0.5, 2.0])
_FIXTURE = dict(friction=[0.6, 0.005, 0.0001], rgba=_FIXTURE_RGBA)
_PAD_SLIDE = dict(armature=0.001, solref_limit=[0.004, 1.0],
                  solimp_limit=[0.95, 0.99, 0.0005, 0.5, 2.0])
_TORQUE_REF_MV = 4800.0


def _m(mm):
    return mm / 1000.0


def _sig3(x):
    # x rounded to 3 significant digits (module docstring)
    if x == 0:
        return 0.0
    return float("%.3g" % x)


def servo_damping(model):
    """Back-EMF damping of a servo model: stall torque / no-load speed (N m s/rad)."""
    return model["stall_torque_nm_4v8"] / (math.radians(60.0) / model["speed_s_per_60deg_4v8"])


def _geom(body, name, gtype, size, pos=None, mass=None, link=False, fromto=None, **kw):
    g = body.add_geom()
    g.name = name
    g.type = gtype
    g.size = list(size) + [0.0] * (3 - len(size))
    if pos is not None:
        g.pos = pos
    if fromto is not None:
        g.fromto = fromto
    if mass is not None:
        g.mass = mass
    if link:
        g.group, g.contype, g.conaffinity, g.rgba = 2, 0, 0, _LINK_RGBA
    for k, v in kw.items():
        setattr(g, k, v)
    return g


def _hinge(body, name, axis, lo, hi, damping, armature):
    j = body.add_joint()
    j.name = name
    j.type = mujoco.mjtJoint.mjJNT_HINGE
    j.axis = axis
    j.range = [lo, hi]
    j.damping = _poly(damping)
    j.armature = armature
    return j


def _poly(x):
    # MuJoCo 4 joint damping / stiffness: polynomial coefficients, the first is the linear one
    return [x, 0.0, 0.0]


def _site(body, name, pos, size, rgba):
    s = body.add_site()
    s.name = name
    s.pos = pos
    s.size = [size, 0.0, 0.0]
    s.rgba = rgba
    return s


def _joint_range(arm, j):
    # MuJoCo's hinge range: the widest the (coupled) limit allows; the firmware enforces the rest.
    return arm.joint_span(j)


def arm_spec(arm):
    """The arm (an Arm) on its bench, as an MjSpec ready for add_part / add_obstacle / compile."""
    spec = mujoco.MjSpec()
    spec.modelname = "surepick_arm_" + arm.name.replace("-", "_").replace(".", "_")
    spec.compiler.degree = True
    spec.compiler.autolimits = True
    # 2 ms step: half the cost of 1 ms with the same acceptance (docs/performance.md); it divides
    # the plant's whole-ms API and the switch's 2 ms sampling, and the stiffest constraints
    # (contacts, pad stop: solref 0.004) are exactly twice it. implicitfast keeps the large servo
    # damping stable; elliptic cone + impratio 10 stop the grasped part creeping.
    spec.option.timestep = 0.002
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = 10.0
    # No midphase (MuJoCo's per-body-pair bounding-volume tree): with one to five primitive geoms
    # a body it costs more than the pairs it prunes; the narrow phase finds the same contacts
    # (tests/sim/test_midphase_off.py holds every scenario to the same cycle with it on).
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_MIDPHASE
    spec.memory = 8 * 1024 * 1024
    spec.visual.global_.offwidth = 800
    spec.visual.global_.offheight = 600
    wb = spec.worldbody
    light = wb.add_light()
    light.name = "sun"
    light.pos = [0.1, 0.0, 0.8]
    light.dir = [0.0, 0.0, -1.0]
    light.type = mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
    cam = wb.add_camera()
    cam.name = "overview"
    cam.pos = [0.55, -0.45, 0.4]
    cam.alt.type = mujoco.mjtOrientation.mjORIENTATION_XYAXES
    cam.alt.xyaxes = [0.63, 0.77, 0.0, -0.35, 0.29, 0.89]
    _geom(wb, "table", mujoco.mjtGeom.mjGEOM_PLANE, [0.4, 0.4, 0.01], friction=_FIXTURE["friction"],
          rgba=[0.55, 0.5, 0.45, 1.0])
    _bench(wb, arm.bench)
    _geom(wb, "base_housing", mujoco.mjtGeom.mjGEOM_CYLINDER, [0.035, 0.025], pos=[0, 0, 0.025], link=True)
    _arm_bodies(spec, arm)
    return spec


def _bench(wb, b):
    # Source pad: a 3 mm mat the parts start on; target bin: 3 mm floor, walls to bin_wall_top_mm.
    pad = wb.add_body()
    pad.name = "source_pad"
    pad.pos = [_m(b["pad_x_mm"]), _m(b["pad_y_mm"]), 0.0]
    h = _m(b["pad_top_mm"] / 2.0)
    _geom(pad, "source_pad", mujoco.mjtGeom.mjGEOM_BOX, [_m(b["pad_half_mm"]), _m(b["pad_half_mm"]), h],
          pos=[0, 0, h], friction=_FIXTURE["friction"], rgba=[0.2, 0.5, 0.3, 1.0])
    bn = wb.add_body()
    bn.name = "bin"
    bn.pos = [_m(b["bin_x_mm"]), _m(b["bin_y_mm"]), 0.0]
    wall = 1.5                                      # half of the 3 mm walls (mm)
    inner = b["bin_inner_half_mm"]
    fh = _m(b["bin_floor_mm"] / 2.0)
    outer = _m(inner + 2 * wall)
    _geom(bn, "bin_floor", mujoco.mjtGeom.mjGEOM_BOX, [outer, outer, fh],
          pos=[0, 0, fh], friction=_FIXTURE["friction"], rgba=[0.3, 0.35, 0.6, 1.0])
    wh = _m(b["bin_wall_top_mm"] / 2.0)
    off = _m(inner + wall)
    w, inner = _m(wall), _m(inner)
    rgba = [0.3, 0.35, 0.6, 0.6]
    for name, size, pos in (("bin_wall_px", [w, outer, wh], [off, 0, wh]),
                            ("bin_wall_nx", [w, outer, wh], [-off, 0, wh]),
                            ("bin_wall_py", [inner, w, wh], [0, off, wh]),
                            ("bin_wall_ny", [inner, w, wh], [0, -off, wh])):
        _geom(bn, name, mujoco.mjtGeom.mjGEOM_BOX, size, pos=pos, friction=_FIXTURE["friction"], rgba=rgba)


def _arm_bodies(spec, arm):
    g = arm.geo
    axis = [0.0, -1.0, 0.0]
    models = [arm.servo_models[s["model"]] for s in arm.servos]
    damp = [_sig3(servo_damping(m)) for m in models]
    arma = [_sig3(m["armature_kgm2"]) for m in models]
    turret = spec.worldbody.add_body()
    turret.name = "turret"
    _hinge(turret, "base_yaw", [0.0, 0.0, 1.0], *_joint_range(arm, 0), damp[0], arma[0])
    _geom(turret, "turret", mujoco.mjtGeom.mjGEOM_CYLINDER, [0.03, 0.01],
          pos=[0, 0, _m(g["base_height_mm"] - 10.0)], mass=_m(arm.links["turret_g"]), link=True)
    upper = turret.add_body()
    upper.name = "upper_arm"
    upper.pos = [_m(g["shoulder_forward_mm"]), 0.0, _m(g["base_height_mm"])]
    _hinge(upper, "shoulder", axis, *_joint_range(arm, 1), damp[1], arma[1])
    U, F = _m(g["upper_arm_mm"]), _m(g["forearm_mm"])
    _geom(upper, "upper_arm", mujoco.mjtGeom.mjGEOM_CAPSULE, [0.01], fromto=[0, 0, 0, U, 0, 0],
          mass=_m(arm.links["upper_arm_g"]), link=True)
    fore = upper.add_body()
    fore.name = "forearm"
    fore.pos = [U, 0.0, 0.0]
    if arm.kind == "parallel":
        # relative elbow hinge, passive like the wrist: the elbow servo's losses act on the
        # forearm_abs tendon it drives (sim/servo_model.py puts them there)
        _hinge(fore, "elbow", axis, -180.0, 180.0, 0.01, 0.0001)
    else:
        _hinge(fore, "elbow", axis, *_joint_range(arm, 2), damp[2], arma[2])
        if arm.servos[2]["mass_g"] > 0:
            # the elbow servo rides at the elbow on a serial arm
            _geom(fore, "elbow_servo", mujoco.mjtGeom.mjGEOM_BOX, [0.02, 0.01, 0.01],
                  mass=_m(arm.servos[2]["mass_g"]), link=True)
    _geom(fore, "forearm", mujoco.mjtGeom.mjGEOM_CAPSULE, [0.008], fromto=[0, 0, 0, F, 0, 0],
          mass=_m(arm.links["forearm_g"]), link=True)
    grip = fore.add_body()
    grip.name = "gripper"
    grip.pos = [F, 0.0, 0.0]
    if arm.kind == "serial":
        _hinge(grip, "wrist", axis, *_joint_range(arm, 3), damp[3], arma[3])
        if arm.servos[3]["mass_g"] > 0:
            _geom(grip, "wrist_servo", mujoco.mjtGeom.mjGEOM_BOX, [0.012, 0.006, 0.011],
                  mass=_m(arm.servos[3]["mass_g"]), link=True)
    elif arm.kind == "parallel":
        # passive: the hand_level equality holds it (no servo, light damping)
        _hinge(grip, "wrist", axis, -360.0, 360.0, 0.01, 0.0001)
    else:
        # fixed to the forearm at wrist_fixed_deg (about -Y, like the joints)
        h = math.radians(g["wrist_fixed_deg"]) / 2.0
        grip.quat = [math.cos(h), 0.0, -math.sin(h), 0.0]
    _gripper(spec, grip, arm, damp[-1], arma[-1])
    _tendons_and_servos(spec, arm)


def _gripper(spec, grip, arm, damp, arma):
    gr, links = arm.gripper, arm.links
    T, D = _m(arm.geo["tool_mm"]), _m(arm.geo["tool_drop_mm"])
    _geom(grip, "palm", mujoco.mjtGeom.mjGEOM_BOX,
          [_m(gr["palm_mm"] / 2.0), _m(gr["palm_width_mm"] / 2.0), _m(gr["palm_height_mm"] / 2.0)],
          pos=[_m(gr["palm_from_mm"] + gr["palm_mm"] / 2.0), 0.0, 0.0], mass=_m(links["palm_g"]),
          group=3, contype=1, conaffinity=1, rgba=_LINK_RGBA)
    _site(grip, "wrist_point", [0.0, 0.0, 0.0], 0.002, [0.2, 0.2, 1.0, 1.0])
    _site(grip, "jaw_centre", [T, 0.0, -D], 0.002, [1.0, 0.0, 0.0, 1.0])
    # in mm until the last step (each figure then rounds once: bit-equal to the hand model)
    half_open = _m(gr["jaw_max_mm"] / 2.0)
    fl_mm = gr["finger_length_mm"] / 2.0          # plate half length
    ft_mm = gr["finger_thickness_mm"] / 2.0
    pt_mm = gr["pad_thickness_mm"] / 2.0
    travel_mm = arm.sensors["pad"]["travel_mm"]
    fl, ft, pt = _m(fl_mm), _m(ft_mm), _m(pt_mm)
    fh = _m(gr["finger_height_mm"] / 2.0)
    pl = _m(gr["pad_length_mm"] / 2.0)
    travel = _m(travel_mm)
    tip = _m(gr["finger_tip_mm"])
    plate_x = _m(gr["finger_tip_mm"] - fl_mm)
    plate_l_y = _m(2 * pt_mm + travel_mm + ft_mm)
    beam_x = -_m(gr["beam_behind_mm"])
    mass_f, mass_p = _m(links["finger_g"]), _m(links["pad_g"])
    jaw_servo = arm.servo_models[arm.servos[-1]["model"]]
    k = 2.0 / (jaw_m_per_rad(arm) ** 2)
    f_damp = _sig3(servo_damping(jaw_servo) * k)
    f_arma = _sig3(jaw_servo["armature_kgm2"] * k)
    # Left finger: its slide q = half the jaw opening. Carries the sprung pad.
    fl_body = grip.add_body()
    fl_body.name = "finger_l"
    fl_body.pos = [T, 0.0, -D]
    j = fl_body.add_joint()
    j.name, j.type, j.axis, j.range = "finger_l", mujoco.mjtJoint.mjJNT_SLIDE, [0, 1, 0], [0.0, half_open]
    j.damping, j.armature = _poly(f_damp), f_arma
    _geom(fl_body, "finger_l_plate", mujoco.mjtGeom.mjGEOM_BOX, [fl, ft, fh],
          pos=[plate_x, plate_l_y, 0.0], mass=mass_f, **_FINGER)
    # IR emitter beside the pad, behind its full travel, so a part never swallows it.
    _site(fl_body, "beam_emitter", [beam_x, _m(2 * pt_mm + travel_mm - 0.1), 0.0], 0.0015, [1.0, 0.2, 0.2, 1.0])
    _site(fl_body, "switch", [_m(gr["pad_length_mm"] / 2.0 + 2.0), plate_l_y, 0.0], 0.002, [0.9, 0.9, 0.1, 1.0])
    _site(fl_body, "tip_l", [tip, 0.0, 0.0], 0.0015, [1.0, 1.0, 1.0, 1.0])
    pad = fl_body.add_body()
    pad.name = "pad"
    p = arm.sensors["pad"]
    j = pad.add_joint()
    j.name, j.type, j.axis, j.range = "pad_slide", mujoco.mjtJoint.mjJNT_SLIDE, [0, 1, 0], [0.0, travel]
    j.stiffness = _poly(p["stiffness_n_per_m"])
    j.springref = -_m(p["preload_mm"])
    for key, v in _PAD_SLIDE.items():
        setattr(j, key, v)
    j.damping = _poly(p["damping_ns_per_m"])
    _geom(pad, "pad_l", mujoco.mjtGeom.mjGEOM_BOX, [pl, pt, fh], pos=[0.0, pt, 0.0], mass=mass_p, **_PAD)
    # Right finger: mirror slide, rigid rubber face.
    fr = grip.add_body()
    fr.name = "finger_r"
    fr.pos = [T, 0.0, -D]
    j = fr.add_joint()
    j.name, j.type, j.axis, j.range = "finger_r", mujoco.mjtJoint.mjJNT_SLIDE, [0, -1, 0], [0.0, half_open]
    j.damping, j.armature = _poly(f_damp), f_arma
    _geom(fr, "face_r", mujoco.mjtGeom.mjGEOM_BOX, [pl, pt, fh], pos=[0.0, -pt, 0.0], mass=mass_p, **_PAD)
    _geom(fr, "finger_r_plate", mujoco.mjtGeom.mjGEOM_BOX, [fl, ft, fh], pos=[plate_x, -_m(2 * pt_mm + ft_mm), 0.0],
          mass=mass_f, **_FINGER)
    _site(fr, "beam_receiver", [beam_x, -0.001, 0.0], 0.0015, [0.2, 1.0, 0.2, 1.0])
    _site(fr, "tip_r", [tip, 0.0, 0.0], 0.0015, [1.0, 1.0, 1.0, 1.0])


def servo_slots(arm):
    """Per servo slot 0..4 (base, shoulder, elbow, wrist, gripper): the actuator that slot's
    servo is, or None for a slot the kind has no servo for (never driven)."""
    return ["base", "shoulder", "elbow", "wrist" if arm.kind == "serial" else None, "gripper"]


def joint_slots(arm):
    """Per arm joint slot 0..3: the model's hinges whose angles add up to the joint angle the
    firmware's kinematics use (a parallel arm's elbow slot is the forearm's absolute angle,
    shoulder + relative elbow); () for a slot the kind does not have."""
    elbow = ("shoulder", "elbow") if arm.kind == "parallel" else ("elbow",)
    return [("base_yaw",), ("shoulder",), elbow, ("wrist",) if arm.kind == "serial" else ()]


def _fixed_tendon(spec, name, coefs):
    t = spec.add_tendon()
    t.name = name
    for joint, c in coefs:
        t.wrap_joint(joint, c)
    return t


def _tendons_and_servos(spec, arm):
    # Jaw opening between the uncompressed pad face and the right face: q_l + q_r.
    _fixed_tendon(spec, "jaw_opening", (("finger_l", 1.0), ("finger_r", 1.0)))
    if arm.kind == "parallel":
        _fixed_tendon(spec, "forearm_abs", (("shoulder", 1.0), ("elbow", 1.0)))
        _fixed_tendon(spec, "hand_level", (("shoulder", 1.0), ("elbow", 1.0), ("wrist", 1.0)))
    # Rack and pinion: both fingers move together (a finger-finger coupling, not a weld).
    e = spec.add_equality()
    e.name, e.type = "finger_coupling", mujoco.mjtEq.mjEQ_JOINT
    e.name1, e.name2 = "finger_r", "finger_l"
    e.data = [0.0, 1.0, 0.0, 0.0, 0.0] + list(e.data[5:])
    e.solref = [0.004, 1.0]                  # twice the 2 ms step
    if arm.kind == "parallel":
        e = spec.add_equality()
        e.name, e.type = "hand_level", mujoco.mjtEq.mjEQ_TENDON
        e.name1 = "hand_level"
        e.data = [math.radians(arm.geo["hand_pitch_deg"])] + list(e.data[1:])
        e.solref = [0.004, 1.0]
        # the linkage's coupled limit (forearm to upper arm) is the elbow's joint range
    for b1, b2 in (("finger_l", "finger_r"), ("pad", "finger_r")):
        x = spec.add_exclude()
        x.bodyname1, x.bodyname2 = b1, b2
    # Position servos: ctrl and actuator length are servo-shaft angles in rad (minus the joint
    # offset); kp = stall torque / proportional band; forcerange = stall torque at the rail. The
    # gripper acts on the opening tendon with gear 1/r.
    targets = [("base", "base_yaw", mujoco.mjtTrn.mjTRN_JOINT), ("shoulder", "shoulder", mujoco.mjtTrn.mjTRN_JOINT)]
    if arm.kind == "parallel":
        targets.append(("elbow", "forearm_abs", mujoco.mjtTrn.mjTRN_TENDON))
    else:
        targets.append(("elbow", "elbow", mujoco.mjtTrn.mjTRN_JOINT))
    if arm.kind == "serial":
        targets.append(("wrist", "wrist", mujoco.mjtTrn.mjTRN_JOINT))
    targets.append(("gripper", "jaw_opening", mujoco.mjtTrn.mjTRN_TENDON))
    for i, (name, target, trn) in enumerate(targets):
        model = arm.servo_models[arm.servos[i]["model"]]
        kp = _sig3(model["stall_torque_nm_4v8"] / math.radians(model["band_deg"]))
        a = spec.add_actuator()
        a.name = name
        a.set_to_position(kp=kp)
        a.trntype = trn
        a.target = target
        a.forcelimited = 1
        a.forcerange = [-model["stall_torque_nm_4v8"], model["stall_torque_nm_4v8"]]
        if name == "gripper":
            # 12 significant digits, as the hand-written reference model had it
            a.gear = [float("%.12g" % (1.0 / jaw_m_per_rad(arm))), 0, 0, 0, 0, 0]
        elif arm.servos[i]["gear"] != 1.0:
            # a geared joint: the actuator's length and torque are the servo shaft's
            a.gear = [arm.servos[i]["gear"], 0, 0, 0, 0, 0]
    for name, stype, otype, obj in (
            ("base_yaw_pos", mujoco.mjtSensor.mjSENS_JOINTPOS, mujoco.mjtObj.mjOBJ_JOINT, "base_yaw"),
            ("shoulder_pos", mujoco.mjtSensor.mjSENS_JOINTPOS, mujoco.mjtObj.mjOBJ_JOINT, "shoulder"),
            ("elbow_pos", mujoco.mjtSensor.mjSENS_JOINTPOS, mujoco.mjtObj.mjOBJ_JOINT, "elbow"),
            ("wrist_pos", mujoco.mjtSensor.mjSENS_JOINTPOS, mujoco.mjtObj.mjOBJ_JOINT, "wrist"),
            ("jaw_opening_pos", mujoco.mjtSensor.mjSENS_TENDONPOS, mujoco.mjtObj.mjOBJ_TENDON, "jaw_opening"),
            ("pad_travel", mujoco.mjtSensor.mjSENS_JOINTPOS, mujoco.mjtObj.mjOBJ_JOINT, "pad_slide"),
            ("gripper_torque", mujoco.mjtSensor.mjSENS_ACTUATORFRC, mujoco.mjtObj.mjOBJ_ACTUATOR, "gripper")):
        if obj == "wrist" and arm.kind == "serial_nowrist":
            continue
        _sensor(spec, name, stype, otype, obj)


def _sensor(spec, name, stype, otype, obj):
    s = spec.add_sensor()
    s.name, s.type, s.objtype, s.objname = name, stype, otype, obj
    return s


# ---- scenario objects ------------------------------------------------------------------------

def quat_yaw(yaw_deg):
    h = math.radians(yaw_deg) / 2.0
    return [float("%.6g" % math.cos(h)), 0.0, 0.0, float("%.6g" % math.sin(h))]


def _r6(x):
    # 6 significant digits, as the scene objects were always written (bit-equal models)
    return float("%.6g" % x)


def add_part(spec, part, pose, params, support_top_mm, height_mm, name="part"):
    """One free part (a sim.plant part spec) at pose (x_mm, y_mm, yaw_deg), its bottom on the
    support under it; explicit finger-part contact pairs, so a slippery part is hard to hold.
    name: "part" (the one the judge follows) or another's ("part2", ...)."""
    x_mm, y_mm, yaw_deg = pose
    if yaw_deg is None:
        yaw_deg = math.degrees(math.atan2(y_mm, x_mm))   # faces square to the jaws at this spot
    s = [v / 1000.0 for v in part["size_mm"]]
    body = spec.worldbody.add_body()
    body.name = name
    z = (support_top_mm + height_mm / 2.0) / 1000.0
    body.pos = [_r6(x_mm / 1000.0), _r6(y_mm / 1000.0), _r6(z)]
    body.quat = quat_yaw(yaw_deg)
    body.add_freejoint().name = name + "_free"
    shape = part["shape"]
    g = body.add_geom()
    g.name = name
    if shape == "box":
        g.type, g.size, g.condim = mujoco.mjtGeom.mjGEOM_BOX, [_r6(s[0] / 2), _r6(s[1] / 2), _r6(s[2] / 2)], 3
    elif shape == "cylinder":
        g.type, g.size, g.condim = mujoco.mjtGeom.mjGEOM_CYLINDER, [_r6(s[0] / 2), _r6(s[1] / 2), 0.0], 3
    elif shape == "sphere":
        # rolling friction, so a ball left alone stays put
        g.type, g.size, g.condim = mujoco.mjtGeom.mjGEOM_SPHERE, [_r6(s[0] / 2), 0.0, 0.0], 6
    else:
        raise ValueError("unknown part shape %r" % shape)
    mu = part["friction"]
    g.mass = _r6(part["mass_g"] / 1000.0)
    g.friction = [_r6(mu), 0.005, 0.0002]
    g.priority = 2
    g.rgba = [_r6(c) for c in part.get("rgba", (0.85, 0.35, 0.1, 1.0))]
    for geom_name, finger_mu in (("pad_l", params.pad.friction), ("face_r", params.pad.friction),
                                 ("finger_l_plate", params.pad.finger_friction),
                                 ("finger_r_plate", params.pad.finger_friction)):
        m = _r6(math.sqrt(finger_mu * mu))
        p = spec.add_pair()
        p.name, p.geomname1, p.geomname2, p.condim = name + "_" + geom_name, geom_name, name, 3
        p.friction = [m, m, 0.005, 0.0001, 0.0001]
        p.solref = [0.004, 1.0]
        p.solimp = [0.95, 0.99, 0.001, 0.5, 2.0]
    for b in ("finger_l", "finger_r", "pad"):
        x = spec.add_exclude()
        x.bodyname1, x.bodyname2 = b, name
    _sensor(spec, name + "_pos", mujoco.mjtSensor.mjSENS_FRAMEPOS, mujoco.mjtObj.mjOBJ_BODY, name)


def add_obstacle(spec, x_mm, y_mm, yaw_deg, size_mm):
    """A fixed block; its y axis lies across the jaws (tangential), like a part placed square."""
    w, dpt, h = [v / 1000.0 for v in size_mm]
    body = spec.worldbody.add_body()
    body.name = "obstacle"
    body.pos = [_r6(x_mm / 1000.0), _r6(y_mm / 1000.0), 0.0]
    body.quat = quat_yaw(yaw_deg)
    _geom(body, "obstacle", mujoco.mjtGeom.mjGEOM_BOX, [_r6(dpt / 2), _r6(w / 2), _r6(h / 2)],
          pos=[0, 0, _r6(h / 2)], friction=_FIXTURE["friction"], rgba=[0.5, 0.5, 0.5, 1.0])


def add_debris(spec):
    """A fleck stuck on the right face, in the beam but not in the way of a grasp."""
    fr = spec.body("finger_r")
    _geom(fr, "debris", mujoco.mjtGeom.mjGEOM_BOX, [0.0015, 0.0015, 0.0015], pos=[-0.005, 0.0015, 0.0],
          group=1, contype=0, conaffinity=0, mass=0.0001, rgba=[0.35, 0.25, 0.15, 1.0])
