# The arm description's schema and its checks (docs/arm-description.md): one validator for the
# board and the host, one ArmError naming the first bad field. arm.validate() is the way in; the
# board imports this module once at boot and drops it afterwards (firmware/arm_file.py).
from .compat import const
from .arm import (ArmError, Arm, Unreachable, KINDS, JOINT_NAMES, FORMAT, joints_of)  # noqa: F401

_MAX_NAME = const(40)
_MAX_KEYS = const(64)      # keys in one table: a description is small; a huge one is hostile


# ---- the schema ---------------------------------------------------------------------------
# Each field: (key, type, min, max, default). type: "n" a finite number, "i" an integer,
# "d" a direction (+1 or -1), "s" a name. default None: the field is required.
_GEOMETRY = (
    ("base_height_mm", "n", 0.0, 1000.0, None),       # table to the shoulder axis
    ("shoulder_forward_mm", "n", -200.0, 200.0, 0.0),  # base yaw axis to the shoulder axis, along the arm
    ("upper_arm_mm", "n", 10.0, 1000.0, None),         # shoulder axis to elbow axis
    ("forearm_mm", "n", 10.0, 1000.0, None),           # elbow axis to wrist axis
    ("tool_mm", "n", 0.0, 1000.0, None),               # wrist axis (or level hand pivot) to the jaw centre
    ("tool_drop_mm", "n", -200.0, 200.0, 0.0),         # jaw centre below the tool axis (hand's own drop)
    ("wrist_fixed_deg", "n", -180.0, 180.0, 0.0),      # serial_nowrist: tool angle to the forearm
    ("hand_pitch_deg", "n", -90.0, 90.0, 0.0),         # parallel: the level hand's pitch
    ("min_radius_mm", "n", 0.0, 1000.0, None),         # closer to the base axis the arm hits itself
    ("min_z_mm", "n", -100.0, 1000.0, 0.0),            # the jaw centre never below this
)
_JOINT = (
    ("min_deg", "n", -360.0, 360.0, None),             # the joint's own range, always
    ("max_deg", "n", -360.0, 360.0, None),
    ("coupled_to", "s", None, None, ""),               # "" or an earlier joint's name, and then
    ("coupled_min_deg", "n", -720.0, 720.0, -720.0),   # also q >= coupled_min_deg + min_per_deg * q(coupled_to)
    ("min_per_deg", "n", -10.0, 10.0, 0.0),
    ("coupled_max_deg", "n", -720.0, 720.0, 720.0),    # and  q <= coupled_max_deg + max_per_deg * q(coupled_to)
    ("max_per_deg", "n", -10.0, 10.0, 0.0),
)
_SERVO = (
    ("gpio", "i", 0, 29, None),
    ("min_us", "i", 300, 1500, 500),                   # pulse at servo angle 0
    ("max_us", "i", 1500, 2800, 2500),                 # pulse at the servo's full travel
    ("travel_deg", "i", 90, 360, 180),                 # the servo's travel, min_us to max_us
    ("trim_us", "i", -300, 300, 0),                    # calibrated pulse correction
    ("direction", "d", None, None, 1),                 # -1: the servo turns against the joint
    ("zero_deg", "n", -360.0, 360.0, None),            # servo angle at joint angle 0
    ("gear", "n", 0.1, 10.0, 1.0),                     # servo degrees per joint degree (geared base)
    ("model", "s", None, None, None),                  # a servo_models entry (the simulator's servo)
    ("mass_g", "n", 0.0, 500.0, 0.0),                  # carried on the link it drives (simulator)
)
_SERVO_MODEL = (
    ("stall_torque_nm_4v8", "n", 0.01, 10.0, None),
    ("speed_s_per_60deg_4v8", "n", 0.02, 2.0, None),
    ("deadband_us", "n", 0.0, 50.0, None),
    ("band_deg", "n", 0.5, 90.0, None),
    ("armature_kgm2", "n", 0.00001, 0.1, None),
    ("idle_ma", "n", 0.0, 500.0, None),
    ("stall_ma_5v", "n", 10.0, 10000.0, None),
    ("backdrive_torque_nm", "n", 0.0, 10.0, 0.0),
    ("part", "s", None, None, ""),                     # the servo's part number for people (default: the model's name)
)
_GRIPPER = (
    ("jaw_max_mm", "n", 5.0, 200.0, None),
    ("servo_deg_per_mm", "i", 1, 40, None),            # servo degrees per mm of jaw opening
    ("finger_length_mm", "n", 5.0, 200.0, None),
    ("finger_tip_mm", "n", -100.0, 100.0, None),       # finger tips past the jaw centre, along the tool
    ("finger_height_mm", "n", 2.0, 100.0, None),
    ("finger_thickness_mm", "n", 0.5, 20.0, None),
    ("pad_length_mm", "n", 2.0, 100.0, None),
    ("pad_thickness_mm", "n", 0.5, 20.0, None),
    ("beam_behind_mm", "n", -50.0, 100.0, None),       # IR beam this far behind the jaw centre
    ("palm_from_mm", "n", -100.0, 500.0, None),        # wrist axis to the palm's back, along the tool
    ("palm_mm", "n", 5.0, 200.0, None),                # palm length along the tool
    ("palm_width_mm", "n", 5.0, 200.0, None),
    ("palm_height_mm", "n", 5.0, 200.0, None),
)
_LINKS = (   # masses the simulator puts on the links (g); servo masses are in servos.*.mass_g
    ("turret_g", "n", 0.0, 2000.0, None),
    ("upper_arm_g", "n", 0.1, 2000.0, None),
    ("forearm_g", "n", 0.1, 2000.0, None),
    ("palm_g", "n", 0.1, 2000.0, None),
    ("finger_g", "n", 0.1, 500.0, None),
    ("pad_g", "n", 0.1, 500.0, None),
)
_PAD = (
    ("stiffness_n_per_m", "n", 10.0, 100000.0, None),
    ("damping_ns_per_m", "n", 0.0, 100.0, None),
    ("travel_mm", "n", 0.5, 20.0, None),
    ("preload_mm", "n", 0.0, 10.0, None),
    ("friction", "n", 0.05, 3.0, None),
    ("finger_friction", "n", 0.05, 3.0, None),
)
_SWITCH = (
    ("trip_mm", "n", 0.05, 20.0, None),
    ("release_mm", "n", 0.0, 20.0, None),
    ("bounce_min_ms", "i", 0, 200, None),
    ("bounce_max_ms", "i", 0, 200, None),
)
_POT = (
    ("closed_counts", "n", 0.0, 65535.0, None),
    ("counts_per_mm", "n", 1.0, 65535.0, None),
    ("offset_counts", "n", -65535.0, 65535.0, 0.0),
    ("noise_counts", "n", 0.0, 5000.0, None),
)
_CURRENT = (
    ("offset_counts", "n", 0.0, 65535.0, None),
    ("counts_per_a", "n", 1.0, 65535.0, None),
    ("noise_counts", "n", 0.0, 5000.0, None),
)
_RAIL = (
    ("nominal_mv", "n", 3000.0, 12000.0, None),
    ("source_mohm", "n", 0.0, 10000.0, None),
    ("divider", "n", 1.0, 20.0, None),
    ("reset_mv", "n", 1000.0, 12000.0, None),
    ("servo_reset_ms", "i", 0, 10000, None),
    ("brownout_mv", "n", 0.0, 12000.0, None),
    ("noise_counts", "n", 0.0, 5000.0, None),
)
_BENCH = (
    ("pad_x_mm", "n", -1000.0, 1000.0, None),          # source pad centre
    ("pad_y_mm", "n", -1000.0, 1000.0, None),
    ("pad_half_mm", "n", 5.0, 500.0, None),
    ("pad_top_mm", "n", 0.0, 100.0, None),
    ("bin_x_mm", "n", -1000.0, 1000.0, None),          # target bin centre
    ("bin_y_mm", "n", -1000.0, 1000.0, None),
    ("bin_inner_half_mm", "n", 5.0, 500.0, None),
    ("bin_floor_mm", "n", 0.0, 100.0, None),
    ("bin_wall_top_mm", "n", 0.0, 500.0, None),
    ("part_mm", "n", 1.0, 200.0, None),                # the bench part's size (cube edge)
    ("part_g", "n", 0.0, 5000.0, 20.0),                # its mass: the payload check (shared_fsm/payload.py)
    ("pitch_deg", "n", -90.0, 90.0, None),             # the tool pitch of pick and place poses
    ("home_base_deg", "n", -360.0, 360.0, None),       # the rest pose at start (joint angles)
    ("home_shoulder_deg", "n", -360.0, 360.0, None),
    ("home_elbow_deg", "n", -360.0, 360.0, None),
    ("home_wrist_deg", "n", -360.0, 360.0, 0.0),
    ("home_jaw_mm", "n", 0.0, 200.0, None),
)
_SENSORS = (("pad", _PAD), ("switch", _SWITCH), ("pot", _POT), ("current", _CURRENT), ("rail", _RAIL))
_TOP = (("format", "i", 1, 1, None), ("name", "s", None, None, None), ("kind", "s", None, None, None),
        ("notes", "s", None, None, ""))
