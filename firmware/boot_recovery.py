# Boot and recovery after an interrupted cycle (brownout, watchdog, power cut).
#
# Two small files on flash, both written only while the arm is at rest:
#   /rest.json  the joint setpoints and jaw at the last rest (after a clean cycle, or where a
#               fault froze the arm): commanded FIRST at a clean boot, so the servos never snap
#               to a default pose; after an interruption, one of the poses an operator may name.
#   /job.json   the marker: written when a job starts (arm at rest, in IDLE), removed when the
#               cycle is over and nothing is held. Found at boot, it says the last cycle was
#               interrupted: the board cannot know where an arm without joint feedback stands,
#               so its arm servos stay unpowered (the gear trains hold) and the gripper holds
#               where its pot says, until an operator sends RESCUE (controller.py).
# Whatever the files hold, reading them never raises and never reads more than MAX_FILE_BYTES:
# an unusable file is named in the boot's rejects list (rejects.py). A stored rest pose outside
# the servos' travel is rejected and the home pose used instead (boot record: rest_stored 0).
# The decisions are plain functions of readings (assess_grip, decide, boot_jaw_um), tested under
# micropython; rescue.py holds the one non-trivial action: the operator's gentle moves after a fault.
import json

from . import fsutil

from ..shared_fsm.codes import CHECK_SWITCH, CHECK_BEAM, CHECK_JAW
from ..shared_fsm.config import MAX_ATTEMPTS
from ..shared_fsm import servo_cal

from ..shared_fsm.compat import const

MARKER_PATH = "/job.json"
REST_PATH = "/rest.json"

# The reference arm's start pose (the simulator's home): tool straight down 80 mm above the
# table, 100 mm out; jaw 30 mm. Used only when no rest pose was ever stored.
HOME_JOINTS_MDEG = (0, 90000, -90000, -90000)
HOME_JAW_UM = 30000

GRIP_EMPTY = const(0)
GRIP_HELD = const(1)
GRIP_UNSURE = const(2)
GRIP_NAMES = ("empty", "held", "unsure")

ACT_NORMAL = const(0)    # no interrupted cycle: boot to IDLE
ACT_FAULT = const(2)     # latch F_INTERRUPTED, arm unpowered, gripper held, wait for an operator
ACTION_NAMES = ("normal", "", "fault")   # 1 was "finish the place at boot": no servo moves unasked now


# ---- files (never raise: a torn, missing or hostile file is a fact to act on, not a crash) ----

MAX_FILE_BYTES = 1024    # both files are well under 200 bytes; nothing bigger is read into RAM
# The link's own bounds on what a JOB carried (link.K_POS, K_MDEG, K_WIDTH, K_TRIES)
_POS_UM = 1000000
_PITCH_MDEG = 180000
_WIDTH_UM = 100000
_MAX_ATTEMPTS = MAX_ATTEMPTS   # the one bound (shared_fsm/config.py); 0 = the board's default


def _write_json(path, obj):
    return fsutil.write_atomic(path, json.dumps(obj))


def _read_json(path, file, rejected):
    # -> (present, the JSON object or None when unusable). An unusable file is named in
    # `rejected` (a rejects.Rejects, or None) as (file, "-", reason).
    status, data = fsutil.read_bounded(path, MAX_FILE_BYTES)
    if status == fsutil.READ_MISSING:
        return False, None
    reason = fsutil.READ_REASONS[status]
    d = None
    if reason is None:
        try:
            d = json.loads(data.decode())
        except UnicodeError:
            reason = "utf8"
        except MemoryError:
            reason = "no_memory"
        except Exception:        # ValueError, RuntimeError (nesting): not JSON
            reason = "json"
    if reason is None and not isinstance(d, dict):
        reason = "not_object"
    if reason is not None:
        _reject(rejected, file, "-", reason)
        return True, None
    return True, d


def _reject(rejected, file, key, reason):
    if rejected is not None:
        rejected.add(file, key, reason)


def _ints(v, n, lo, hi):
    # -> a tuple of n ints within lo..hi, or the rejects reason ("shape", "type", "range")
    if not isinstance(v, list) or len(v) != n:
        return "shape"
    for x in v:
        if isinstance(x, bool) or not isinstance(x, int):
            return "type"
    for x in v:
        if x < lo or x > hi:
            return "range"
    return tuple(v)


def write_marker_at(root, job, counted=0):
    # job: (pick 4-tuple, place 4-tuple, width_um, max_attempts) or None (a torn marker kept as
    # a torn marker); counted: a boot has already
    # logged and counted this interruption (a second reset before the operator acts must not)
    d = {}
    if job is not None:
        d = {"pick": list(job[0]), "place": list(job[1]), "width_um": job[2], "max_attempts": job[3]}
    if counted:
        d["counted"] = 1
    return _write_json(root + MARKER_PATH, d)


def clear_marker_at(root):
    import os
    try:
        fsutil.clear_way(root + MARKER_PATH)
        os.remove(root + MARKER_PATH)
    except OSError:
        pass


