# The pipeline's steps one by one: outlier gate, clutch/re-zero/scale, workspace clamp, low-pass,
# reachability clamp.
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from surepick.shared_fsm import kinematics as kin
from surepick.host.teleop import reach
from surepick.host.teleop.clutch import Clutch
from surepick.host.teleop.outlier import ACCEPT, DROP_INVALID, DROP_JUMP, DROP_LOST, REANCHOR, OutlierGate
from surepick.host.teleop.smoothing import LowPass
from surepick.host.teleop.workspace import Workspace

I3 = np.eye(3)


def test_gate_drops_lost_nan_and_jumps_and_keeps_the_last_good():
    g = OutlierGate(jump_m=0.05, reacquire=3)
    assert g.check(I3, np.array([0.0, 0.0, 0.0])) == ACCEPT
    assert g.check(None, None) == DROP_LOST
    assert g.check(I3, np.array([math.nan, 0.0, 0.0])) == DROP_INVALID
    assert g.check(np.diag([1.0, 1.0, -1.0]), np.zeros(3)) == DROP_INVALID
    assert g.check(I3, np.array([0.08, 0.0, 0.0])) == DROP_JUMP          # an 8 cm spike...
    assert g.check(I3, np.array([0.01, 0.0, 0.0])) == ACCEPT             # ...and back: fine
    assert np.allclose(g.last_good, [0.01, 0, 0])
    assert g.check(I3, np.array([0.0599, 0.0, 0.0])) == ACCEPT           # 4.99 cm: within the limit
    assert g.dropped == 4 and g.counts[DROP_JUMP] == 1


def test_a_persistent_leap_is_reacquired_after_agreeing_samples():
    g = OutlierGate(jump_m=0.05, reacquire=3)
    g.check(I3, np.zeros(3))
    verdicts = [g.check(I3, np.array([0.20 + 0.001 * k, 0.0, 0.0])) for k in range(4)]
    assert verdicts == [DROP_JUMP, DROP_JUMP, REANCHOR, ACCEPT]
    assert g.dropped == 2 and g.counts[REANCHOR] == 1


hand_moves = st.lists(st.tuples(st.floats(-0.02, 0.02), st.floats(-0.02, 0.02), st.floats(-0.02, 0.02),
                                st.floats(-3.0, 3.0), st.booleans(), st.booleans(), st.booleans()),
                      min_size=1, max_size=60)


@given(hand_moves)
def test_clutch_and_fine_never_make_the_target_jump(moves):
    # Whatever the buttons do, the target moves at most scale * (hand displacement) per sample,
    # and not at all while the clutch is released.
    c = Clutch(scale=0.15, fine_divisor=5.0)
    hand = np.array([0.3, -0.2, 1.1])
    pitch = 10.0
    commanded = (np.array([100.0, 0.0, 80.0]), -90.0)
    c.hold(*commanded)
    last, last_pitch = c.update(hand, pitch, False, False, *commanded)
    for dx, dy, dz, dp, clutch, fine, teleport in moves:
        step = np.array([dx, dy, dz])
        if teleport and not clutch:
            step = step * 20.0                     # the hand goes anywhere while the clutch is out
        hand = hand + step
        pitch += dp
        tgt, tp = c.update(hand, pitch, clutch, fine, last, last_pitch)
        moved = np.linalg.norm(tgt - last)
        if clutch:
            assert moved <= 0.15 * np.linalg.norm(step) * 1000.0 + 1e-9
            assert abs(tp - last_pitch) <= abs(dp) + 1e-9
        else:
            assert moved == 0.0 and tp == last_pitch
        last, last_pitch = tgt, tp


def test_clutch_follows_with_scale_and_fine():
    c = Clutch(scale=0.15, fine_divisor=5.0)
    c.hold([100.0, 0.0, 80.0], -90.0)
    c.update(np.zeros(3), 0.0, True, False, np.array([100.0, 0.0, 80.0]), -90.0)
    t, _ = c.update(np.array([0.1, 0.0, 0.0]), 0.0, True, False, None, None)
    assert np.allclose(t, [115.0, 0.0, 80.0])             # 10 cm of hand = 15 mm of arm
    t, _ = c.update(np.array([0.2, 0.0, 0.0]), 0.0, True, True, None, None)
    assert np.allclose(t, [115.0, 0.0, 80.0])             # fine pressed: re-zero, no jump
    t, _ = c.update(np.array([0.3, 0.0, 0.0]), 0.0, True, True, None, None)
    assert np.allclose(t, [118.0, 0.0, 80.0])             # 10 cm of hand = 3 mm in fine mode


