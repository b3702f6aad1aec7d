# Stateful property test: hypothesis drives the machine with arbitrary sensor readings, arrival
# timings, clock jumps starting just below the 2**30 tick wrap, e-stops, aborts and clears, and
# checks the safety invariants after every single step against an independent reference. The jaw
# setpoint follows the machine's jaw command at a bounded (and sometimes zero) slew, as the motion
# layer's does, and reports itself back the way motion.py does (inputs jaw_done, jaw_setpoint_um).
import os

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from surepick.shared_fsm import codes
from surepick.shared_fsm.config import Config, state_bound_ms
from surepick.shared_fsm.machine import Machine, Job, E_HOLDING, OK as M_OK
from surepick.shared_fsm.states import IDLE, APPROACH, DESCEND, GRASP, VERIFY, LIFT, TRANSFER, PLACE, RECOVER
from surepick.shared_fsm.ticks import ticks_add, ticks_diff, TICKS_MAX

PICK = (160000, -60000, 12500, -90000)
PLACE_POSE = (150000, 80000, 20000, -90000)
WIDTH = 25000
QUICK = bool(os.environ.get("SUREPICK_QUICK"))


def _popcount(x):
    return bin(x).count("1")


class FsmRules(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.cfg = Config()
        self.m = Machine(self.cfg)
        self.now = 0
        self.seen = 0                 # last event seq consumed
        self.state_since = None       # time the current state was entered, from the event log
        self.verify_masks = []        # reference masks of the reads made in this VERIFY visit
        self.verified_this_attempt = False
        self.attempt_seen = 0
        self.max_dt = 0
        self.slew_um = 160            # the reference jaw slew per step (0: a stuck jaw)
        self.m.inp.jaw_setpoint_um = 30000
        self.m.out.jaw_um = 30000

    @initialize(start=st.integers(TICKS_MAX - 20000, TICKS_MAX), with_job=st.booleans())
    def init_clock(self, start, with_job=True):
        self.now = start
        if with_job:
            self.start_job()
        self._step(0)

    # ---- inputs ----

    def _pot(self, jaw_um):
        return self.cfg.pot_closed_counts + jaw_um * self.cfg.pot_counts_per_mm // 1000

    @rule(pot=st.one_of(st.integers(0, 65535), st.sampled_from([0, 65535, 8000, 30000, 36000, 45000])),
          switch=st.booleans(), current=st.integers(0, 900), beam=st.booleans())
    def random_readings(self, pot, switch, current, beam):
        inp = self.m.inp
        inp.pot_counts, inp.switch_pressed, inp.current_ma, inp.beam_broken = pot, int(switch), current, int(beam)

    @rule(mask=st.integers(0, 15), n=st.integers(0, 12))
    def checks_say(self, mask, n):
        # Readings where exactly the checks in `mask` say "part present", then a few steps:
        # reaches every combination of agreeing and disagreeing checks inside VERIFY.
        inp = self.m.inp
        close = WIDTH - self.cfg.squeeze_um
        inp.pot_counts = self._pot(close + 4000 if mask & codes.CHECK_JAW else close)
        inp.switch_pressed = 1 if mask & codes.CHECK_SWITCH else 0
        inp.current_ma = 300 if mask & codes.CHECK_CURRENT else 20
        inp.beam_broken = 1 if mask & codes.CHECK_BEAM else 0
        for _ in range(n):
            self._step(2)

    @rule(mask=st.integers(0, 15), n=st.integers(1, 12), flicker=st.booleans())
    def verify_sees(self, mask, n, flicker):
        # Drive a cycle to VERIFY, then let the checks in `mask` say "present" there.
        self.cooperative_plant(300, flicker, VERIFY)
        self.checks_say(mask, n)

    @rule()
    def held_readings(self):
        inp = self.m.inp
        inp.pot_counts = self._pot(WIDTH - 1000)
        inp.switch_pressed, inp.current_ma, inp.beam_broken = 1, 300, 1

    @rule()
    def empty_open_readings(self):
        inp = self.m.inp
        inp.pot_counts = self._pot(self.m.out.jaw_um)
        inp.switch_pressed, inp.current_ma, inp.beam_broken = 0, 10, 0

    @rule()
    def arrive(self):
        self.m.inp.arrived_seq = self.m.out.move_seq

    @rule(slew=st.sampled_from([0, 40, 160, 2000, 50000]))
    def jaw_slew(self, slew):
        self.slew_um = slew

    @rule(on=st.booleans())
    def estop(self, on):
        self.m.inp.estop = int(on)

    @rule()
    def start_job(self):
        m = self.m
        holding, idle = m.holding, not m.busy() and not m.fault
        r = m.start_job(Job(PICK, PLACE_POSE, WIDTH))
        if holding and idle:
            # a new approach would open the jaw wherever the arm stands: refused
            assert r == E_HOLDING
        if r == M_OK:
            assert not holding

    @rule(open_um=st.integers(0, 45000))
    def operator_release(self, open_um):
        m = self.m
        if m.release(open_um) == M_OK:
            assert m.out.jaw_um == open_um and not m.holding

    @rule()
    def clear_fault(self):
        self.m.clear_fault()

    @rule()
    def abort(self):
        self.m.abort()
        self._drain()

    # ---- time ----

    @rule(dt=st.integers(0, 40), n=st.integers(1, 40))
    def tick(self, dt, n):
        for _ in range(n):
            self._step(dt)

    @rule(dt=st.integers(100, 9000))
    def long_gap(self, dt):
        self._step(dt)

    @rule(n=st.integers(5, 200), flicker=st.booleans(),
          stop_at=st.sampled_from([-1, APPROACH, DESCEND, GRASP, VERIFY, LIFT, TRANSFER, PLACE, RECOVER]))
    def cooperative_plant(self, n, flicker, stop_at=-1):
        # A plausible plant: arrivals happen, readings match the state. Gets deep into the cycle;
        # stop_at hands control back to the other rules as soon as that state is reached.
        if not self.m.busy() and not self.m.fault:
            self.start_job()  # the operator queues the next part
        for i in range(n):
            if self.m.state == stop_at:
                return
            s = self.m.state
            opened = s == PLACE and self.m.out.jaw_um > self.m.grip_jaw_um
            if s in (GRASP, VERIFY, LIFT, TRANSFER) or (s == PLACE and not opened):
                self.held_readings()
                if flicker and i % 7 == 0:
                    self.m.inp.switch_pressed = 0
            else:
                self.empty_open_readings()
            self.arrive()
            self.slew_um = 50000
            self._step(20)

    # ---- one step and its per-step checks ----

    def _step(self, dt):
        m = self.m
        self.now = ticks_add(self.now, dt)
        self.max_dt = max(self.max_dt, dt)
        before_state = m.state
        before_jaw = m.out.jaw_um
        before_seq = m.out.move_seq
        before_fault = m.fault
        before_latched = m.estop_latched
        before_holding = m.holding
        setpoint = m.inp.jaw_setpoint_um
        estop = m.inp.estop
        ref_mask = self._reference_mask()
        jaw_read = (m.inp.pot_counts - self.cfg.pot_closed_counts) * 1000 // self.cfg.pot_counts_per_mm
        m.step(self.now)                                   # must never raise
        new = self._drain()
        faults = [e for e in new if e[2] == codes.K_FAULT]
        if faults:
            # every fault freezes the jaw setpoint where it is in this very step (a closing jaw
            # stops, a verified grip stays at its holding squeeze); CRUSH then backs the squeeze
            # off to where the pot says the jaw stopped
            if faults[-1][5] == codes.F_CRUSH:
                assert m.out.jaw_um == max(jaw_read, 0)
            else:
                assert m.out.jaw_um == setpoint, "a fault must freeze the jaw where its setpoint is"
            assert m.out.hold == 1        # (a move started earlier in the step is frozen by it)
        if before_holding and m.fault:
            assert m.holding, "a fault must not let go of a verified part"
        entered_verify = any(e[4] == VERIFY and e[2] == codes.K_TRANSITION for e in new)
        if before_state == VERIFY:
            self.verify_masks.append(ref_mask)
        if entered_verify:
            self.verify_masks = []
        if estop:
            # e-stop: safe outputs in this very step, latched
            assert m.out.hold == 1
            assert m.fault == codes.F_ESTOP
            assert m.state == IDLE
            if not before_latched:
                assert m.out.jaw_um == setpoint, "e-stop must freeze the jaw setpoint where it is"
            else:
                assert m.out.jaw_um == before_jaw, "a latched e-stop must not move the jaw"
            assert m.out.move_seq == before_seq, "e-stop must not start a move"
        if m.state == LIFT and before_state != LIFT:
            # never LIFT without a passing verification in this attempt: the last
            # debounce_reads reads of this VERIFY visit agree and satisfy the policy
            assert before_state == VERIFY
            n = self.cfg.debounce_reads
            window = self.verify_masks[-n:]
            assert len(window) == n and len(set(window)) == 1, window
            en = window[0]
            assert en & self.cfg.verify_required_mask == self.cfg.verify_required_mask
            assert _popcount(en) >= self.cfg.verify_min_agree
            self.verified_this_attempt = True
        if m.state in (LIFT, TRANSFER):
            assert self.verified_this_attempt
            assert m.out.jaw_um <= m.grip_jaw_um, "gripper commanded open while carrying"
            if before_state in (LIFT, TRANSFER):
                assert m.out.jaw_um <= before_jaw
        if m.state == PLACE and m.out.move_seq != before_seq and m.out.z_um > PLACE_POSE[2]:
            assert m.out.jaw_um > m.grip_jaw_um, "PLACE retreated before opening"
        if before_fault and m.fault == before_fault:
            assert m.out.hold == 1
        if m.holding:
            # a verified part is never let go of except over the place pose (PLACE clears it)
            assert m.out.jaw_um <= m.grip_jaw_um, "jaw commanded open while holding a verified part"
        self._slew(self.slew_um)

    def _slew(self, step_um):
        # The motion layer's jaw: the setpoint moves towards the command by at most step_um
        # per step, then reports where it is and whether it got there.
        inp, out = self.m.inp, self.m.out
        d = out.jaw_um - inp.jaw_setpoint_um
        d = max(-step_um, min(step_um, d))
        inp.jaw_setpoint_um += d
        inp.jaw_done = 1 if inp.jaw_setpoint_um == out.jaw_um else 0

    def _reference_mask(self):
        # Independent re-statement of the four grasp checks for the current readings.
        m, cfg = self.m, self.cfg
        inp = m.inp
        jaw = (inp.pot_counts - cfg.pot_closed_counts) * 1000 // cfg.pot_counts_per_mm
        close = max(WIDTH - cfg.squeeze_um, 0)
        mask = 0
        if jaw >= close + cfg.jaw_present_min_um:
            mask |= codes.CHECK_JAW
        if inp.switch_pressed:
            mask |= codes.CHECK_SWITCH
        if inp.current_ma >= cfg.current_grip_min_ma:
            mask |= codes.CHECK_CURRENT
        if inp.beam_broken:
            mask |= codes.CHECK_BEAM
        return mask & cfg.verify_enabled_mask

    def _drain(self):
        m = self.m
        new = m.events.since(self.seen)
        for e in new:
            self.seen = e[0]
            if e[2] != codes.K_NOTE:
                self.state_since = e[1]
                if e[4] == APPROACH:
                    self.verified_this_attempt = False
        return new

    # ---- invariants after every rule ----

    @invariant()
    def attempts_bounded(self):
        assert 0 <= self.m.attempt <= self.cfg.max_attempts

    @invariant()
    def no_state_outlives_its_bound(self):
        m = self.m
        if m.state != IDLE and self.state_since is not None:
            assert ticks_diff(self.now, self.state_since) <= state_bound_ms(self.cfg, m.state)

    @invariant()
    def latched_fault_blocks_jobs(self):
        m = self.m
        if m.fault:
            assert m.state == IDLE and not m.job_pending


FsmRules.TestCase.settings = settings(
    max_examples=60 if QUICK else 1000, stateful_step_count=40, deadline=None)
TestFsmProperties = FsmRules.TestCase


def test_property_run_reaches_deep_states():
    # Guard against a vacuous property test: the cooperative plant must reach LIFT and PLACE.
    rules = FsmRules()
    rules.init_clock(TICKS_MAX - 100, True)
    visited = set()
    for _ in range(40):
        rules.cooperative_plant(10, False)
        visited.add(rules.m.state)
        for e in rules.m.events.since(0):
            visited.add(e[4])
    assert {APPROACH, DESCEND, GRASP, VERIFY, LIFT, TRANSFER, PLACE} <= visited
    assert rules.m.cycles_placed >= 1
