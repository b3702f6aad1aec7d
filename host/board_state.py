# The states a board can be in at the bench, each with how it shows and the command that leaves
# it: ONE table for every place a person reads one (`job status`, `job start`'s refusals, doctor,
# the monitor, the verbs that stop the firmware or reset the board) and for docs/bench-states.md,
# whose table a test holds to this one.
#
# The board says what it is in: STATUS (state, fault, busy) and TELEMETRY (attempt, e-stop, and
# `conditions`, the link.COND_* bits: a part held, the arm unpowered, teleop on or held by its
# deadman, ...). A View is one such answer; active(view) lists the table's entries that hold,
# the one to deal with first at the front. To add a state: a bit (or a busy code) on the board,
# one Entry here with its test, and a row in docs/bench-states.md.
import collections

from surepick.shared_fsm import codes, link, run_codes, states

# One state: `key` (stable, used in tests and docs), `shows` (the words every tool prints),
# `way_out` (what to do, with the command; "{port}" becomes " --port P" when a port was given),
# `blocks_job` (JOB is refused while it holds), `unsafe_reset` (stopping the firmware or a soft
# reset would move, release or unpower the arm: the verbs that do refuse it), `level` (doctor's:
# "FAIL" needs a person, "WARN" worth knowing, "OK" work in progress).
Entry = collections.namedtuple("Entry", "key shows way_out blocks_job unsafe_reset level")

_ABORT = "`surepick job abort{port}`"
_CLEAR = "`surepick job clear{port}`"

TABLE = (
    Entry("hil", "in hardware-in-the-loop mode (`surepick hil` drives it from the host's simulated arm)",
          "end the `surepick hil` session (Ctrl-C in its terminal); with its terminal gone, power the board off and on",
          True, False, "WARN"),
    Entry("job", "a job is running",
          "wait for it to end (`surepick job status{port}`), or stop it with " + _ABORT,
          True, True, "OK"),
    Entry("run", "a production run is going on: the board runs cycle after cycle by itself",
          "follow it with `surepick job status{port}`; `surepick job stop{port}` ends it after the current cycle, "
          + _ABORT + " at once (the arm holds where it is)",
          True, True, "OK"),
    Entry("rescue", "an operator's rescue is moving the arm (`surepick job rescue`)",
          "wait for it to end, or stop it with " + _ABORT + " (the arm holds where it is)",
          True, True, "OK"),
    Entry("calibrating", "a calibration is moving the jaw",
          "wait for it to end, or stop it with " + _ABORT,
          True, True, "OK"),
    Entry("teleop", "teleop mode is on: the arm follows `surepick teleop`'s setpoints",
          "end the teleop session (x or Ctrl-C in its terminal), or " + _ABORT + " (the arm holds where it is)",
          True, True, "WARN"),
    Entry("teleop_held", "teleop mode is on, held by its deadman: no setpoint came for 200 ms (its session "
          "ended or stalled) and the arm holds where it is",
          _ABORT + " ends teleop mode (the arm stays where it is)",
          True, True, "FAIL"),
    Entry("moving", "the arm is still moving (braking to where it was stopped)",
          "wait a second for it to come to rest",
          True, True, "OK"),
    Entry("arm_invalid", "the board's arm description (/arm.json) failed its check at boot: no servo is powered "
          "and nothing moves (the rejects at boot name the field)",
          "ship a valid description: `surepick deploy --arm FILE{port}` (FILE your arm's description, or a "
          "preset's name; `surepick arm check FILE` names what is wrong with one); the board reboots into it",
          True, False, "FAIL"),
    Entry("estop", "the e-stop is pressed",
          "release the e-stop (the arm holds meanwhile), then " + _CLEAR,
          True, False, "FAIL"),
    Entry("arm_unpowered", "the arm servos are unpowered after a reset mid-job (the gear trains hold the arm) "
          "and the board cannot know where the arm stands",
          "say where it stands and take it back: `surepick job rescue --place --arm-near pick{port}` with a part "
          "held, `surepick job rescue --rest --arm-near rest{port}` without (or --arm-at X,Y,Z as measured)",
          True, True, "FAIL"),
    Entry("arm_stalled", "the arm servos are unpowered: an arm servo pushed at stall",
          "`surepick job rescue --rest{port}` powers the arm again where it stands and brings it to rest",
          True, True, "FAIL"),
    Entry("holding", "a part is held between the fingers: a new job would open the jaw wherever the arm is",
          "`surepick job rescue --place{port}` carries it to the job's place pose and lets go there; "
          "`surepick job rescue --release{port}` opens the jaw where it is (the part drops there)",
          True, True, "FAIL"),
    Entry("fault", "a fault is latched",
          _CLEAR,
          True, False, "FAIL"),
    Entry("gripper_off", "the gripper is unpowered (a stall its back-off did not end, or a broken pot)",
          "`surepick job rescue --rest{port}` powers it again where its pot says (refused while the pot "
          "reads a rail: check its wiring)",
          False, True, "WARN"),
    Entry("cycle_open", "a cycle's marker is still on flash (it goes once the arm is at rest, nothing held "
          "and no fault latched): a reset now would boot into INTERRUPTED",
          "wait a second at rest (clear a fault first)",
          False, True, "OK"),
    Entry("away", "the arm is not at the pose a boot starts it in (its stored rest pose): a reset would "
          "move it there",
          "wait for it to settle, or `surepick job rescue --rest{port}` brings it to rest",
          False, True, "OK"),
    Entry("run_stopped", "the last production run stopped on its own (a fault, its fault policy, a part "
          "never ready)",
          "`surepick job report{port}` says why and counts its cycles; deal with what it names, then start "
          "a new run",
          False, False, "WARN"),
    # Found by the host, not reported by the board:
    Entry("repl", "the firmware is stopped at the REPL (it does not answer on the link)",
          "press Ctrl-D in `surepick link mpremote{port} repl`, or run `surepick deploy{port}`",
          True, False, "FAIL"),
    Entry("lent", "the board's console is lent to another program (mpremote, a deploy) through the link hub",
          "wait until that program exits; `surepick link status` names it",
          True, False, "WARN"),
)
BY_KEY = {e.key: e for e in TABLE}

