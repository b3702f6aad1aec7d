# The moves a part search adds to the planner (shared_fsm/motion.py): MOVE_BACK goes back along
# the last move's own straight path, from wherever it stopped, to where it began; MOVE_PLAN
# moves nothing and arrives at once; plan_ahead() plans exactly what is commanded next, the
# same plans as planning each move as it comes. The path is checked with the kinematics' own
# forward solution of the setpoints.
from surepick.shared_fsm import kinematics
from surepick.shared_fsm.config import Config
from surepick.shared_fsm.machine import Inputs, MOVE_BACK, MOVE_FREE, MOVE_LINE, MOVE_PLAN, Outputs
from surepick.shared_fsm.motion import Motion

TOP = (160000, -60000, 44000, -90000)
BOTTOM = (160000, -60000, 15500, -90000)


def _at(pose):
    q = [0, 0, 0, 0]
    kinematics.inverse_mdeg(pose[0], pose[1], pose[2], pose[3], q)
    return q


def _command(out, kind, pose):
    out.move_kind = kind
    out.x_um, out.y_um, out.z_um, out.pitch_mdeg = pose
    out.move_seq += 1


def _run(mo, out, inp, now, until_arrived=True, ticks=None, trace=None):
    n = 0
    while (until_arrived and inp.arrived_seq != out.move_seq) or (ticks is not None and n < ticks):
        mo.tick(now, out, inp)
        if trace is not None:
            trace.append(kinematics.forward([v / 1000.0 for v in mo.joints]))
        now += 4
        n += 1
        if ticks is not None and n >= ticks:
            break
    return now


def _descending():
    # a planner at the clear height over the pick pose, the jaw open, told to go straight down
    mo = Motion(Config(), _at(TOP), 45000)
    out, inp = Outputs(), Inputs()
    out.jaw_um = 45000
    start = list(mo.joints)
    _command(out, MOVE_LINE, BOTTOM)
    return mo, out, inp, start


def test_move_back_retraces_a_descent_cut_short_to_where_it_began():
    mo, out, inp, start = _descending()
    now = _run(mo, out, inp, 0, until_arrived=False, ticks=60)     # part of the way down
    low = kinematics.forward([v / 1000.0 for v in mo.joints])
    assert 15.5 + 3 < low[2] < 44.0 - 3
    trace = []
    _command(out, MOVE_BACK, BOTTOM)                               # (its target is not used)
    _run(mo, out, inp, now, trace=trace)
    assert inp.arrived_seq == out.move_seq
    assert list(mo.joints) == start                                 # exactly where it began
    zs = [p[2] for p in trace]
    assert all(b >= a - 1e-6 for a, b in zip(zs, zs[1:]))          # only up
    for x, y, z, pitch in trace:                                    # along the same vertical line
        assert abs(x - 160.0) < 0.3 and abs(y + 60.0) < 0.3 and abs(pitch + 90.0) < 0.1


def test_move_back_steps_back_to_where_the_setpoint_was_before_a_touch_was_felt():
    # A touch is felt some tens of ms after it began; meanwhile the setpoint went on down.
    # MOVE_BACK starts from where it was BACK_REWIND_MS before (then only up).
    from surepick.shared_fsm.motion import BACK_REWIND_MS
    mo, out, inp, start = _descending()
    trace = []
    now = _run(mo, out, inp, 0, until_arrived=False, ticks=60, trace=trace)   # ticks at 0, 4, ... 236 ms
    before = trace[(236 - BACK_REWIND_MS) // 4][2]           # the setpoint's height then
    assert trace[-1][2] < before - 1.0                       # it went on down more than a mm since
    after = []
    _command(out, MOVE_BACK, BOTTOM)
    _run(mo, out, inp, now, until_arrived=False, ticks=1, trace=after)
    assert abs(after[0][2] - before) < 0.3


def test_move_back_after_a_finished_move_goes_all_the_way_back():
    mo, out, inp, start = _descending()
    now = _run(mo, out, inp, 0)
    bottom = kinematics.forward([v / 1000.0 for v in mo.joints])
    assert abs(bottom[2] - 15.5) < 0.05
    _command(out, MOVE_BACK, BOTTOM)
    _run(mo, out, inp, now)
    assert list(mo.joints) == start


def test_move_plan_arrives_at_once_and_moves_nothing():
    mo = Motion(Config(), _at(TOP), 45000)
    out, inp = Outputs(), Inputs()
    out.jaw_um = 45000
    before = list(mo.joints)
    _command(out, MOVE_PLAN, BOTTOM)
    mo.tick(0, out, inp)
    assert inp.arrived_seq == out.move_seq and list(mo.joints) == before and not mo.active


def test_plan_ahead_gives_the_plans_each_move_would_get_when_it_comes():
    cfg = Config()
    moves = [(-1, MOVE_LINE, 0, 171235, -64213, 44000, -90000), (0, MOVE_LINE, 0, 171235, -64213, 15500, -90000)]
    traces = []
    for ahead in (True, False):
        mo = Motion(cfg, _at(TOP), 45000)
        out, inp = Outputs(), Inputs()
        out.jaw_um = 45000
        if ahead:
            mo.plan_ahead(moves)
        trace = []
        now = 0
        for mv in moves:
            _command(out, mv[1], mv[3:])
            now = _run(mo, out, inp, now, trace=trace)
        traces.append(trace)
        assert mo.hits == (2 if ahead else 0)
    assert traces[0] == traces[1]
    # a plan_ahead replaces the last one and leaves the job's own plans alone
    mo = Motion(cfg, _at(TOP), 45000)
    mo.prepare([(-1, MOVE_FREE, 0, 150000, 80000, 80500, -90000)])
    mo.plan_ahead(moves)
    mo.plan_ahead(moves[:1])
    assert len(mo.cache) == 1 and len(mo.ahead) == 1
