# A board over the link as a teleop target: the pipeline's joint setpoints go to the firmware's
# teleop mode (firmware/teleop_mode.py, docs/protocol.md "Teleop mode") as SETPOINT frames, one
# per control tick; the board drives its servos with its own speed and acceleration limits and
# answers each applied setpoint with a TELEOP_STATE frame (the joints as its servo drivers hold
# them, the jaw as its pot reads it). A reader thread takes those in as they arrive, so the
# latency of a sample is measured to the moment the board's answer reached the host: sample in
# -> setpoint computed and written -> read by the board at its next ticks -> applied -> answer
# back. That is an upper bound of sample-to-setpoint: it includes the answer's way back.
#
# A board runs on its own clock: the session runs live (real time), and advance() only lets
# time pass. The board has no joint feedback (hobby servos): measured() is None, the session
# reports the jaw from the pot and the setpoints as the board applied them instead.
#
# Flow control: at most IN_FLIGHT setpoints wait for their answer; a tick that finds that many
# sends nothing (its data goes with the next one sent, which is newer), so a board or a link
# slower than the stream never builds a queue: the board always works on the newest setpoint, and
# the latency stays bounded. (A virtual board runs on its own virtual clock, which may be slower
# than the wall clock the stream is paced by.)
#
# Deadman: if the stream stalls for more than 200 ms the board holds where it is and refuses
# setpoints; this target then re-arms it (TELEOP 1) and hands the held pose to the session, which
# re-zeroes on it (pipeline.ControlStage.rebase), so the arm never jumps to catch up.
import collections
import threading
import time

import numpy as np

from surepick.host.link.answers import teleop_refusal
from surepick.host.link.errors import Disconnected, LinkError
from surepick.shared_fsm import codes, link
from surepick.shared_fsm import kinematics as kin

MODES = {0: "off", 1: "following", 2: "held (deadman)"}
WHYS = {0: "", 1: "deadman: no setpoint for more than 200 ms", 2: "a fault or the e-stop",
        3: "left on request", 4: "ABORT"}
ECHO_LOST_S = 1.0             # a setpoint not answered within this long stops holding up the next ones
ECHO_GIVE_UP_S = 5.0          # ... and not answered within this long is counted lost
IN_FLIGHT = 3                 # setpoints sent and not answered yet, at most
_STATE_NAMES = link.SCHEMA[link.T_TELEOP_STATE][3]


def joint_bounds_mdeg(arm):
    # -> (lows, highs): each joint's own range in mdeg, as setpoints are clamped before they go
    # (a kind without a wrist: its slot 3 is 0); the board checks the coupled limits itself.
    lo = [int(round(j["min_deg"] * 1000)) for j in arm.joints]
    hi = [int(round(j["max_deg"] * 1000)) for j in arm.joints]
    return lo + [0] * (4 - len(lo)), hi + [0] * (4 - len(hi))


class BoardTeleopError(LinkError):
    """The board refused teleop, or left it (a fault, the e-stop, an abort)."""