_BUSY_KEY = {link.BUSY_JOB: "job", link.BUSY_RESCUE: "rescue", link.BUSY_CALIBRATION: "calibrating",
             link.BUSY_MOVING: "moving"}


class View:
    """One answer of the board: STATUS's payload and the TELEMETRY frame sent with it."""

    def __init__(self, payload, telemetry=None):
        p = list(payload) + [None] * 9
        self.state, self.fault, self.busy = p[0], p[1] or 0, p[2] or 0
        self.boot_count = p[3]
        self.max_attempts = p[8] if isinstance(p[8], int) else 0
        t = dict(zip(link.SCHEMA[link.T_TELEMETRY][3], telemetry)) if telemetry else {}
        self.telemetry = t
        self.attempt = t.get("attempt", 0)
        self.estop = t.get("estop", 0)
        # None: a firmware that does not report its conditions
        self.conditions = t.get("conditions")
        # (RUN_STATUS payload, its line) when a production run ran since boot (cli/job_run.py)
        self.run = None

    @classmethod
    def from_telemetry(cls, t):
        # A TELEMETRY frame alone (the monitor): no STATUS `busy`, so a running job shows by its state.
        fields = t if isinstance(t, (list, tuple)) else [t.get(k) for k in link.SCHEMA[link.T_TELEMETRY][3]
                                                          if k in t]
        tel = dict(zip(link.SCHEMA[link.T_TELEMETRY][3], fields))
        busy = link.BUSY_JOB if tel.get("state", 0) != states.IDLE else link.BUSY_NONE
        return cls((tel.get("state"), tel.get("fault"), busy), fields)

    def has(self, bit):
        return bool(self.conditions and self.conditions & bit)

    def where(self):
        # "LIFT, attempt 1 of 3"
        text = states.name(self.state) if isinstance(self.state, int) else "?"
        if self.busy == link.BUSY_JOB and self.attempt:
            text += ", attempt %d" % self.attempt + (" of %d" % self.max_attempts if self.max_attempts else "")
        return text


