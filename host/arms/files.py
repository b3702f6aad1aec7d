"""Loading an arm description by preset name or file, and writing one as TOML.

    arm, description = load("mearm")          # a preset
    arm, description = load("my_arm.toml")    # a file (TOML, or JSON as deploy ships it)

Anything wrong raises DescriptionError with one line naming the file and the field. The board
reads the same description as compact JSON (compact_json), validated by the same code."""
import json
import math
import os
import tomllib

from surepick.host.arms import presets
from surepick.shared_fsm import arm as arm_mod
from surepick.host.user_error import BadInput

MAX_FILE_BYTES = 64 * 1024     # a description is a few KB; anything bigger is not one
MAX_DEPTH = 8                  # tables nest three deep at most
MAX_INT_DIGITS = 15            # no field's range needs more; a longer integer overflows a float


class DescriptionError(BadInput, ValueError):
    """A description that cannot be used: one line naming the file and the field."""


def _depth(v, n=0):
    if n > MAX_DEPTH:
        return n
    if isinstance(v, dict):
        return max([_depth(x, n + 1) for x in v.values()] + [n + 1])
    if isinstance(v, list):
        return max([_depth(x, n + 1) for x in v] + [n + 1])
    return n


def parse_text(text, where):
    """TOML (or JSON, by its first character) -> dict; DescriptionError on a syntax error."""
    s = text.lstrip()
    try:
        if s.startswith("{"):
            d = json.loads(text, parse_constant=lambda c: float(c))
        else:
            d = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError) as e:
        raise DescriptionError("%s: not a TOML (or JSON) description: %s" % (where, str(e).splitlines()[0]))
    if not isinstance(d, dict):
        raise DescriptionError("%s: not a table of fields (docs/arm-description.md)" % where)
    if _depth(d) > MAX_DEPTH:
        raise DescriptionError("%s: tables nested deeper than %d (a description has three levels)" % (where, MAX_DEPTH))
    return d


def read_file(path):
    """The description dict in a file; DescriptionError when it cannot be read."""
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise DescriptionError("%s: %d bytes, a description is at most %d" % (path, size, MAX_FILE_BYTES))
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise DescriptionError("%s: cannot read it (%s)" % (path, e.strerror or e))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DescriptionError("%s: not UTF-8 text" % path)
    return parse_text(text, path)


def _overlong_integer(v, path=""):
    # -> the dotted field of the first integer longer than any field allows, or None.
    # TOML and JSON integers have no bound; the shared checks would overflow converting one to
    # float (a traceback), or print all its digits as the value outside the range.
    if isinstance(v, dict):
        items = [(path + "." + str(k) if path else str(k), x) for k, x in v.items()]
    elif isinstance(v, list):
        items = [("%s[%d]" % (path, i), x) for i, x in enumerate(v)]
    else:
        overlong = isinstance(v, int) and abs(v) >= 10 ** MAX_INT_DIGITS   # str() of one may fail
        return path if overlong else None
    for p, x in items:
        found = _overlong_integer(x, p)
        if found:
            return found
    return None


def validate(d, where):
    overlong = _overlong_integer(d)
    if overlong:
        raise DescriptionError("%s: arm description field '%s': an integer of more than %d digits,"
                               " larger than any field allows (docs/arm-description.md)"
                               % (where, overlong, MAX_INT_DIGITS))
    try:
        return arm_mod.validate(d)
    except arm_mod.ArmError as e:
        raise DescriptionError("%s: %s" % (where, e))


def load(name_or_path):
    """-> (Arm, description dict). A preset name, or a path to a TOML/JSON file."""
    if name_or_path in presets.PRESETS and not os.path.exists(name_or_path):
        d = presets.get(name_or_path)
        return validate(d, "preset " + name_or_path), d
    if not os.path.exists(name_or_path):
        raise DescriptionError("%s: no such file and no such preset (presets: %s)"
                               % (name_or_path, ", ".join(presets.names())))
    d = read_file(name_or_path)
    return validate(d, name_or_path), d


def flatten(d, prefix=""):
    """{dotted field: value} of a description dict (tables nested as the file has them)."""
    out = {}
    for k in sorted(d):
        v = d[k]
        key = prefix + k
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def field_differences(board, local):
    """-> [(field, board value, local value)] of two description dicts (validated: every default
    filled in), fields in the file's order of sections; None for a field one side has not."""
    a, b = flatten(board), flatten(local)
    rows = []
    for key in sorted(set(a) | set(b), key=_order):
        va, vb = a.get(key), b.get(key)
        if va != vb:
            rows.append((key, va, vb))
    return rows


def _order(key):
    top = ("format", "name", "kind", "notes", "geometry", "joints", "servos", "servo_models", "gripper",
           "links", "sensors", "bench")
    head = key.split(".")[0]
    return (top.index(head) if head in top else len(top), key)


def record_fields(arm):
    """run.json's arm fields for a run of `arm` (None: the reference arm): `arm`, its name (left
    out for the reference, as records before descriptions had it), and `arm_description`, the
    whole validated description (docs/run-record.md), so a reader knows which arm ran."""
    if arm is None:
        from surepick.shared_fsm import kinematics
        arm = kinematics.REFERENCE
    out = {"arm_description": arm.to_dict()}
    if arm.name != "reference":
        out["arm"] = arm.name
    return out


def compact_json(arm):
    """The validated description, every default filled in, as the board gets it (/arm.json)."""
    return json.dumps(arm.to_dict(), separators=(",", ":"), sort_keys=True, allow_nan=False)


# ---- TOML out -------------------------------------------------------------------------------

def _value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError("not a finite number: %r" % v)
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)       # a TOML basic string is a JSON string
    raise ValueError("cannot write %r as TOML" % (v,))


def _key(k):
    k = str(k)
    return k if k and all(c.isalnum() or c in "_-" for c in k) else json.dumps(k)


SECTION_HELP = {
    "geometry": "lengths in mm (docs/arm-description.md, geometry)",
    "joints": "joint ranges in degrees; coupled_* limits are linear in another joint's angle",
    "servos": "per servo: GPIO, pulse range, direction, zero, gear, model (servo_models), mass",
    "servo_models": "the simulator's servo models (datasheet figures at 4.8 V)",
    "gripper": "jaw range, transmission and finger geometry (mm)",
    "links": "link masses for the simulator (g)",
    "sensors": "the simulator's sensor models",
    "bench": "the source pad, the bin, the part and the rest pose",
}


def to_toml(d):
    """A description dict as a commented TOML file (what `surepick arm show` prints)."""
    out = ["# surepick arm description (docs/arm-description.md). Check it: surepick arm check FILE"]
    for k in ("format", "name", "kind", "notes"):
        if k in d:
            out.append("%s = %s" % (k, _value(d[k])))
    for section in ("geometry", "joints", "servos", "servo_models", "gripper", "links", "sensors", "bench"):
        if section not in d:
            continue
        body = d[section]
        out.append("")
        out.append("# %s: %s" % (section, SECTION_HELP[section]))
        flat = [(k, v) for k, v in body.items() if not isinstance(v, dict)]
        if flat or not body:
            out.append("[%s]" % section)
            out.extend("%s = %s" % (_key(k), _value(v)) for k, v in flat)
        for k, v in body.items():
            if isinstance(v, dict):
                out.append("[%s.%s]" % (section, _key(k)))
                out.extend("%s = %s" % (_key(kk), _value(vv)) for kk, vv in v.items())
    return "\n".join(out) + "\n"
