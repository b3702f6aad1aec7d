# Replays a run record through a fresh shared machine: the recorded readings and motion
# arrivals go in tick by tick (same config, same job, same times), and everything the replay
# decides is checked against what the record says the machine decided. A host-sim run replays
# exactly; a field recording replays to the first point where the desk copy and the board part.
# The jaw setpoint the machine reads (where a fault freezes the jaw) is the motion layer's own
# slew of the recorded commands; faults the controller latches from outside the machine (its
# stall and rail watches) come from the recorded events, like the restarts do.
from surepick.shared_fsm import codes, payload
from surepick.shared_fsm import states
from surepick.shared_fsm.config import Config
from surepick.shared_fsm.machine import Job, Machine
from surepick.shared_fsm.motion import Motion
from surepick.shared_fsm.trace_text import event_line

from surepick.host.records.runrecord import INPUT_COLUMNS, TICK_INDEX, RunRecordError

# What a tick's decision is: the state after the step and the commands it left.
DECISION_COLUMNS = ("state", "move_seq", "move_kind", "move_gentle", "x_um", "y_um", "z_um", "pitch_mdeg",
                    "jaw_um", "hold")
_IN = [TICK_INDEX[c] for c in INPUT_COLUMNS]
_DEC = [TICK_INDEX[c] for c in DECISION_COLUMNS]
_T = TICK_INDEX["t_ms"]
_LIFE = TICK_INDEX["life"]
_JAW = TICK_INDEX["jaw_um"]
# Faults the controller latches from outside Machine.step (firmware/controller.py watches).
CONTROLLER_FAULTS = (codes.F_RAIL_LOW, codes.F_STALL)


def decision(e):
    # time, kind, from, to, reason, attempt; for a search step also where (x, y, z): the pose is
    # what it decided
    return e[1:10] if e[2] == codes.K_SEARCH else e[1:7]


class CycleReplay:
    # The outcome of replaying one cycle.
    def __init__(self, cycle):
        self.cycle = cycle
        self.events = []          # the replay's own event records (12-int tuples)
        self.recorded = []        # the record's events for this cycle
        self.spans = []           # (t_first, t_last, ticks, recorded decision, replayed decision)
        self.ticks = 0

    @property
    def first_divergence_ms(self):
        t = [s[0] for s in self.spans]
        t += [e[1] for e in self.event_mismatches()]
        return min(t) if t else None

    def event_mismatches(self):
        # Decisions (either side) that the other side did not make: same time, kind, from, to,
        # reason and attempt. Sequence numbers and the readings stored in an event are not part
        # of a decision (a tampered or re-sampled reading is reported by reading_mismatches).
        rec = {decision(e) for e in self.recorded}
        rep = {decision(e) for e in self.events}
        out = [e for e in self.events if decision(e) not in rec]
        out += [e for e in self.recorded if decision(e) not in rep]
        return sorted(out, key=lambda e: e[1])

    def reading_mismatches(self):
        # Same decision, different readings stored with it: (recorded, replayed) pairs.
        rec = {decision(e): e for e in self.recorded}
        return [(rec[decision(e)], e) for e in self.events
                if decision(e) in rec and rec[decision(e)][len(decision(e)) + 1:] != e[len(decision(e)) + 1:]]

    def identical(self):
        # Exact: every decision, every tick's commands and every reading stored with an event.
        return not self.spans and not self.event_mismatches() and not self.reading_mismatches()


def replay_cycle(record, cycle_meta, cfg=None, arm=None):
    # arm: the arm the run ran (run_arm.record_arm): the machine caps the jaw at its gripper and
    # checks the lift's sink with its kinematics, as the run's controller had it do
    cfg = cfg or Config(record.meta["config"])
    c = cycle_meta["cycle"]
    out = CycleReplay(c)
    out.recorded = list(record.events.get(c, []))
    rows = record.cycle_ticks(c).tolist()
    restarts = {r["life"]: r for r in cycle_meta.get("restarts") or []}
    job = cycle_meta["job"]
    m = _fresh_machine(cfg, cycle_meta.get("initial_jaw_um"), arm)
    check_pose = None
    lift_up_um = 0
    if arm is not None:
        from surepick.firmware.controller import pose_checker
        check_pose = pose_checker(arm)
        if job["pick_um"] is not None:
            lift_up_um = payload.lift_up_um(arm, cfg, job["pick_um"])   # as the controller's payload check
    jaw = _Jaw(cfg, m)
    latches = {}                      # t_ms -> [fault codes the controller latched after that step]
    for e in out.recorded:
        if e[2] == codes.K_FAULT and e[5] in CONTROLLER_FAULTS:
            latches.setdefault(e[1], []).append(e[5])
    job_at = job.get("t_ms")          # the job is given between ticks, before the step at this time
    pending = True
    life = 0
    seen = m.events.last_seq()
    span = None
    for k, row in enumerate(rows):
        if row[_LIFE] != life:
            seen = _drain(m, seen, out.events)
            life = row[_LIFE]
            m = _restart(cfg, m, restarts.get(life), row, arm)
            jaw = _Jaw(cfg, m)
            seen = _drain(m, m.events.next_seq - 1 - _latched(restarts.get(life)), out.events)
        if pending and (job_at is None or row[_T] >= job_at):
            pending = False
            m.lift_up_um = lift_up_um
            m.start_job(Job(job["pick_um"], job["place_um"], job["part_width_um"], job.get("max_attempts", 0)),
                        check_pose)
        inp = m.inp
        (inp.pot_counts, inp.switch_pressed, inp.current_ma, inp.beam_broken, inp.estop, inp.rail_mv,
         inp.arrived_seq, inp.error_seq, inp.jaw_done) = [row[i] for i in _IN]
        t = row[_T]
        m.step(t)
        seen = _drain(m, seen, out.events)
        o = m.out
        mine = (m.state, o.move_seq, o.move_kind, o.move_gentle, o.x_um, o.y_um, o.z_um, o.pitch_mdeg,
                o.jaw_um, o.hold)
        theirs = tuple(row[i] for i in _DEC)
        if mine != theirs:
            if span is None:
                span = [t, t, 0, theirs, mine]
            span[1] = t
            span[2] += 1
        elif span is not None:
            out.spans.append(tuple(span))
            span = None
        out.ticks += 1
        for code in latches.get(t, ()):
            if not any(e[1] == t and e[5] == code for e in out.events):
                m.latch_fault(code)
                seen = _drain(m, seen, out.events)
                if code == codes.F_STALL and k + 1 < len(rows):
                    # the watch backed the jaw off (a controller command, not the machine's)
                    jaw.set(rows[k + 1][_JAW])
        jaw.tick(t)
    if span is not None:
        out.spans.append(tuple(span))
    return out