_SECTIONS = ("geometry", "joints", "servos", "servo_models", "gripper", "links", "sensors", "bench")

SCHEMA = {"geometry": _GEOMETRY, "joint": _JOINT, "servo": _SERVO, "servo_model": _SERVO_MODEL,
          "gripper": _GRIPPER, "links": _LINKS, "bench": _BENCH, "top": _TOP,
          "sensors": _SENSORS}


def _is_num(v):
    # a finite int or float (bool is not a number here): inf - inf and nan - nan are nan
    return (isinstance(v, int) or isinstance(v, float)) and not isinstance(v, bool) and (v - v) == 0


def _name_ok(v):
    if not isinstance(v, str) or not 0 < len(v) <= _MAX_NAME:
        return False
    for c in v:
        if not (c.isalpha() or c.isdigit() or c in "_-."):
            return False
    return True


def _table(d, path):
    if not isinstance(d, dict):
        raise ArmError(path, "must be a table (an object), got %s" % _kind_of(d))
    if len(d) > _MAX_KEYS:
        raise ArmError(path, "has %d keys, at most %d" % (len(d), _MAX_KEYS))
    return d


def _kind_of(v):
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, dict):
        return "a table"
    if isinstance(v, list) or isinstance(v, tuple):
        return "a list"
    if isinstance(v, str):
        return "a string"
    if v is None:
        return "nothing"
    if _is_num(v):
        return "the number %r" % (v,)
    if isinstance(v, float):
        return "a non-finite number"
    return "a value of another type"