def active(view):
    """The table's entries that hold for `view`, the one to deal with first at the front."""
    has = view.has
    keys = set()
    if has(link.COND_HIL):
        keys.add("hil")
    if view.busy in _BUSY_KEY:
        keys.add(_BUSY_KEY[view.busy])
    if view.run is not None and view.run[0][0] == 1:
        keys.discard("job")
        keys.add("run")
    elif view.run is not None and view.run[0][6] >= run_codes.STOP_FAULT:
        keys.add("run_stopped")
    if view.busy == link.BUSY_TELEOP or has(link.COND_TELEOP):
        keys.add("teleop")
    if has(link.COND_TELEOP_HELD):
        keys.discard("teleop")
        keys.add("teleop_held")
    # the contact open now; a firmware without conditions: its latched e-stop input
    estop = has(link.COND_ESTOP_OPEN) if view.conditions is not None else view.estop
    if estop:
        keys.add("estop")
    if has(link.COND_ARM_OFF):
        keys.add("arm_unpowered" if has(link.COND_POSE_UNKNOWN) else "arm_stalled")
    if has(link.COND_HOLDING):
        keys.add("holding")
    if view.fault:
        keys.add("fault")
    if has(link.COND_GRIPPER_OFF):
        keys.add("gripper_off")
    if has(link.COND_CYCLE_OPEN):
        keys.add("cycle_open")
    if has(link.COND_AWAY):
        keys.add("away")
    if has(link.COND_ARM_INVALID):
        # No servo was ever powered: the unpowered arm and gripper follow from it, and their
        # rescues are refused until a valid description is deployed.
        keys.add("arm_invalid")
        keys -= {"arm_unpowered", "arm_stalled", "gripper_off", "away"}
    # A rescue takes the arm back and clears the fault with it: with the arm unpowered or a part
    # held, `job clear` alone does not free the board, the rescue does.
    if keys & {"arm_unpowered", "arm_stalled"}:
        keys.discard("holding")
    if keys & {"arm_unpowered", "arm_stalled", "holding"}:
        keys.discard("fault")
    return [e for e in TABLE if e.key in keys]


def port_text(port):
    # " --port P" for the commands a message suggests; "" when the user gave no --port (the
    # suggested command then finds the board the same way).
    return "" if port is None else " --port %s" % port


def shows(entry, view):
    # The words for one entry, with what the board adds to it (the fault's name, where the job is).
    if entry.key == "fault":
        from surepick.host.link.answers import FAULT_MEANING
        return "%s is latched: %s" % (codes.name(view.fault), FAULT_MEANING.get(view.fault, "a fault"))
    if entry.key == "job":
        return "a job is running (%s)" % view.where()
    if entry.key in ("run", "run_stopped") and view.run is not None:
        return "%s (%s)" % (entry.shows, view.run[1])
    return entry.shows


def way_out(entry, port=None):
    return entry.way_out.format(port=port_text(port))


def sentence(entry, view, port=None):
    # "a part is held between the fingers: ...; way out: `surepick job rescue --place`"
    return "%s; way out: %s" % (shows(entry, view), way_out(entry, port))


def lines(view, port=None):
    """What `job status` prints under its state line: one line per state that holds."""
    out = []
    for e in active(view):
        if not e.blocks_job and e.level == "OK":
            continue             # only a reset cares (deploy, doctor name it when they refuse)
        out.append("%-13s %s" % (e.key + ":", shows(e, view)))
        out.append("%-13s way out: %s" % ("", way_out(e, port)))
    if view.conditions is None:
        out.append("(this firmware does not report a held part, teleop or the arm's power: "
                   "deploy this version with `surepick deploy%s`)" % port_text(port))
    return out


def job_blocker(view):
    """The first state that refuses a job, or None."""
    for e in active(view):
        if e.blocks_job:
            return e
    return None


def reset_dangers(view):
    """The states in which stopping the firmware (Ctrl-C, a soft reset) would move, release or
    unpower the arm."""
    return [e for e in active(view) if e.unsafe_reset]


def world_reset_blocker(view):
    """What forbids putting a virtual board's world back (`surepick board --reset-world`): a part
    the firmware believes it holds, or anything moving the arm. -> the entry, or None."""
    for e in active(view):
        if e.key in ("job", "rescue", "calibrating", "teleop", "teleop_held", "moving"):
            return e
    if view.has(link.COND_HOLDING):
        return BY_KEY["arm_unpowered"] if view.has(link.COND_POSE_UNKNOWN) else BY_KEY["holding"]
    return None


def read(client, timeout=3.0):
    """Ask the board (STATUS and its TELEMETRY) -> View, or None when no firmware answers the link
    (a bare REPL echoes the request, a stopped firmware says nothing). Never stops the firmware."""
    from surepick.host.link import busy
    st = busy.status(client, timeout)
    return None if st is None else st.view
