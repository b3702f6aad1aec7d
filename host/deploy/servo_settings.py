# A board deployed before arm descriptions carried its servos' pins and pulse calibration in
# /config.json (pin_servoN, servoN_min_us, servoN_max_us, servoN_trim_us, servoN_inverted:
# firmware/settings.py MOVED_TO_ARM). A deploy that ships a description settles them: each old
# key whose value the description repeats is taken out of /config.json; one the description
# contradicts stops the deploy before anything is written (the board's servos are wired and
# calibrated as the old key says), unless the person said the description replaces them.
import json

from surepick.firmware import settings as fw_settings

_SLOT_NAMES = ("base", "shoulder", "elbow", "wrist", "gripper")


def description_field(key):
    # "servo2_inverted" -> "servos.elbow.direction"
    slot, field = fw_settings.MOVED_TO_ARM[key]
    return "servos.%s.%s" % (_SLOT_NAMES[slot], "direction" if field == "inverted" else field)


def plan(config_text, arm, replace=False):
    """config_text: the board's /config.json (None: none). -> (new text or None when nothing
    changes, [(key, old value, the description's value)] taken out, error line or None)."""
    if not config_text:
        return None, [], None
    try:
        d = json.loads(config_text)
    except ValueError:
        return None, [], None          # the firmware names an unreadable file itself; nothing to move
    board = d.get("board") if isinstance(d, dict) else None
    if not isinstance(board, dict):
        return None, [], None
    moved = [(k, board[k], fw_settings.moved_value(arm, k)) for k in sorted(board) if k in fw_settings.MOVED_TO_ARM]
    if not moved:
        return None, [], None
    differ = [m for m in moved if m[2] is not None and m[1] != m[2]]
    if differ and not replace:
        k, old, want = differ[0]
        more = " (and %d more)" % (len(differ) - 1) if len(differ) > 1 else ""
        return None, [], ("the board's /config.json says %s = %s, this description's %s says %s%s: put the "
                          "board's value in the description (its servo is wired and calibrated so), or deploy "
                          "with --replace-servo-settings to drive by the description; nothing was written"
                          % (k, json.dumps(old), description_field(k), json.dumps(want), more))
    for k, _, _ in moved:
        del board[k]
    return json.dumps(d), moved, None