def read_marker_at(root, rejected=None):
    # -> None (no interrupted cycle), or a dict: "job" (None when the marker is there but
    # unusable: still an interruption, the arm may hold a part) and "counted" (1: a boot already
    # logged and counted this interruption).
    present, d = _read_json(root + MARKER_PATH, "job", rejected)
    if not present:
        return None
    if d is None:
        return {"job": None, "counted": 0}
    counted = 1 if d.get("counted") == 1 else 0
    if "pick" not in d and counted:
        return {"job": None, "counted": 1}     # a torn marker, kept (and said so) as counted
    pick = _ints(d.get("pick"), 4, -_POS_UM, _POS_UM)
    place = _ints(d.get("place"), 4, -_POS_UM, _POS_UM)
    width = _ints([d.get("width_um")], 1, 1, _WIDTH_UM)
    tries = _ints([d.get("max_attempts", 0)], 1, 0, _MAX_ATTEMPTS)
    for key, v in (("pick", pick), ("place", place), ("width_um", width), ("max_attempts", tries)):
        if isinstance(v, str):
            _reject(rejected, "job", key, v)
            return {"job": None, "counted": counted}
    for p in (pick, place):
        if p[3] < -_PITCH_MDEG or p[3] > _PITCH_MDEG:
            _reject(rejected, "job", "pick" if p is pick else "place", "range")
            return {"job": None, "counted": counted}
    return {"job": (pick, place, width[0], tries[0]), "counted": counted}


def write_rest_at(root, joints_mdeg, jaw_um):
    return _write_json(root + REST_PATH, {"joints_mdeg": [int(v) for v in joints_mdeg], "jaw_um": int(jaw_um)})


def rest_pose_problem(q, jaw, arm=None):
    # -> None when every joint of the pose lies within its servo's travel (0..travel_deg of servo
    # angle, through the arm's joint -> servo map; None: the reference's, docs/conventions.md)
    # and the jaw within 0..JAW_MAX_UM; else (key, reason). A pose outside would be clamped to
    # an end stop: the first pulses would drive the servo into it.
    for i in range(4):
        s = servo_cal.joint_to_servo_mdeg(i, q[i]) if arm is None else arm.servo_mdeg(i, q[i])
        if s < 0 or s > (servo_cal.SERVO_RANGE_MDEG if arm is None else arm.servo_cal(i)[4]):
            return "joints_mdeg", "range"
    if jaw < 0 or jaw > servo_cal.JAW_MAX_UM:
        return "jaw_um", "range"
    return None


def read_rest_at(root, rejected=None, arm=None):
    # -> (joints tuple, jaw_um, stored?). The home pose (the arm's, None: the reference's) when
    # nothing usable is stored: a missing file is the first boot; a malformed or out-of-range
    # one is named in `rejected`.
    present, d = _read_json(root + REST_PATH, "rest", rejected)
    if d is not None:
        q = _ints(d.get("joints_mdeg"), 4, -(1 << 30), (1 << 30) - 1)
        jaw = _ints([d.get("jaw_um")], 1, -(1 << 30), (1 << 30) - 1)
        if isinstance(q, str):
            _reject(rejected, "rest", "joints_mdeg", q)
        elif isinstance(jaw, str):
            _reject(rejected, "rest", "jaw_um", jaw)
        else:
            bad = rest_pose_problem(q, jaw[0], arm)
            if bad is None:
                return q, jaw[0], True
            _reject(rejected, "rest", bad[0], bad[1])
    return (HOME_JOINTS_MDEG if arm is None else arm.home_mdeg), HOME_JAW_UM, False


# ---- decisions ----

def jaw_um_of(pot_counts, cfg):
    return (pot_counts - cfg.pot_closed_counts) * 1000 // cfg.pot_counts_per_mm


def pot_ok(pot_counts, cfg):
    return cfg.pot_valid_min_counts <= pot_counts <= cfg.pot_valid_max_counts


def grip_votes(jaw_um, switch, beam, width_um, cfg):
    # Check mask of what says "a part is between the fingers" (codes.CHECK_*). The jaw votes
    # when it stopped on something: clearly more open than closing on nothing would leave it,
    # and not as open as the pre-grasp opening. jaw_um < 0 means the pot is unusable.
    m = 0
    if jaw_um >= 0:
        closed_on_nothing = width_um - cfg.squeeze_um
        if closed_on_nothing < 0:
            closed_on_nothing = 0
        if closed_on_nothing + cfg.jaw_present_min_um <= jaw_um <= width_um + cfg.open_margin_um // 2:
            m |= CHECK_JAW
    if switch:
        m |= CHECK_SWITCH
    if beam:
        m |= CHECK_BEAM
    return m


def assess_grip(jaw_um, switch, beam, width_um, cfg):
    # Two of three cheap checks agreeing is a held part, none is empty, one alone is unsure
    # (a stuck switch, debris in the beam, a jaw that stopped half way).
    m = grip_votes(jaw_um, switch, beam, width_um, cfg)
    n = (m & 1) + ((m >> 1) & 1) + ((m >> 3) & 1)
    if n >= 2:
        return GRIP_HELD
    if n == 0 and jaw_um >= 0:
        return GRIP_EMPTY
    return GRIP_UNSURE


def decide(marker):
    # marker: read_marker()'s result. An interrupted cycle (even one whose marker is torn)
    # latches a fault and waits for an operator; nothing moves on its own after a reset.
    if marker is None:
        return ACT_NORMAL
    return ACT_FAULT


def boot_jaw_um(marker, jaw_measured_um, rest_jaw_um, pot_is_ok, grip, hold_squeeze_um):
    # What the gripper is commanded to first. A clean boot uses the rest pose. After an
    # interruption the jaw stays where the pot says it is (never opened over the table); a held
    # part gets the holding squeeze back (never more: a hobby servo at stall overheats), which
    # the part stops, so nothing moves. -1: unknown (pot broken): leave the gripper PWM off.
    if marker is None:
        return rest_jaw_um
    if not pot_is_ok:
        return -1
    jaw = jaw_measured_um
    if grip == GRIP_HELD:
        jaw -= hold_squeeze_um
    return jaw if jaw > 0 else 0
