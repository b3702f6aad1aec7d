# A board's refusal in words, for every place a person reads one (job, config, calibrate, hil,
# the monitor). The codes and their names are defined once in shared_fsm: link.ERROR_NAMES for the
# link's REPLY codes, codes.name() for the machine's faults, states.name() for states. This table
# says what each means and what to do about it.
from surepick.host import board_state
from surepick.shared_fsm import codes, run_codes
from surepick.shared_fsm import link
from surepick.shared_fsm import states

# What each latched fault means (shared_fsm/codes.py F_*).
FAULT_MEANING = {
    codes.F_GRASP_FAILED: "no part was found after the last attempt",
    codes.F_SENSOR_DISAGREE: "the grip sensors contradict each other (a stuck switch, a blocked beam)",
    codes.F_SENSOR_FAULT: "a sensor reads something impossible (a pot wire broken, reading a rail)",
    codes.F_CRUSH: "the gripper current went far above the squeeze level (a wrong or crushed part)",
    codes.F_DROPPED: "the grip was lost while carrying the part",
    codes.F_RELEASE_FAILED: "the part was still sensed between the jaws after they opened",
    codes.F_MOTION_TIMEOUT: "a move did not arrive in time",
    codes.F_HOLD_OVERCURRENT: "the holding current stayed above its limit (the servo would burn)",
    codes.F_ESTOP: "the e-stop was pressed",
    codes.F_ABORTED: "the job was aborted",
    codes.F_INTERRUPTED: "the controller restarted in the middle of a cycle (power cut, brownout, watchdog)",
    codes.F_BAD_POSE: "a commanded pose is out of the arm's reach",
    codes.F_RAIL_LOW: "the servo rail was below its minimum",
    codes.F_LIFT_SHORT: ("the part pulled the lift short: the servo rail says the arm servos sag under it "
                         "further than lift_sink_max_um (a part too heavy for these servos); it was set back down "
                         "where it was picked, still held"),
}

# REPLY codes that mean the board could not read the request at all (line noise, a program
# writing to the same port).
_UNREAD = (link.E_TOO_LONG, link.E_SYNTAX, link.E_CRC, link.E_VERSION, link.E_UNKNOWN_TYPE,
           link.E_FIELD_COUNT, link.E_BAD_FIELD, link.E_RANGE)

# E_STATE reasons the firmware names in its payload (firmware/app.py, calibrate.py).
_STATE_REASONS = {
    "no_fault": "there is no latched fault to clear",
    "estop": "the e-stop is pressed: release it (the arm holds meanwhile), then `surepick job clear{port}`",
    "hil": "the board is in hardware-in-the-loop mode (`surepick hil` is using it)",
    "not_hil": "the board is not in hardware-in-the-loop mode",
    # CALIBRATE's (firmware/calibrate.py)
    "jaw_not_empty": "the jaw is not empty (its switch or beam sees something): take it out by hand, then "
                     "`surepick calibrate pot{port}` again",
    "fault": "a fault latched or the e-stop opened while it ran: `surepick job status{port}` names it, "
             "`surepick job clear{port}` clears it; then calibrate again",
    "timeout": "it did not finish in time (the jaw did not get to closed: is something in its way?); "
               "check the jaw moves freely, then calibrate again",
    # JOB's (host/board_state.py has the same ways out, for every tool that reads the board's state)
    "holding": "a part is held between the fingers: `surepick job rescue --place{port}` carries it to the "
               "job's place pose, `surepick job rescue --release{port}` opens the jaw where it is",
    "arm_unpowered": "the arm servos are unpowered after a reset: say where the arm stands with `surepick job "
                     "rescue --rest --arm-near rest{port}` (--place with a part held; --arm-near pick|place|rest "
                     "or --arm-at X,Y,Z)",
}


def _bench_state(reason):
    # A reason that is one of the bench's states (host/board_state.py: arm_invalid): its words and
    # way out from that table. None for any other.
    e = board_state.BY_KEY.get(reason)
    return None if e is None else "%s; way out: %s" % (e.shows, e.way_out)


def fault_text(fault, state=None, attempt=None):
    # "GRASP_FAILED (in DESCEND, attempt 3): no part was found after the last attempt"
    where = []
    if state is not None:
        where.append("in %s" % states.name(state))
    if attempt:
        where.append("attempt %d" % attempt)
    text = codes.name(fault) + (" (%s)" % ", ".join(where) if where else "")
    meaning = FAULT_MEANING.get(fault)
    return text + (": " + meaning if meaning else "")


def event_text(e):
    # One event record (EVENT frame) as `job start --wait` and `job rescue --wait` print it:
    # "t=5230 transition GRASP>VERIFY DWELL_DONE attempt 1".
    kind = codes.KIND_NAMES[e[2]] if 0 <= e[2] < len(codes.KIND_NAMES) else "kind%d" % e[2]
    if e[2] == codes.K_SEARCH:     # a part search's step: where, in mm (docs/find-the-part.md)
        return "t=%d search %s attempt %d at x=%.1f y=%.1f z=%.1f mm" % (
            e[1], codes.name(e[5]), e[6], e[7] / 1000.0, e[8] / 1000.0, e[9] / 1000.0)
    if e[2] == codes.K_RUN:        # a production run's record (docs/production-run.md)
        return "t=%d %s" % (e[1], run_text(e))
    return "t=%d %s %s>%s %s attempt %d" % (e[1], kind, states.name(e[3]), states.name(e[4]),
                                            codes.name(e[5]), e[6])


