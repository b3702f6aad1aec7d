"""The gripper's pot, for bring-up: the servo's own pot, its wiper on the board's ADC, is how the
firmware knows the jaw's opening (jaw um = (counts - pot_closed_counts) * 1000 /
pot_counts_per_mm, shared_fsm/machine.py). Bring-up reads it with the jaw on two caliper marks
(the gripper's range marks) and draws the line through them: its value at 0 mm is the pot's
closed-on-nothing reading (pot_closed_counts), its slope pot_counts_per_mm. The board gets them
as settings (apply: the same keys `surepick calibrate pot` and `config set` write)."""
from surepick.shared_fsm.config import FIELDS

STEP = "gripper.pot"
SETTINGS = ("pot_closed_counts", "pot_counts_per_mm")
_LIMITS = {f[0]: (f[2], f[3]) for f in FIELDS}


def pot_line(points):
    """[(counts, mm), (counts, mm)] -> {"closed_counts", "counts_per_mm"} (whole counts, as the
    board keeps them)."""
    (c0, m0), (c1, m1) = points
    if m1 == m0:
        raise ValueError("the pot's two points are at one opening")
    per_mm = (c1 - c0) / float(m1 - m0)
    closed = c0 - per_mm * m0
    return {"closed_counts": int(round(closed)), "counts_per_mm": int(round(per_mm))}


def pot_problem(line):
    """One line naming what is wrong with a pot line and the way on, or None. A pot that does
    not rise as the jaw opens is wired backwards (its ends swapped) or not the jaw's."""
    per_mm, closed = line["counts_per_mm"], line["closed_counts"]
    lo, hi = _LIMITS["pot_counts_per_mm"]
    if per_mm <= 0:
        return ("the gripper pot reads %d counts per mm: it falls as the jaw opens. Swap the pot's two "
                "outer wires (docs/hardware.md), then `surepick bringup --redo %s`" % (per_mm, STEP))
    if not lo <= per_mm <= hi:
        return ("the gripper pot reads %d counts per mm, outside %d..%d: the wiper is not on the jaw "
                "servo's pot (docs/hardware.md); then `surepick bringup --redo %s`" % (per_mm, lo, hi, STEP))
    lo, hi = _LIMITS["pot_closed_counts"]
    if not lo <= closed <= hi:
        return ("the gripper pot would read %d counts closed on nothing, outside %d..%d: check its wiring "
                "(docs/hardware.md); then `surepick bringup --redo %s`" % (closed, lo, hi, STEP))
    return None


def settings(pot):
    """The board settings of a pot line: [(key, value)]."""
    return [("pot_closed_counts", int(pot["closed_counts"])), ("pot_counts_per_mm", int(pot["counts_per_mm"]))]
