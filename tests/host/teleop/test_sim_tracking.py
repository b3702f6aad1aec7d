# Recorded streams into the simulated arm, through the whole pipeline and a simulated board in the
# firmware's teleop mode (teleop/sim_target.py: the controller at the board's loop period, the
# arm servos held to a job's speed and acceleration as teleop mode holds them): tracking,
# dropped samples, clutch re-zero, unreachable targets. Expected paths come from
# tests/host/teleop/streams.py (its own frame conversion), measurements from the physics. The figures
# are in docs/teleop.md; `.venv/bin/python -m pytest -s tests/host/teleop/test_sim_tracking.py` prints
# the ones pinned here.
import math

import numpy as np
import pytest

from surepick.firmware import settings as fw_settings
from surepick.shared_fsm import kinematics
from tests.host.teleop.streams import (FOLLOWED_MM_S, HOME_MM, move_then_circle, path_stream, run_stream, sample_at,
                                  smooth_step, stream_speed_mm_s, targets_of)

CENTRE = (135.0, -20.0, 65.0)    # the middle of the tool-down workspace, clear of the pad and the bin
# FOLLOWED_MM_S: the hand speed the board's teleop mode follows there within the target. Issue 14
# asked for 0.2 m/s: out of the board's reach (the next two tests).


@pytest.mark.parametrize("plane", ["xy", "xz", "yz"])
def test_tracking_at_the_hand_speed_the_board_follows(plane):
    path, duration = move_then_circle(centre_mm=CENTRE, radius_mm=30.0, plane=plane, speed_mm_s=FOLLOWED_MM_S)
    samples = path_stream(path, duration)
    assert stream_speed_mm_s(samples) >= 0.97 * FOLLOWED_MM_S    # the stream really asks for that speed
    summary, session = run_stream(samples)
    print("central workspace, %s circle at %g mm/s: RMS %.2f mm, max %.2f mm" % (
        plane, FOLLOWED_MM_S, summary["tracking_rms_mm"], summary["tracking_max_mm"]))
    assert summary["dropped"] == 0 and summary["reach_clamped_ticks"] == 0
    assert summary["board_refused"] == {} and summary["board_deadmans"] == 0
    steps = np.linalg.norm(np.diff(targets_of(session), axis=0), axis=1) * 100.0    # mm/s at 100 Hz
    assert steps.max() >= 0.9 * FOLLOWED_MM_S                 # ...and the commanded target moves that fast
    assert summary["tracking_rms_mm"] <= 2.0, summary
    assert summary["tracking_max_mm"] <= 5.0, summary
    # ...and the commanded target is the operator's (filtered) one: no clamp, no joint limiting
    assert summary["target_vs_hand_max_mm"] <= 1.0, summary
    # the IK solvers agree all along the way
    assert summary["ik_dls_vs_analytic_max_deg"] < 0.1


def _joint_needs(speed_mm_s, plane):
    # The joint speeds and accelerations (deg/s, deg/s^2; accelerations over 20 ms) a circle of
    # the tracking test asks for: the shared analytic IK along the path, differenced every 2 ms.
    path, duration = move_then_circle(centre_mm=CENTRE, radius_mm=30.0, plane=plane, speed_mm_s=speed_mm_s)
    dt = 0.002
    q = np.array([kinematics.inverse(*path(t), -90.0) for t in np.arange(0.0, duration, dt)])
    v = np.diff(q, axis=0) / dt
    a = np.diff(v, axis=0) / dt
    a20 = np.array([np.convolve(a[:, j], np.ones(10) / 10, mode="valid") for j in range(4)]).T
    return np.abs(v).max(axis=0), np.abs(a20).max(axis=0)


def _teleop_caps():
    # What teleop mode lets an arm servo do (firmware/teleop_mode.py: a job's planned moves, never
    # above the servo's own limits), from the firmware's default settings.
    st = fw_settings.Settings()
    speed = min(st.cfg.arm_speed_mdeg_s / 1000.0, min(st.servo_limits(i)[0] for i in range(4)))
    accel = min(st.cfg.arm_accel_mdeg_s2 / 1000.0, min(st.servo_limits(i)[1] for i in range(4)))
    return speed, accel


@pytest.mark.parametrize("plane", ["xy", "xz", "yz"])
def test_0_2_m_s_asks_more_of_the_joints_than_teleop_mode_allows(plane):
    # Why 0.2 m/s is out of reach: the circles need joint accelerations far above what teleop mode
    # gives the servos (240 deg/s^2: a job's, so that four servos starting together do not sag
    # the rail), while the followed speed's stay within them.
    speed_cap, accel_cap = _teleop_caps()
    assert (speed_cap, accel_cap) == (90.0, 240.0)
    v, a = _joint_needs(200.0, plane)
    assert a.max() > 2.0 * accel_cap, (plane, v, a)
    v, a = _joint_needs(FOLLOWED_MM_S, plane)
    assert v.max() < speed_cap and a.max() < accel_cap, (plane, v, a)


