# A fit's result as an arm description (docs/arm-description.md): the description the run was
# made with, its servo models and sensor models replaced by the fitted plant's (records/fit.py).
# Servo slots that shared a model but fitted apart get a model of their own, named
# MODEL_fit_SERVO; a model whose figures did not move keeps its name. The joints, geometry,
# bench, pins and pulse calibration are the description's own (a fit sees none of them).
import copy
from dataclasses import asdict

from surepick.shared_fsm import arm as arm_mod
from surepick.sim.params import PlantParams

_MODEL_FIELDS = ("stall_torque_nm_4v8", "speed_s_per_60deg_4v8", "deadband_us", "band_deg", "armature_kgm2",
                 "idle_ma", "stall_ma_5v", "backdrive_torque_nm")
_SENSORS = ("pad", "switch", "pot", "current", "rail")


def _close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def description(arm, params_dict, note=""):
    """-> (description dict, validated Arm, [changed field paths]). arm: the run's Arm;
    params_dict: a fitted PlantParams dict. ValueError when the result fails the check."""
    p = PlantParams.from_dict(params_dict)
    d = copy.deepcopy(arm.to_dict())
    changed = []
    for sec in _SENSORS:
        new = asdict(getattr(p, sec))
        for k, v in new.items():
            old = d["sensors"][sec][k]
            if not _close(float(old), float(v)):
                changed.append("sensors.%s.%s" % (sec, k))
            d["sensors"][sec][k] = type(old)(round(v)) if isinstance(old, int) else float(v)
    wanted = {}                       # model name -> its figures, as fitted per servo
    for slot in range(5):
        entry = arm.servo(slot)
        if entry is None:
            continue
        name = arm.servo_names[slot] if slot < len(arm.servo_names) - 1 else "gripper"
        sp = p.servos[slot]
        figures = {k: float(getattr(sp, k)) for k in _MODEL_FIELDS}
        model = entry["model"]
        base = d["servo_models"][model]
        if all(_close(float(base[k]), figures[k]) for k in _MODEL_FIELDS):
            continue
        if model in wanted and all(_close(wanted[model][k], figures[k]) for k in _MODEL_FIELDS):
            continue                  # fitted the same as the slot before it
        if model in wanted or any(arm.servo(s) is not None and arm.servo(s)["model"] == model and s != slot
                                  for s in range(5)):
            new_name = "%s_fit_%s" % (model, name)
        else:
            new_name = model
        wanted[new_name] = figures
        m = dict(base)
        m.update(figures)
        m["part"] = base.get("part") or model
        d["servo_models"][new_name] = m
        d["servos"][name]["model"] = new_name
        changed += ["servo_models.%s.%s" % (new_name, k) for k in _MODEL_FIELDS if not _close(float(base[k]), figures[k])]
    used = {d["servos"][n]["model"] for n in d["servos"]}
    for n in list(d["servo_models"]):
        if n not in used:
            del d["servo_models"][n]
    if note:
        d["notes"] = (d.get("notes") or "") + ("; " if d.get("notes") else "") + note
    return d, arm_mod.validate(d), changed
