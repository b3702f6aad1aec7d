# Running a session: a source, the two pipeline stages, a target, the log.
#
#   run_recorded()  virtual time, one thread, deterministic: a recorded stream replayed as fast
#                   as the machine goes; each control tick takes the samples whose time has come.
#                   Latency here = the wait for the next tick (virtual) + the measured processing.
#   run_live()      real time, two threads as in the reference design: a reader thread at the
#                   device's rate runs the hand stage on every sample, the control loop runs at
#                   the fixed control rate and advances the target in real time. Latency here is
#                   wall-clock, sample arrival to setpoint. Recorded files can run this way too
#                   (--realtime), paced by their timestamps. A target that answers its setpoints
#                   later (a board: board_target.py) gets its rows written when the answer comes,
#                   the latency then running to that answer.
#
# Observers (session.observers, e.g. teach.Teacher) see every sample with the control tick that
# used it: observer.sample(sample, hand result, control result, session).
import collections
import threading
import time

import numpy as np

from surepick.host.teleop.feedforward import ServoFeedforward
from surepick.host.teleop.pipeline import ControlStage, HandStage, HandMailbox


def control_period_ms(settings):
    # Whole milliseconds (the targets' clocks are): a board ticks at its own period meanwhile and
    # reads each setpoint in its next tick, as it reads any link frame.
    period = 1000.0 / settings.control_hz
    p = int(round(period))
    if abs(period - p) > 1e-9:
        raise ValueError("the control period (1000/%g Hz = %g ms) must be a whole number of milliseconds"
                         % (settings.control_hz, period))
    return p


class TeleopSession:
    # The pieces one session wires together.
    def __init__(self, settings, target, log, shaper=None):
        self.settings = settings.check()
        self.target = target
        self.log = log
        self.shared = HandMailbox()
        self.control = ControlStage(settings, self.shared, target.start_q_deg, target.start_jaw_um,
                                    arm_model=getattr(target, "arm", None))
        self.hand = HandStage(settings, self.shared)
        if shaper is None and settings.feedforward:
            shaper = ServoFeedforward(self.control.arm, settings.control_hz, lead_ms=settings.lead_ms)
        self.shaper = shaper
        if getattr(target, "holds_setpoint", False) and hasattr(shaper, "resting"):
            # A board reports the setpoint it holds (maybe a last session's, feedforward
            # included): the arm rests where that setpoint less its feedforward puts it, and the
            # session starts from there (started from the setpoint itself, each session added the
            # feedforward again: 2 mm higher each time).
            self.control.rebase(shaper.resting(target.start_q_deg))
        self.period_ms = control_period_ms(settings)
        self.quit = False
        self.observers = []
        self.last_seq = None          # what target.command() returned for the last tick

    def control_tick(self, tick_ms):
        # One control period: compute, command, let the target run the period, measure.
        self._rebase()
        ctrl = self.control.tick()
        q_set = ctrl.q_ik_deg if self.shaper is None else self.shaper(ctrl.q_ik_deg, ctrl)
        self.last_seq = self.target.command(q_set, ctrl.jaw_um)
        t_cmd = time.perf_counter()
        self.target.advance(self.period_ms)
        measured = self.target.measured()
        cmd_q, cmd_jaw = self.target.commanded_deg(), self.target.commanded_jaw_um()
        err = self.log.tick(tick_ms, ctrl, cmd_q, cmd_jaw, measured)
        return ctrl, t_cmd, measured, cmd_q, cmd_jaw, err

    def _rebase(self):
        # A target that held on its own (a board's deadman) and was re-armed elsewhere: the
        # pipeline starts again from the pose it holds (less the feedforward it was sent with).
        take = getattr(self.target, "take_rebase", None)
        got = take() if take is not None else None
        if got is None:
            return
        q = np.asarray(got[0], dtype=float)
        if self.shaper is not None:
            q = q - getattr(self.shaper, "last_offset", 0.0)
            if hasattr(self.shaper, "reset"):
                self.shaper.reset()
        self.control.rebase(q)

    def observe(self, sample, res, ctrl):
        for o in self.observers:
            o.sample(sample, res, ctrl, self)

    def summary(self, extra=None):
        s = self.settings
        base = {"control_hz": s.control_hz, "scale": s.scale, "fine_divisor": s.fine_divisor, "alpha": s.alpha,
                "jump_m": s.jump_m, "ik": s.ik, "feedforward": s.feedforward, "lead_ms": s.lead_ms,
                "target": getattr(self.target, "name", "?")}
        if hasattr(self.target, "summary"):
            base.update(self.target.summary())
        if extra:
            base.update(extra)
        return self.log.summary(self.hand, self.control, base)


def run_recorded(session, samples, tail_s=0.5, on_tick=None):
    if not samples:
        raise ValueError("no samples")
    period = session.period_ms
    t0 = samples[0].t
    end_ms = (samples[-1].t - t0) * 1000.0 + tail_s * 1000.0
    i, tick_ms = 0, 0
    while tick_ms <= end_ms and not session.quit:
        batch = []
        while i < len(samples) and (samples[i].t - t0) * 1000.0 <= tick_ms + 1e-6:
            s = samples[i]
            batch.append((s, session.hand.process(s)))
            session.quit = session.quit or s.quit
            i += 1
        ctrl, _, measured, cmd_q, cmd_jaw, err = session.control_tick(tick_ms)
        for s, res in batch:
            latency = (tick_ms - (s.t - t0) * 1000.0) + (res.done_s + ctrl.done_s) * 1000.0
            session.log.sample(res, s.pose, tick_ms, ctrl, cmd_q, cmd_jaw, measured, err, latency)
            session.observe(s, res, ctrl)
        if on_tick is not None:
            on_tick(tick_ms, ctrl)
        tick_ms += period
    return session.summary({"mode": "recorded (virtual time)", "sim_s": tick_ms / 1000.0})