points = st.tuples(st.floats(-400, 400), st.floats(-400, 400), st.floats(-100, 400), st.floats(-180, 90))


@given(points)
def test_workspace_clamp_is_inside_and_idempotent(p):
    ws = Workspace()
    pos, pitch, clamped = ws.clamp(p[:3], p[3])
    r = math.hypot(pos[0], pos[1])
    assert ws.r_min_mm - 1e-9 <= r <= ws.r_max_mm + 1e-9
    assert ws.z_min_mm <= pos[2] <= ws.z_max_mm
    assert abs(math.degrees(math.atan2(pos[1], pos[0]))) <= ws.yaw_max_deg + 1e-9
    again, pitch2, clamped2 = ws.clamp(pos, pitch)
    assert not clamped2 or np.allclose(again, pos)
    assert np.allclose(again, pos) and pitch2 == pitch


def test_low_pass_step_response():
    f = LowPass(0.3)
    f.reset([0.0, 0.0, 0.0])
    ys = [f.update([10.0, 0.0, 0.0])[0] for _ in range(20)]
    assert all(a < b for a, b in zip(ys, ys[1:]))          # monotone, no overshoot
    assert abs(ys[0] - 3.0) < 1e-12 and abs(ys[-1] - 10.0 * (1 - 0.7 ** 20)) < 1e-9


def _reachable(pos, pitch):
    try:
        reach.solve(pos, pitch)
        return True
    except kin.Unreachable:
        return False


@settings(max_examples=150)
@given(st.floats(-1.0, 1.0), st.floats(0.0, 2 * math.pi), st.floats(0.0, 1.0), st.floats(-0.3, 0.3))
def test_reach_clamp_returns_a_reachable_pose_and_moves_continuously(u, a, h, dp):
    # A target far out of reach along a direction, nudged slightly: the clamped pose is reachable,
    # and a small nudge of the request moves it only a little (no jump to another branch).
    last = (np.array([140.0, -20.0, 60.0]), -90.0)
    d = np.array([math.cos(a), math.sin(a), u])
    far = last[0] + 400.0 * d / np.linalg.norm(d)
    pos, pitch, q, clamped, reason = reach.nearest_reachable(far, -90.0, last)
    assert clamped and reason and _reachable(pos, pitch)
    assert np.allclose(kin.forward(q)[:3], pos, atol=1e-6)
    nudged = far + np.array([dp, -dp, dp])
    pos2, _, _, _, _ = reach.nearest_reachable(nudged, -90.0, (pos, pitch))
    assert np.linalg.norm(pos2 - pos) < 5.0


def test_reachable_targets_pass_unchanged():
    pos, pitch, q, clamped, _ = reach.nearest_reachable([140.0, -20.0, 60.0], -90.0, None)
    assert not clamped and np.allclose(pos, [140.0, -20.0, 60.0])
    assert np.allclose(kin.forward(q), [140.0, -20.0, 60.0, -90.0])


def test_joint_limiter_passes_a_feasible_ramp_and_brakes_a_step():
    from surepick.host.teleop.joint_limits import JointLimiter
    lim = JointLimiter([0.0, 90.0, -90.0, -90.0], 100.0)
    # 60 deg/s on the base with a gentle start: well inside 0.8 * 240 deg/s and 0.8 * 2400 deg/s^2
    for k in range(1, 60):
        want = [0.6 * k * min(1.0, k / 10.0), 90.0, -90.0, -90.0]
        got, limited = lim.step(want)
    assert not limited and abs(got[0] - want[0]) < 0.002
    # a 40 degree step of the elbow: held back, never faster than the limit, and arrives
    lim = JointLimiter([0.0, 90.0, -90.0, -90.0], 100.0)
    path = [lim.step([0.0, 90.0, -50.0, -90.0]) for _ in range(80)]
    elbow = np.array([p[0][2] for p in path])
    assert path[0][1] and not path[-1][1]
    assert np.max(np.diff(elbow)) <= 0.8 * 240 / 100.0 + 0.002
    assert np.all(np.diff(elbow) >= -1e-9) and abs(elbow[-1] + 50.0) < 0.002   # no overshoot