class BoardTarget:
    name = "board"
    realtime = True          # the board keeps its own time: sessions run live
    answers_later = True     # answers arrive later (echo_for): the runner waits for them
    holds_setpoint = True    # start_q_deg is the setpoint the board holds, not the arm's pose

    def __init__(self, client, timeout=3.0, say=None, arm=None):
        # arm: the description the board runs (its /arm.json; None: the reference): the host
        # cannot read it over the link, so the caller names it (as deploy --arm shipped it)
        self._jmin, self._jmax = joint_bounds_mdeg(arm or kin.REFERENCE)
        self.c = client
        self.timeout = timeout
        self.say = say or (lambda text: None)
        r = client.request(link.T_TELEOP, (1,), timeout)
        if not r.ok:
            port = getattr(client, "port", None)
            raise BoardTeleopError("teleop refused: %s" % teleop_refusal(r.code, r.payload, port))
        q, jaw = self._pose(r.payload)
        self.start_q_deg = np.array(q, dtype=float)
        self.start_jaw_um = int(jaw)
        self.lock = threading.Lock()
        self.seq = 0
        self.sent = collections.OrderedDict()   # seq -> perf_counter when written, until answered
        self.echoes = {}                        # seq -> (perf_counter answered, state dict or None)
        self.overdue = collections.OrderedDict()  # seq -> perf_counter when written, past ECHO_LOST_S
        self.late = 0                           # setpoints answered after ECHO_LOST_S
        self.state = None                       # the latest TELEOP_STATE as a dict
        self.held = False
        self.rearms = 0
        self._rearm_rid = None
        self._rebase = None
        self.refused = collections.Counter()    # the board's reasons for refused setpoints
        self.faults = []                        # fault codes the board latched meanwhile
        self.ended = None                       # why the board left teleop on its own
        self.error = None                       # the reader's link failure
        self.lost = 0
        self.skipped = 0                        # ticks that sent nothing: IN_FLIGHT were waiting
        self._leaving = False
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, name="teleop-board-reader", daemon=True)
        self._reader.start()

    @staticmethod
    def _pose(payload):
        # TELEOP's REPLY: mode, q0..q3 mdeg, jaw um -> (joint deg, jaw um)
        if len(payload) < 6:
            raise BoardTeleopError("the board's TELEOP reply is short: %r" % (payload,))
        return [v / 1000.0 for v in payload[1:5]], payload[5]

    # ---- the reader thread ----

    def _read_loop(self):
        while not self._stop.is_set():
            try:
                frames = self.c.read_frames(0.02)
            except (Disconnected, LinkError) as e:
                self.error = e
                return
            t = time.perf_counter()
            for f in frames:
                self._frame(f, t)

    def _frame(self, f, t):
        if f.ftype == link.T_TELEOP_STATE:
            d = dict(zip(_STATE_NAMES, f.fields))
            with self.lock:
                self.state = d
                s = d["seq"]
                for waiting in (self.overdue, self.sent):
                    while waiting:
                        seq = next(iter(waiting))
                        if seq > s:
                            break
                        waiting.pop(seq)
                        self.echoes[seq] = (t, d)
                        self.late += waiting is self.overdue
                if d["mode"] == 2 and not self.held:
                    self.held = True
                    self.say("the board held (deadman: no setpoint for more than 200 ms); re-arming")
                elif d["mode"] == 0 and not self._leaving and self.ended is None:
                    self.ended = d["why"]
        elif f.ftype == link.T_REPLY:
            rid, code, payload = f.fields[0], f.fields[1], f.fields[2:]
            with self.lock:
                if rid == self._rearm_rid:
                    self._rearm_rid = None
                    if code == link.OK:
                        self._rebase = self._pose(payload)
                        self.held = False
                        self.rearms += 1
                    else:
                        self.ended = self.ended or 2
                    return
                if code != link.OK and len(payload) >= 2 and isinstance(payload[1], int):
                    self.refused[str(payload[0])] += 1
                    if (self.sent.pop(payload[1], None) is not None
                            or self.overdue.pop(payload[1], None) is not None):
                        self.echoes[payload[1]] = (t, None)
        elif f.ftype == link.T_EVENT and f.fields[2] == codes.K_FAULT:
            with self.lock:
                self.faults.append(f.fields[5])

    # ---- the target interface (runner.TeleopSession) ----

    def command(self, q_deg, jaw_um):
        # -> the seq of the setpoint that carries this tick's command (the next one to be sent when
        # IN_FLIGHT are waiting), or None when the board holds and nothing goes (re-arming).
        if self.error is not None:
            raise self.error
        with self.lock:
            if self.ended is not None:
                raise BoardTeleopError("the board left teleop: %s%s" % (
                    WHYS.get(self.ended, "why %d" % self.ended),
                    (" (%s)" % ", ".join(codes.name(c) for c in self.faults)) if self.faults else ""))
            if self.held:
                if self._rearm_rid is None:
                    self._rearm_rid = self.c.new_id()
                    self.c.send(link.request(link.T_TELEOP, self._rearm_rid, (1,)))
                return None
            if len(self.sent) >= IN_FLIGHT:
                self.skipped += 1
                return self.seq + 1
            q = [min(max(int(round(float(v) * 1000.0)), lo), hi) for v, lo, hi in zip(q_deg, self._jmin, self._jmax)]
            jaw = min(max(int(jaw_um), 0), 45000)
            self.seq += 1
            seq = self.seq
            self.sent[seq] = time.perf_counter()
        self.c.send(link.setpoint(self.c.new_id(), seq, q, jaw))
        return seq

    def take_rebase(self):
        # (joint deg, jaw um) of a re-armed board's held pose, once; else None.
        with self.lock:
            r, self._rebase = self._rebase, None
            return r

    def echo_for(self, seq):
        # (perf_counter of the board's answer, TELEOP_STATE dict or None if refused), or None
        # while waiting. A setpoint superseded before the board read it counts as applied with
        # the one that replaced it.
        with self.lock:
            e = self.echoes.pop(seq, None)
            if e is not None:
                return e
            now = time.perf_counter()
            if seq in self.sent and now - self.sent[seq] > ECHO_LOST_S:
                # a slow answer (a loaded host, a busy board): the next setpoints go meanwhile
                self.overdue[seq] = self.sent.pop(seq)
            elif seq in self.overdue and now - self.overdue[seq] > ECHO_GIVE_UP_S:
                self.overdue.pop(seq)        # the board never answered: count it
                self.lost += 1
                return (None, None)
            return None

    def advance(self, ms):
        if self.error is not None:
            raise self.error

    def measured(self):
        return None              # no joint feedback on a hobby-servo board

    def commanded_deg(self):
        s = self.state
        if s is None:
            return self.start_q_deg.copy()
        return np.array([s["q0_mdeg"], s["q1_mdeg"], s["q2_mdeg"], s["q3_mdeg"]], dtype=float) / 1000.0

    def commanded_jaw_um(self):
        s = self.state
        return self.start_jaw_um if s is None else s["jaw_cmd_um"]

    def jaw_measured_um(self):
        s = self.state
        return None if s is None or s["jaw_pot_um"] < 0 else s["jaw_pot_um"]

    def summary(self):
        s = self.state or {}
        return {"board_mode": MODES.get(s.get("mode"), None), "board_deadmans": s.get("deadmans"),
                "board_refused": dict(self.refused), "board_rearms": self.rearms, "echo_lost": self.lost, "echo_late": self.late,
                "ticks_not_sent": self.skipped, "setpoints_sent": self.seq,
                "board_faults": [codes.name(c) for c in self.faults],
                "board_left_because": WHYS.get(self.ended) if self.ended is not None else None}

    def close(self):
        # Leave teleop (the board holds the pose and saves it as its rest pose once at rest).
        self._leaving = True
        self._stop.set()
        self._reader.join(timeout=2.0)
        if self.error is not None or self.ended is not None:
            return None
        try:
            r = self.c.request(link.T_TELEOP, (0,), self.timeout)
        except LinkError as e:
            self.say("could not leave teleop cleanly (%s); the board holds by its deadman" % e)
            return None
        return r.ok
