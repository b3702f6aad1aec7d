# Before a host verb takes a board over (deploy: Ctrl-C and a soft reset; config set; calibrate),
# ask it over the link whether the arm is busy, and refuse a busy board by naming what it is doing,
# unless the user forces it: then the job is aborted through the link and the verb waits until
# the board reports the arm at rest with no servo moving (docs/protocol.md: STATUS's `busy`).
# A board that does not answer the link (no firmware, a bare REPL) is not busy.
import time

from surepick.host.link.errors import LinkError
from surepick.shared_fsm import codes, link, states

PROBE_S = 1.0            # one STATUS; asked twice before a board counts as not answering
POLL_S = 0.1             # while waiting for rest
STILL_POLLS = 3          # at rest in this many STATUS replies in a row (>= 0.2 s) = at rest
REST_TIMEOUT_S = 20.0    # default wait for the arm to come to rest after --force's abort

WHAT = {
    link.BUSY_JOB: "job running",
    link.BUSY_RESCUE: "running an operator's rescue (surepick job rescue)",
    link.BUSY_CALIBRATION: "calibrating",
    link.BUSY_MOVING: "the arm is still moving",
    link.BUSY_TELEOP: "teleop mode on",
}


class BoardBusy(LinkError):
    """The arm is busy and the verb was not forced, or --force could not bring it to rest."""


class NoFirmware(LinkError):
    """No firmware answers the link (a board at the REPL, or not running it): the verb cannot go on."""


def check_idle_answering(client, force=False, rest_timeout=REST_TIMEOUT_S, say=None, port=None):
    # check_idle for a verb that needs the firmware to answer: a board that does not is refused
    # with the bench's way out (host/board_state.py). port: as the user gave it, for that way out.
    st = check_idle(client, force, rest_timeout, say)
    if st is None:
        from surepick.host import board_state
        repl = board_state.BY_KEY["repl"]
        raise NoFirmware("no firmware answers on %s: most likely %s; way out: %s (`surepick doctor%s` says what "
                         "the board is doing)" % (client.port, repl.shows, board_state.way_out(repl, port),
                                                  board_state.port_text(port)))
    return st


class Status:
    # One STATUS answer: state, attempt (TELEMETRY's), max_attempts, fault, busy (link.BUSY_*);
    # view: the same answer as host/board_state.py reads it (a part held, teleop, ...).
    def __init__(self, payload, telemetry):
        from surepick.host.board_state import View
        p = payload
        self.state, self.fault, self.busy = p[0], p[1], p[2]
        self.max_attempts = p[8] if len(p) > 8 else 0
        self.attempt = telemetry[2] if telemetry is not None else 0
        self.view = View(payload, telemetry)

    def describe(self):
        # "LIFT, attempt 1 of 3 (job running)"
        text = states.name(self.state)
        if self.busy == link.BUSY_JOB and self.attempt:
            text += ", attempt %d" % self.attempt
            if self.max_attempts:
                text += " of %d" % self.max_attempts
        if self.fault:
            text += ", fault %s latched" % codes.name(self.fault)
        return "%s (%s)" % (text, WHAT.get(self.busy, "busy %d" % self.busy))


def status(client, timeout=PROBE_S, tries=2):
    # -> Status, or None when the board does not answer the link (no firmware running). A REPL
    # echoes what it is sent and the firmware never does: an echo of the request ends the wait.
    for _ in range(tries):
        echoed = client.parser.echoed
        rid = client.new_id()
        client.send(link.request(link.T_STATUS, rid))
        telemetry = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for f in client.read_frames(0.05):
                if f.ftype == link.T_TELEMETRY:
                    telemetry = f.fields
                elif f.ftype == link.T_REPLY and f.fields[0] == rid:
                    if f.fields[1] != link.OK:
                        raise LinkError("the board answered STATUS with %s"
                                        % link.ERROR_NAMES.get(f.fields[1], f.fields[1]))
                    return Status(f.fields[2:], telemetry)
            if client.parser.echoed > echoed:
                return None          # a REPL read it: no firmware on the link
    return None


