"""The board's arm description (/arm.json) over the link (ARM_READ, docs/protocol.md), and its
differences from a local description, field by field (`surepick config diff --arm`)."""
import json

from surepick.host.arms import files
from surepick.shared_fsm import arm as arm_mod
from surepick.shared_fsm import link

MAX_BYTES = 8192     # firmware/arm_file.py reads no more at boot


class NoArmFile(Exception):
    """The board has no /arm.json: it runs the reference arm."""


class ArmBusy(ValueError):
    """The board answered E_BUSY: it reads its /arm.json at rest only (ask again when idle)."""


def read_bytes(client, timeout=3.0):
    """-> the board's /arm.json as it is on its flash. Raises NoArmFile, or ValueError(sentence)
    for any other answer (a busy arm, firmware without ARM_READ)."""
    from surepick.host.link.answers import refusal
    out = b""
    size = None
    while size is None or len(out) < size:
        r = client.request(link.T_ARM_READ, (len(out),), timeout)
        if r.code == link.E_STATE and r.payload[:1] == ("no_arm_json",):
            raise NoArmFile()
        if r.code == link.E_BUSY:
            raise ArmBusy("the board reads its /arm.json at rest only and is busy (ask again when it is idle)")
        if r.code == link.E_UNKNOWN_TYPE:
            raise ValueError("the firmware on the board cannot send its /arm.json (deploy this version with "
                             "`surepick deploy`)")
        if not r.ok or not r.payload or not isinstance(r.payload[0], int):
            raise ValueError("reading the board's /arm.json: %s" % refusal(r.code, r.payload))
        size = r.payload[0]
        if size > MAX_BYTES:
            raise ValueError("the board's /arm.json is %d bytes, more than the %d its firmware reads (it runs the "
                             "reference arm, jobs refused): deploy a description with `surepick deploy --arm FILE`"
                             % (size, MAX_BYTES))
        chunk = b"".join(bytes.fromhex(t[1:]) for t in r.payload[1:] if isinstance(t, str) and t[:1] == "x")
        if not chunk and len(out) < size:
            raise ValueError("the board's /arm.json ended at byte %d of %d (changed while read?)" % (len(out), size))
        out += chunk
    return out[:size]


def read_description(client, timeout=3.0):
    """-> (what, description dict or None, sentence): the arm the board runs, as its run records
    name it. what: "file" (its /arm.json, validated, every default filled in), "reference" (no
    /arm.json: the reference arm's description), "invalid" (a file the board refuses jobs with) or
    "unknown" (it cannot send it: older firmware, a file too big). Raises ArmBusy while the arm
    works, and the link's errors."""
    try:
        raw = read_bytes(client, timeout)
    except NoArmFile:
        raw = None
    except ArmBusy:                 # a ValueError too, but one to ask again, not an answer
        raise
    except ValueError as e:
        return "unknown", None, str(e)
    board, head = described(raw)
    return ("invalid" if board is None else "reference" if raw is None else "file"), board, head


def _text(v):
    if v is None:
        return "(none)"
    if isinstance(v, float) and v == int(v):
        return "%d" % v
    return json.dumps(v) if isinstance(v, str) else "%s" % v


def described(raw):
    """-> (board dict or None, what the board runs): the board's /arm.json bytes (None: it has
    none, it runs the reference) as a description with every default filled in; None when the
    file is no valid description (the sentence says why)."""
    if raw is None:
        from surepick.shared_fsm.arm_reference import DESCRIPTION
        return arm_mod.validate(DESCRIPTION).to_dict(), "the board has no /arm.json: it runs the reference arm"
    try:
        board = files.validate(json.loads(raw.decode()), "the board's /arm.json").to_dict()
    except (ValueError, UnicodeError) as e:
        return None, ("the board's /arm.json is not a valid description (the board keeps the arm still and "
                      "refuses jobs): %s" % e)
    return board, "the board's /arm.json: %s (%s)" % (board["name"], board["kind"])


def compare(raw, local_arm):
    """-> (board dict or None, rows or None, what the board runs): the board's /arm.json bytes
    (None: it has none, it runs the reference) against the local Arm, both with every default
    filled in; rows None when the board's file is no valid description (the sentence says why)."""
    board, head = described(raw)
    if board is None:
        return None, None, head
    return board, files.field_differences(board, local_arm.to_dict()), head


def diff_report(raw, local_arm, local_name):
    """-> lines comparing the board's /arm.json bytes (None: none) with the local Arm, field by field."""
    board, rows, head = compare(raw, local_arm)
    if rows is None:
        return [head, "deploy one with `surepick deploy --arm %s`" % local_name]
    lines = ["%s; %s: %s (%s)" % (head, local_name, local_arm.name, local_arm.kind)]
    for key, va, vb in rows:
        lines.append("  %s: board %s, %s %s" % (key, _text(va), local_name, _text(vb)))
    if rows:
        lines.append("%d field%s differ%s (`surepick deploy --arm %s` ships this description)"
                     % (len(rows), "" if len(rows) == 1 else "s", "s" if len(rows) == 1 else "", local_name))
    else:
        lines.append("the board runs this description (%d fields the same)" % len(files.flatten(board)))
    return lines
