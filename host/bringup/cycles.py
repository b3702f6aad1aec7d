"""The end of bring-up: the board's own machine runs a job over the link (JOB, docs/protocol.md)
on the description and pot bring-up found, twice, each judged by the four sensors' readings in
the machine's own events:

    cycle.dry    the part taken off its pad, the arm at DRY_SPEED of its speed, one attempt: the
                 jaw closes on nothing and the machine must say so (VERIFY_EMPTY, then its "no
                 part" end, GRASP_FAILED, which bring-up then clears: it asked for it). What the
                 pot and the current read closed on nothing is kept.
    cycle.first  the part back on its pad, full speed: the machine must place it (PLACED) after
                 a verified grasp. The current the gripper drew squeezing it is kept.

Any other end stops bring-up with the fault named and left latched: the firmware froze the arm
where it was on its own (a held part stays held at its holding squeeze; a gripper at stall is
backed off, then unpowered, by its stall watch), and a person looks before `surepick job clear`.
Bring-up never opens the jaw, aborts or clears anything but its own dry cycle's GRASP_FAILED."""
import time

from surepick.host.bringup.jog import BringupStop
from surepick.shared_fsm import codes, link, states

DRY = "cycle.dry"
FIRST = "cycle.first"
STEPS = (DRY, FIRST)
DRY_SPEED_FRACTION = 0.5     # the dry cycle's arm speed, of the board's own
SPEED_KEYS = ("arm_speed_mdeg_s", "gentle_speed_mdeg_s")
CYCLE_TIMEOUT_S = 240.0      # a cycle ends (placed or a fault) within this (wall clock, loaded host)
_END_REASONS = (codes.R_PLACED,)


class Cycle:
    """What one job did, from the board's EVENT frames: the verification's readings, its end."""

    def __init__(self):
        self.events = []          # each a dict of link.EVENT_FIELDS
        self.verify = []          # the events that left VERIFY (its readings at the verdict)
        self.end = None           # ("placed",) or ("fault", code, state it happened in)

    def feed(self, frame):
        if frame.ftype != link.T_EVENT:
            return
        e = dict(zip(link.EVENT_FIELDS, frame.fields))
        if any(e["seq"] == o["seq"] and e["t_ms"] == o["t_ms"] for o in self.events):
            return
        self.events.append(e)
        if e["kind"] == codes.K_TRANSITION and e["from_state"] == states.VERIFY:
            self.verify.append(e)
        if e["kind"] == codes.K_FAULT:
            self.end = ("fault", e["reason"], e["from_state"])
        elif e["kind"] == codes.K_TRANSITION and e["reason"] in _END_REASONS:
            self.end = ("placed",)


def run_job(c, job_args, timeout=CYCLE_TIMEOUT_S, port="PORT"):
    """Send JOB with `job_args` (link fields after the request id) and follow it to its end."""
    from surepick.host.link.answers import refusal
    r = c.request(link.T_JOB, job_args, 3.0, collect=(link.T_EVENT,))
    if not r.ok:
        raise BringupStop("the board refused the job: %s" % refusal(r.code, r.payload, port))
    cyc = Cycle()
    for f in r.frames:
        cyc.feed(f)
    deadline = time.monotonic() + timeout
    while cyc.end is None:
        if time.monotonic() > deadline:
            raise BringupStop("the cycle did not end within %.0f s: it may still run (`surepick job status "
                              "--port %s`; `surepick job abort --port %s` stops it where it is)"
                              % (timeout, port, port))
        for f in c.read_frames(0.2):
            cyc.feed(f)
    return cyc


def readings(e, pot):
    """An event's readings in a person's units: the jaw (mm, by the pot line found), the gripper
    current (mA), the switch and beam, and which checks said "part" (codes.CHECK_NAMES)."""
    mask = e["present_mask"]
    return {"jaw_mm": round((e["pot_counts"] - pot["closed_counts"]) / float(pot["counts_per_mm"]), 2),
            "current_ma": e["current_ma"], "switch": bool(e["switch_pressed"]), "beam": bool(e["beam_broken"]),
            "checks": [n for i, n in enumerate(codes.CHECK_NAMES) if mask & (1 << i)]}


def fault_stop(cyc, what, port):
    """The BringupStop for a cycle that ended otherwise than it should: the fault named, where,
    what it means, and that it stays latched for the person."""
    from surepick.host.link.answers import FAULT_MEANING
    _, code, where = cyc.end
    return BringupStop(
        "the %s ended in %s during %s (%s). Bring-up left the arm as the firmware froze it (nothing opened, "
        "nothing cleared): look at the arm, then `surepick job status --port %s` says what it holds and "
        "the way on (`surepick job rescue`, `surepick job clear`); run bringup again to do the %s again"
        % (what, codes.name(code), states.name(where), FAULT_MEANING.get(code, "a fault"), port, what))


def check_dry(cyc, port):
    """The dry cycle must end "no part": every verification said nothing was there, and the
    machine ended in GRASP_FAILED. -> the readings closed on nothing (the last verification)."""
    if cyc.end[0] == "placed":
        raise BringupStop("the dry cycle (no part on the pad) ended PLACED: the sensors said a part was held "
                          "when none was. Check the finger switch and the beam (bringup --redo switch, "
                          "--redo beam) and the pot (--redo %s)" % "gripper.pot")
    if cyc.end[1] != codes.F_GRASP_FAILED or not cyc.verify or \
            any(e["reason"] != codes.R_VERIFY_EMPTY for e in cyc.verify):
        raise fault_stop(cyc, "dry cycle", port)
    return cyc.verify[-1]


def check_first(cyc, port):
    """The first real cycle must place the part after a verified grasp -> that verification."""
    if cyc.end[0] != "placed":
        raise fault_stop(cyc, "first cycle", port)
    passed = [e for e in cyc.verify if e["reason"] == codes.R_VERIFY_PASS]
    if not passed:
        raise BringupStop("the first cycle ended PLACED with no verified grasp in its events: update the "
                          "firmware (surepick deploy) and run bringup again")
    return passed[-1]