def _fields(d, fields, path, out):
    # Checks table d against fields; unknown keys are an error (a typo must not vanish).
    # Writes the checked values (defaults filled in) into out; returns out.
    _table(d, path)
    known = {}
    for f in fields:
        known[f[0]] = f
    for key in sorted(d):
        if key not in known:
            raise ArmError(path + "." + str(key), "unknown field (known: %s)" % ", ".join(sorted(known)))
    for f in fields:
        key, typ, lo, hi, default = f
        where = path + "." + key if path else key
        if key not in d:
            if default is None:
                raise ArmError(where, "missing")
            out[key] = default
            continue
        v = d[key]
        if typ == "s":
            if key == "notes":
                if not isinstance(v, str) or len(v) > 2000:
                    raise ArmError(where, "must be a string of at most 2000 characters")
            elif key in ("coupled_to", "part") and v == "":
                pass
            elif not _name_ok(v):
                raise ArmError(where, "must be a name (1..%d letters, digits, _ - .), got %s" % (_MAX_NAME, _kind_of(v)))
        elif typ == "d":
            if isinstance(v, bool) or v not in (1, -1):
                raise ArmError(where, "must be 1 or -1, got %s" % _kind_of(v))
        else:
            if not _is_num(v):
                raise ArmError(where, "must be a finite number, got %s" % _kind_of(v))
            if typ == "i" and (isinstance(v, float) and v != int(v)):
                raise ArmError(where, "must be a whole number, got %r" % (v,))
            if typ == "i":
                v = int(v)
            else:
                v = float(v)
            if v < lo or v > hi:
                raise ArmError(where, "%s outside %s..%s" % (_num(v), _num(lo), _num(hi)))
        out[key] = v
    return out