def _with_faults(samples, nan_every=None, spikes=(), lost=()):
    out = []
    for k, s in enumerate(samples):
        s = type(s)(s.t, None if s.pose is None else s.pose.copy(), s.buttons)
        if nan_every and k % nan_every == 5:
            s.pose[1, 3] = math.nan
        if k in spikes:
            s.pose[0, 3] += 0.08                          # an 8 cm leap of the hand for one sample
        if k in lost:
            s.pose = None
        out.append(s)
    return out


def test_nan_lost_and_8_cm_jumps_are_dropped_without_moving_the_setpoint():
    path, duration = move_then_circle(centre_mm=CENTRE, radius_mm=30.0, plane="xy", speed_mm_s=FOLLOWED_MM_S,
                                      laps=1.0)
    clean = path_stream(path, duration)
    spikes = set(range(150, len(clean) - 20, 37))
    lost = {100, 101, 102, 260}
    faulty = _with_faults(clean, nan_every=23, spikes=spikes, lost=lost)
    nans = {k for k in range(len(clean)) if k % 23 == 5} - lost
    jumps = spikes - lost - nans             # a leap on a NaN sample is dropped as NaN
    s_clean, ses_clean = run_stream(clean)
    s_bad, ses_bad = run_stream(faulty)
    assert s_bad["dropped"] == len(nans) + len(jumps) + len(lost)
    assert s_bad["dropped_by_reason"]["drop_jump"] == len(jumps)
    assert s_bad["reanchors"] == 0
    # No control step moves the setpoint by more than the limit an accepted sample could cause
    # (scale * jump = 7.5 mm), let alone what an 8 cm jump would (12 mm). Tighter: at most the
    # clean stream's largest step plus the catch-up after the longest loss (4 samples, 44 ms, at
    # the stream's speed, through the low-pass's alpha 0.3).
    step_clean = np.linalg.norm(np.diff(targets_of(ses_clean), axis=0), axis=1).max()
    step_bad = np.linalg.norm(np.diff(targets_of(ses_bad), axis=0), axis=1).max()
    assert step_bad <= step_clean + 0.3 * FOLLOWED_MM_S * 4 / 90.0, (step_bad, step_clean)
    assert step_bad < 0.15 * 50.0
    # and the arm still follows (the worst error is not held to 5 mm here: where samples are
    # dropped the target waits and then catches up, which the clean stream never asks for)
    assert s_bad["tracking_rms_mm"] <= 2.0


def test_a_hand_found_elsewhere_after_a_loss_is_reanchored_without_a_jump():
    # Tracking is lost for half a second and comes back 12 cm away: the arm does not follow the
    # leap; after a few agreeing samples the new place is the new zero.
    rate, scale = 90.0, 0.15
    samples = []
    for k in range(int(3.0 * rate)):
        t = k / rate
        d = np.array([40.0 * smooth_step((t - 0.2) / 1.0), 0.0, 0.0])     # arm-side mm
        s = sample_at(t, d, scale, clutch=t >= 0.1)
        if 1.5 <= t < 2.0:
            s.pose = None
        elif t >= 2.0:
            s.pose[0, 3] += 0.12
        samples.append(s)
    summary, session = run_stream(samples)
    assert summary["reanchors"] == 1
    assert summary["dropped_by_reason"]["drop_jump"] == 2
    tg = targets_of(session)
    assert np.linalg.norm(np.diff(tg, axis=0), axis=1).max() < 1.0
    assert np.allclose(tg[-1], HOME_MM + [40.0, 0.0, 0.0], atol=0.5)


def test_clutch_re_zero_causes_no_jump():
    # Move 30 mm forward, let go, carry the hand 25 cm away and turn it, grip again and move 20 mm
    # to the side: the target goes on from where it stopped, with no step at either press.
    rate, scale = 90.0, 0.15
    samples = []
    for k in range(int(4.0 * rate)):
        t = k / rate
        if t < 1.5:
            d, clutch, pitch = np.array([30.0 * smooth_step((t - 0.2) / 1.0), 0, 0]), t >= 0.1, 0.0
        elif t < 2.2:
            d, clutch, pitch = np.array([30.0, 0, 0]) + 1000 * scale * np.array([0.25, 0.1, -0.05]) * smooth_step(
                (t - 1.5) / 0.6), False, 20.0 * smooth_step((t - 1.5) / 0.6)
        else:
            away = np.array([30.0, 0, 0]) + 1000 * scale * np.array([0.25, 0.1, -0.05])
            d, clutch, pitch = away + np.array([0, 20.0 * smooth_step((t - 2.4) / 1.0), 0]), True, 20.0
        samples.append(sample_at(t, d, scale, clutch=clutch, pitch_deg=pitch))
    summary, session = run_stream(samples)
    assert summary["rezeros"] == 2 and summary["dropped"] == 0
    tg = targets_of(session)
    assert np.linalg.norm(np.diff(tg, axis=0), axis=1).max() < 1.0
    assert np.allclose(tg[-1], HOME_MM + [30.0, 20.0, 0.0], atol=0.5)