def check_idle(client, force=False, rest_timeout=REST_TIMEOUT_S, say=None):
    # Refuse a busy board (BoardBusy, naming its state) unless `force`: then abort, and wait for
    # rest. -> the last Status (None: the board does not answer the link, so it is not busy).
    st = status(client)
    if st is None or not st.busy:
        return st
    if not force:
        how = ("end the teleop session or `surepick job abort`" if st.busy == link.BUSY_TELEOP else
               "wait for it to finish, `surepick job abort`")
        raise BoardBusy("the board is busy: %s; %s, or --force" % (st.describe(), how))
    (say or (lambda m: None))("the board is busy: %s; --force: aborting it and waiting for the "
                              "arm to come to rest" % st.describe())
    return bring_to_rest(client, rest_timeout)


def bring_to_rest(client, timeout=REST_TIMEOUT_S):
    # ABORT (the arm freezes where it is, a held part stays held, ABORTED latches), then STATUS
    # until the board reports nothing running and no servo moving, STILL_POLLS times in a row.
    r = client.request(link.T_ABORT, (), 3.0)
    if not r.ok and r.code != link.E_STATE:        # E_STATE: nothing to abort (only settling)
        raise BoardBusy("the board refused ABORT (%s): the arm was not brought to rest"
                        % r.code_name)
    deadline = time.monotonic() + timeout
    still = 0
    st = None
    while still < STILL_POLLS:
        if time.monotonic() > deadline:
            raise BoardBusy("the arm did not come to rest within %.0f s of the abort (last: %s); "
                            "nothing was taken over: check the arm, then try again"
                            % (timeout, st.describe() if st is not None else "no answer"))
        st = status(client)
        if st is None:
            raise BoardBusy("the board stopped answering while coming to rest; nothing was taken "
                            "over")
        still = still + 1 if not st.busy else 0
        time.sleep(POLL_S)
    return st


def check_safe_to_stop(client, doing, force=False, rest_timeout=REST_TIMEOUT_S, say=None, port=None):
    # Before a verb stops the firmware or resets the board (deploy, doctor's look at the files,
    # mpremote through the hub): stopping the firmware ends the loop that holds the arm, and a soft
    # reset turns the servo PWM off (the arm goes limp, a held part may drop, a job's marker boots
    # into INTERRUPTED). A busy arm is refused (or, forced, brought to rest) as by check_idle;
    # then, while any state of host/board_state.py still says that stopping the firmware would
    # move, release or unpower the arm, the verb is refused (BoardBusy) naming the state and the
    # command that makes it safe, unless `force`. States that pass by themselves within seconds
    # (the arm settling, a cycle's marker cleared at rest) are waited for. `doing`: "deploying", ...
    # -> the last Status (None: no firmware answers, nothing to stop).
    from surepick.host import board_state
    st = check_idle(client, force, rest_timeout, say)
    end = time.monotonic() + SETTLE_WAIT_S
    while st is not None:
        dangers = board_state.reset_dangers(st.view)
        if not dangers:
            return st
        passing = all(e.key in _PASSING for e in dangers) and not st.view.fault
        if not passing or time.monotonic() > end:
            break
        time.sleep(POLL_S)
        st = status(client)
    if st is None:
        return None
    first = dangers[0]
    limp = ("stops the firmware and soft-resets the board: the servo PWM goes off and the arm goes limp%s"
            % (", a held part may drop" if st.view.has(link.COND_HOLDING) else ""))
    if not force:
        raise BoardBusy("not %s: %s. %s %s; way out: %s, then try again (--force: %s anyway)"
                        % (doing, board_state.shows(first, st.view), doing[:1].upper() + doing[1:], limp,
                           board_state.way_out(first, port), doing))
    (say or (lambda m: None))("--force: %s although %s (%s)" % (doing, board_state.shows(first, st.view), limp))
    return st


SETTLE_WAIT_S = 5.0      # how long check_safe_to_stop waits for states that pass by themselves
_PASSING = ("moving", "cycle_open", "away")


def write_at_rest(client, ftype, fields, timeout):
    # A request that writes the board's flash (CONFIG_SET): the firmware takes it only once the
    # arm has been still for its flash_settle_ms, a moment after STATUS already reports it at
    # rest. E_BUSY while STATUS says nothing runs is that settling: asked again until it passes
    # (SETTLE_WAIT_S). -> the last reply; a busy arm's E_BUSY is returned as it came.
    end = time.monotonic() + SETTLE_WAIT_S
    while True:
        r = client.request(ftype, fields, timeout)
        if r.code != link.E_BUSY or time.monotonic() > end:
            return r
        st = status(client)
        if st is None or st.busy:
            return r
        time.sleep(POLL_S)