def _num(v):
    if isinstance(v, int):
        return "%d" % v
    return "%g" % v


def validate(d):
    # The description (a dict, as parsed from TOML or JSON) -> an Arm. Raises ArmError naming the
    # first bad field (checked in the file's order: top, geometry, joints, servos, ...).
    _table(d, "(top)")
    for key in sorted(d):
        if key not in ("format", "name", "kind", "notes") and key not in _SECTIONS:
            raise ArmError(str(key), "unknown section (known: format, name, kind, notes, %s)" % ", ".join(_SECTIONS))
    head = {}
    for key in ("format", "name", "kind", "notes"):
        if key in d:
            head[key] = d[key]
    top = _fields(head, _TOP, "", {})
    if top["kind"] not in KINDS:
        raise ArmError("kind", "must be one of %s, got %r" % (", ".join(KINDS), top["kind"]))
    for s in _SECTIONS:
        if s not in d:
            raise ArmError(s, "missing section")
    kind = top["kind"]
    geo = _fields(d["geometry"], _GEOMETRY, "geometry", {})
    names = joints_of(kind)
    joints = _named(d["joints"], "joints", names, _JOINT)
    servos = _named(d["servos"], "servos", names + ("gripper",), _SERVO)
    models_in = _table(d["servo_models"], "servo_models")
    models = {}
    for name in sorted(models_in):
        if not _name_ok(name):
            raise ArmError("servo_models." + str(name)[:_MAX_NAME], "must be a name (letters, digits, _ - .)")
        models[name] = _fields(models_in[name], _SERVO_MODEL, "servo_models." + name, {})
    grip = _fields(d["gripper"], _GRIPPER, "gripper", {})
    links = _fields(d["links"], _LINKS, "links", {})
    sens_in = _table(d["sensors"], "sensors")
    for key in sorted(sens_in):
        if key not in ("pad", "switch", "pot", "current", "rail"):
            raise ArmError("sensors." + str(key), "unknown section (known: current, pad, pot, rail, switch)")
    sensors = {}
    for key, fields in _SENSORS:
        if key not in sens_in:
            raise ArmError("sensors." + key, "missing section")
        sensors[key] = _fields(sens_in[key], fields, "sensors." + key, {})
    bench = _fields(d["bench"], _BENCH, "bench", {})
    arm = Arm(top, geo, joints, servos, models, grip, links, sensors, bench)
    _relations(arm)
    return arm


def _named(d, path, names, fields):
    _table(d, path)
    for key in sorted(d):
        if key not in names:
            raise ArmError(path + "." + str(key), "not a %s of this kind of arm (it has: %s)" % (path[:-1], ", ".join(names)))
    out = []
    for name in names:
        if name not in d:
            raise ArmError(path + "." + name, "missing")
        out.append(_fields(d[name], fields, path + "." + name, {}))
    return out