class _Jaw:
    # The jaw setpoint as the motion layer slews it after each step, reported back to the machine.
    def __init__(self, cfg, m):
        self.m = m
        self.mo = Motion(cfg, (0, 0, 0, 0), m.out.jaw_um)   # from the boot, as the controller's
        m.inp.jaw_setpoint_um = m.out.jaw_um

    def set(self, jaw_um):
        self.m.out.jaw_um = jaw_um
        self.mo.jaw_um = jaw_um

    def tick(self, t):
        self.m.inp.jaw_setpoint_um = self.mo.jaw_only(t, self.m.out.jaw_um)


def _fresh_machine(cfg, jaw_um, arm=None):
    m = Machine(cfg)
    if arm is not None:
        m.set_arm(arm)
    if jaw_um is not None:
        m.out.jaw_um = int(jaw_um)
    return m


def _latched(restart):
    return 1 if restart and restart.get("latched") else 0


def _restart(cfg, old, restart, row, arm=None):
    # A controller restart mid-cycle: a new machine (RAM lost) that latches what the boot
    # recovery latched, with the readings it had at boot (docs/run-record.md, "restarts").
    m = _fresh_machine(cfg, restart.get("jaw_um") if restart else None, arm)
    m.events.next_seq = restart.get("next_seq", old.events.next_seq) if restart else old.events.next_seq
    inputs = (restart or {}).get("inputs") or {}
    for k in INPUT_COLUMNS:
        setattr(m.inp, k, int(inputs.get(k, row[TICK_INDEX[k]])))
    m.now = restart["t_ms"] if restart else row[_T]
    if restart and restart.get("latched"):
        m.latch_fault(codes.code_of(restart["latched"]))
    return m


def _drain(m, seen, into):
    ev = m.events
    while seen < ev.last_seq():
        seen += 1
        e = ev.get(seen)
        if e is not None:
            into.append(e)
    return seen


def replay(record, cycles=None):
    # -> [CycleReplay] for every cycle of the record, or for the cycle numbers in `cycles`
    # (RunRecordError, before any work, when the record lacks one of them).
    known = [c["cycle"] for c in record.cycles]
    missing = sorted(set(cycles or ()) - set(known))
    if missing:
        raise RunRecordError("%s has no cycle %s (cycles: %s)" % (
            record.path, ", ".join(str(n) for n in missing), _few(known)))
    cfg = Config(record.meta["config"])
    chosen = [c for c in record.cycles if cycles is None or c["cycle"] in cycles]
    from surepick.host.records.run_arm import record_arm
    arm = record_arm(record.meta)[0]
    return [replay_cycle(record, c, cfg, arm) for c in chosen]


def _few(items, n=20):
    return ", ".join(str(i) for i in items[:n]) + (" ..." if len(items) > n else "")


# ---- the replay as text: the replay's transitions, marked where it parts from the record ----

def verdict(r):
    # One phrase for a CycleReplay.
    if r.first_divergence_ms is not None:
        return "DIVERGES first at t=%d ms" % r.first_divergence_ms
    if r.reading_mismatches():
        return "same decisions, but the record's event readings differ from its ticks"
    return "reproduced exactly"


def transcript(r, quiet=False):
    # -> the lines of one cycle's replay, in time order: its transitions ("    "), the same
    # decision with other readings (" ~  "), decisions only one side made and stretches of
    # ticks whose state or commands differ ("!!  "). quiet: only the marked lines.
    rec_keys = {decision(e) for e in r.recorded}
    rep_keys = {decision(e) for e in r.events}
    differs = {decision(b) for a, b in r.reading_mismatches()}
    lines = []
    for e in r.events:
        if decision(e) in rec_keys:
            if decision(e) in differs:
                lines.append((e[1], 0, " ~  " + event_line(e) + "   <- same decision; the record's event "
                              "readings differ from its ticks"))
            elif not quiet:
                lines.append((e[1], 0, "    " + event_line(e)))
        else:
            lines.append((e[1], 1, "!!  " + event_line(e) + "   <- replay only: the record did not do this"))
    for e in r.recorded:
        if decision(e) not in rep_keys:
            lines.append((e[1], 2, "!!  " + event_line(e) + "   <- record only: the replay did not do this"))
    for t0, t1, n, theirs, mine in r.spans:
        lines.append((t0, 3, "!!  t=%d..%d ms (%d ticks): record state %s move %d jaw %d hold %d, replay state %s "
                      "move %d jaw %d hold %d" % (t0, t1, n, states.name(theirs[0]), theirs[1], theirs[8], theirs[9],
                                                  states.name(mine[0]), mine[1], mine[8], mine[9])))
    lines.sort(key=lambda x: (x[0], x[1]))
    return [text for _, _, text in lines]
