# The shared motion planner: bounded joint speed and acceleration, straight vertical segments,
# arrival reported only when the profile is done, hold freezes, unreachable goals reported.
from surepick.shared_fsm import kinematics
from surepick.shared_fsm.config import Config
from surepick.shared_fsm.machine import Inputs, Outputs, MOVE_FREE, MOVE_LINE
from surepick.shared_fsm.motion import Motion
from surepick.shared_fsm.ticks import ticks_add

START = (1 << 30) - 1500  # run across the tick wrap


def _start_pose(x=160.0, y=-60.0, z=72.5):
    return [int(round(a * 1000)) for a in kinematics.inverse(x, y, z, -90)]


def _run(motion, out, inp, ms, now=START):
    trace = []
    for _ in range(ms // 2):
        motion.tick(now, out, inp)
        trace.append((now, list(motion.joints), motion.jaw_um, inp.arrived_seq))
        now = ticks_add(now, 2)
    return trace, now


def _command(out, x, y, z, kind, gentle=0):
    out.x_um, out.y_um, out.z_um, out.pitch_mdeg = x, y, z, -90000
    out.move_kind, out.move_gentle = kind, gentle
    out.move_seq += 1


def test_free_move_respects_speed_and_acceleration_and_arrives_on_target():
    cfg = Config()
    m = Motion(cfg, _start_pose(), 40000)
    out, inp = Outputs(), Inputs()
    out.jaw_um = 40000
    _command(out, 150000, 80000, 80000, MOVE_FREE)
    trace, _ = _run(m, out, inp, 6000)
    goal = _start_pose(150, 80, 80)
    assert trace[-1][1] == goal
    arrived_at = next(i for i, t in enumerate(trace) if t[3] == out.move_seq)
    assert trace[arrived_at - 1][1] == goal  # arrival only after the setpoint reached the goal
    v_lim = cfg.arm_speed_mdeg_s / 1000.0 * 2   # mdeg per 2 ms tick
    a_lim = cfg.arm_accel_mdeg_s2 / 1e6 * 4     # mdeg per tick^2
    for j in range(4):
        pos = [t[1][j] for t in trace]
        vel = [b - a for a, b in zip(pos, pos[1:])]
        acc = [b - a for a, b in zip(vel, vel[1:])]
        # the path parameter is 14-bit fixed point: allow its quantum (and floor rounding)
        quantum = abs(pos[-1] - pos[0]) / 16384.0 + 2
        assert max(abs(v) for v in vel) <= v_lim * 1.05 + quantum
        assert max(abs(a) for a in acc) <= a_lim * 1.3 + 2 * quantum


def test_gentle_profile_is_slower():
    cfg = Config()
    times = []
    for gentle in (0, 1):
        m = Motion(cfg, _start_pose(z=12.5), 20000)
        out, inp = Outputs(), Inputs()
        out.jaw_um = 20000
        _command(out, 160000, -60000, 72500, MOVE_LINE, gentle)
        trace, _ = _run(m, out, inp, 8000)
        times.append(next(i for i, t in enumerate(trace) if t[3] == out.move_seq))
    assert times[1] > times[0] * 1.5


def test_line_move_goes_straight_up():
    cfg = Config()
    m = Motion(cfg, _start_pose(z=12.5), 20000)
    out, inp = Outputs(), Inputs()
    out.jaw_um = 20000
    _command(out, 160000, -60000, 72500, MOVE_LINE)
    trace, _ = _run(m, out, inp, 4000)
    worst = 0.0
    for _, q, _, _ in trace:
        x, y, z, p = kinematics.forward([a / 1000.0 for a in q])
        worst = max(worst, abs(x - 160.0), abs(y + 60.0), abs(p + 90.0) / 10.0)
    assert worst < 1.0  # within 1 mm of the vertical line (and 10 deg of pitch)
    assert abs(kinematics.forward([a / 1000.0 for a in trace[-1][1]])[2] - 72.5) < 0.05


def test_hold_freezes_and_never_arrives():
    cfg = Config()
    m = Motion(cfg, _start_pose(), 40000)
    out, inp = Outputs(), Inputs()
    _command(out, 150000, 80000, 80000, MOVE_FREE)
    trace, now = _run(m, out, inp, 300)
    out.hold = 1
    frozen = list(m.joints)
    trace2, _ = _run(m, out, inp, 3000, now)
    assert all(t[1] == frozen for t in trace2)
    assert inp.arrived_seq != out.move_seq


def test_jaw_slews_at_the_configured_rate():
    cfg = Config()
    m = Motion(cfg, _start_pose(), 40000)
    out, inp = Outputs(), Inputs()
    out.jaw_um = 0
    trace, _ = _run(m, out, inp, 1000)
    jaws = [t[2] for t in trace]
    per_tick = cfg.jaw_speed_um_s * 2 // 1000
    assert all(0 <= a - b <= per_tick for a, b in zip(jaws, jaws[1:]))
    assert jaws[-1] == 0


def test_unreachable_goal_is_reported_not_attempted():
    cfg = Config()
    m = Motion(cfg, _start_pose(), 40000)
    out, inp = Outputs(), Inputs()
    before = list(m.joints)
    _command(out, 400000, 0, 10000, MOVE_FREE)
    _run(m, out, inp, 100)
    assert inp.error_seq == out.move_seq and "unreachable" in m.error_text
    assert list(m.joints) == before