def test_an_unreachable_stream_clamps_without_oscillation():
    # The hand reaches 25 cm (arm side) straight out and holds there: the target stops at the edge
    # of the reachable space, says so, and stays put; so does the arm.
    rate, scale = 90.0, 0.15
    samples = [sample_at(k / rate, np.array([250.0 * smooth_step((k / rate - 0.2) / 2.5), 0.0, 0.0]), scale,
                         clutch=k / rate >= 0.1) for k in range(int(5.0 * rate))]
    summary, session = run_stream(samples)
    assert summary["reach_clamped_ticks"] > 100
    tg = targets_of(session)
    steps = np.diff(tg, axis=0)
    assert np.linalg.norm(steps, axis=1).max() < 3.0
    tail = steps[-150:]                                  # the last 1.5 s: held at the edge, exactly
    assert np.abs(tail).max() < 1e-6
    # The hand only moves outwards: the target never backs off but for one transient, where the
    # joint limiter trims the elbow as the target meets the edge of the reach (measured 1.3 mm).
    x = tg[:, 0]
    assert (np.maximum.accumulate(x) - x).max() < 2.0
    ticks = session.log.ticks
    meas = np.array([m for _, _, m in ticks[-50:]])
    assert np.ptp(meas, axis=0).max() < 0.5              # the arm is still
    assert np.linalg.norm(meas[-1] - tg[-1]) < 2.0


# Measured where the 2 mm / 5 mm target is NOT met (docs/teleop.md quotes these). Deterministic
# (virtual time), so the figures are pinned within 10%: a change that makes them better or worse
# shows here, and docs/teleop.md must follow.
# - 0.2 m/s in the central workspace: the servos, held to teleop's 90 deg/s and 240 deg/s^2, fall
#   behind the commanded target and swing wide of it.
# - Near full stretch a small Cartesian move needs a large elbow move: at 0.2 m/s the servos fall
#   further behind, and the host's joint limiter (at 0.8 of the servos' own limits) holds the
#   elbow back so the commanded target leaves the operator's path (in the radial vertical circle
#   it swings down to the table and far above the path). In the radial vertical circle the
#   commanded joints then fold the forearm back over the shoulder, the hand across the base axis
#   at the column's top: the board refuses those setpoints (firmware/teleop_check.py), holds at
#   the deadman and is re-armed, so the arm stops following there.
# - Outside the reach the target slides along the edge while the servos lag it (the last test).
NEAR_STRETCH = (165.0, 0.0, 40.0)        # the circle's wrist point comes within 6 mm of full stretch
# where -> (centre, radius mm, {plane: (RMS, max) mm})
MISSED = {"central workspace": (CENTRE, 30.0, {"xy": (31.11, 81.25), "xz": (34.67, 94.49), "yz": (26.44, 69.68)}),
          "near full stretch": (NEAR_STRETCH, 20.0, {"xy": (27.30, 95.99), "yz": (15.44, 43.79), "xz": (128.21, 456.52)})}


@pytest.mark.parametrize("where,plane", [(w, p) for w in MISSED for p in ("xy", "xz", "yz")])
def test_tracking_at_0_2_m_s_misses_the_target_by_this_much(where, plane):
    centre, radius, figures = MISSED[where]
    path, duration = move_then_circle(centre_mm=centre, radius_mm=radius, plane=plane, speed_mm_s=200.0)
    summary, _ = run_stream(path_stream(path, duration))
    rms, worst = figures[plane]
    print("%s, %s circle at 0.2 m/s: RMS %.2f mm, max %.2f mm" % (
        where, plane, summary["tracking_rms_mm"], summary["tracking_max_mm"]))
    assert summary["tracking_rms_mm"] == pytest.approx(rms, rel=0.1)
    assert summary["tracking_max_mm"] == pytest.approx(worst, rel=0.1)
    assert summary["tracking_rms_mm"] > 2.0 and summary["tracking_max_mm"] > 5.0


def test_outside_reach_tracking_while_the_target_slides_along_the_edge():
    samples = [sample_at(k / 90.0, np.array([250.0 * smooth_step((k / 90.0 - 0.2) / 2.0), 0.0, 0.0]), 0.15,
                         clutch=k >= 9) for k in range(270)]
    summary, _ = run_stream(samples)
    print("outside reach: RMS %.2f mm, max %.2f mm" % (summary["tracking_rms_mm"], summary["tracking_max_mm"]))
    assert summary["reach_clamped_ticks"] > 200
    assert summary["tracking_rms_mm"] == pytest.approx(16.34, rel=0.1)
    assert summary["tracking_max_mm"] == pytest.approx(41.30, rel=0.1)