def run_text(e):
    # A K_RUN record in words: "run cycle 3 slot 2: placed in 9810 ms".
    x, y, z, v = e[7], e[8], e[9], e[11]
    r = e[5]
    if r == run_codes.R_RUN_START:
        return "run started: %s, %d pick slot(s), %d place slot(s)" % (
            "until stopped" if x == 0 else "%d cycles" % x, y, z)
    if r == run_codes.R_RUN_CYCLE:
        return "run cycle %d slot %d: %s in %d ms" % (x, y, "placed" if v == codes.R_PLACED else codes.name(v), z)
    if r == run_codes.R_RUN_SKIP:
        return "run cycle %d: slot %d skipped (%s)" % (x, y, codes.name(v))
    if r == run_codes.R_RUN_WAIT:
        return "run cycle %d slot %d: no part yet (waited %d ms)" % (x, y, z)
    if r == run_codes.R_RUN_STOP:
        why = run_codes.STOP_NAMES[z] if 0 <= z < len(run_codes.STOP_NAMES) else str(z)
        return "run stopped: %s after %d cycles, %d placed%s" % (why, x, y, ", fault %s" % codes.name(v) if v else "")
    return "run %s %d %d %d %d" % (run_codes.name(r) or codes.name(r), x, y, z, v)


def teleop_refusal(code, payload=(), port="PORT"):
    # A TELEOP request the board refused: refusal()'s words, and the refusals only teleop meets.
    payload = tuple(payload)
    if code == link.E_UNKNOWN_TYPE:
        return "this firmware has no teleop mode: deploy this version (`surepick deploy%s`)" % (
            board_state.port_text(port))
    if code == link.E_STATE and payload[:1] == ("not_teleop",):
        return "the board is not in teleop mode"
    return refusal(code, payload, port)


def _ints(payload, n):
    return [v if isinstance(v, int) else None for v in (list(payload) + [None] * n)[:n]]


def refusal(code, payload=(), port="PORT"):
    # -> one sentence for a REPLY that is not OK. port: as the user gave it, for the commands
    # the sentence suggests (None: they gave none, and the suggested command finds it the same way).
    payload = tuple(payload)
    port = board_state.port_text(port)
    if code == link.E_FAULTED:
        fault, state, attempt = _ints(payload, 3)
        what = fault_text(fault, state, attempt) if fault else "a fault"
        return ("the board has a latched fault: %s — clear it with `surepick job clear%s`"
                % (what, port))
    if code == link.E_BUSY and payload[:1] == ("run",):
        return ("a production run is going on: it picks its own parts; `surepick job stop%s` ends it after "
                "the current cycle" % port)
    if code == link.E_BUSY and payload[:1] == ("heap",):
        return ("the board had no room on its heap to load the code this needs: ask again once the arm is at "
                "rest (the board collects its garbage there); refused again, a soft reset frees the heap "
                "(`surepick deploy%s` does one, and refuses while a reset would move the arm)" % port)
    if code == link.E_BUSY:
        return ("the arm is busy (a job, a calibration or a recovery is moving it): wait until it is at rest, "
                "or stop it with `surepick job abort%s`" % port)
    if code == link.E_STATE:
        reason = payload[0] if payload and isinstance(payload[0], str) else None
        text = _STATE_REASONS.get(reason) or _bench_state(reason) or reason or "not allowed in the board's current state"
        return "not possible now: %s" % text.replace("{port}", port)
    if code == link.E_UNKNOWN_KEY:
        key = payload[0] if payload else "?"
        return "the board has no setting %r (`surepick config list%s` shows them all)" % (key, port)
    if code == link.E_BAD_VALUE:
        detail = payload[0] if payload and isinstance(payload[0], str) else None
        if detail == "unreachable":
            return ("the pick or place pose (or the approach above it) is out of the arm's reach: `surepick arm "
                    "check ARM.toml` with the description the board was given maps where it reaches")
        need, stall, part_g = _ints(payload[2:], 3)
        if detail == "payload" and None not in (need, stall, part_g) and isinstance(payload[1], str):
            from surepick.host.arms import checks
            joint = payload[1]
            return "the board refused the job: " + checks.payload_sentence(
                None, joint, need / 1000.0, stall / 1000.0, part_g, where="the board's /arm.json bench.part_g")
        if detail == "bad_job":
            return "the job was rejected: the part is wider than the jaw opens, or the attempts are out of range"
        return "the board rejected the value%s" % (" of %s" % detail if detail else "")
    if code == link.E_UNSUPPORTED:
        return "the firmware on the board does not support this (deploy this version with `surepick deploy%s`)" % port
    if code == link.E_INTERNAL:
        name = payload[0] if payload else "an error"
        return ("the firmware failed while handling the request (%s): a bug; please report it with the board's log "
                "(`surepick monitor`, then `surepick log export`)" % name)
    if code in _UNREAD:
        return ("the board could not read the request (%s): line noise, or another program is writing to the port"
                % link.ERROR_NAMES.get(code, code))
    return "the board answered %s %s" % (link.ERROR_NAMES.get(code, str(code)), " ".join(str(p) for p in payload))
