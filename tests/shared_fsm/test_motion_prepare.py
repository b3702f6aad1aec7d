# Planning a job's moves ahead (motion.prepare with job_moves): every move the machine commands
# on a retrying job is among the prepared ones, and a prepared plan is the plan the planner
# computes when the move comes (the arm's motion does not depend on the cache).
import pytest

from surepick.shared_fsm import fake_scenarios
from surepick.shared_fsm.config import Config
from surepick.shared_fsm.fake_hal import FakeHal
from surepick.shared_fsm.machine import MOVE_LINE, Job, Machine
from surepick.shared_fsm.motion import Motion, job_moves
from surepick.shared_fsm.ticks import ticks_add
from surepick.shared_fsm import kinematics

REST = [int(round(a * 1000)) for a in kinematics.inverse(120.0, 0.0, 120.0, -90)]


def _commanded(name, lift_up_um=0):
    # Every move the machine commands in a fake scenario's job: (kind, gentle, x, y, z, pitch).
    # lift_up_um: the lift's raise the job's payload check would give (firmware/controller.py).
    spec = fake_scenarios.find(name)
    cfg = Config(spec[2])
    m = Machine(cfg)
    m.lift_up_um = lift_up_um
    hal = FakeHal(cfg, spec[1])
    assert m.start_job(Job(fake_scenarios.PICK, fake_scenarios.PLACE, 25000)) == 0
    seen, seq, now = [], m.out.move_seq, 0
    for _ in range(60000):
        hal.sense(now, m.inp)
        m.step(now)
        o = m.out
        if o.move_seq != seq:
            seq = o.move_seq
            seen.append((o.move_kind, o.move_gentle, o.x_um, o.y_um, o.z_um, o.pitch_mdeg))
        hal.actuate(now, o)
        if now > 0 and not m.busy():
            break
        now = ticks_add(now, 2)
    return m, seen


@pytest.mark.parametrize("lift_up_um", [0, 2667])
@pytest.mark.parametrize("name,attempts", [("nominal", 1), ("switch_stuck_open", 3), ("part_missing", 3),
                                           ("part_offset_retry", 2)])
def test_every_move_of_a_retrying_job_is_prepared(name, attempts, lift_up_um):
    m, seen = _commanded(name, lift_up_um)
    assert m.attempt == attempts
    job = Job(fake_scenarios.PICK, fake_scenarios.PLACE, 25000)
    predicted = {mv[1:] for mv in job_moves(job, m.cfg, m.cfg.max_attempts, lift_up_um)}
    assert seen and [s for s in seen if s not in predicted] == []
    # the lift (the gentle straight move up from the pick) ends lift_up_um over the approach
    lifts = [s for s in seen if s[0] == MOVE_LINE and s[1] == 1 and s[3] < 0]     # (the pick's y < 0 < the place's)
    assert all(s[4] == fake_scenarios.PICK[2] + m.cfg.approach_height_um + lift_up_um for s in lifts)
    assert bool(lifts) == (m.fault == 0)
    # three moves per failed attempt (approach, descend, retreat), six for the placing one
    placed = m.fault == 0
    assert len(seen) == 3 * (attempts - placed) + 6 * placed


def test_a_prepared_plan_is_the_plan_computed_when_the_move_comes():
    cfg = Config()
    job = Job(fake_scenarios.PICK, fake_scenarios.PLACE, 25000)
    moves = job_moves(job, cfg, 3)
    assert len(moves) == 17                       # 5 per attempt, the placing and its retreat
    m = Motion(cfg, REST, 30000)
    m.prepare(moves)
    assert list(m.joints) == REST and not m.active        # nothing moved
    assert len(m.cache) == 17
    # each move again from scratch: a fresh planner at the start the move chain gives it
    ends = []
    for mv in moves:
        start = REST if mv[0] < 0 else ends[mv[0]]
        fresh = Motion(cfg, start, 30000)
        key = (mv[1], mv[2], mv[3], mv[4], mv[5], mv[6]) + tuple(start)
        out = type("Out", (), dict(move_kind=mv[1], move_gentle=mv[2], x_um=mv[3], y_um=mv[4],
                                    z_um=mv[5], pitch_mdeg=mv[6], move_seq=1))()
        fresh._compute(0, out)
        n = fresh.n_wp
        hit = m.cache[key]
        assert hit[0] == n and list(hit[1]) == list(fresh.wp[:n * 4])
        assert hit[2:] == (fresh.t_acc, fresh.t_total, fresh.s_acc, fresh.d_max)
        ends.append(list(fresh.wp[(n - 1) * 4:n * 4]))


def test_an_unreachable_retry_is_left_out_and_prepare_calls_back_per_plan():
    cfg = Config({"spiral_step_um": 20000, "max_attempts": 9})
    job = Job((80000, 0, 12500, -90000), fake_scenarios.PLACE, 25000, 9)   # later tries reach the base
    moves = job_moves(job, cfg, 9)
    calls = []
    m = Motion(cfg, REST, 30000)
    m.prepare(moves, lambda: calls.append(1))
    assert 0 < len(m.cache) < len(moves) and len(calls) == len(m.cache)
