# A run record whose gripper switch wire "breaks" when the grasp starts, for the replay tests: a
# replay of it must first diverge from the record at the board's verify decision, and not before.
import csv

from surepick.host.records import runrecord
from surepick.shared_fsm import codes
from surepick.shared_fsm import states


def break_switch_at_grasp(run_dir):
    # ticks.csv's switch_pressed reads 0 from the first cycle's GRASP on.
    # -> t_ms of that cycle's passed VERIFY (the first decision the switch changes).
    ev = runrecord.load(str(run_dir)).events[0]
    grasp_t = next(e[1] for e in ev if e[4] == states.GRASP)
    verify_t = next(e[1] for e in ev if e[3] == states.VERIFY and e[5] == codes.R_VERIFY_PASS)
    path = run_dir / "ticks.csv"
    rows = list(csv.reader(path.open()))
    i, t = rows[0].index("switch_pressed"), rows[0].index("t_ms")
    for r in rows[1:]:
        if int(r[t]) >= grasp_t:
            r[i] = "0"
    with path.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    return verify_t