class _Answers:
    # Rows waiting for the target's answer to their setpoint (board_target.BoardTarget.echo_for).
    def __init__(self, session):
        self.session = session
        self.rows = collections.deque()
        self.got = {}                # seq -> the answer, while rows of that seq wait

    def add(self, seq, sample, res, tick_ms, ctrl, host_ms):
        self.rows.append((seq, sample, res, tick_ms, ctrl, host_ms))

    def flush(self, give_up=False):
        target, log = self.session.target, self.session.log
        while self.rows:
            seq, s, res, tick_ms, ctrl, host_ms = self.rows[0]
            if seq is None:                  # nothing was sent (the board held): no answer to wait for
                ans = (None, None)
            else:
                ans = self.got.get(seq)
                if ans is None:
                    ans = target.echo_for(seq)
                    if ans is None and not give_up:
                        return
                    ans = ans or (None, None)
                    self.got = {seq: ans}
            t_ans, st = ans
            if st is not None:
                cmd_q = [st["q%d_mdeg" % i] / 1000.0 for i in range(4)]
                cmd_jaw, pot = st["jaw_cmd_um"], st["jaw_pot_um"]
            else:
                cmd_q, cmd_jaw, pot = [None] * 4, None, None
            latency = (t_ans - res.arrived) * 1000.0 if t_ans is not None and st is not None else None
            log.sample(res, s.pose, tick_ms, ctrl, cmd_q, cmd_jaw, None, None, latency, host_ms=host_ms, seq=seq,
                       jaw_pot_um=None if pot is None or pot < 0 else pot)
            self.rows.popleft()

    def drain(self, wait_s):
        deadline = time.perf_counter() + wait_s
        while self.rows and time.perf_counter() < deadline:
            self.flush()
            time.sleep(0.01)
        self.flush(give_up=True)


def run_live(session, source, tail_s=0.3, stop=None, on_tick=None, max_s=None):
    stop = stop or threading.Event()
    answers = _Answers(session) if getattr(session.target, "answers_later", False) else None
    arrived = collections.deque()
    reader_done = threading.Event()
    reader_error = []

    def reader():
        try:
            start = time.perf_counter()
            t_first = None
            for s in source:
                if stop.is_set():
                    break
                if not source.realtime:       # a recorded stream, paced by its timestamps
                    t_first = s.t if t_first is None else t_first
                    delay = start + (s.t - t_first) - time.perf_counter()
                    if delay > 0:
                        time.sleep(delay)
                res = session.hand.process(s, arrived=time.perf_counter())
                arrived.append((s, res))
                if s.quit:
                    break
        except BaseException as e:            # handed to the control loop, which stops
            reader_error.append(e)
        finally:
            reader_done.set()

    th = threading.Thread(target=reader, name="teleop-reader", daemon=True)
    period_s = session.period_ms / 1000.0
    overruns, tick_ms = 0, 0
    start = time.perf_counter()
    th.start()
    ended_at = None
    interrupted = False
    try:
        while not stop.is_set():
            batch = []
            while arrived:
                batch.append(arrived.popleft())
            ctrl, t_cmd, measured, cmd_q, cmd_jaw, err = session.control_tick(tick_ms)
            for s, res in batch:
                host_ms = (t_cmd - res.arrived) * 1000.0
                if answers is not None:
                    answers.add(session.last_seq, s, res, tick_ms, ctrl, host_ms)
                else:
                    session.log.sample(res, s.pose, tick_ms, ctrl, cmd_q, cmd_jaw, measured, err, host_ms)
                session.observe(s, res, ctrl)
            if answers is not None:
                answers.flush()
            if on_tick is not None:
                on_tick(tick_ms, ctrl)
            tick_ms += session.period_ms
            if reader_done.is_set() and not arrived:
                ended_at = ended_at if ended_at is not None else tick_ms
                if tick_ms - ended_at >= tail_s * 1000.0:
                    break
            if max_s is not None and tick_ms >= max_s * 1000.0:
                break
            delay = start + tick_ms / 1000.0 - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            elif -delay > period_s:
                overruns += 1
    except KeyboardInterrupt:
        interrupted = True
    finally:
        stop.set()
        source.close()
        th.join(timeout=2.0)
        if answers is not None:
            from surepick.host.teleop.board_target import ECHO_GIVE_UP_S
            answers.drain(ECHO_GIVE_UP_S + 0.2)
    if reader_error and not isinstance(reader_error[0], KeyboardInterrupt):
        raise reader_error[0]
    wall = time.perf_counter() - start
    return session.summary({"mode": "live (real time, reader + control threads)", "sim_s": tick_ms / 1000.0,
                            "wall_s": wall, "control_overruns": overruns, "interrupted": interrupted})