def _relations(arm):
    # Checks between fields: the first broken relation names the field to change.
    names = arm.joint_names
    for j in range(len(names)):
        lim = arm.joints[j]
        where = "joints." + names[j]
        if lim["min_deg"] >= lim["max_deg"]:
            raise ArmError(where + ".min_deg", "%g must be below max_deg %g (no workspace)" % (lim["min_deg"], lim["max_deg"]))
        c = lim["coupled_to"]
        if c:
            if c not in names[:j]:
                raise ArmError(where + ".coupled_to", "must name an earlier joint (%s), got %r" % (", ".join(names[:j]) or "none", c))
            ci = names.index(c)
            # the coupled range must be non-empty somewhere over the coupled joint's own range
            ok = 0
            lo_c, hi_c = arm.joints[ci]["min_deg"], arm.joints[ci]["max_deg"]
            for k in range(33):
                lo, hi = arm.limit(j, lo_c + (hi_c - lo_c) * k / 32.0)
                if lo < hi:
                    ok = 1
            if not ok:
                raise ArmError(where + ".coupled_min_deg", "the coupled range is empty over all of %s's range (no workspace)" % c)
        elif (lim["min_per_deg"] != 0.0 or lim["max_per_deg"] != 0.0 or lim["coupled_min_deg"] != -720.0
              or lim["coupled_max_deg"] != 720.0):
            raise ArmError(where + ".coupled_to", "the coupled_* and *_per_deg fields need coupled_to")
    used = {}
    for i in range(len(arm.servos)):
        s = arm.servos[i]
        where = "servos." + arm.servo_names[i]
        if s["min_us"] >= s["max_us"]:
            raise ArmError(where + ".min_us", "must be below max_us")
        if s["model"] not in arm.servo_models:
            raise ArmError(where + ".model", "%r is not in servo_models (%s)" % (s["model"], ", ".join(sorted(arm.servo_models)) or "none"))
        g = s["gpio"]
        if 26 <= g <= 28:
            raise ArmError(where + ".gpio", "GP%d is an ADC pin (pot, current, rail)" % g)
        if g in (23, 24, 25, 29):
            raise ArmError(where + ".gpio", "GP%d is not on the Pico's header (the board's own)" % g)
        if g in used:
            raise ArmError(where + ".gpio", "GP%d already drives %s" % (g, used[g]))
        used[g] = arm.servo_names[i]
    for i in range(len(arm.joint_names)):
        # the joint's whole range must map inside the servo's travel
        s = arm.servos[i]
        lo, hi = arm.joint_span(i)
        for q in (lo, hi):
            sv = s["zero_deg"] + s["gear"] * q
            if sv < -0.001 or sv > s["travel_deg"] + 0.001:
                raise ArmError("servos.%s.zero_deg" % arm.servo_names[i],
                               "joint angle %g deg puts the servo at %g deg, outside its 0..%d travel"
                               % (q, sv, s["travel_deg"]))
    g = arm.gripper
    if g["jaw_max_mm"] * g["servo_deg_per_mm"] > arm.servos[-1]["travel_deg"]:
        raise ArmError("gripper.jaw_max_mm", "%g mm at %d deg/mm exceeds the gripper servo's %d deg travel"
                       % (g["jaw_max_mm"], g["servo_deg_per_mm"], arm.servos[-1]["travel_deg"]))
    sw = arm.sensors["switch"]
    if sw["release_mm"] >= sw["trip_mm"]:
        raise ArmError("sensors.switch.release_mm", "must be below trip_mm (the switch's hysteresis)")
    if sw["bounce_min_ms"] > sw["bounce_max_ms"]:
        raise ArmError("sensors.switch.bounce_min_ms", "must not exceed bounce_max_ms")
    if sw["trip_mm"] >= arm.sensors["pad"]["travel_mm"]:
        raise ArmError("sensors.switch.trip_mm", "must be below the pad's travel_mm")
    b = arm.bench
    try:
        arm.check_limits(arm.home_deg())
    except Unreachable as e:
        raise ArmError("bench.home_%s_deg" % JOINT_NAMES[e.joint], e.detail)
    if b["home_jaw_mm"] > g["jaw_max_mm"]:
        raise ArmError("bench.home_jaw_mm", "%g mm is wider than gripper.jaw_max_mm" % b["home_jaw_mm"])
    geo = arm.geo
    reach = abs(geo["shoulder_forward_mm"]) + geo["upper_arm_mm"] + geo["forearm_mm"] + abs(geo["tool_mm"]) + abs(geo["tool_drop_mm"])
    if reach <= geo["min_radius_mm"]:
        raise ArmError("geometry.min_radius_mm", "%g mm leaves no workspace: the arm reaches %g mm at most" % (geo["min_radius_mm"], reach))


